"""Sweeps on a Dask cluster whose workers share nothing with the driver (issue 31, items 1-2): every run
reaches the driver's folder when the workers cannot see it, a worker SIGKILLed mid-sweep costs no run and
duplicates none, and a sweep whose runs all fail exits non-zero saying why.

The scheduler and workers are real processes (``dask scheduler`` / ``dask worker --no-nanny``), each in its
own process group, killed with it when a test ends. A worker "without the driver's filesystem" runs under
``unshare --mount`` with a private tmpfs over /tmp, where pytest's folders (the driver's output) live."""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from sweepfile import base_toml

import cclab
from cclab import sweep as sw

dask_distributed = pytest.importorskip("dask.distributed")

BIN = Path(sys.executable).parent
SWEEP = "seeds = {seeds}\n" + base_toml("cl", "0.5s") + '[grid]\n"flows[0].rtt" = ["20ms", "40ms"]\n'

# Loaded by every Python process of a worker (sitecustomize): logs "start|done <pid> <rtt> <seed>" around each
# simulation into $CL_MARK, sleeps $CL_SLEEP s first (a run long enough to kill a worker inside it), and raises
# in every run when $CL_RAISE is set.
HOOK = r'''
import json, os, time
if os.environ.get("CL_MARK"):
    import cclab.runner as _r
    _orig = _r.run

    def run(scenario, *a, **k):
        tag = f"{os.getpid()} {scenario['flows'][0]['rtt']} {scenario['seed']}"
        def mark(what):
            with open(os.environ["CL_MARK"], "a") as f:
                f.write(f"{what} {tag}\n")
        mark("start")
        if os.environ.get("CL_RAISE"):
            raise RuntimeError("refused by the test's hook")
        time.sleep(float(os.environ.get("CL_SLEEP", "0")))
        res = _orig(scenario, *a, **k)
        mark("done")
        return res

    _r.run = run
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(proc: subprocess.Popen) -> None:
    """Kills the process group of ``proc`` (started with start_new_session) and reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class Cluster:
    """A scheduler on a free local port and the workers started on it; ``close`` kills them all."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.hidden = tmp.parent  # pytest's base folder: what an isolated worker must not see
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen] = []
        log = open(tmp / "scheduler.log", "w")
        self.procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", self.address.rsplit(":", 1)[1],
             "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def worker(self, env: dict, isolated: bool = False) -> subprocess.Popen:
        args = [str(BIN / "dask"), "worker", self.address, "--no-nanny", "--nthreads", "1", "--no-dashboard",
                "--death-timeout", "60"]
        if isolated:
            # A mount namespace of its own with a fresh tmpfs over pytest's base folder (self.hidden), which
            # holds every test's folder and so the driver's output; the worker's scratch space (TMPDIR) is
            # inside that tmpfs, so whatever it writes stays there. Not a tmpfs over the whole /tmp: the
            # checkout and its venv may live there (a fresh clone in /tmp/<dir> did, and the worker could
            # not start).
            h = shlex.quote(str(self.hidden))
            args = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                    f'mount -t tmpfs cclab-worker {h} && mkdir {h}/w && cd {h}/w && TMPDIR={h}/w exec "$@"',
                    "sh", *args, "--local-directory", str(self.hidden / "w")]
        else:
            d = self.tmp / f"worker{len(self.procs)}"
            d.mkdir()
            args += ["--local-directory", str(d)]
        log = open(self.tmp / f"worker{len(self.procs)}.log", "w")
        p = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def wait_for(self, n: int) -> None:
        with dask_distributed.Client(self.address, timeout=30) as c:
            c.wait_for_workers(n, timeout=60)

    def close(self) -> None:
        for p in reversed(self.procs):
            _kill(p)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def _hooked(tmp_path: Path, **env: str) -> dict:
    d = tmp_path / "hook"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(HOOK)
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(d)] + [x for x in [os.environ.get("PYTHONPATH")] if x]))
    e.update(env)
    return e


def _marks(path: Path) -> list[tuple[str, int, str, int]]:
    if not path.exists():
        return []
    return [(w, int(pid), rtt, int(seed)) for w, pid, rtt, seed in (x.split() for x in path.read_text().splitlines())]


def _sweep(p: Path, out: Path, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cclab.cli", "sweep", str(p), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=timeout)


def _ns(pid: int, script: str) -> str:
    """Runs ``script`` in the mount namespace of process ``pid`` (what that worker sees)."""
    return subprocess.run(["nsenter", "-t", str(pid), "-m", "--", "sh", "-c", script], capture_output=True,
                          text=True, timeout=20, check=True).stdout


def _isolation_problem() -> str:
    if not sys.platform.startswith("linux"):
        return "mount namespaces are Linux's"
    if os.geteuid() != 0:
        return "needs root (unshare --mount and mount -t tmpfs)"
    for tool in ("unshare", "nsenter", "mount"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                        "mount -t tmpfs x /mnt"], capture_output=True, text=True)
    return "" if r.returncode == 0 else f"unshare --mount with a tmpfs fails here: {r.stderr.strip()}"


@pytest.mark.skipif(bool(_isolation_problem()), reason=_isolation_problem() or "-")
def test_a_worker_without_the_drivers_filesystem_returns_every_run(tmp_path, cluster):
    # Before: the worker wrote runs/<id>/ into its own /tmp, the driver printed "no finished runs" and exited 0.
    p = tmp_path / "s.toml"
    p.write_text(SWEEP.format(seeds=3))  # 2 grid points x 3 seeds = 6 runs
    out = tmp_path / "out"
    w = cluster.worker(dict(os.environ), isolated=True)
    cluster.wait_for(1)
    # The worker cannot see the driver's folder (nor pytest's).
    assert _ns(w.pid, f"test -e {tmp_path} && echo seen || echo unseen").strip() == "unseen"
    r = _sweep(p, out, "--scheduler", cluster.address)
    assert r.returncode == 0, r.stderr[-3000:]
    ids = {q.id for q in sw.expand(*sw.load(p))}
    assert sw.finished(out) == ids and len(ids) == 6
    assert not [f.name for f in (out / "runs").iterdir() if f.name.endswith((".partial", ".lock"))]
    assert len(pd.read_csv(out / "results.csv")) == 6
    # Every file a run writes came back (summary, spec, point, time series), byte for byte as a local run's.
    local = tmp_path / "local"
    assert _sweep(p, local, "-j", "1").returncode == 0
    for rid in ids:
        names = sorted(f.name for f in (local / "runs" / rid).iterdir())
        assert sorted(f.name for f in (out / "runs" / rid).iterdir()) == names and "timeseries.parquet" in names
        assert (out / "runs" / rid / "spec.json").read_bytes() == (local / "runs" / rid / "spec.json").read_bytes()
    # `cclab reproduce --scheduler` goes the same way (cclab.executor): two quick M2 runs land in the driver's folder.
    from cclab import reproduce as rp

    jobs = rp._jobs("M2", tmp_path / "rp", True, (1, 2))[:2]
    assert rp._run_jobs(jobs, None, cluster.address, lambda n, t: None, 0, len(jobs)) == 2
    assert all(len(cclab.Result.load(where).summary["flows"]) >= 1 for _, where in jobs)
    # And they count as finished here: the resume identity is the code's build id, not the git commit (other
    # commits may land in this checkout between the worker's start and this process's).
    assert all(rp._finished(d, where) for d, where in jobs)
    # The worker kept nothing: its scratch tmpfs holds only Dask's own folder, no run's scratch and no run's files.
    h = shlex.quote(str(cluster.hidden))
    seen = _ns(w.pid, f"ls -A {h}; find {h} -name 'cclab-run-*' -o -name summary.json -o -name 'runs'").split()
    assert seen == ["w"], seen


def test_a_worker_killed_mid_sweep_costs_no_run_and_duplicates_none(tmp_path, cluster):
    p = tmp_path / "s.toml"
    p.write_text(SWEEP.format(seeds=4))  # 8 runs
    out, log = tmp_path / "out", tmp_path / "marks"
    env = _hooked(tmp_path, CL_MARK=str(log), CL_SLEEP="0.8")
    workers = [cluster.worker(env), cluster.worker(env)]
    cluster.wait_for(2)
    driver = subprocess.Popen([sys.executable, "-m", "cclab.cli", "sweep", str(p), "--out", str(out),
                               "--scheduler", cluster.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        # SIGKILL the first worker once a run has landed and it has started a run *after* that (it sleeps
        # 0.8 s there, so the kill comes well inside it). Not merely "busy when a run landed": the two
        # workers start together, so when the first run lands the other is at the end of its own, and a
        # fresh clone's CI once killed it just after it had finished (nothing was cut).
        victim, deadline, seen = None, time.monotonic() + 60, None
        while victim is None and time.monotonic() < deadline and driver.poll() is None:
            m = _marks(log)
            if seen is None and sw.finished(out):
                seen = len(m)  # marks written before the first run landed
            if seen is not None:
                fresh = [run for w, pid, *run in m[seen:] if w == "start" and pid == workers[0].pid]
                if any(("done", workers[0].pid, *run) not in m for run in fresh):
                    victim = workers[0]
            time.sleep(0.02)
        assert victim is not None, "the sweep ended before a worker could be killed"
        os.kill(victim.pid, signal.SIGKILL)
        before = _marks(log)
        _, stderr = driver.communicate(timeout=120)
    finally:
        _kill(driver)
    assert driver.returncode == 0, stderr[-3000:]
    ids = {q.id for q in sw.expand(*sw.load(p))}
    assert sw.finished(out) == ids and len(pd.read_csv(out / "results.csv")) == 8
    assert not [f.name for f in (out / "runs").iterdir() if f.name.endswith((".partial", ".lock"))]
    m = _marks(log)
    # The run the killed worker was inside never finished there; it finished on the other worker.
    cut = [tuple(run) for w, pid, *run in before if w == "start" and pid == victim.pid
           and ("done", pid, *run) not in before]
    assert cut, before
    survivor = workers[1].pid
    assert all(("done", survivor, *run) in m for run in cut), m
    # Each of the 8 runs is in the table once (the folder is named by the run's id; one row per id).
    t = pd.read_csv(out / "results.csv")
    assert sorted(t["run"]) == sorted(ids)


def test_cclab_cluster_local_serves_a_sweep_and_ctrl_c_stops_it(tmp_path):
    # The recipe of docs/sweep.md: `cclab cluster local` prints the address to pass as --scheduler. Its workers
    # inherit its environment, so the test's hook makes every run fail: a sweep whose runs all fail exits 1
    # saying why (before, runs lost on a cluster ended in "no finished runs" and exit 0).
    p = tmp_path / "s.toml"
    p.write_text(SWEEP.format(seeds=1))  # 2 runs
    env = _hooked(tmp_path, CL_MARK=str(tmp_path / "marks"), CL_RAISE="1")
    proc = subprocess.Popen([sys.executable, "-m", "cclab.cli", "cluster", "local", "--workers", "1", "--port", "0"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        first = proc.stdout.readline()  # blocks until the cluster is up (or the command died: "")
        m = re.search(r"tcp://[\d.]+:\d+", first)
        assert m, (first, proc.stderr.read() if proc.poll() is not None else "")
        address = m.group(0)
        assert "with 1 worker (1 thread each)" in first
        kids = _children(proc.pid)
        r = _sweep(p, tmp_path / "out", "--scheduler", address)
        assert r.returncode == 1, (r.returncode, r.stdout, r.stderr[-3000:])
        assert "2 of 2 runs failed" in r.stderr and "refused by the test's hook" in r.stderr, r.stderr[-3000:]
        assert "Traceback" not in r.stderr
        assert len(_marks(tmp_path / "marks")) == 2  # each run was tried once, on the cluster
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.wait(timeout=30)
        # Its worker processes are gone with it (LocalCluster closes them).
        end = time.monotonic() + 10
        while time.monotonic() < end and any(_alive(k) for k in kids):
            time.sleep(0.1)
        assert kids and not [k for k in kids if _alive(k)]
    finally:
        _kill(proc)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st[st.rindex(")") + 2] != "Z"
