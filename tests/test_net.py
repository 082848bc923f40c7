"""The real datapath against the simulator and `cclab net` on the command line. The bounds asserted are
docs/real-datapath.md, "Acceptance bounds".

Real runs need root, /dev/net/tun and network namespaces; where `cclab-net check` says they are not
available those tests skip with its reason. Real runs take their scenario's duration in wall time and
are timing-sensitive on a 2-core machine: they run one after another (pytest runs tests sequentially),
short (8-15 s; the 30 s numbers are in docs/real-datapath.md), with measurement windows that start after
slow start. Each tolerance below was chosen after measuring the case 3 times (values in the comments).
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

import cclab
from cclab import net

AVAILABLE, REASON = net.check()
needs_net = pytest.mark.skipif(not AVAILABLE, reason=f"real datapath unavailable: {REASON}")
REPO = Path(__file__).resolve().parents[1]


def dumbbell(name, flows, rate, duration, measure, buffer="BDP", seed=1):
    return {"name": name, "duration": f"{duration}s", "seed": seed, "measure": [f"{measure}s", f"{duration}s"],
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": rate, "buffer": buffer, "queue": "droptail"}},
            "flows": flows}


def rel(a, b):
    return abs(a - b) / b


def show(tag, s):
    # Printed so `pytest -s` shows what was measured (the numbers in the comments came from here).
    print(f"\n{tag}: " + "; ".join(f"{f['cc']} {f['rtt'] * 1e3:g} ms: {f['goodput_bps'] / 1e6:.2f} Mbit/s, "
                                   f"RTT {f['mean_rtt'] * 1e3:.1f} ms" for f in s["flows"])
          + f"; Jain {s['jain']:.3f}, queue {s['links'][0]['mean_queue_pkts']:.1f}")


# Why the goodput tolerances can be tight where the acceptance bound is 10 %: the two datapaths differ by
# design only in the payload per packet (real: 1500 − 60 = 1440 B, sim: mss 1448 B, −0.55 %) and in timer
# and scheduling jitter (emulator write lateness mean 12-80 µs), both far below 10 %.


ATTEMPTS = 4
# After a test whose every attempt was disturbed, the next tests try at most this many times before
# skipping, until one of their runs is quiet again: a machine that stayed busy for ATTEMPTS runs usually
# stays busy, and rerunning every test 4 times under it took `make test` past its time budget.
ATTEMPTS_WHILE_BUSY = 2
# Reruns of a disturbed run stop once the next one would take the test's real runs past this many seconds:
# a 25 s run was run 4 times (101 s) in a fresh-clone `make test` beside a busy core whose host stole
# 3 % of the CPU (2026-11-29), where 4 attempts of a 5-10 s run cost what they always did. A run the
# machine left quiet is asserted whatever the budget; the budget only bounds how long a busy machine is
# waited for before the test says it was disturbed.
RETRY_BUDGET_S = 60.0
_busy = False


def figures(s):
    """What the machine did to a real run's measure window, in one line (`net.disturbance`; crates/
    cclab-net/src/disturbance.rs, docs/real-datapath.md "What the machine does to a run")."""
    d = s["net"]["disturbance"]
    num = lambda v, fmt, scale=1: "n/a" if v is None else format(v * scale, fmt)
    host = [h[0] for h in d["host_latency_ms"] if h is not None]
    return (f"CPU pressure {num(d['cpu_pressure'], '.0f', 100)} %, steal {num(d['steal_fraction'], '.1f', 100)} %, "
            f"emulator late p50/p99 {num(d['emulator_late_p50_us'], '.0f')}/{num(d['emulator_late_p99_us'], '.0f')} µs, "
            f"timers late p50/p99 {num(d['timer_late_p50_us'], '.0f')}/{num(d['timer_late_p99_us'], '.0f')} µs, "
            f"host latency p50 {'/'.join(f'{h:.2f}' for h in host) or 'n/a'} ms, "
            f"longest stall {d['longest_stall_ms']:.0f} ms"
            + (f", controller ACK-to-decision p99 {kd['ack_to_decision_p99_s'] * 1e3:.1f} ms"
               if (kd := s["net"].get("kernel_datapath")) and kd.get("ack_to_decision_p99_s") is not None else ""))


def quiet(run, accept=lambda s: True, attempts=ATTEMPTS):
    """The summary of a real run (`run()`) whose measure window the machine left undisturbed and that
    `accept`s, trying at most `attempts` times; the last run is returned and asserted whatever `accept`
    says. If the machine disturbed every attempt, the test is skipped with "disturbed: <figures>".

    Why: a real run compares timings, and on a 2-core machine its threads share the CPUs with whatever
    else runs. The hypervisor's steal (9-36 % during real runs at busy times on this VM) and ordinary
    contention (another process keeping one core busy: our threads then wake hundreds of µs late, and
    issue 28 saw a BBR, a Vegas and a reverse-flow comparison fail by 2-20 % of their bound) both
    measure the machine, not our code. `cclab-net` measures over the window what disturbed it (CPU
    pressure, steal, the emulator's and our endpoints' lateness, host latency, stalls: `net.disturbance`)
    and sets `net.disturbed` when a figure passes its calibrated threshold. Skipping then, rather than
    failing, is the rule for any missing precondition here (root, TUN); the skip names the figures. A
    run the machine left quiet is asserted: a comparison that fails then is a real failure.
    """
    global _busy
    if _busy:
        attempts = min(attempts, ATTEMPTS_WHILE_BUSY)
    t0 = time.monotonic()
    for k in range(attempts):
        t_run = time.monotonic()
        s = run()
        if not s["net"]["disturbed"]:
            _busy = False
            if accept(s):
                print(f"\nreal run {k + 1}: quiet: {figures(s)}")
                return s
        why = f"disturbed: {figures(s)}" if s["net"]["disturbed"] else f"not accepted ({figures(s)})"
        print(f"\nreal run {k + 1}: {why}")
        now = time.monotonic()
        if s["net"]["disturbed"] and now - t0 + (now - t_run) > RETRY_BUDGET_S:
            attempts = k + 1  # another run would pass the budget (said in the skip below)
            break
    if s["net"]["disturbed"]:
        _busy = True
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        reasons = "; ".join(s["net"]["disturbance"]["reasons"])
        pytest.skip(f"{test}: disturbed: {figures(s)} (all {attempts} runs; the last: {reasons})")
    return s


def real_on_sim_trajectory(d, sim, attempts=ATTEMPTS):
    """A real run of `d` whose flows went through as many loss episodes as the simulator's.

    Why: at a drop-tail overflow the fast retransmission itself enters a queue that is still full. Whether
    it finds the one free slot is a race decided at the packet level: deterministically in the simulator,
    by µs timing jitter on the real path. When it loses, the sender sees a lost retransmission, which
    RFC 5681 §4.3 makes a second congestion signal (our transport follows it, docs/validation.md), so cwnd
    is quartered instead of halved and the flow runs another trajectory. Measured on the one-flow test
    below: 3 of 22 real runs (idle and loaded machine) ended at 35.1-35.2 Mbit/s, utilisation 0.914-0.918,
    where the others gave 38.1-38.4 Mbit/s and ≥ 0.993; the one examined had cwnd 268 → 67 at t = 8.8 s
    (fast_recoveries 4 instead of the simulator's 3; 2 drops, both of the same segment). Comparing such a run with the simulator compares two
    trajectories, not two datapaths, so a run of the other class is repeated (at most `attempts` runs; the
    last one is returned and asserted whatever its class, so a systematic difference still fails).
    """
    want = [f["fast_recoveries"] for f in sim["flows"]]

    def same_branch(real):
        got = [f["fast_recoveries"] for f in real["flows"]]
        if got != want:
            print(f"\nfast recoveries {got}, simulator {want}: another trajectory")
        return got == want

    return quiet(lambda: net.run(d, progress=False).summary, same_branch, attempts)


@needs_net
def test_newreno_one_flow_matches_simulator():
    # 40 Mbit/s, 40 ms, drop-tail BDP buffer (133 packets), window 4-10 s (slow start ends by ~1.5 s).
    # Measured (3 runs of this test): sim 38.61 Mbit/s, real 38.37 (= sim × 1440/1448); mean RTT sim 65.5,
    # real 65.4-65.5 ms; 0 timeouts (15 s runs: 38.40 vs 38.61, 63.8 vs 63.6 ms). The acceptance bound of
    # 10 % for both is kept (docs/real-datapath.md): the deviation seen is < 1 %. The window holds one loss
    # episode (t = 8.8 s) whose retransmission may be lost on the real path: see real_on_sim_trajectory.
    d = dumbbell("nr1", [{"cc": "newreno", "rtt": "40ms"}], "40Mbps", 10, 4)
    sim = cclab.run(d, progress=False).summary
    real = real_on_sim_trajectory(d, sim)
    show("sim", sim), show("real", real)
    s, r = sim["flows"][0], real["flows"][0]
    assert rel(r["goodput_bps"], s["goodput_bps"]) < 0.10
    assert rel(r["mean_rtt"], s["mean_rtt"]) < 0.10
    assert r["timeouts"] == 0
    assert real["links"][0]["utilization"] > 0.98


@needs_net
def test_newreno_two_flows_matches_simulator():
    # 30 Mbit/s, RTTs 20 and 80 ms, drop-tail BDP buffer (200 packets), window 5-15 s.
    # Measured (5 runs): total goodput sim 28.96, real 28.80-28.82 Mbit/s; mean RTTs sim 81.4 / 138.9 ms,
    # real 81.0-84.4 / 140.9-144.4 ms (within 4 %): both asserted within 10 % (the acceptance bound).
    # Per-flow goodput differs and is not asserted against the simulator here (the RED test below does):
    # sim 21.4 / 7.5 Mbit/s, real (5 runs) 22.4-26.0 / 2.9-6.5. Cause, measured (docs/real-datapath.md): with
    # drop-tail the deterministic simulator drops only the 20 ms flow's packets at each overflow (phase
    # effect, Floyd & Jacobson 1992: 0 loss intervals of the 80 ms flow in the window), while the real
    # path's µs jitter spreads each overflow over both flows (2-3 loss intervals of the 80 ms flow, most at
    # the same time as the 20 ms flow's): synchronised losses, hence the stronger 1/RTT² bias.
    flows = [{"cc": "newreno", "rtt": "20ms"}, {"cc": "newreno", "rtt": "80ms"}]
    d = dumbbell("nr2", flows, "30Mbps", 15, 5)
    sim = cclab.run(d, progress=False).summary
    real = quiet(lambda: net.run(d, progress=False).summary)
    show("sim", sim), show("real", real)
    total = lambda s: sum(f["goodput_bps"] for f in s["flows"])
    assert rel(total(real), total(sim)) < 0.10
    for s, r in zip(sim["flows"], real["flows"]):
        assert rel(r["mean_rtt"], s["mean_rtt"]) < 0.10, (s["rtt"], s["mean_rtt"], r["mean_rtt"])
    # Reno's RTT bias, in the direction both datapaths show (sim 2.8x, real 3.4-9x).
    assert real["flows"][0]["goodput_bps"] > 1.5 * real["flows"][1]["goodput_bps"]


@needs_net
def test_newreno_two_flows_per_flow_goodput_with_red():
    # The same two flows with a RED queue (random early drops, no phase effect): now per-flow goodput
    # compares. Window 5-25 s. The reference is the simulator's distribution over seeds 1-10, not one
    # number: the 80 ms flow sees only ~10 loss events in the window, so one event more or less moves
    # it by ~10 %, and the 20 ms flow takes what it leaves. Measured (simulator, current code): 20 ms
    # flow 20.30-23.53 Mbit/s (mean 21.96, σ 1.06 = 4.8 %), 80 ms flow 5.34-8.13 (mean 6.68, σ 0.95 =
    # 14 %). Real runs: 18.52-22.83 and 5.58-9.82 (7 runs; the extreme one is 3.3σ from the mean on both
    # flows, in opposite directions, as a draw of one more or one fewer loss event of the 80 ms flow).
    # Asserted: each flow within 4σ of the simulator's mean (a real datapath that follows the simulator's
    # distribution fails this about once in 10^4 runs; a bias of 19 % on the 20 ms flow or 57 % on the
    # 80 ms flow fails always), and their mean RTTs within 10 % (seen ≤ 3 %).
    flows = [{"cc": "newreno", "rtt": "20ms"}, {"cc": "newreno", "rtt": "80ms"}]
    d = dumbbell("nr2red", flows, "30Mbps", 25, 5)
    d["topology"]["bottleneck"]["queue"] = "red"
    sims = [cclab.run(dict(d, seed=seed), progress=False).summary for seed in range(1, 11)]
    real = quiet(lambda: net.run(d, progress=False).summary)
    show("sim seed 1", sims[0]), show("real", real)
    for i in (0, 1):
        gps = [s["flows"][i]["goodput_bps"] for s in sims]
        mean_gp, sd = statistics.fmean(gps), statistics.stdev(gps)
        mean_rtt = statistics.fmean(s["flows"][i]["mean_rtt"] for s in sims)
        gp = real["flows"][i]["goodput_bps"]
        assert abs(gp - mean_gp) <= 4 * sd, (i, gp, mean_gp, sd)
        assert rel(real["flows"][i]["mean_rtt"], mean_rtt) < 0.10


@needs_net
def test_kernel_cubic_vs_our_cubic():
    # The same emulated link (50 Mbit/s, 40 ms, BDP buffer, window 3-8 s) carrying Linux cubic, then our
    # CUBIC. Measured (3 runs each, 10 s): kernel 48.27 Mbit/s (ceiling 50 × 1448/1500), ours 48.00
    # (ceiling 50 × 1440/1500); difference 0.6 %. Acceptance bound (docs/real-datapath.md): 15 %.
    res = {}
    for cc in ("kernel:cubic", "cubic"):
        d = dumbbell(cc, [{"cc": cc, "rtt": "40ms"}], "50Mbps", 8, 3)
        res[cc] = quiet(lambda d=d: net.run(d, progress=False).summary)
        show(cc, res[cc])
    k, o = (res[c]["flows"][0]["goodput_bps"] for c in ("kernel:cubic", "cubic"))
    assert rel(o, k) < 0.15
    # Both fill the link: the comparison is not two idle flows agreeing.
    for c in res:
        assert res[c]["links"][0]["utilization"] > 0.95


BBR_D = dumbbell("bbr", [{"cc": "bbr", "rtt": "40ms"}], "100Mbps", 10, 3)
KBBR_D = dumbbell("kbbr", [{"cc": "kernel:bbr", "rtt": "40ms"}], "100Mbps", 10, 3)
# BBR on this path has two states, in Linux's tcp_bbr as in ours: the usual one (queue 31-44 packets,
# mean RTT 43.6-44.6 ms) and, in about 1 run in 8, a standing queue (73-143 packets, 49-57 ms; CI
# 2026-11-26: 2 of 16 runs of ours, 1 of 7 of the kernel's). A queue above 60 packets (0.18 BDP) is the
# second state.
BBR_STANDING_QUEUE = 60


def _kernel_bbr_model(res):
    # Linux BBR's own model (TCP_CC_INFO) in the time series: RTprop is the path's 40 ms (+ the
    # emulator's few µs; 1 ms allowed), BtlBw the link's payload rate (100 Mbit/s × 1448/1500 = 96.5;
    # the max filter holds the best of 10 rounds, so within 8 %), and ProbeBW's gain cycle reaches 5/4.
    f = res.flows[res.flows["t"] > 3]
    assert abs(f["kernel:bbr.rtprop_s"].median() - 0.040) < 0.001, f["kernel:bbr.rtprop_s"].describe()
    assert rel(f["kernel:bbr.btlbw_bps"].median(), 96.5e6) < 0.08, f["kernel:bbr.btlbw_bps"].describe()
    assert f["kernel:bbr.pacing_gain"].max() == 1.25 and (f["kernel:bbr.cwnd_gain"] == 2.0).all()


@needs_net
def test_bbr_matches_kernel_bbr():
    # One flow, 100 Mbit/s, 40 ms, BDP buffer, window 3-10 s, through the same emulator: Linux's tcp_bbr,
    # our BBR over UDP, and the simulator. validation/bbr_linux.py (5 seeds, 20 s) measured 94.8 / 94.4 /
    # 95.0 Mbit/s, mean RTT 44.3 / 45.4 / 43.9 ms, queue 33.4 / 43.6 / 31.0 packets. Bounds: goodput and
    # mean RTT within 10 % of the kernel's (issue 12's target). The queue bound guards the pacing fix: our
    # sender once stretched its pacing schedule by every late timer wake-up and could not pace above the
    # link rate, so BBR's 5/4 probing built no queue (1.5 packets, and 91.6 Mbit/s).
    # `make test`'s version: each side in BBR's usual state (see BBR_STANDING_QUEUE), one run each when
    # it is (7 in 8), at most 3: the comparison is of the usual state, and a side that is never in it in
    # 3 runs (chance about 1 in 500 if both have the 1-in-8 rate) is asserted anyway and fails. The
    # statistical version over both states (medians of 3 kernel and 5 of our runs) is
    # test_bbr_matches_kernel_bbr_over_runs, in `make validate`.
    usual = lambda s: s["links"][0]["mean_queue_pkts"] <= BBR_STANDING_QUEUE
    kres = []  # every kernel run, so that the accepted (last) one's time series can be read
    kernel = quiet(lambda: (kres.append(net.run(KBBR_D, progress=False)) or kres[-1].summary), usual, 3)
    if not usual(kernel):
        # The reference itself is off its usual state in 3 runs in a row (1 in 500 on a quiet machine at its
        # 1-in-8 rate): it cannot judge ours. Seen once, in a `make test` beside a 2-worker `cclab
        # reproduce` (CPU pressure 15-16 %, below the disturbance threshold): Linux's BBR stood at 99
        # packets, 52.1 ms, while ours (30.6 packets, 43.6 ms) and the simulator (30.9, 43.8) were in the
        # usual state. Our side is still asserted when the kernel is in it: a BBR of ours that never
        # leaves the standing queue fails.
        pytest.skip(f"kernel BBR in its standing-queue state in all 3 runs (queue "
                    f"{kernel['links'][0]['mean_queue_pkts']:.1f} packets, {figures(kernel)}); the statistical "
                    "comparison over both states is test_bbr_matches_kernel_bbr_over_runs (make validate)")
    ours = quiet(lambda: net.run(BBR_D, progress=False).summary, usual, 3)
    sim = cclab.run(BBR_D, progress=False).summary
    for tag, s in [("kernel", kernel), ("ours", ours), ("sim", sim)]:
        show(tag, s)
    k = kernel["flows"][0]
    for f in (ours["flows"][0], sim["flows"][0]):
        assert rel(f["goodput_bps"], k["goodput_bps"]) < 0.10
        assert rel(f["mean_rtt"], k["mean_rtt"]) < 0.10
    assert ours["links"][0]["mean_queue_pkts"] > 5, ours["links"][0]
    _kernel_bbr_model(kres[-1])


@needs_net
@pytest.mark.validate
def test_bbr_matches_kernel_bbr_over_runs():
    # test_bbr_matches_kernel_bbr over both of BBR's states (`make validate`: 8 real runs, ~2 min).
    # The reference is the median of 3 kernel runs: one run is one draw, and Linux's BBR has rare runs
    # with a standing queue (in CI on 2026-11-26 one had a mean RTT of 53.0 ms, where 6 runs that day gave
    # 43.6-44.3 ms).
    kres = []
    kernel = [quiet(lambda: (kres.append(net.run(KBBR_D, progress=False)) or kres[-1].summary)) for _ in range(3)]
    # Ours is 5 runs for the same reason: in CI on 2026-11-26 one run of ours had a mean RTT of 50.7 ms and
    # a queue of 88 packets, another 57.5 ms and 143, where the others gave 44.1-44.6 ms and 33-38 packets.
    # Measured that day, 16 runs: 2 in that standing-queue state, with or without the pacing catch-up.
    # Kernel BBR has it too (53.0 ms once in CI). So both sides are compared by their median, which one
    # such run cannot move; a mean of 3 failed when one of ours had it.
    ours_runs = [quiet(lambda: net.run(BBR_D, progress=False).summary) for _ in range(5)]
    ours = ours_runs[-1]
    sim = cclab.run(BBR_D, progress=False).summary
    for tag, s in [("kernel", k) for k in kernel] + [("ours", o) for o in ours_runs] + [("sim", sim)]:
        show(tag, s)
    keys = ("goodput_bps", "mean_rtt")
    k = {key: statistics.median(s["flows"][0][key] for s in kernel) for key in keys}
    o = {key: statistics.median(s["flows"][0][key] for s in ours_runs) for key in keys}
    for f in (o, sim["flows"][0]):
        assert rel(f["goodput_bps"], k["goodput_bps"]) < 0.10
        assert rel(f["mean_rtt"], k["mean_rtt"]) < 0.10
    assert ours["links"][0]["mean_queue_pkts"] > 5, ours["links"][0]
    _kernel_bbr_model(kres[-1])


def _registered(name):
    return name in cclab.algorithms()


@needs_net
@pytest.mark.parametrize("cc, params", [("fast", {"alpha": 20})])
def test_delay_based_fairness_end_to_end(cc, params):
    # Three flows at 20, 40 and 80 ms over 30 Mbit/s, a 300-packet buffer (no overflow), window 5-10 s.
    # FAST measured (5 runs, 10 s): sim Jain 1.000 (9.69/9.64/9.62 Mbit/s), real Jain 0.997-1.000
    # (9.20-9.60 / 9.31-9.53 / 9.67-10.30); mean queue sim 59.5, real 59.0-61.4 packets (n·α = 60).
    # The real 80 ms flow runs up to 7 % fast: its base RTT is ~0.8 ms too high (it never sees the empty
    # queue; docs/real-datapath.md). Tolerances: Jain within 0.02 of the simulator's (a 7 % rate
    # deviation of one flow in three moves Jain by < 0.005); each flow's goodput within 10 % of the
    # simulator's (seen ≤ 7.1 %); mean queue within 10 packets (seen ≤ 1.9).
    if not _registered(cc):
        pytest.skip(f"{cc} is not in the algorithm registry yet")
    flows = [{"cc": cc, "rtt": r, "params": params} for r in ("20ms", "40ms", "80ms")]
    d = dumbbell(cc, flows, "30Mbps", 10, 5, buffer=300)
    sim = cclab.run(d, progress=False).summary
    real = quiet(lambda: net.run(d, progress=False).summary)
    show("sim", sim), show("real", real)
    assert abs(real["jain"] - sim["jain"]) <= 0.02
    for s, r in zip(sim["flows"], real["flows"]):
        assert rel(r["goodput_bps"], s["goodput_bps"]) < 0.10
    assert abs(real["links"][0]["mean_queue_pkts"] - sim["links"][0]["mean_queue_pkts"]) <= 10


@needs_net
def test_madison_fairness_end_to_end():
    # The scenario of test_delay_based_fairness_end_to_end (20/40/80 ms over 30 Mbit/s, 300-packet buffer)
    # with Madison. Its per-flow comparison with the simulator (each flow within 10 %) does
    # not apply: Madison's shares wander (its queue cycles between empty and full, docs/algorithms/
    # madison.md), so the trajectory depends on timing details. In the simulator alone, changing only the
    # seed (which only moves the probe times) changes per-flow goodput by up to 40 % (seeds 1-3: Jain
    # 0.949/0.997/0.963, flows 6.8-8.5 / 9.7-12.0 / 8.6-11.1 Mbit/s, mean queue 42-101 packets). What must
    # hold end to end is the property: equal sharing regardless of RTT. Measured on the real datapath
    # (8 runs): Jain 0.941-0.994, total goodput 23.0-28.6 Mbit/s (sim 27.4), mean queue 37-125 packets.
    # Asserted: Jain ≥ 0.9 ("equal shares" in docs/reproduce.md), total goodput ≥ 70 % of the link (seen
    # ≥ 77 %; the simulator's 91 %), mean queue at most half the buffer (seen ≤ 125 of 300; an overload
    # that keeps the buffer full would show).
    # Window 5-20 s since 2026-11-23: over a 5 s window the simulator itself gives Jain < 0.9 on one seed in
    # ten (seeds 1-10: 0.877-0.996) and a real run gave 0.877 once in 3; over 15 s the simulator's seeds
    # 1-10 give 0.949-0.998.
    # Two real runs, and the Jain bound on their mean, since 2026-11-26: one CI run gave 0.889 (the 20 ms flow
    # 5.6 Mbit/s, the 80 ms one 13.4), where 14 other runs gave 0.941-1.000 (mean 0.97, sd 0.03). A single
    # run is one draw of a wandering trajectory; the mean of two puts the bound about 3 sd away.
    flows = [{"cc": "madison", "rtt": r} for r in ("20ms", "40ms", "80ms")]
    d = dumbbell("madison", flows, "30Mbps", 20, 5, buffer=300)
    sim = cclab.run(d, progress=False).summary
    show("sim", sim)
    reals = [quiet(lambda: net.run(d, progress=False).summary) for _ in range(2)]
    for real in reals:
        show("real", real)
        assert sum(f["goodput_bps"] for f in real["flows"]) >= 0.7 * 30e6
        assert real["links"][0]["mean_queue_pkts"] <= 150
    assert sum(r["jain"] for r in reals) / len(reals) >= 0.9


# ---- the command line ----

def cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "cclab.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120, **kw)


def write(tmp_path, d, name="s.toml"):
    """The scenario dict as a TOML file (JSON scalars and arrays are valid TOML values)."""
    lines = [f'name = "{d["name"]}"', f'duration = "{d["duration"]}"', f'seed = {d["seed"]}',
             f'measure = {json.dumps(d["measure"])}', "[topology]", f'kind = "{d["topology"]["kind"]}"']
    topo = d["topology"]
    if "bottleneck" in topo:
        lines.append("[topology.bottleneck]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in topo["bottleneck"].items()]
    else:
        for l in topo["links"]:
            lines.append("[[topology.links]]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in l.items()]
    for f in d["flows"]:
        lines.append("[[flows]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in f.items()]
    for t in d.get("traffic", []):
        lines.append("[[traffic]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in t.items()]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


@needs_net
def test_cli_net_run_writes_what_cclab_run_writes(tmp_path):
    d = dumbbell("cli", [{"cc": "newreno", "rtt": "20ms"}, {"cc": "kernel:reno", "rtt": "40ms"}], "20Mbps", 3, 1)
    p = write(tmp_path, d)
    r = cli("net", "run", str(p), "--out", str(tmp_path / "real"), "-q")
    assert r.returncode == 0, r.stderr
    real = json.loads((tmp_path / "real" / "summary.json").read_text())
    # The simulator on the same scenario with our reno in place of the kernel's: the same keys, `net` in
    # place of `sim`, and the same time-series columns.
    d["flows"][1]["cc"] = "reno"
    sim = cclab.run(d, tmp_path / "sim", progress=False, plots=False).summary
    assert set(real) == set(sim) - {"sim"} | {"net"}
    for a, b in ((real["flows"][0], sim["flows"][0]), (real["links"][0], sim["links"][0])):
        assert set(a) == set(b)
    assert not real["net"]["interrupted"] and real["net"]["wall_s"] > 3.0
    assert real["flows"][1]["cc"] == "kernel:reno" and real["flows"][1]["goodput_bps"] > 1e6
    assert real["jain"] == pytest.approx(cclab.metrics.jain([f["goodput_bps"] for f in real["flows"]]))
    ts_real = pd.read_parquet(tmp_path / "real" / "timeseries.parquet")
    ts_sim = pd.read_parquet(tmp_path / "sim" / "timeseries.parquet")
    assert list(ts_real.columns) == list(ts_sim.columns)
    # counters are integers; TCP_INFO has no count of RTO expiries: kernel TCP's `timeouts` is <NA>, not 0
    back = cclab.Result.load(tmp_path / "real")
    kern = back.flows["cc"] == "kernel:reno"
    assert str(back.flows["timeouts"].dtype) == "Int64" and back.flows.loc[kern, "timeouts"].isna().all()
    assert back.flows.loc[~kern, "timeouts"].notna().all() and back.flows["delivered_bytes"].dtype == "int64"
    assert set(ts_real["kind"]) == {"flow", "link"}
    # 3 s at the default 100 ms sampling: 31 samples per flow and per link.
    assert (ts_real["kind"] == "flow").sum() == 2 * 31 and (ts_real["kind"] == "link").sum() == 2 * 31
    for png in ("rate.png", "cwnd.png", "queue.png"):
        assert (tmp_path / "real" / png).stat().st_size > 10_000


def _wait_for_child(pid, name, timeout=60):
    """Waits until process `pid` has a child named `name` (from /proc), at most `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            for child in task.read_text().split():
                try:
                    if Path(f"/proc/{child}/comm").read_text().strip() == name:
                        return
                except OSError:
                    pass
        time.sleep(0.05)
    raise AssertionError(f"no {name} child of process {pid} after {timeout} s")


@needs_net
def test_cli_ctrl_c_writes_the_partial_result(tmp_path):
    d = dumbbell("intr", [{"cc": "newreno", "rtt": "20ms"}], "20Mbps", 30, 0)
    p = write(tmp_path, d)
    # SIGINT back to its default in the child: a test run started in the background by a non-interactive
    # shell inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler (seen: the
    # run went on to its end, exit 0).
    proc = subprocess.Popen([sys.executable, "-m", "cclab.cli", "net", "run", str(p), "--out", str(tmp_path / "o"),
                             "-q", "--no-plots"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupted 2 s after cclab-net started, not 3 s after Python did: on a busy machine (issue 28)
    # Python's start-up took most of 3 s and the run was interrupted 0.2 s in, before 1 MB was delivered.
    _wait_for_child(proc.pid, "cclab-net")
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["net"]["interrupted"] is True
    # It stopped early (not after the 30 s) and still measured the flow.
    assert s["net"]["wall_s"] < 10 and s["flows"][0]["delivered_bytes"] > 1e6


@needs_net
def test_killing_python_ends_the_real_run(tmp_path):
    # SIGKILL leaves Python no chance to forward anything: cclab-net must still end (PR_SET_PDEATHSIG
    # turns its parent's death into SIGTERM), taking its namespaces with it.
    d = dumbbell("orphan", [{"cc": "newreno", "rtt": "20ms"}], "20Mbps", 30, 0)
    proc = subprocess.Popen([sys.executable, "-m", "cclab.cli", "net", "run", str(write(tmp_path, d)), "--out",
                             str(tmp_path / "o"), "-q", "--no-plots"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 20
    kids = []
    while not kids and time.monotonic() < deadline:  # wait for cclab-net to be started
        time.sleep(0.2)
        kids = children.read_text().split() if children.exists() else []
    assert kids, "cclab-net was not started"
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    def alive(pid):
        try:  # a zombie (state Z) has ended; so has a pid that is gone or reused by another program
            stat = Path(f"/proc/{pid}/stat").read_text()
            return stat.split(") ")[1][0] != "Z" and b"cclab-net" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            return False

    deadline = time.monotonic() + 10
    while alive(kids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    gone = not alive(kids[0])
    assert gone, "cclab-net outlived the killed cclab process"


def test_cli_rejects_what_the_real_datapath_cannot_do(tmp_path):
    # Parking lots, graphs and cross traffic run (tests/test_net_topology.py refuses what they cannot).
    base = dumbbell("bad", [{"cc": "newreno", "rtt": "40ms"}], "20Mbps", 3, 1)
    fast = dict(base, topology={"kind": "dumbbell", "bottleneck": {"rate": "1.5Gbps"}})
    for d, field in ((fast, "topology.bottleneck.rate"),):
        r = cli("net", "run", str(write(tmp_path, d)), "--out", str(tmp_path / "x"))
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"error: {field}:"), r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


def test_kernel_tcp_is_real_datapath_only(tmp_path):
    d = dumbbell("k", [{"cc": "kernel:cubic", "rtt": "40ms"}], "20Mbps", 3, 1)
    r = cli("run", str(write(tmp_path, d)), "-q")
    assert r.returncode == 2
    assert "flows[0].cc" in r.stderr and "real datapath" in r.stderr
    d["flows"][0]["cc"] = "kernel:vegas"
    r = cli("net", "run", str(write(tmp_path, d)))
    assert r.returncode == 2 and "kernel:cubic, kernel:reno, kernel:bbr" in r.stderr


def test_cli_without_the_binary_says_so(tmp_path):
    env = dict(os.environ, CCLAB_NET_BIN=str(tmp_path / "missing"))
    d = dumbbell("nobin", [{"cc": "newreno", "rtt": "40ms"}], "20Mbps", 3, 1)
    r = cli("net", "run", str(write(tmp_path, d)), env=env)
    assert r.returncode == 2
    assert "real datapath unavailable" in r.stderr and "Traceback" not in r.stderr
    r = cli("net", "check", env=env)
    assert r.returncode == 1 and r.stdout.startswith("unavailable:")


# ---- loopback mode (no root: the emulator as a UDP relay on 127.0.0.1) ----

needs_binary = pytest.mark.skipif(net.find_binary() is None, reason="no cclab-net binary (make build)")


@needs_binary
def test_cli_net_run_loopback(tmp_path):
    # 20 Mbit/s, RTT 40 ms, 2·BDP buffer, 3 s, window 1-3 s: the Rust test's configuration, shorter.
    d = dumbbell("lo", [{"cc": "newreno", "rtt": "40ms"}], "20Mbps", 3, 1, buffer="2BDP")

    def run():
        r = cli("net", "run", str(write(tmp_path, d)), "--loopback", "--out", str(tmp_path / "lo"), "-q",
                "--no-plots")
        assert r.returncode == 0, r.stderr
        return json.loads((tmp_path / "lo" / "summary.json").read_text())

    s = quiet(run)
    assert s["net"]["mode"] == "loopback" and s["net"]["emulator"]["foreign"] == 0
    f = s["flows"][0]
    # Payload ceiling 20 Mbit/s × 1440/1500 = 19.2 Mbit/s; 3 % as in crates/cclab-net/tests/loopback.rs
    # (measured 19.19-19.20 there, and in the namespace mode on the same spec).
    assert rel(f["goodput_bps"], 19.2e6) < 0.03, f["goodput_bps"]
    ts = pd.read_parquet(tmp_path / "lo" / "timeseries.parquet")
    assert (ts["kind"] == "flow").sum() == 31
    # Kernel TCP cannot be relayed: refused before anything runs, naming the field.
    d["flows"][0]["cc"] = "kernel:cubic"
    r = cli("net", "run", str(write(tmp_path, d)), "--loopback", "--out", str(tmp_path / "k"))
    assert r.returncode == 2 and r.stderr.startswith("error: flows[0].cc:"), r.stderr
    assert not (tmp_path / "k").exists()


@needs_binary
def test_maxnet_two_flows_over_loopback():
    # Loopback mode beyond one NewReno flow: two MaxNet flows at 20 and 80 ms through the relay, with the
    # MaxNet router (price written into our header by the relay's emulator core) on 20 Mbit/s, 8 s,
    # window 3-8 s. Measured (loopback, 1 run): utilisation 0.940, mean queue 0.5 packets, 0 drops, Jain
    # 1.000, mean RTTs within 1.5 ms of the configured ones; TUN mode on the same file: the same to 0.001.
    # Asserted as the namespace-mode test in crates/cclab-net/tests/run_real.rs: utilisation within 0.05
    # of μ = 0.94, mean queue < 5 packets, Jain ≥ 0.9 (the MaxNet bounds of docs/real-datapath.md).
    flows = [{"cc": "maxnet", "rtt": "20ms"}, {"cc": "maxnet", "rtt": "80ms"}]
    d = dumbbell("lo-maxnet", flows, "20Mbps", 8, 3)
    d["topology"]["bottleneck"]["queue"] = "maxnet"
    s = quiet(lambda: net.run(d, progress=False, loopback=True).summary)
    show("loopback", s)
    assert s["net"]["mode"] == "loopback"
    link = s["links"][0]
    assert abs(link["utilization"] - 0.94) < 0.05, link["utilization"]
    assert link["mean_queue_pkts"] < 5 and s["jain"] >= 0.9
    for f in s["flows"]:
        assert f["mean_rtt"] < f["rtt"] + 0.005, (f["rtt"], f["mean_rtt"])


# ---- without privileges (docs/real-datapath.md, "Acceptance bounds": a clear message, a loopback mode) ----

def _as_nobody():
    """argv prefix running a command as user nobody with no capabilities, or None (with the reason)."""
    if os.geteuid() != 0:
        return None, "dropping to an unprivileged user needs root; this run is already unprivileged"
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None, "no setpriv (util-linux) to drop privileges"
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all"], None


@needs_binary
def test_unprivileged_user_gets_the_message_and_loopback_works(request):
    # CI runs as root, so without this test the non-root path (the one most users of a laptop meet) would
    # never run. The binary and spec are copied into a world-readable directory in /tmp because the
    # checkout (and pytest's tmp_path) may sit under a private (0700) directory that nobody cannot enter.
    prefix, why = _as_nobody()
    if prefix is None:
        pytest.skip(why)
    d = Path(tempfile.mkdtemp(prefix="cclab-nobody-"))
    request.addfinalizer(lambda: shutil.rmtree(d, ignore_errors=True))
    d.chmod(0o777)
    for p in d.parents:
        if p.stat().st_mode & 0o001 == 0:
            pytest.skip(f"{p} is not searchable by other users, so user nobody cannot reach the test files")
    binary = d / "cclab-net"
    shutil.copy(net.find_binary(), binary)
    binary.chmod(0o755)
    sc = dumbbell("lo", [{"cc": "newreno", "rtt": "40ms"}], "20Mbps", 3, 1, buffer="2BDP")
    spec = net.validate(cclab.Scenario.from_dict(sc, datapath="net"), loopback=True)
    (d / "spec.json").write_text(json.dumps(spec))
    (d / "spec.json").chmod(0o644)
    run = lambda *a: subprocess.run([*prefix, str(binary), *a], capture_output=True, text=True, timeout=60)
    # The check names what is missing.
    info = json.loads(run("check").stdout)
    assert info["available"] is False and "root" in info["reason"], info
    # The namespace mode refuses with exit 3 and points to loopback mode (cclab.net raises NetUnavailable).
    r = run("run", "--spec", str(d / "spec.json"), "--out", str(d / "tun.json"))
    assert r.returncode == 3 and "--loopback" in r.stderr, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    # Loopback mode runs, unprivileged, at the rate the root test measures (payload ceiling 19.2 Mbit/s).

    def loopback():
        r = run("run", "--spec", str(d / "spec.json"), "--out", str(d / "lo.json"), "--loopback")
        assert r.returncode == 0, r.stderr
        return json.loads((d / "lo.json").read_text())

    res = quiet(loopback)
    assert res["net"]["mode"] == "loopback" and res["net"]["emulator"]["priority_raised"] is False
    f = res["flows"][0]
    # Measured as nobody (3 runs): 19.197-19.202 Mbit/s, 0 RTOs; 3 % as in the root loopback test.
    assert rel(f["goodput_bps"], 19.2e6) < 0.03, f["goodput_bps"]


REV_FLOWS = [{"cc": "newreno", "rtt": "40ms", "start": ["0s", "0.5s"]},
             {"cc": "newreno", "rtt": "40ms", "start": ["0s", "0.5s"], "reverse": True}]


def _reverse_means(d, sim_seeds, real_runs):
    """Per-flow mean goodputs (bit/s) of the simulator over `sim_seeds` and of `real_runs` quiet real
    runs (the starts of seeds 1..n), with the real summaries."""
    sims = [cclab.run(dict(d, seed=k), progress=False, plots=False).summary for k in sim_seeds]
    sim = [sum(s["flows"][i]["goodput_bps"] for s in sims) / len(sims) for i in range(2)]
    reals = [quiet(lambda k=k: net.run(dict(d, seed=k), progress=False).summary) for k in range(1, real_runs + 1)]
    show("sim seed 1", sims[0]), show("real seed 1", reals[0])
    got = [sum(s["flows"][i]["goodput_bps"] for s in reals) / len(reals) for i in range(2)]
    print(f"means: sim over {len(sims)} seeds {sim[0] / 1e6:.2f} / {sim[1] / 1e6:.2f}, real over "
          f"{len(reals)} runs {got[0] / 1e6:.2f} / {got[1] / 1e6:.2f} Mbit/s")
    return sim, got, reals


# The pair below carried 26.1-27.8 Mbit/s in all on the real datapath against the simulator's 33.6 until
# 2026-11-29, when the emulator delayed an ACK by its flow's access delay before the reverse link; the
# simulator delays it after, and on a two-way path that decides which data an ACK queues with
# (docs/real-datapath.md, "Reverse flows: where an ACK's access delay sits";
# crates/cclab-net/tests/ideal_hosts.rs holds the model to the simulator without real runs). Measured
# after the change, seeds 1-5 on a busy machine (load 11): real 33.48 +- 1.37 Mbit/s in all (per flow
# 16.94 +- 0.91 / 16.54 +- 0.96), simulator 33.57 +- 1.96 (16.90 / 16.67); the old emulator in the same
# minutes 27.15 +- 0.58. Seeds 1-10 (load 9-12): real 33.19 +- 1.37, simulator 34.39 +- 1.23; single real
# runs 29.6-36.0 in all (the lowest disturbed), 14.3-18.3 per flow.


@pytest.fixture(scope="module")
def reverse_runs():
    """The reverse pair's simulator means over seeds 1-5 and 3 quiet real runs, made once for the two tests
    below (they assert different things of the same runs; ~35 s of real runs each before 2026-11-29)."""
    d = dumbbell("rev", REV_FLOWS, "20Mbps", 10, 4)
    return d, _reverse_means(d, range(1, 6), 3)


@needs_net
def test_reverse_flows_on_the_real_datapath(reverse_runs):
    # A forward and a reverse NewReno flow (data B -> A over link 1, where the forward flow's ACKs queue):
    # 20 Mbit/s, 40 ms, window 4-10 s, starts drawn in [0, 0.5] s. Each direction's data shares its link
    # with the other flow's ACKs, so the split of the ~33 Mbit/s the two get depends on how the ACK
    # bursts fall, and it feeds itself: the flow that gets ahead queues more data in front of the other's
    # ACKs, whose RTT then grows (two-way traffic's ACK compression). Asserted here: the wiring (paths),
    # both directions carrying data (each flow's 3-run mean above 0.75 of the simulator's: a broken
    # direction gives 0; single runs measured 14.3-18.3 Mbit/s per flow against the simulator's 5-seed
    # means 16.7-16.9, 0.85 at worst), the reverse data on link 1 (utilisation above 0.75: measured
    # 0.81-0.98 over 10 runs), and kernel CUBIC in reverse filling link 1. The sum and the split
    # against the simulator: test_reverse_flows_sum_matches_the_simulator and
    # test_reverse_flows_split_over_runs (`make validate`).
    d, (sim, got, reals) = reverse_runs
    spec = cclab.Scenario.from_dict(d).to_spec(datapath="net")
    assert [(f["path"], f["ack_path"]) for f in spec["flows"]] == [([0], [1]), ([1], [0])]
    for r, s in zip(got, sim):
        assert r > 0.75 * s, (got, sim)
    assert all(s["links"][1]["utilization"] > 0.75 for s in reals)  # the reverse flow's data crosses link 1
    k = [{"cc": "kernel:cubic", "rtt": "40ms", "reverse": True}]
    kr = quiet(lambda: net.run(dumbbell("krev", k, "20Mbps", 8, 3), progress=False).summary)
    assert kr["flows"][0]["goodput_bps"] > 0.8 * 20e6 * 1440 / 1500
    assert kr["links"][1]["utilization"] > 0.9 and kr["links"][0]["utilization"] < 0.1  # data on link 1
    # Loopback mode relays one direction: refused with the field named.
    with pytest.raises(cclab.ScenarioError, match=r"flows\[1\]\.reverse"):
        net.validate(cclab.Scenario.from_dict(d, datapath="net"), loopback=True)


@needs_net
def test_reverse_flows_sum_matches_the_simulator(reverse_runs):
    # The pair's total within 10 % of the simulator's mean over 5 seeds (3 quiet real runs), as the
    # one-way tests bound goodput; the sum does not depend on the split. Measured: single real runs
    # 29.6-36.0 Mbit/s against the simulator's 33.57 (-12 % at worst, a disturbed run; 3-run means
    # within 3 %, e.g. 33.35 on 2026-11-29); the emulator that delayed ACKs before the reverse link gave
    # 26.8-27.7 (19 % below).
    _, (sim, got, _) = reverse_runs
    assert rel(sum(got), sum(sim)) < 0.10, (got, sim)


@needs_net
@pytest.mark.validate
def test_reverse_flows_split_over_runs():
    # The split (`make validate`, ~2.5 min): each flow's mean over 8 quiet real runs within 15 % of the
    # simulator's over 10 seeds. 15 % is the split's own spread (single runs 14.3-18.3 Mbit/s per flow
    # on 2026-11-29, the simulator's seeds 14.4-18.5); 8 runs bring the mean's standard error to about 3 %
    # (10 runs: per-flow means 16.61 / 16.57 against the simulator's 17.25 / 17.14, within 4 %).
    d = dumbbell("rev", REV_FLOWS, "20Mbps", 10, 4)
    sim, got, _ = _reverse_means(d, range(1, 11), 8)
    for r, s in zip(got, sim):
        assert rel(r, s) < 0.15, (got, sim)
    assert rel(sum(got), sum(sim)) < 0.10, (got, sim)


@needs_net
def test_a_trace_driven_link_on_the_real_datapath():
    # The emulator runs the simulator's trace service (crates/cclab-cc/src/trace_link.rs): a CUBIC flow
    # over the shipped 6 -> 24 Mbit/s step trace, 100-packet buffer, 40 ms, window 3-8 s (the 6 Mbit/s
    # half). Measured: real 5.76 Mbit/s, utilisation 1.000 against the trace's capacity in the window,
    # mean queue 50.9 packets; simulator 5.79 Mbit/s, 51.9 packets. 10 % as in the one-way tests above.
    d = {"name": "trace", "duration": "8s", "seed": 1, "measure": ["3s", "8s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"trace": "step-6-24mbps", "buffer": 100, "delay": "10ms"}},
         "flows": [{"cc": "cubic", "rtt": "40ms"}]}
    sim = cclab.run(d, progress=False, plots=False).summary
    real = quiet(lambda: net.run(d, progress=False).summary)
    show("sim", sim), show("real", real)
    assert rel(real["flows"][0]["goodput_bps"], sim["flows"][0]["goodput_bps"]) < 0.10
    assert real["links"][0]["utilization"] > 0.95


@needs_net
def test_jitter_on_the_real_datapath():
    # The emulator draws the simulator's jitter (crates/cclab-cc/src/impair.rs): a window-limited NewReno
    # flow (100 KB receive window) over 20 Mbit/s with 20 ms ± 5 ms of link delay, order kept. Measured:
    # real 14.58 Mbit/s, RTT p50 53.7 / p95 57.4 ms, no retransmission; simulator 14.71, 54.8 / 57.4 ms.
    # 10 % on goodput as in the tests above; the p95 RTT (the jitter's upper tail) within 5 %.
    d = {"name": "jitter", "duration": "6s", "seed": 1, "measure": ["2s", "6s"],
         "transport": {"receive_window": "100KB"},
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": "20Mbps", "buffer": 200, "delay": "20ms",
                                                         "jitter": "5ms"}},
         "flows": [{"cc": "newreno", "rtt": "50ms"}]}
    sim = cclab.run(d, progress=False, plots=False).summary["flows"][0]
    real = quiet(lambda: net.run(d, progress=False).summary)["flows"][0]
    print(f"\nsim {sim['goodput_bps'] / 1e6:.2f} Mbit/s p95 RTT {sim['p95_rtt_s'] * 1e3:.1f} ms; "
          f"real {real['goodput_bps'] / 1e6:.2f} Mbit/s p95 RTT {real['p95_rtt_s'] * 1e3:.1f} ms")
    assert rel(real["goodput_bps"], sim["goodput_bps"]) < 0.10
    assert rel(real["p95_rtt_s"], sim["p95_rtt_s"]) < 0.05
    assert real["retransmits"] == 0
