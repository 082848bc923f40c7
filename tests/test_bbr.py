"""BBR v1 in the simulator: the properties its design promises, with numbers. 100 Mbit/s, 40 ms (BDP 333
packets), flows starting within 0.5 s, window 10-30 s. The state machine, the filters and the recovery
rules are unit-tested in Rust (crates/cclab-cc/src/algorithms/bbr.rs), the delivery-rate estimator in
crates/cclab-transport/src/rate.rs; agreement with Linux's tcp_bbr is in docs/validation.md."""
import numpy as np
import pytest

import cclab

BDP = 100e6 * 0.040 / (1500 * 8)  # 333 packets


def run(ccs, buffer="BDP", seed=1, duration=30):
    d = {"name": "bbr", "duration": f"{duration}s", "seed": seed, "measure": ["10s", f"{duration}s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": buffer}},
         "flows": [{"cc": c, "rtt": "40ms", "start": ["0s", "0.5s"]} for c in ccs]}
    return cclab.run(d, progress=False, plots=False)


def test_one_flow_fills_the_link_with_a_small_queue_and_probes_rtt_every_10s():
    # Measured (seed 1): utilisation 0.976, mean queue 30.4 packets (0.09 BDP: the 5/4 probe phase once
    # per 8 RTTs), no drop; ProbeRTT entered at 10.6, 20.8, 31.0 s, each left 0.2-0.3 s later. The
    # 2.4 % below full use is ProbeRTT (200 ms of every 10 s at 4 packets, plus the RTT to refill) and
    # the 3/4 drain phase; bound 0.95. Queue bound: a quarter of a BDP.
    r = run(["bbr"], duration=35)
    lk = r.summary["links"][0]
    assert lk["utilization"] > 0.95 and lk["mean_queue_pkts"] < BDP / 4 and lk["drops"] == 0, lk
    f = r.flows
    t, mode = f["t"].to_numpy(), f["bbr.mode"].to_numpy()
    enter = t[1:][(mode[1:] == 3) & (mode[:-1] != 3)]
    leave = t[1:][(mode[1:] != 3) & (mode[:-1] == 3)]
    assert len(enter) == 3, enter
    # Every 10 s (+ the dwell and the RTT that ends it; sampled every 0.1 s).
    assert np.all(np.abs(np.diff(enter) - 10.25) < 0.2), enter
    assert np.all((leave - enter[: len(leave)] >= 0.15) & (leave - enter[: len(leave)] <= 0.45)), (enter, leave)
    # The bandwidth filter holds the link's rate (1 % of the pacing margin aside).
    bw = f[f["t"] > 5]["bbr.btlbw_bps"]
    assert abs(bw.median() / 100e6 - 1) < 0.03, bw.describe()


@pytest.mark.parametrize("n", [2, 5])
def test_cwnd_gain_bounds_the_queue_in_a_deep_buffer(n):
    # With a buffer of 4 BDP, BBR flows are limited by cwnd = 2·BtlBw·RTprop (+ quantisation budget) and
    # the standing queue is about BDP·(cwnd_gain − 1) = 1 BDP whatever the number of flows. Measured:
    # 373.7 (2 flows) and 412.4 packets (5 flows), 1.12 and 1.24 BDP, no drop, utilisation 0.98-0.99.
    # Bound: 0.8-1.5 BDP (each flow adds its budget of about 3 × 2-12 packets).
    lk = run(["bbr"] * n, buffer="4BDP").summary["links"][0]
    assert 0.8 * BDP < lk["mean_queue_pkts"] < 1.5 * BDP and lk["drops"] == 0 and lk["utilization"] > 0.97, lk


def test_beside_cubic_the_buffer_decides():
    # BBR v1's known trait (Hock et al. 2017; Ware et al. 2019): in a shallow buffer it takes most of the
    # link from a loss-based flow, in a deep one the loss-based flow fills the buffer and wins. Measured
    # (seed 1): 1 BDP: BBR 84.1, CUBIC 10.5 Mbit/s; 4 BDP: BBR 28.6, CUBIC 67.9.
    shallow = [f["goodput_bps"] for f in run(["bbr", "cubic"]).summary["flows"]]
    deep = [f["goodput_bps"] for f in run(["bbr", "cubic"], buffer="4BDP").summary["flows"]]
    assert shallow[0] > 3 * shallow[1], shallow
    assert deep[1] > 1.5 * deep[0], deep
