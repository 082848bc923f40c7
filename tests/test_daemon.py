"""The warm server (`cclab daemon start`, python/cclab/daemon.py): a command run through it does what the
same command does in a process of its own (files, output, exit codes, Ctrl-C), and a command is never
handed to a server of other code."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cclab import daemon_client

CCLAB = [sys.executable, "-m", "cclab.launch"]
ONE = """name = "one"
duration = "1s"
seed = 1
[topology]
kind = "dumbbell"
[topology.bottleneck]
rate = "100Mbps"
buffer = "BDP"
[[flows]]
cc = "newreno"
count = 2
rtt = "40ms"
"""


def cclab(args, env, **kw):
    return subprocess.run([*CCLAB, *args], env=env, capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server in a runtime folder of its own; yields (environment for served commands, its log)."""
    rt = Path(tempfile.mkdtemp(prefix="cc"))  # short: a socket's path has at most 107 bytes
    env = dict(os.environ, XDG_RUNTIME_DIR=str(rt))
    env.pop("CCLAB_DAEMON", None)
    r = cclab(["daemon", "start", "--idle", "300"], env)
    assert r.returncode == 0, r.stderr
    assert "ready at" in r.stdout
    yield env, rt / "cclab" / "daemon.log"
    cclab(["daemon", "stop"], env)
    shutil.rmtree(rt, ignore_errors=True)


def served(log: Path) -> list[str]:
    """The log's lines of commands that ended."""
    return [line for line in log.read_text().splitlines() if " runner " in line and " -> " in line]


def test_a_run_through_the_server_writes_what_a_fresh_process_writes(server, tmp_path):
    env, log = server
    (tmp_path / "one.toml").write_text(ONE)
    before = len(served(log))
    a = cclab(["run", "one.toml", "-o", "a", "--no-plots", "-q"], env, cwd=tmp_path)
    b = cclab(["run", "one.toml", "-o", "b", "--no-plots", "-q"], dict(env, CCLAB_DAEMON="0"), cwd=tmp_path)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    # The server ran the first (its log has one more command, in this folder), not the second.
    lines = served(log)[before:]
    assert len(lines) == 1 and f"in {tmp_path}: run one.toml -o a" in lines[0] and lines[0].endswith("exit 0")
    # The same table and lines, but for the folder and the loop's speed (events per second, a timing).
    def same(text):
        return [x for x in text.replace("wrote a/", "wrote b/").splitlines() if "events/s" not in x]

    assert same(a.stdout) == same(b.stdout) and len(same(b.stdout)) > 5
    sa, sb = (json.loads((tmp_path / d / "summary.json").read_text()) for d in "ab")
    # What differs by nature: the folder, the call that names it, the run's id and its wall time.
    for s in (sa, sb):
        s.pop("meta")
        s["sim"].pop("wall_s")
    assert sa == sb
    assert pq.read_table(tmp_path / "a" / "timeseries.parquet").equals(pq.read_table(tmp_path / "b" / "timeseries.parquet"))


def test_the_figures_through_the_server_are_the_same_files(server, tmp_path):
    # The server has matplotlib imported; its runner's figures' worker is a fork of the runner
    # (plotproc._Forked) instead of a new interpreter. Same figures, byte for byte.
    env, log = server
    (tmp_path / "one.toml").write_text(ONE)
    a = cclab(["run", "one.toml", "-o", "a", "-q"], env, cwd=tmp_path)
    b = cclab(["run", "one.toml", "-o", "b", "-q"], dict(env, CCLAB_DAEMON="0"), cwd=tmp_path)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert served(log)[-1].endswith("run one.toml -o a -q -> exit 0")
    pngs = sorted(p.name for p in (tmp_path / "a").glob("*.png"))
    assert pngs == ["cdf.png", "cwnd.png", "queue.png", "rate.png", "throughput_delay.png"]
    for name in pngs:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_bad_input_gets_the_same_error_and_exit_code(server, tmp_path):
    env, _ = server
    (tmp_path / "bad.toml").write_text(ONE.replace('count = 2', 'count = "2"'))
    for args in (["run", "bad.toml", "--no-plots"], ["validate", "missing.toml"], ["run"], ["nosuchcommand"]):
        a = cclab(args, env, cwd=tmp_path)
        b = cclab(args, dict(env, CCLAB_DAEMON="0"), cwd=tmp_path)
        assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr), args
        assert a.returncode == 2, args


def test_the_command_gets_its_own_environment_stdin_and_umask(server, tmp_path):
    env, _ = server
    # `cclab validate -`-like reading is not a command of cclab's, so ask Python inside the runner through
    # a command that prints from the environment: CCLAB_DEBUG changes what an internal error prints.
    (tmp_path / "one.toml").write_text(ONE)
    r = cclab(["run", "one.toml", "-o", "u", "--no-plots", "-q"], env, cwd=tmp_path,
              preexec_fn=lambda: os.umask(0o077))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "u" / "summary.json").stat().st_mode & 0o077 == 0
    r = cclab(["run", "one.toml", "-o", "v", "--no-plots", "-q"], env, cwd=tmp_path,
              preexec_fn=lambda: os.umask(0o022))
    assert (tmp_path / "v" / "summary.json").stat().st_mode & 0o044 == 0o044


def test_ctrl_c_reaches_the_command(server, tmp_path):
    env, log = server
    long = ONE.replace('duration = "1s"', 'duration = "3000s"').replace('rate = "100Mbps"', 'rate = "1Gbps"')
    (tmp_path / "long.toml").write_text(long)
    p = subprocess.Popen([*CCLAB, "run", "long.toml", "-o", "x", "--no-plots", "-q"], env=env, cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not [x for x in log.read_text().splitlines() if "run long.toml" in x and x.endswith("(started)")] \
            and time.monotonic() < deadline:
        time.sleep(0.2)
        if p.poll() is not None:
            break
    time.sleep(1.5)  # the run is simulating by now
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted: nothing written" in err
    assert not (tmp_path / "x" / "summary.json").exists()


def test_a_changed_installation_is_never_served(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(daemon_client, "PACKAGE", str(pkg))
    first = daemon_client.fingerprint()
    assert daemon_client.fingerprint() == first
    st = (pkg / "a.py").stat()
    os.utime(pkg / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert daemon_client.fingerprint() != first
    (pkg / "b.py").write_text("")
    assert len({first, daemon_client.fingerprint()}) == 2


def test_a_folder_others_can_enter_is_not_trusted(monkeypatch):
    tmp_path = Path(tempfile.mkdtemp(prefix="cc"))  # short, or runtime_dir would fall back to /tmp/cclab-<uid>
    d = tmp_path / "cclab"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("CCLAB_DAEMON", raising=False)
    assert not daemon_client.safe_dir(str(d))
    assert daemon_client.run(["cclab", "run", "x.toml"]) is None
    os.chmod(d, 0o700)
    assert daemon_client.safe_dir(str(d))
    # No server listening: the command runs in its own process.
    assert daemon_client.run(["cclab", "run", "x.toml"]) is None
    shutil.rmtree(tmp_path)


def test_an_idle_server_stops_and_removes_its_socket():
    rt = Path(tempfile.mkdtemp(prefix="cc"))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(rt))
    env.pop("CCLAB_DAEMON", None)
    # 5 s: long enough that the status below finds it on a loaded machine (a command starts in ≤ 1 s).
    r = cclab(["daemon", "start", "--idle", "5"], env)
    assert r.returncode == 0, r.stderr
    assert cclab(["daemon", "status"], env).returncode == 0
    deadline = time.monotonic() + 30
    while list((rt / "cclab").glob("daemon-*.sock")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not list((rt / "cclab").glob("daemon-*.sock"))
    s = cclab(["daemon", "status"], env)
    assert s.returncode == 1 and "no server for this installation" in s.stdout
    shutil.rmtree(rt, ignore_errors=True)


def test_the_command_gets_its_own_limits_and_niceness(server, tmp_path):
    # A command under `ulimit` (and `nice`: not observable from outside) runs under them in the runner, as in a process of its own: a
    # run whose file-size limit (10 kB) is below its time series' size (19 kB) fails to write it, both
    # ways alike.
    env, log = server
    (tmp_path / "one.toml").write_text(ONE)

    def limited():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        os.nice(5)

    a = cclab(["run", "one.toml", "-o", "a", "--no-plots", "-q"], env, cwd=tmp_path, preexec_fn=limited)
    b = cclab(["run", "one.toml", "-o", "b", "--no-plots", "-q"], dict(env, CCLAB_DAEMON="0"), cwd=tmp_path,
              preexec_fn=limited)
    assert served(log)[-1].endswith("run one.toml -o a --no-plots -q -> exit 1"), served(log)[-1]
    assert (a.returncode, a.stderr.replace("/a/", "/b/")) == (b.returncode, b.stderr) and a.returncode == 1, a.stderr
    assert "File too large" in a.stderr


def test_a_real_run_goes_through_the_server_too(server, tmp_path):
    # `cclab net run` (namespaces, the emulator, kernel TCP beside ours) from a forked runner: the same
    # command as from a shell. Checks that it runs and reports, not its timing (realtime pass, alone).
    from cclab import net

    ok, why = net.check()
    if not ok:
        pytest.skip(f"real datapath unavailable: {why}")
    env, log = server
    (tmp_path / "tiny.toml").write_text(ONE.replace('duration = "1s"', 'duration = "2s"')
                                        .replace('rate = "100Mbps"', 'rate = "20Mbps"')
                                        .replace('cc = "newreno"\ncount = 2', 'cc = "kernel:cubic"\ncount = 2'))
    r = cclab(["net", "run", "tiny.toml", "-o", "n", "--no-plots", "-q"], env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert served(log)[-1].endswith("net run tiny.toml -o n --no-plots -q -> exit 0")
    s = json.loads((tmp_path / "n" / "summary.json").read_text())
    assert s["net"]["mode"] == "tun" and len(s["flows"]) == 2
    assert all(f["goodput_bps"] > 1e6 for f in s["flows"])  # 20 Mbit/s shared by two: each well above 1


@pytest.mark.parametrize("name,value", [("CCLAB_DAEMON", "off"), ("CCLAB_DEBUG", "0x"), ("CCLAB_PLOT_PROCESS", "yes"),
                                        ("CCLAB_PLOT_SPLIT", "2")])
def test_a_switch_that_is_neither_0_nor_1_is_refused(tmp_path, name, value):
    # Read as neither, CCLAB_DAEMON=off used to mean "use the server": refused, naming the switch, what it
    # takes and what each value does, before anything runs or is written.
    (tmp_path / "one.toml").write_text(ONE)
    env = dict(os.environ, **{name: value})
    r = cclab(["run", "one.toml", "-o", "out", "--no-plots", "-q"], env, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: {name}={value!r}: allowed values are 0 or 1 ("), r.stderr
    assert not (tmp_path / "out").exists()
    ok = cclab(["run", "one.toml", "-o", "out", "--no-plots", "-q"], dict(env, **{name: ""}), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr  # empty is unset: the default


def test_a_client_with_another_hash_seed_or_interpreter_flags_is_not_served(server, tmp_path):
    # A forked runner keeps the server's hash seed and flags: a command run with others runs cold instead.
    env, log = server
    (tmp_path / "one.toml").write_text(ONE)
    before = len(served(log))
    for extra, args in (({"PYTHONHASHSEED": "123"}, []), ({}, ["-X", "dev"]), ({}, ["-O"])):
        r = subprocess.run([sys.executable, *args, "-m", "cclab.launch", "run", "one.toml", "-o", "x", "--no-plots",
                            "-q"], env=dict(env, **extra), cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "x" / "summary.json").exists()
    assert len(served(log)) == before
    fp = [subprocess.run([sys.executable, *args, "-c", "from cclab import daemon_client as d; print(d.fingerprint())"],
                         env=dict(env, **extra), capture_output=True, text=True, check=True).stdout
          for extra, args in (({}, []), ({"PYTHONHASHSEED": "123"}, []), ({}, ["-X", "dev"]))]
    assert len(set(fp)) == 3, fp
    # The command the server does serve, to show it was up all along.
    ok = cclab(["run", "one.toml", "-o", "y", "--no-plots", "-q"], env, cwd=tmp_path)
    assert ok.returncode == 0 and len(served(log)) == before + 1, ok.stderr
