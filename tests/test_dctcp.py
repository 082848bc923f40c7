"""DCTCP (RFC 8257) with step ECN marking at K (drop-tail's `mark_threshold`) in the simulator: the queue
held near K at full utilisation, where Reno with the same marking underuses the link and drop-tail Reno
fills the buffer; α near the paper's estimate. The sender's rules are unit-tested in Rust
(crates/cclab-cc/src/algorithms/dctcp.rs)."""
import math

import pytest

import cclab


def run(cc, n, k=20, ecn=True, seed=1):
    b = {"rate": "1Gbps", "buffer": 500, "queue": "droptail"}
    if k is not None:
        b["params"] = {"mark_threshold": k}
    d = {"name": "dctcp", "duration": "10s", "seed": seed, "measure": ["2s", "10s"], "transport": {"ecn": ecn},
         "topology": {"kind": "dumbbell", "bottleneck": b},
         "flows": [{"cc": cc, "rtt": "1ms", "count": n, "start": ["0s", "0.1s"]}]}
    return cclab.run(d, progress=False, plots=False)


@pytest.mark.parametrize("n", [2, 10])
def test_dctcp_holds_the_queue_near_k_at_full_utilisation(n):
    # 1 Gbit/s, 1 ms (BDP 83 packets), 500-packet buffer, K = 20. Measured: DCTCP mean queue 16.4 (2 flows)
    # and 16.7 (10 flows) packets, max 22 and 30, utilisation 1.000, no drop; NewReno with the same
    # marking 0.758 and 0.818 (each mark halves a window that a 20-packet queue cannot cover); drop-tail
    # NewReno 371 and 379 packets of queue. "Near K": within [K/2, 1.5 K] on average.
    for seed in (1, 2):
        lk = run("dctcp", n, seed=seed).summary["links"][0]
        assert 10 <= lk["mean_queue_pkts"] <= 30 and lk["utilization"] > 0.99 and lk["drops"] == 0, lk
    reno = run("newreno", n).summary["links"][0]
    assert reno["utilization"] < 0.9
    tail = run("newreno", n, k=None, ecn=False).summary["links"][0]
    assert tail["mean_queue_pkts"] > 300


def test_k_sets_the_queue():
    # K = 65: mean queue 60.1 packets (2 flows), still full utilisation.
    lk = run("dctcp", 2, k=65).summary["links"][0]
    assert 55 <= lk["mean_queue_pkts"] <= 70 and lk["utilization"] > 0.99


@pytest.mark.parametrize("n", [2, 10])
def test_alpha_is_near_the_papers_estimate(n):
    # Alizadeh et al. §3.3: in steady state α ≈ sqrt(2/W*), W* = (C·RTT + K)/N the window at which the
    # queue reaches K. Here W* = (83 + 20)/N: 0.197 for 2 flows, 0.44 for 10; measured mean α 0.141 and
    # 0.328 (ratio 0.72, 0.75: the estimate assumes a sawtooth synchronised across flows, which the
    # random starts break). Bound: 0.5-1.1 of the estimate, and more flows mark more.
    r = run("dctcp", n)
    a = float(r.flows[r.flows["t"] > 2]["dctcp.alpha"].mean())
    est = math.sqrt(2 / ((83.3 + 20) / n))
    assert 0.5 < a / est < 1.1, (a, est)


def test_mark_threshold_is_checked():
    from cclab.scenario import ScenarioError
    d = {"name": "bad", "duration": "1s", "topology": {"kind": "dumbbell", "bottleneck": {
        "rate": "10Mbps", "params": {"mark_threshold": 2.5}}}, "flows": [{"cc": "dctcp", "rtt": "10ms"}]}
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(d)
    assert "topology.bottleneck.params.mark_threshold" in str(e.value)
