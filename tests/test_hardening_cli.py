"""Issue 28, items 8 and 12: results folders that cannot hold results are refused before anything runs, a
reused folder never mixes two runs' files, usage errors are one ``error:`` line, names are visible text,
and messages speak of the user's input, not of Python objects or serde. Each test failed before the fix
(noted per test)."""
import copy
import json
import os
import shutil
import subprocess
import sys

import pytest

import cclab
from cclab import ScenarioError, _native

BASE = {
    "name": "t", "duration": "1s", "seed": 1,
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": "BDP", "queue": "droptail"}},
    "flows": [{"cc": "newreno", "rtt": "40ms"}],
}
TOML = ('name = "t"\nduration = "{dur}"\n[topology.bottleneck]\nrate = "10Mbps"\n'
        '[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
SWEEP = 'scenario = "s.toml"\nseeds = 1\n[grid]\n"flows[0].cc" = ["newreno"]\n'


def scenario(**changes):
    d = copy.deepcopy(BASE)
    d.update(changes)
    return d


def cclab_cli(*args, cwd=None):
    """``cclab ARGS`` in a child process (arguments may be bytes: a path that is not UTF-8)."""
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, cwd=cwd, timeout=300)


def one_error_line(r, *words):
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2, (r.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "Usage:" not in err, err
    for w in words:
        assert w in lines[0], err
    return lines[0]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.toml").write_text(TOML.format(dur="1s"))
    (tmp_path / "sw.toml").write_text(SWEEP)
    (tmp_path / "folder").mkdir()
    return tmp_path


def commands(tmp_path, out):
    """Every command with --out, ``out`` given to it."""
    return {
        "run": ["run", str(tmp_path / "s.toml"), "-q", "--no-plots", "--out", out],
        "net run": ["net", "run", str(tmp_path / "s.toml"), "--loopback", "-q", "--out", out],
        "sweep": ["sweep", str(tmp_path / "sw.toml"), "--out", out],
        "reproduce": ["reproduce", "F1", "--quick", "--out", out],
        "report": ["report", str(tmp_path / "folder"), "--out", out],
        "plot": ["plot", str(tmp_path / "folder"), "--out", out],
    }


# ---- item 8: output folders ----


@pytest.mark.parametrize("cmd", ["run", "net run", "sweep", "reproduce", "report", "plot"])
def test_a_non_utf8_out_is_refused_before_anything_runs(files, cmd):
    # Before: `cclab run` simulated, then lost the run (UnicodeEncodeError in pyarrow, exit 1); a sweep lost
    # every run the same way.
    bad = os.fsencode(str(files)) + b"/x\xff"
    r = cclab_cli(*[bad if a == "BAD" else a for a in commands(files, "BAD")[cmd]], cwd=files)
    one_error_line(r, "--out", "UTF-8")
    assert not os.path.exists(bad)


@pytest.mark.parametrize("cmd", ["run", "net run", "sweep", "reproduce", "report", "plot"])
def test_an_empty_out_is_refused_naming_it(files, cmd):
    # Before: `--out ""` was the current folder: the results were written among the user's files.
    r = cclab_cli(*commands(files, "")[cmd], cwd=files)
    one_error_line(r, "--out", "empty")
    assert sorted(p.name for p in files.iterdir()) == ["folder", "s.toml", "sw.toml"]


def test_the_api_refuses_the_same_folders_before_simulating(tmp_path, monkeypatch):
    calls = []
    real = _native.run
    monkeypatch.setattr(_native, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    for out in ("", os.fsencode(str(tmp_path)) + b"/x\xff", str(tmp_path) + "/x\udcff"):
        with pytest.raises(ScenarioError) as e:
            cclab.run(BASE, out, progress=False)
        assert e.value.errors[0][0] == "out", str(e.value)
    assert calls == []
    # A bytes path that is UTF-8 is a path like any other.
    res = cclab.run(BASE, os.fsencode(str(tmp_path / "ok")), progress=False, plots=False)
    assert (tmp_path / "ok" / "summary.json").exists() and res.summary["scenario"] == "t"


def test_a_reused_folder_holds_only_the_last_runs_files(tmp_path):
    # Before: a 1 s run without packet trace or plots into the folder of a 2 s run left that run's
    # trace.parquet and PNGs, and Result.load returned the new summary with the old run's trace.
    out = tmp_path / "o"
    cclab.run(scenario(duration="2s"), out, progress=False, trace_packets=True)
    assert (out / "trace.parquet").exists() and (out / "rate.png").exists()
    (out / "notes.txt").write_text("mine")  # not a file of a run: left alone
    cclab.run(scenario(duration="1s"), out, progress=False, plots=False)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "spec.json", "summary.json", "timeseries.parquet"]
    res = cclab.Result.load(out)
    assert res.trace is None and res.spec["duration"] == 1.0 and res.flows["t"].max() <= 1.0


def test_result_load_refuses_files_of_two_runs(tmp_path):
    # Before: loaded without a word (a 10 s summary with a 1 s scenario's trace).
    a, b = tmp_path / "a", tmp_path / "b"
    cclab.run(scenario(duration="1s"), a, progress=False, plots=False, trace_packets=True)
    cclab.run(scenario(duration="2s"), b, progress=False, plots=False, trace_packets=True)
    ra, rb = (json.loads((d / "summary.json").read_text())["meta"]["run_id"] for d in (a, b))
    assert len(ra) == 32 and ra != rb
    shutil.copy(a / "trace.parquet", b / "trace.parquet")
    with pytest.raises(ScenarioError) as e:
        cclab.Result.load(b)
    assert "trace.parquet" in e.value.errors[0][0] and "another run" in str(e.value), str(e.value)
    shutil.copy(a / "timeseries.parquet", b / "timeseries.parquet")
    with pytest.raises(ScenarioError, match=r"timeseries\.parquet"):
        cclab.Result.load(b)
    # A folder written before run ids (no run_id anywhere) still loads.
    for name in ("summary.json",):
        s = json.loads((a / name).read_text())
        del s["meta"]["run_id"]
        (a / name).write_text(json.dumps(s))
    (a / "trace.parquet").unlink()
    (a / "timeseries.parquet").unlink()
    shutil.copy(b / "timeseries.parquet", a / "timeseries.parquet")  # carries a's run id: no summary id to compare
    assert cclab.Result.load(a).summary["scenario"] == "t"


# ---- item 12: usage errors, names, messages ----


@pytest.mark.parametrize("args, words", [
    (["run"], ["Missing argument", "SCENARIO"]),
    (["run", "x.toml", "--bogus"], ["--bogus"]),
    (["sweep", "x.toml", "-j", "0"], ["--workers", "0"]),
    (["nosuchcommand"], ["nosuchcommand"]),
    (["net", "run"], ["Missing argument"]),
    (["run", "x.toml", "--seed", "abc"], ["--seed", "abc"]),
])
def test_usage_errors_are_one_error_line(tmp_path, args, words):
    # Before: click's "Usage: …" and "Try 'cclab run -h' for help." lines, then "Error: …".
    one_error_line(cclab_cli(*args, cwd=tmp_path), *words)


def test_help_still_works():
    for args in (["--help"], ["run", "--help"], ["net", "run", "-h"]):
        r = cclab_cli(*args)
        assert r.returncode == 0 and b"Usage:" in r.stdout, r.stderr
    r = cclab_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith(b"cclab "), r.stdout


@pytest.mark.parametrize("name", ["a\u2028b", "x\u2029", "\u3164", "a\u3164", "\uffa0", "a\u200bb", "a\u115fb",
                                  "a\ufe0fb", "a\U000e0041b"])
def test_invisible_and_separator_characters_are_not_names(name):
    # Before: U+2028, U+2029 and the Hangul fillers (letters, but invisible) were accepted as names.
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(scenario(name=name))
    assert e.value.errors[0][0] == "name", str(e.value)
    graph = {"kind": "graph", "nodes": [name, "b"], "links": [{"src": name, "dst": "b", "rate": "10Mbps"}]}
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(scenario(topology=graph, flows=[{"cc": "newreno", "rtt": "40ms", "src": name,
                                                                  "dst": "b"}]))
    assert any(f.startswith("topology.nodes[0]") for f, _ in e.value.errors), str(e.value)
    assert "\\u" in str(e.value) or "U+" in str(e.value)  # the character is shown, not printed raw


def test_ordinary_unicode_names_stay_names():
    for ok in ("ünïcode name", "名前", "한국어", "a b", "émoji 🚀"):
        assert cclab.Scenario.from_dict(scenario(name=ok)).name == ok


@pytest.mark.parametrize("changes, field", [
    ({"duration": object()}, "duration"),
    ({"topology": {"kind": "dumbbell", "bottleneck": {"rate": object()}}}, "topology.bottleneck.rate"),
    ({"flows": [{"cc": "newreno", "rtt": "40ms", "params": {"initial_ssthresh": object()}}]},
     "flows[0].params.initial_ssthresh"),
])
def test_python_objects_are_described_not_quoted(changes, field):
    # Before: 'got "<object object at 0x7fca1a1a7aa0>"'.
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(scenario(**changes))
    assert e.value.errors[0][0] == field and " at 0x" not in str(e.value), str(e.value)
    assert "a Python object" in str(e.value), str(e.value)


@pytest.mark.parametrize("changes, field", [
    ({"flows": [{"cc": "newreno", "rtt": "40ms", "params": {"initial_ssthresh": "\ud800"}}]},
     "flows[0].params.initial_ssthresh"),
    ({"flows": [{"cc": "cubic", "rtt": "40ms", "params": {"beta": "a\udfff"}}]}, "flows[0].params.beta"),
    ({"flows": [{"cc": "newreno", "rtt": "40ms", "params": {"x\ud800": 1}}]}, "flows[0].params"),
    ({"flows": [{"cc": "kernel:\ud800", "rtt": "40ms"}]}, "flows[0].cc"),
    ({"topology": {"kind": "dumbbell", "bottleneck": {"trace": "a\udc00"}}}, "topology.bottleneck.trace"),
])
def test_text_that_is_not_unicode_is_refused_in_user_terms(changes, field):
    # Before: serde's "unexpected end of hex escape" / "lone leading surrogate in hex escape", pydantic's
    # "unable to parse raw data as a unicode string", Python's "'utf-8' codec can't encode …".
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(scenario(**changes))
    msg = str(e.value)
    assert e.value.errors[0][0] == field and "not valid Unicode text" in msg, msg
    for internal in ("hex escape", "raw data", "codec"):
        assert internal not in msg, msg
    msg.encode("utf-8")  # printable: the message itself holds no lone surrogate


# ---- red-team pass (2026-11-27) ----


@pytest.mark.parametrize("out", [1, 3.5, [1], object()])
def test_an_out_that_is_no_path_is_refused_naming_it(out):
    # Before: TypeError "expected str, bytes or os.PathLike object, not int" from pathlib.
    with pytest.raises(ScenarioError) as e:
        cclab.run(BASE, out, progress=False)
    assert e.value.errors[0][0] == "out" and "folder path" in str(e.value) and " at 0x" not in str(e.value)


def test_numpy_scalars_are_numbers():
    # Before: duration = np.int64(1) was refused: 'must be a number (SI base unit) or a string with a unit,
    # got "1"' (np.int64 is no int subclass; the message then showed it as a string).
    import numpy as np

    sc = cclab.Scenario.from_dict(scenario(duration=np.int64(1), flows=[
        {"cc": "newreno", "rtt": np.float32(0.04), "params": {"initial_ssthresh": np.int64(20)}}]))
    assert sc.duration == 1 and sc.flows[0].params["initial_ssthresh"] == 20
    with pytest.raises(ScenarioError, match=r"duration: must be > 0, got -1"):
        cclab.Scenario.from_dict(scenario(duration=np.int64(-1)))


def test_a_folder_in_place_of_a_run_file_is_refused_before_running(tmp_path, monkeypatch):
    # Red-team pass: `mkdir out/summary.json` made the run fail after simulating (IsADirectoryError, exit 1).
    calls = []
    real = _native.run
    monkeypatch.setattr(_native, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    (tmp_path / "o" / "rate.png").mkdir(parents=True)
    with pytest.raises(ScenarioError, match=r"holds a folder named rate\.png"):
        cclab.run(BASE, tmp_path / "o", progress=False)
    assert calls == []


def test_a_utf8_byte_order_mark_is_not_a_toml_error(tmp_path):
    # Red-team pass: a scenario saved by a Windows editor (UTF-8 with a BOM) was "malformed TOML: Invalid
    # statement (at line 1, column 1)".
    p = tmp_path / "bom.toml"
    p.write_bytes(b"\xef\xbb\xbf" + TOML.format(dur="1s").encode())
    assert cclab.Scenario.load(p).name == "t"


def test_a_separator_name_is_not_called_empty():
    # Red-team pass: name = "\u2028" was refused as "is empty" (str.strip() removes line separators).
    with pytest.raises(ScenarioError, match="U\\+2028 LINE SEPARATOR"):
        cclab.Scenario.from_dict(scenario(name="\u2028"))


def test_result_to_dir_checks_its_folder_first(tmp_path):
    # Red-team pass: Result.to_dir("…/x\udcff") removed nothing but failed in pyarrow (UnicodeEncodeError),
    # and to_dir(b"…") raised TypeError from pathlib.
    res = cclab.run(BASE, progress=False)
    for out in ("", str(tmp_path) + "/x\udcff", 5):
        with pytest.raises(ScenarioError) as e:
            res.to_dir(out, plots=False)
        assert e.value.errors[0][0] == "out"
    res.to_dir(os.fsencode(str(tmp_path / "b")), plots=False)
    assert cclab.Result.load(tmp_path / "b").summary["meta"]["run_id"] == res.summary["meta"]["run_id"]


def test_fields_named_by_odd_keys_print_on_one_line(tmp_path):
    # Red-team pass: an unknown key "a\nb" printed as two "error:" lines ("error: a" / "error: b: unknown
    # key"), "c\u2028d" and "\u3164" printed raw, and a parameter key's field ended in pydantic's ".[key]".
    p = tmp_path / "keys.toml"
    p.write_text('name = "t"\nduration = "1s"\n"a\\nb" = 1\n"c\\u2028d" = 2\n"\\u3164" = 3\n[topology.bottleneck]\n'
                 'rate = "1Mbps"\n[[flows]]\ncc = "newreno"\nrtt = "40ms"\nparams = {"p\\u200bq" = 1}\n')
    r = cclab_cli("validate", str(p))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.splitlines() == [
        'error: flows[0].params.p\\u200bq: must be a name of visible characters, got "p\\u200bq", which holds '
        "U+200B ZERO WIDTH SPACE",
        "error: a\\nb: unknown key", "error: c\\u2028d: unknown key", "error: \\u3164: unknown key"], err


def test_a_results_folder_whose_name_is_not_utf8_loads(tmp_path):
    # Red-team pass: a run folder copied under a name that is not UTF-8 (by another tool: cclab refuses to
    # write one) read as "timeseries.parquet: is not a timeseries.parquet as cclab writes it:
    # UnicodeEncodeError …; it may be truncated" (pyarrow encodes paths as UTF-8).
    cclab.run(BASE, tmp_path / "a", progress=False, plots=False, trace_packets=True)
    odd = os.fsencode(str(tmp_path)) + b"/r\xff"
    shutil.copytree(tmp_path / "a", os.fsdecode(odd))
    res = cclab.Result.load(os.fsdecode(odd))
    assert res.summary["scenario"] == "t" and len(res.flows) > 0 and res.trace is not None


def test_an_unknown_experiment_id_with_a_newline_is_one_line():
    # Red-team pass: `cclab reproduce $'a\nb'` printed "error: experiments: unknown a" and "error: b; allowed: …".
    line = one_error_line(cclab_cli("reproduce", "a\nb"), "experiments: unknown a\\nb; allowed: F1")
    assert line.endswith(" or all")
