"""Runs on worker processes (issue 28, section 2, items 4 and 6): cclab's exceptions cross process
boundaries intact, and a killed `cclab reproduce` leaves no worker behind and resumes to the same report."""
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import cclab
from cclab import errors, sweep as sw
from cclab.errors import ScenarioError


def _exception_classes():
    """Every exception class defined in cclab/errors.py (the module states the package's error types)."""
    return [v for v in vars(errors).values()
            if isinstance(v, type) and issubclass(v, BaseException) and v.__module__ == errors.__name__]


def _instances():
    yield ScenarioError([("flows[0].rtt", "must be a time like \"40ms\", got \"x\""), ("", "a problem with no field")])
    yield ScenarioError([])
    yield sw.RunsFailed([{"run": "abc", "values": {"k": 1}, "seed": 2, "error": "ValueError: x", "stderr": ""}],
                        None, 3, Path("/tmp/out"))


def test_every_error_class_is_listed():
    # A class added to errors.py without an instance above would go untested.
    assert {type(e) for e in _instances()} >= set(_exception_classes())


@pytest.mark.parametrize("exc", list(_instances()), ids=lambda e: type(e).__name__)
def test_exceptions_survive_pickling(exc):
    # Before: ScenarioError(message) on unpickling, which iterated the message's characters as (field,
    # message) pairs and raised ValueError: a worker's error broke the process pool (BrokenProcessPool).
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    if isinstance(exc, ScenarioError):
        assert back.errors == exc.errors
    if isinstance(exc, sw.RunsFailed):
        assert back.failures == exc.failures


def test_a_real_run_interrupted_on_a_worker_pickles_with_its_signal():
    # cclab.net's exceptions cross a process pool too (a sweep of real runs); before, NetInterrupted came
    # back with its message as its partial result and SIGINT as its signal.
    from cclab.net import NetInterrupted, NetUnavailable
    back = pickle.loads(pickle.dumps(NetInterrupted(None, signal.SIGTERM)))
    assert type(back) is NetInterrupted and back.result is None and back.signum == signal.SIGTERM
    assert isinstance(back, KeyboardInterrupt)
    back = pickle.loads(pickle.dumps(NetUnavailable("not root")))
    assert type(back) is NetUnavailable and str(back) == "not root"


def _bad_run(_):
    return cclab.run({"name": "x", "duration": "nonsense"}, None, progress=False, plots=False)


def test_cclab_run_in_a_users_process_pool_raises_scenario_error():
    # Before: concurrent.futures.process.BrokenProcessPool (the worker's ScenarioError did not unpickle).
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("fork")) as ex:
        with pytest.raises(ScenarioError) as e:
            ex.submit(_bad_run, 0).result(timeout=120)
    assert any(f == "duration" for f, _ in e.value.errors), e.value.errors


def _children(pid):
    """The pids whose parent is ``pid`` (from /proc: no psutil needed)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid):
    """Whether ``pid`` runs (a zombie waiting for a parent that does not reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# L1 (60 variants) at one seed, quick: 60 short runs, so the pool is busy when it is killed. The test reproduces
# three times (killed, resumed, fresh); at two seeds that took 32 s of `make test` beside a busy core.
REPRODUCE = ["reproduce", "L1", "--quick", "--seeds", "1", "--max-seeds", "1", "-j", "2"]


def _cclab(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigkilled_reproduce_leaves_no_worker_and_resumes(tmp_path):
    # Before: the pool's workers were re-parented to init and kept running (19 min later, in the red team's
    # test), free to write into the folder a resumed reproduce was using.
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "cclab.cli", *REPRODUCE, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers, deadline = [], time.monotonic() + 120
    try:
        # Killed mid-pool: workers exist, some runs are finished and one is under way (its lock file: the
        # driver holds it from handing the run to a worker until it has written the files the worker returned).
        while time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)
            runs = list((out / "L1").glob("*")) if (out / "L1").exists() else []
            if workers and any(r.name.endswith(".lock") for r in runs) and \
                    sum(r.is_dir() and "." not in r.name for r in runs) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None and workers, "the reproduction ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    # PR_SET_PDEATHSIG: the kernel kills each worker with its parent; 5 s is ample for the signal and exit
    # (the check loops, so a fast machine passes at once).
    end = time.monotonic() + 5
    while time.monotonic() < end and any(_alive(w) for w in workers):
        time.sleep(0.05)
    survivors = [w for w in workers if _alive(w)]
    for w in survivors:  # do not leave them running whatever the verdict
        os.kill(w, signal.SIGKILL)
    assert survivors == [], f"{len(survivors)} of {len(workers)} workers outlived the killed reproduce"
    # The same command resumes: it finishes, leaves no partial folder or lock, and its report is the one an
    # uninterrupted reproduction makes (the runs are deterministic, so the measured text is identical).
    r = _cclab(*REPRODUCE, "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    left = [p.name for p in (out / "L1").iterdir() if p.name.endswith((".partial", ".lock"))]
    assert left == []
    fresh = tmp_path / "fresh"
    assert _cclab(*REPRODUCE, "--out", str(fresh)).returncode == 0
    got, want = (json.loads((d / "L1" / "reproduce.json").read_text()) for d in (out, fresh))
    assert [c["measured"] for c in got["claims"]] == [c["measured"] for c in want["claims"]]
    assert got["seeds"] == want["seeds"] == [1]


def test_a_failing_run_in_a_worker_is_reported_not_a_broken_pool(tmp_path, monkeypatch):
    # A run that raises in a worker (here: an unwritable run folder, a file where its folder's parent
    # should be) is reported with its folder and message once the others are done; the pool survives.
    from cclab import reproduce as rp

    jobs = rp._jobs("M2", tmp_path, True, (1, 2))
    (tmp_path / "blocker").write_text("")
    bad = tmp_path / "blocker" / "run"
    jobs[0] = (jobs[0][0], bad)
    with pytest.raises(rp.RunsFailed) as e:
        rp._run_jobs(jobs, 2, None, lambda n, t: None, 0, len(jobs))
    assert [w for w, _ in e.value.failures] == [str(bad)]
    assert all((w / "summary.json").exists() for _, w in jobs[1:])
    assert pickle.loads(pickle.dumps(e.value)).failures == e.value.failures


@pytest.mark.parametrize("damage", ["summary of another form", "fifo summary", "truncated timeseries"])
def test_a_damaged_finished_run_is_redone(tmp_path, damage):
    # Before: a summary.json holding a list crashed `_finished` (AttributeError: no .get),
    # a FIFO there hung the resume, and a truncated Parquet file failed every later load.
    from cclab import reproduce as rp

    first = rp.reproduce("M2", tmp_path, quick=True, seeds=(1,))
    run = next(p for p in tmp_path.iterdir() if p.is_dir())
    if damage == "summary of another form":
        (run / "summary.json").write_text("[1, 2]")
    elif damage == "fifo summary":
        (run / "summary.json").unlink()
        os.mkfifo(run / "summary.json")
    else:
        data = (run / "timeseries.parquet").read_bytes()
        (run / "timeseries.parquet").write_bytes(data[: len(data) // 2])
    again = rp.reproduce("M2", tmp_path, quick=True, seeds=(1,))
    assert [c.measured for c in again.claims] == [c.measured for c in first.claims]
    assert json.loads((run / "summary.json").read_text())["flows"]


def test_cli_reports_failed_runs_in_one_error_each(tmp_path):
    # A run that cannot be written (here the experiment's folder is a file) fails in its worker: the command
    # says which runs failed and exits 1, with no traceback and no "internal error: BrokenProcessPool".
    (tmp_path / "M2").write_text("not a folder")
    r = _cclab("reproduce", "M2", "--quick", "--seeds", "2", "-j", "2", "--out", str(tmp_path), timeout=300)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert "error: 2 of 2 runs failed" in r.stderr and str(tmp_path / "M2" / "maxnet-seed1") in r.stderr, r.stderr
