"""The error contract (docs/scenario.md "Rejections" and "Limits"), one regression test per class of input
that used to break it: a Rust panic or a hang, a Python traceback, a path outside results/, a run too big
for the machine, and a real run stopped by a signal. Each of these failed before the contract was
enforced (noted per test); the fuzzing of the same contract is tests/test_fuzz_contract.py."""
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import cclab
from cclab import ScenarioError, _native
from cclab.cli import cli

BASE = {
    "name": "t", "duration": "1s", "seed": 1,
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": "BDP", "queue": "droptail"}},
    "flows": [{"cc": "newreno", "rtt": "40ms"}],
}


def scenario(**changes):
    d = copy.deepcopy(BASE)
    d.update(changes)
    return d


def refused(data, field, *words):
    """The ScenarioError ``data`` is refused with; it names ``field`` and its message has ``words``."""
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(data)
    fields = [f for f, _ in e.value.errors]
    assert field in fields, str(e.value)
    msg = dict(e.value.errors)[field]
    for w in words:
        assert w in msg, msg
    assert "line 1 column" not in str(e.value) and "run spec spec" not in str(e.value)
    return msg


def toml(path, text):
    path.write_text(textwrap.dedent(text))
    return path


# ---- Rust panics and hangs: bounded inputs, and no panic reaches Python (before: PanicException, a hang) ----


def test_min_rto_above_the_maximum_rto_is_refused():
    # Before: accepted, then the RTT estimator's clamp panicked ("min > max") mid-run.
    refused(scenario(transport={"min_rto": "100s"}), "transport.min_rto", "<= 60 s")
    refused(scenario(flows=[{"cc": "newreno", "rtt": "40ms", "transport": {"min_rto": "61s"}}]),
            "flows[0].transport.min_rto", "<= 60 s")


def test_a_hand_written_spec_is_checked_by_the_core_not_panicked_on():
    # Before: PanicException (a BaseException: `except Exception` missed it).
    spec = cclab.Scenario.from_dict(BASE).to_spec()
    spec["flows"][0]["transport"]["min_rto"] = 100.0
    with pytest.raises(_native.SpecError) as e:
        _native.run(json.dumps(spec))
    assert e.value.field == "flows[0].transport.min_rto"
    spec["flows"][0]["transport"]["min_rto"] = 0.2
    spec["links"][0]["rate_bps"] = 1e-6  # one packet would take 10^10 s: past the clock
    with pytest.raises(_native.SpecError, match=r"links\[0\]\.rate_bps"):
        _native.validate_spec(json.dumps(spec))


def test_times_and_rates_that_overflow_the_clock_are_refused():
    # Before: accepted; the nanosecond clock saturated or wrapped ("event scheduled in the past"), or
    # Python's int() overflowed while resolving.
    refused(scenario(topology={"bottleneck": {"rate": 1e-6, "buffer": 10}}), "topology.bottleneck.rate", ">= 1 kbit/s")
    refused(scenario(topology={"bottleneck": {"rate": "1e15Gbps"}}), "topology.bottleneck.rate", "<= 10 Tbit/s")
    refused(scenario(flows=[{"cc": "newreno", "rtt": "1e9s"}]), "flows[0].rtt", "<= 1e+06 s")
    refused(scenario(topology={"bottleneck": {"rate": "10Mbps", "delay": "1e12s"}}), "topology.bottleneck.delay")
    refused(scenario(duration="1e7s"), "duration", "<= 1e+06 s")
    refused(scenario(traffic=[{"kind": "onoff", "rate": "1Mbps", "shape": float("inf")}]), "traffic[0].shape")


def test_a_huge_initial_window_is_refused():
    # Before: accepted; 1e10 packets as a first burst (capped at 2^20 by the transport) slowed runs to a
    # crawl (highspeed: 4 s for 5 simulated seconds of one flow).
    refused(scenario(transport={"initial_cwnd": 1e10}), "transport.initial_cwnd", "100000")
    refused(scenario(transport={"initial_cwnd": float("nan")}), "transport.initial_cwnd")
    refused(scenario(transport={"receive_window": "1e20B"}), "transport.receive_window")


def test_a_panic_in_the_core_is_a_runtime_error(capfd):
    # Before: no such guard (and no _panic): a panic was pyo3's PanicException with a Rust backtrace on
    # stderr.
    with pytest.raises(RuntimeError, match="internal error: boom") as e:
        _native._panic("boom")
    assert isinstance(e.value, Exception) and "please report" in str(e.value)
    assert "panicked" not in capfd.readouterr().err


def test_a_flooding_sender_is_refused_by_its_estimate():
    # MaxNet's sender without a MaxNet router paces at window/RTT (786 Gbit/s at 1 ms) into a 100 Mbit/s
    # drop-tail queue: 80 M events per simulated second. Before: no budget, a 100 s run took ~20 min;
    # then the running check stopped it; now the estimate foresees the flood (issue 28 §2.1) and refuses
    # it before it starts. The running event check is tested in crates/cclab-sim/src/sim/budget.rs.
    d = scenario(topology={"bottleneck": {"rate": "100Mbps"}}, flows=[{"cc": "maxnet", "rtt": "1ms"}],
                 limits={"max_events": 5e6})
    t0 = time.monotonic()
    with pytest.raises(ScenarioError) as e:
        cclab.run(d, progress=False)
    assert e.value.errors[0][0] == "limits.max_events" and "needs an estimated" in str(e.value)
    assert time.monotonic() - t0 < 10


# ---- Python tracebacks: every front door raises ScenarioError / exits 2 (before: OverflowError, …) ----


def test_non_finite_quantities_are_refused():
    # Before: OverflowError (cannot convert float infinity to integer).
    refused(scenario(duration="1e400s"), "duration", "finite")
    refused(scenario(topology={"bottleneck": {"rate": "1e400Mbps"}}), "topology.bottleneck.rate", "finite")
    refused(scenario(topology={"bottleneck": {"rate": "10Mbps", "buffer": "1e400BDP"}}), "topology.bottleneck.buffer", "finite")


def test_integers_past_64_bits_are_refused():
    # Before: OverflowError ("Python int too large to convert to C long" in _native.validate_queue).
    refused(scenario(topology={"bottleneck": {"rate": "10Mbps", "buffer": 2**70}}), "topology.bottleneck.buffer",
            "at most 1,000,000,000 packets")
    refused(scenario(packet_size=2**40), "packet_size", "<= 65535 B")
    refused(scenario(seed=2**70), "seed")
    refused(scenario(flows=[{"cc": "newreno", "rtt": "40ms", "size": 10**400}]), "flows[0].size")
    refused(scenario(flows=[{"cc": "newreno", "rtt": "40ms", "params": {"initial_ssthresh": 2**70}}]),
            "flows[0].params.initial_ssthresh", "finite number")


def test_deep_nesting_is_refused_with_where():
    # Before: RecursionError (pydantic, json.dumps).
    deep = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(scenario(flows=[{"cc": "newreno", "rtt": "40ms", "params": {"x": deep}}]))
    field, msg = e.value.errors[0]
    assert field.startswith("flows[0].params.x[0]") and "nested deeper than 32" in msg


def test_non_utf8_and_oversized_files_exit_2(tmp_path):
    # Before: UnicodeDecodeError and (for /dev/zero) MemoryError tracebacks.
    p = tmp_path / "latin1.toml"
    p.write_bytes('name = "caf\xe9"\nduration = "1s"\n'.encode("latin-1"))
    r = CliRunner().invoke(cli, ["validate", str(p)])
    assert r.exit_code == 2, r.output
    assert "not UTF-8 text (byte 0xe9 at line 1, column 12)" in r.output
    # /dev/zero in a child with 4 GiB of address space: reading it whole would end in MemoryError (or, with
    # no cap, in swapping the machine); only regular files are read, so it is refused before any read
    # (issue 28: a FIFO waited for a writer forever). A regular file over 16 MiB is refused by its size.
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY)); "
            "sys.argv = ['cclab', 'validate', '/dev/zero']; from cclab.cli import main; main()")
    r2 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r2.returncode == 2, r2.stderr[-2000:]
    assert "error: /dev/zero: is not a regular file (a device)" in r2.stderr and "Traceback" not in r2.stderr
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(17 << 20)  # sparse: 17 MiB of NULs without writing them
    r3 = CliRunner().invoke(cli, ["validate", str(big)])
    assert r3.exit_code == 2 and "is larger than 16 MiB" in r3.output, r3.output


def test_a_nul_in_the_name_is_refused_before_running():
    # Before: accepted; the run failed *after* simulating, when the results folder was created.
    refused(scenario(name="a\x00b"), "name", "control")


def test_the_results_folder_is_checked_before_simulating(tmp_path, monkeypatch):
    # Before: the simulation ran, then writing failed (FileExistsError / NotADirectoryError / PermissionError
    # tracebacks) and the run was lost.
    calls = []
    real = _native.run
    monkeypatch.setattr(_native, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "sub", Path("/proc/version/x"), "bad\x00name"):
        with pytest.raises(ScenarioError) as e:
            cclab.run(BASE, out, progress=False)
        assert e.value.errors[0][0] == "out", str(e.value)
    assert calls == []
    p = tmp_path / "s.toml"
    p.write_text('duration = "1s"\n[topology.bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    r = CliRunner().invoke(cli, ["run", str(p), "--out", str(blocker / "sub"), "-q", "--no-plots"])
    assert r.exit_code == 2 and "error: --out: cannot write results into" in r.output, r.output
    assert calls == []


def test_no_internals_leak_into_messages():
    # Before: 'flows[0].params.: params: expected value at line 1 column 22' (serde on the JSON we wrote).
    msg = refused(scenario(flows=[{"cc": "newreno", "rtt": "40ms", "params": {"initial_ssthresh": float("nan")}}]),
                  "flows[0].params.initial_ssthresh", "finite")
    assert "column" not in msg


def test_validate_refuses_what_run_would_refuse(tmp_path):
    # Before: `cclab validate` said ok, `cclab run` then failed with "run spec spec: invalid value: integer
    # `69060773480662984`, expected u32 at line 1 column 835".
    p = toml(tmp_path / "rwnd.toml", """
        duration = "1s"
        [transport]
        receive_window = "1e20B"
        [topology.bottleneck]
        rate = "10Mbps"
        [[flows]]
        cc = "newreno"
        rtt = "40ms"
    """)
    r = CliRunner().invoke(cli, ["validate", str(p)])
    assert r.exit_code == 2 and "error: transport.receive_window:" in r.output, r.output


def test_assignment_is_validated():
    # Before: an assignment was not validated; the run then failed with OverflowError or UnitError.
    sc = cclab.Scenario.from_dict(BASE)
    with pytest.raises(ScenarioError, match="duration: must be finite"):
        sc.duration = "1e400s"
    with pytest.raises(ScenarioError, match="rtt"):
        sc.flows[0].rtt = "-5ms"
    sc.flows.append({"cc": "newreno", "rtt": [1]})  # a list edited in place is not seen by assignment...
    with pytest.raises(ScenarioError, match=r"flows\[1\]"):
        cclab.run(sc, progress=False)  # ...but a run validates the scenario again


def test_a_sweep_file_that_is_not_utf8_exits_2(tmp_path):
    # Before: UnicodeDecodeError traceback.
    p = tmp_path / "s.toml"
    p.write_bytes(b'seeds = 2\nscenario = "\xff.toml"\n')
    r = CliRunner().invoke(cli, ["sweep", str(p), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "not UTF-8 text" in r.output, r.output


# ---- names are names: results/<name> stays inside results/ (before: "../../x" wrote outside) ----


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b", "a\\b", "..", ".", ".hidden", "x" * 101, "a\nb",
                                  "\u202eevil", " "])
def test_a_name_is_never_a_path(name):
    refused(scenario(name=name), "name", "plain name")


def test_the_default_results_folder_stays_in_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("s.toml").write_text('name = "../escape"\nduration = "1s"\n[topology.bottleneck]\nrate = "10Mbps"\n'
                              '[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    r = CliRunner().invoke(cli, ["run", "s.toml", "-q", "--no-plots"])
    assert r.exit_code == 2 and "error: name:" in r.output, r.output
    assert not (tmp_path / "escape").exists() and not (tmp_path / "results").exists()
    for ok in ("plain-name", "ünïcode name"):
        assert cclab.Scenario.from_dict(scenario(name=ok)).name == ok


# ---- limits that protect the machine (before: accepted, 6.7 GB for 10^6 flows; numpy MemoryError) ----


def test_a_million_flows_is_refused_with_the_estimate_and_the_limit():
    d = scenario(flows=[{"cc": "newreno", "rtt": "40ms", "count": 100_000} for _ in range(10)])
    msg = refused(d, "limits.max_memory", "1,000,000 flows", "estimated", "4.0 GiB", "[limits] max_memory")
    assert "GiB" in msg


def test_many_flows_sharing_a_fast_link_are_estimated_by_their_share():
    # 1 000 NewReno flows at 100 ms on 10 Gbit/s for 100 s peak at 150 MB (cclab-bench custom, 2026-11-26).
    # The estimate once gave every flow's access delay lines the whole link's rate x delay: 12.4 GiB of
    # packets, and the run was refused under the default 4 GiB. Their share of it is what they hold.
    d = scenario(duration="100s", topology={"bottleneck": {"rate": "10Gbps", "buffer": 500}},
                 flows=[{"cc": "newreno", "rtt": "100ms", "count": 1000}])
    est = cclab.Scenario.from_dict(d).estimate()
    # In flight: the path's 83 333-packet BDP, the 500-packet buffer and 1 000 initial windows of 10.
    assert 83_333 < est["in_flight"] < 2 * 94_000, est
    # The rest is the time series (1 000 flows x 1 001 samples at ~1.1 KB a row): 1.1 GiB, under the default.
    assert est["memory"] < 2 * 2**30 and est["max_memory"] == 4 * 2**30, est


def test_tiny_packets_and_too_many_events_are_refused():
    refused(scenario(traffic=[{"kind": "cbr", "rate": "10Gbps", "packet_size": "1B"}]), "traffic[0].packet_size", ">= 64 B")
    d = scenario(duration="1000s", sample_interval="10s", topology={"bottleneck": {"rate": "10Gbps"}},
                 traffic=[{"kind": "cbr", "rate": "10Gbps", "packet_size": "64B"}])
    refused(d, "limits.max_events", "estimated", "budget of 2e+09", "[limits] max_events")


def test_the_budget_can_be_raised_explicitly():
    # 8.6 M time-series rows: ~6 GiB estimated (the series are copied about four times on their way to Parquet).
    d = scenario(duration="1000s", sample_interval="0.35ms", topology={"bottleneck": {"rate": "1Mbps"}})
    refused(d, "limits.max_memory", "time series")
    d["limits"] = {"max_memory": "16GiB"}
    sc = cclab.Scenario.from_dict(d)
    est = sc.estimate()
    assert 4 * 2**30 < est["memory"] < 16 * 2**30 and est["max_memory"] == 16 * 2**30
    assert sc.to_spec()["limits"] == {"max_memory": 16 * 2**30, "max_events": 2_000_000_000}
    assert "limits" not in cclab.Scenario.from_dict(BASE).to_spec()  # absent by default: specs unchanged


def test_a_memory_cap_is_part_of_the_budget(tmp_path):
    # Under `ulimit -v` the budget is what the process may still allocate. Before: numpy's MemoryError (or
    # a Rust allocation failure, which aborts the process) after the simulation.
    p = tmp_path / "big.toml"
    p.write_text('duration = "600s"\nsample_interval = "1ms"\n[topology.bottleneck]\nrate = "1Mbps"\n'
                 '[[flows]]\ncc = "newreno"\nrtt = "40ms"\n')
    code = textwrap.dedent(f"""
        import resource, sys
        from pathlib import Path
        import cclab, cclab.cli, cclab.runner, pandas, pyarrow  # what a run loads, before the cap
        vm = int(next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmSize")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (600 << 20), resource.RLIM_INFINITY))
        sys.argv = ["cclab", "run", {str(p)!r}, "--out", {str(tmp_path / "o")!r}, "-q", "--no-plots"]
        cclab.cli.main()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-3000:])
    assert "error: limits.max_memory:" in r.stderr and "ulimit -v" in r.stderr and "Traceback" not in r.stderr


# ---- the real datapath under SIGTERM / SIGKILL (before: temporary folders left, the partial result lost) ----

net = pytest.importorskip("cclab.net")
needs_binary = pytest.mark.skipif(net.find_binary() is None, reason="no cclab-net binary (make build)")
NET_SCENARIO = 'name = "sig"\nduration = "30s"\n[topology.bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "newreno"\nrtt = "20ms"\n'


def _net_run(tmp_path, out):
    p = tmp_path / "s.toml"
    p.write_text(NET_SCENARIO)
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "cclab.cli", "net", "run", str(p), "--loopback", "--out", str(out),
                             "-q", "--no-plots"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _leftovers(tmp_path):
    return sorted(p.name for p in (tmp_path / "tmp").iterdir() if p.name.startswith("cclab-net-"))


def _wait_for_tmp(tmp_path, other_than=(), timeout=20):
    deadline = time.monotonic() + timeout
    while not set(_leftovers(tmp_path)) - set(other_than) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(_leftovers(tmp_path)) - set(other_than), "the real run did not start"


@needs_binary
def test_sigterm_writes_the_partial_result_and_removes_the_temporary_folder(tmp_path):
    proc = _net_run(tmp_path, tmp_path / "o")
    _wait_for_tmp(tmp_path)
    time.sleep(2.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM: partial result" in err and "Traceback" not in err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["net"]["interrupted"] is True and s["net"]["wall_s"] < 20 and s["flows"][0]["delivered_bytes"] > 0
    assert _leftovers(tmp_path) == []


@needs_binary
def test_sigkill_leaves_nothing_the_next_run_trips_over(tmp_path):
    proc = _net_run(tmp_path, tmp_path / "o")
    _wait_for_tmp(tmp_path)
    time.sleep(1.0)
    proc.kill()
    proc.communicate(timeout=30)
    left = _leftovers(tmp_path)
    assert len(left) == 1  # cclab-net got SIGTERM (PR_SET_PDEATHSIG) and ends; its folder stays…
    deadline = time.monotonic() + 20
    while net.clean_stale_tmp(tmp_path / "tmp") == [] and time.monotonic() < deadline:
        time.sleep(0.2)  # …locked while cclab-net lives, removed once it has ended
    assert _leftovers(tmp_path) == []
    # and a new run starts, cleans and finishes as usual
    stale = f"{net.TMP_PREFIX}stale"
    (tmp_path / "tmp" / stale).mkdir()
    os.utime(tmp_path / "tmp" / stale, (time.time() - 3600, time.time() - 3600))
    proc = _net_run(tmp_path, tmp_path / "o2")
    _wait_for_tmp(tmp_path, other_than=[stale])
    assert stale not in _leftovers(tmp_path)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert _leftovers(tmp_path) == []
    shutil.rmtree(tmp_path / "tmp", ignore_errors=True)

