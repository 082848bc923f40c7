"""What `cclab reproduce` resumes on: a finished run is reused when the code that made it is this code (its
resolved spec, cclab version and build id), not when the git checkout is at the same commit: Dask workers at
another commit, or with cclab installed from a wheel, make the same results and must not be made to redo them
(docs/reproduce.md, "Interrupted runs")."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from cclab import _native, provenance, reproduce as rp


def _edit_meta(where, **change):
    p = where / "summary.json"
    s = json.loads(p.read_text())
    for k, v in change.items():
        if v is None:
            s["meta"].pop(k, None)
        else:
            s["meta"][k] = v
    p.write_text(json.dumps(s))


def test_the_build_id_names_the_engine_sources_and_is_recorded(tmp_path):
    assert re.fullmatch(r"[0-9a-f]{32}", _native.ENGINE_ID)
    b = provenance.build_id()
    assert re.fullmatch(r"[0-9a-f]{16}", b)
    # The same in a fresh process (it depends on the sources, not on the process or the checkout's state).
    other = subprocess.run([sys.executable, "-c", "from cclab import provenance; print(provenance.build_id())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == b
    (d, where), = rp._jobs("M2", tmp_path, True, (1,))[:1]
    rp._run_once(d, where)
    assert json.loads((where / "summary.json").read_text())["meta"]["build_id"] == b


def test_a_run_made_at_another_commit_is_reused_one_of_other_code_is_not(tmp_path, monkeypatch):
    (d, where), = rp._jobs("M2", tmp_path, True, (1,))[:1]
    rp._run_once(d, where)
    assert rp._finished(d, where)
    # A worker at another commit (or an installed wheel: no git at all) with the same sources: reused.
    _edit_meta(where, git={"commit": "0" * 40, "dirty": True})
    assert rp._finished(d, where)
    _edit_meta(where, git=None)
    assert rp._finished(d, where)
    # This process at another commit than the worker: still reused (the commit is not compared).
    monkeypatch.setattr(provenance, "git", lambda: {"commit": "f" * 40, "dirty": False})
    assert rp._finished(d, where)
    # Another build (other engine sources or result code), or a run from before build ids: made again.
    _edit_meta(where, build_id="0123456789abcdef")
    assert not rp._finished(d, where)
    _edit_meta(where, build_id=None)
    assert not rp._finished(d, where)
    # A build that could not be identified matches nothing, not even another unknown one.
    _edit_meta(where, build_id="unknown")
    monkeypatch.setattr(provenance, "build_id", lambda: "unknown")
    assert not rp._finished(d, where)
    # The same build but another scenario (seed) is not this run either.
    _edit_meta(where, build_id=None)
    monkeypatch.undo()
    _edit_meta(where, build_id=provenance.build_id())
    assert rp._finished(d, where)
    assert not rp._finished(dict(d, seed=d["seed"] + 1), where)
