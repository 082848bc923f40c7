"""`cclab sweep`: grids expand and validate naming the grid key, runs are deterministic wherever they
run (local processes or a Dask cluster), and an interrupted sweep resumes without losing or repeating a
finished run."""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from sweepfile import base_toml

import cclab
from cclab import sweep as sw
from cclab.scenario import ScenarioError

BASE = base_toml("sw", "{dur}", "0.5s", ("40ms", "80ms"))


def write(tmp_path, grid, seeds="2", dur="3s", name="s.toml"):
    p = tmp_path / name
    p.write_text(f"seeds = {seeds}\n" + BASE.format(dur=dur) + "[grid]\n" + grid)
    return p


def test_grid_expands_to_every_combination_and_seed(tmp_path):
    base, seeds, grid = sw.load(write(tmp_path, '"flows[*].cc" = ["newreno", "cubic"]\n'
                                                '"topology.bottleneck.rate" = ["10Mbps", "20Mbps", "5Mbps"]\n'))
    pts = sw.expand(base, seeds, grid)
    assert len(pts) == 2 * 3 * 2 and len({p.id for p in pts}) == 12
    p = next(p for p in pts if p.values["flows[*].cc"] == "cubic" and p.seed == 2)
    assert [f["cc"] for f in p.scenario["flows"]] == ["cubic", "cubic"] and p.scenario["seed"] == 2
    # Ids are a function of the run alone: the same sweep expands to the same ids.
    assert [q.id for q in sw.expand(base, seeds, grid)] == [q.id for q in pts]


@pytest.mark.parametrize("grid, seeds, field", [
    ('"flows[5].cc" = ["cubic"]\n', "1", "grid.flows[5].cc"),            # no such flow
    ('"flows[0].cc" = ["nosuch"]\n', "1", "flows[0].cc"),                # names the value's field too
    ('"topology.bottleneck.rate" = []\n', "1", "grid.topology.bottleneck.rate"),
    ('"topology.bottleneck.rate" = "10Mbps"\n', "1", "grid.topology.bottleneck.rate"),
    ('"flows[0].cc" = ["cubic"]\n', "0", "seeds"),
    ('"flows[0].cc" = ["cubic"]\n', "[1, 1]", "seeds"),
    ('"flows[0]..cc" = ["cubic"]\n', "1", "grid.flows[0]..cc"),
])
def test_bad_sweeps_name_the_field(tmp_path, grid, seeds, field):
    with pytest.raises(ScenarioError) as e:
        sw.expand(*sw.load(write(tmp_path, grid, seeds)))
    assert field in str(e.value), str(e.value)


def test_cli_bad_sweep_exits_2_naming_the_field(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('scenario = "nope.toml"\nworkers = 3\n')
    r = subprocess.run([sys.executable, "-m", "cclab.cli", "sweep", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: workers: unknown sweep key"), r.stderr
    assert "Traceback" not in r.stderr


def test_runs_are_the_same_as_cclab_run_and_the_table_has_every_run(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    t = sw.run(p, tmp_path / "out", workers=2)
    assert len(t) == 4 and set(t["seed"]) == {1, 2} and set(t["flows[1].rtt_label"]) == {"80ms", "160ms"}
    assert sorted(set(t["flows[1].rtt"])) == pytest.approx([0.08, 0.16])  # seconds: the value, in SI units
    # A sweep run gives what cclab.run gives on the same scenario and seed (wall time aside).
    row = t[(t["flows[1].rtt_label"] == "160ms") & (t["seed"] == 2)].iloc[0]
    d = sw.load(p)[0]
    d["flows"][1]["rtt"] = "160ms"
    direct = cclab.run(dict(d, seed=2), progress=False).summary
    got = json.loads((tmp_path / "out" / "runs" / row["run"] / "summary.json").read_text())
    for k in ("flows", "links", "jain", "conservation"):
        assert got[k] == json.loads(json.dumps(direct[k])), k
    assert row["goodput_mbps"] == pytest.approx(sum(f["goodput_bps"] for f in direct["flows"]) / 1e6)
    assert (tmp_path / "out" / "results.csv").exists() and (tmp_path / "out" / "results.parquet").exists()


def test_resume_runs_only_what_is_missing(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    out = tmp_path / "out"
    sw.run(p, out, workers=1)
    runs = sorted((out / "runs").iterdir())
    # An interrupted attempt left a partial directory, and one finished run was lost.
    lost = runs[0]
    os.rename(lost, Path(f"{lost}.partial"))
    before = {r.name: (r / "summary.json").stat().st_mtime_ns for r in runs[1:]}
    assert len(sw.finished(out)) == 3
    t = sw.run(p, out, workers=1)
    assert len(t) == 4 and not list((out / "runs").glob("*.partial"))
    assert {r: (out / "runs" / r / "summary.json").stat().st_mtime_ns for r in before} == before


def test_ctrl_c_keeps_finished_runs_and_the_same_command_resumes(tmp_path):
    # 24 runs of 2 s at 10 Mbit/s one at a time (~0.1 s each plus start-up); interrupted after a few.
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "60ms", "80ms", "100ms", "120ms", "140ms"]\n', seeds="4",
              dur="20s")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "cclab.cli", "sweep", str(p), "--out", str(out), "-j", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(sw.finished(out)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    kept = sw.finished(out)
    assert proc.returncode == 130, err
    assert "finished runs kept" in err and 3 <= len(kept) < 24, (len(kept), err)
    for r in kept:  # every run counted as finished is complete
        assert {"summary.json", "timeseries.parquet", "spec.json", "point.json"} <= {f.name for f in (out / "runs" / r).iterdir()}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(sw.finished(out)) == 24 and f"({24} runs)" in r.stdout


def test_dask_cluster_gives_the_same_results(tmp_path):
    distributed = pytest.importorskip("distributed")
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n')
    local = sw.run(p, tmp_path / "local", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        remote = sw.run(p, tmp_path / "dask", scheduler=c.scheduler_address)
    cols = ["run", "goodput_mbps", "jain", "utilization", "drops", "mean_queue_pkts"]
    assert local[cols].sort_values("run").reset_index(drop=True).equals(
        remote[cols].sort_values("run").reset_index(drop=True))


def test_linked_keys_and_the_shipped_example(tmp_path):
    ex = Path(__file__).resolve().parents[1] / "sweeps" / "binomial_kl.toml"
    pts = sw.expand(*sw.load(ex))
    assert len(pts) == 3 * 2 * 10
    assert {(p.values["flows[1].params.k"], p.values["flows[1].params.l"]) for p in pts} == {
        (0.25, 0.25), (0.5, 0.5), (0.75, 0.75)}
    assert all(p.scenario["flows"][1]["params"] == {"k": p.values["flows[1].params.k"],
                                                     "l": p.values["flows[1].params.l"]} for p in pts)
    with pytest.raises(ScenarioError, match="linked keys"):
        sw.expand(*sw.load(write(tmp_path, '"flows[0].rtt, flows[1].rtt" = [["10ms"]]\n', "1")))


# --- Hardening: SIGKILL, concurrent sweeps, a different sweep in the folder, failing runs --------------
# The subprocess tests below load a sitecustomize hook (HOOK) that wraps cclab.runner.run in every process
# of the sweep: it logs "start|done <run id> <pid> <time>" around each simulation into $SWEEP_MARK, sleeps
# $SWEEP_SLEEP seconds first (so a run is long enough to be killed inside), and on request makes the run
# whose scenario contains $SWEEP_RAISE raise an unpicklable BaseException (as pyo3's PanicException is), or
# the run containing $SWEEP_DIE SIGKILL its own worker (every time, or once if $SWEEP_DIE_ONCE names a file).

HOOK = r'''
import json, os, signal, time
if os.environ.get("SWEEP_MARK"):
    import cclab.runner as _r
    from cclab import sweep as _sw
    _orig = _r.run

    def run(scenario, *a, **k):
        rid = _sw._run_id(scenario, scenario["seed"])
        def mark(what):
            with open(os.environ["SWEEP_MARK"], "a") as f:
                f.write(f"{what} {rid} {os.getpid()} {time.time()!r}\n")
        mark("start")
        blob = json.dumps(scenario)
        die = os.environ.get("SWEEP_DIE")
        if die and die in blob:
            once = os.environ.get("SWEEP_DIE_ONCE")
            if not once or not os.path.exists(once):
                if once:
                    open(once, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        boom = os.environ.get("SWEEP_RAISE")
        if boom and boom in blob:
            class Boom(BaseException):  # local: cannot be pickled, like pyo3_runtime.PanicException
                pass
            raise Boom("boom in " + rid)
        time.sleep(float(os.environ.get("SWEEP_SLEEP", "0")))
        res = _orig(scenario, *a, **k)
        mark("done")
        return res

    _r.run = run
'''

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def hooked(tmp_path, **env):
    d = tmp_path / "hook"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(HOOK)
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(d)] + [x for x in [os.environ.get("PYTHONPATH")] if x]))
    e.update(env)
    return e


def marks(path):
    """[(what, run id, pid, time)] from the hook's log."""
    if not Path(path).exists():
        return []
    return [(w, r, int(p), float(t)) for w, r, p, t in (line.split() for line in Path(path).read_text().splitlines())]


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                kids.append(int(d))
    return kids


def alive(pid):
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st[st.rindex(")") + 2] != "Z"


def sweep_cmd(p, out, *extra):
    return [sys.executable, "-m", "cclab.cli", "sweep", str(p), "--out", str(out), *extra]


def leftovers(out):
    return sorted(f.name for f in (out / "runs").iterdir() if f.name.endswith((".partial", ".lock")))


@linux_only
def test_sigkill_of_the_sweep_kills_its_workers_and_the_resume_does_each_run_once(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "80ms", "120ms", "160ms"]\n')  # 8 runs
    out, log = tmp_path / "out", tmp_path / "marks"
    ids = {q.id for q in sw.expand(*sw.load(p))}
    proc = subprocess.Popen(sweep_cmd(p, out, "-j", "2"), env=hooked(tmp_path, SWEEP_MARK=str(log), SWEEP_SLEEP="0.6"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set = set()
    try:
        # Kill once two runs are finished and a worker has just started another (it sleeps 0.6 s in it).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            workers |= set(children(proc.pid))
            m = marks(log)
            done = {r for w, r, _, _ in m if w == "done"}
            fresh = [r for w, r, _, t in m if w == "start" and r not in done and time.time() - t < 0.4]
            if len(sw.finished(out)) >= 2 and fresh:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep ended before it could be killed"
        workers |= set(children(proc.pid))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t_kill = time.time()
        kept = sw.finished(out)
        assert 2 <= len(kept) < 8 and len(workers) >= 2
        deadline = time.monotonic() + 5
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [w for w in workers if alive(w)], "worker processes outlived the killed sweep"
    finally:
        for w in workers:
            if alive(w):
                os.kill(w, signal.SIGKILL)
    r = subprocess.run(sweep_cmd(p, out, "-j", "2"), env=hooked(tmp_path, SWEEP_MARK=str(log)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sw.finished(out) == ids and not leftovers(out)
    # Exactly once: a run kept before the kill is not simulated again, every other run exactly once more.
    after = [rid for w, rid, _, t in marks(log) if w == "done" and t > t_kill]
    assert all(after.count(rid) == (0 if rid in kept else 1) for rid in ids), (after, kept)
    assert len(pd.read_csv(out / "results.csv")) == 8 == len(sw.table(out))


@linux_only
def test_two_sweeps_into_one_folder_do_each_run_once(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "80ms", "120ms"]\n')  # 6 runs
    out, log = tmp_path / "out", tmp_path / "marks"
    env = hooked(tmp_path, SWEEP_MARK=str(log), SWEEP_SLEEP="0.3")
    procs = [subprocess.Popen(sweep_cmd(p, out, "-j", "1"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    res = [(q.communicate(timeout=120), q.returncode) for q in procs]
    assert [rc for _, rc in res] == [0, 0], [err for (_, err), _ in res]
    ids = {q.id for q in sw.expand(*sw.load(p))}
    done = [rid for w, rid, _, _ in marks(log) if w == "done"]
    assert sorted(done) == sorted(ids), "a run was simulated twice"
    assert sw.finished(out) == ids and not leftovers(out) and len(pd.read_csv(out / "results.csv")) == 6


def test_a_different_sweep_into_the_same_folder_is_refused_unless_forced(tmp_path):
    big = write(tmp_path, '"flows[1].rtt" = ["40ms", "80ms", "120ms"]\n', seeds="1", name="big.toml")
    small = write(tmp_path, '"flows[1].rtt" = ["40ms", "80ms"]\n', seeds="1", name="small.toml")
    out = tmp_path / "out"
    assert len(sw.run(big, out, workers=2)) == 3
    r = subprocess.run(sweep_cmd(small, out), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "different sweep" in r.stderr and "--force" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(pd.read_csv(out / "results.csv")) == 3
    r = subprocess.run(sweep_cmd(small, out, "--force"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "(2 runs)" in r.stdout, r.stderr
    # The old sweep's third run stays in runs/ but not in the table.
    assert len(sw.finished(out)) == 3
    for t in (pd.read_csv(out / "results.csv"), sw.table(out)):
        assert len(t) == 2 and set(t["flows[1].rtt_label"]) == {"40ms", "80ms"}
    # The same sweep again is not a different one.
    assert len(sw.run(small, out, workers=1)) == 2


def test_a_value_that_used_to_panic_is_refused_before_any_run(tmp_path):
    # A min_rto above the transport's 60 s maximum RTO used to panic in Rust (clamp with min > max) in the
    # middle of a sweep; it is bad input, refused when the grid is expanded, before anything runs.
    p = write(tmp_path, '"transport.min_rto" = ["200ms", "61s"]\n', seeds="1")
    bad = next(q for q in sw.expand(*sw.load(p), validate=False) if q.values["transport.min_rto"] == "61s")
    with pytest.raises(ScenarioError, match=re.escape('transport.min_rto: must be <= 60 s, got "61s"')):
        cclab.run(bad.scenario, progress=False)
    out = tmp_path / "out"
    r = subprocess.run(sweep_cmd(p, out, "-j", "2"), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "panicked at" not in r.stderr, r.stderr
    assert "grid (transport.min_rto = '61s'): transport.min_rto: must be <= 60 s" in r.stderr, r.stderr
    assert not (out / "runs").exists()


@linux_only
def test_a_run_that_raises_or_kills_its_worker_fails_alone(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "120ms", "160ms", "200ms"]\n', seeds="1")
    out, log = tmp_path / "out", tmp_path / "marks"
    env = hooked(tmp_path, SWEEP_MARK=str(log), SWEEP_RAISE='"120ms"', SWEEP_DIE='"160ms"', SWEEP_SLEEP="0.2")
    r = subprocess.run(sweep_cmd(p, out, "-j", "2"), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "pickl" not in r.stderr.lower(), r.stderr
    assert "2 of 4 runs failed" in r.stderr, r.stderr
    assert "flows[1].rtt = '120ms', seed 1: Boom: boom in" in r.stderr, r.stderr
    assert "flows[1].rtt = '160ms', seed 1: its worker process died" in r.stderr, r.stderr
    ok = {q.id for q in sw.expand(*sw.load(p)) if q.values["flows[1].rtt"] in ("40ms", "200ms")}
    assert sw.finished(out) == ok and not leftovers(out) and len(pd.read_csv(out / "results.csv")) == 2
    # Failed runs are not finished: the same sweep again (in this process, without the hook) retries them.
    assert len(sw.run(p, out, workers=2)) == 4 and not (out / "failed.json").exists()


@linux_only
def test_a_worker_killed_once_under_a_run_is_retried(tmp_path):
    p = write(tmp_path, '"flows[1].rtt" = ["40ms", "120ms", "160ms"]\n', seeds="1")
    out, log = tmp_path / "out", tmp_path / "marks"
    env = hooked(tmp_path, SWEEP_MARK=str(log), SWEEP_DIE='"160ms"', SWEEP_DIE_ONCE=str(tmp_path / "died"))
    r = subprocess.run(sweep_cmd(p, out, "-j", "2"), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and (tmp_path / "died").exists(), r.stderr
    assert len(sw.finished(out)) == 3 and not leftovers(out) and len(pd.read_csv(out / "results.csv")) == 3


def test_a_run_locked_by_a_live_process_is_left_to_it(tmp_path):
    # Another live process (this test, here) holds the lock of one run (flock on runs/<id>.lock, docs/sweep.md)
    # and is writing its .partial folder.
    p = write(tmp_path, '"flows[1].rtt" = ["80ms", "160ms"]\n', seeds="1")
    out, ref = tmp_path / "out", tmp_path / "ref"
    ids = [q.id for q in sw.expand(*sw.load(p))]
    sw.run(p, ref, workers=1)
    runs = out / "runs"
    runs.mkdir(parents=True)
    lock = os.open(runs / f"{ids[0]}.lock", os.O_CREAT | os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    part = runs / f"{ids[0]}.partial"
    part.mkdir()
    (part / "mine").write_text("")
    seen = {}

    def other_process_finishes():
        time.sleep(1.5)
        seen["partial kept"] = (part / "mine").exists()
        shutil.copytree(ref / "runs" / ids[0], part, dirs_exist_ok=True)
        os.rename(part, runs / ids[0])
        os.unlink(runs / f"{ids[0]}.lock")
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)

    th = threading.Thread(target=other_process_finishes)
    th.start()
    try:
        t = sw.run(p, out, workers=2)
    finally:
        th.join()
    # The sweep neither cleaned the partial folder nor ran the run: it waited and took the finished one.
    assert seen["partial kept"] and (runs / ids[0] / "mine").exists()
    assert len(t) == 2 and not leftovers(out)
