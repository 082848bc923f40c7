"""netem-like link impairments in the simulator: jitter that keeps order (delay spread, no spurious
recovery), jitter that reorders (within the transport's 3-duplicate-ACK window: no spurious recovery;
beyond it: spurious fast retransmits, measured and documented), netem's reorder, duplication, and bad
settings refused. The model's draws are unit-tested in Rust (crates/cclab-cc/src/impair.rs), the
emulator's use of it in crates/cclab-net/src/emulator/core.rs."""

import pytest

import cclab
from cclab.scenario import ScenarioError


def run(**link):
    # One NewReno flow, 100 Mbit/s, 20 ms link delay (50 ms RTT), a 2000-packet buffer and a 434 KB receive
    # window (300 packets, below the buffer): no queue drop, so every retransmission is a spurious one. On the
    # papers' transport (dupack, no undo): what reordering does to a sender without RACK; the default
    # (Linux's) is tested on the same path in tests/test_rack.py.
    b = {"rate": "100Mbps", "buffer": 2000, "delay": "20ms", **link}
    d = {"name": "impair", "duration": "20s", "seed": 1, "measure": ["5s", "20s"],
         "transport": {"profile": "paper", "receive_window": "434KB"}, "topology": {"kind": "dumbbell", "bottleneck": b},
         "flows": [{"cc": "newreno", "rtt": "50ms"}]}
    s = cclab.run(d, progress=False, plots=False).summary
    return s["flows"][0], s["links"][0]


def test_jitter_that_keeps_order_spreads_the_delay_without_spurious_recovery():
    # ±10 ms uniform, order kept: RTT p50 50.1 -> 59.0 ms, p95 61.1 ms (a packet waits for the latest
    # arrival before it), goodput 69.1 -> 58.8 Mbit/s (the same 300-packet window over a longer RTT),
    # no retransmission.
    base, _ = run()
    f, lk = run(jitter="10ms")
    assert f["retransmits"] == 0 and f["fast_recoveries"] == 0 and lk["drops"] == 0
    assert f["p50_rtt_s"] > base["p50_rtt_s"] + 5e-3 and f["jitter_s"] > 0
    assert f["goodput_bps"] == pytest.approx(base["goodput_bps"] * base["mean_rtt"] / f["mean_rtt"], rel=0.03)


def test_reordering_within_three_packets_causes_no_spurious_recovery():
    # ±0.1 ms with reordering allowed: packets 0.12 ms apart overtake at most one or two others, fewer than
    # the three duplicate ACKs fast retransmit waits for: 0 recoveries, goodput as without jitter.
    base, _ = run()
    f, _ = run(jitter="0.1ms", jitter_reorder=True)
    assert f["fast_recoveries"] == 0 and f["retransmits"] == 0
    assert f["goodput_bps"] == pytest.approx(base["goodput_bps"], rel=0.01)


def test_deeper_reordering_triggers_spurious_fast_retransmits():
    # Measured (docs/scenario.md "Jitter, reordering, duplication"): the papers' transport has no RACK
    # reordering window and no D-SACK undo, so reordering deeper than three packets is taken for loss.
    # ±0.2 ms: 11 spurious recoveries, 15.6 Mbit/s; ±10 ms: 62, 1.5 Mbit/s; netem reorder 1 %: 12
    # recoveries, 194 retransmissions, 13.5 Mbit/s. The default, Linux's sender, undoes them (RACK-TLP,
    # D-SACK: tests/test_rack.py).
    for link in ({"jitter": "0.2ms", "jitter_reorder": True}, {"reorder": 0.01}):
        f, lk = run(**link)
        assert lk["drops"] == 0 and f["fast_recoveries"] >= 5 and f["goodput_bps"] < 30e6, (link, f)


def test_duplicated_packets_reach_the_receiver_and_cost_nothing_else():
    # 5 % duplicated: the receiver gets 4.7 % more packets than were sent (123 689 / 118 106); a
    # duplicate's extra duplicate ACK never makes three in a row, so no recovery; goodput unchanged.
    base, _ = run()
    f, _ = run(duplicate=0.05)
    assert 1.03 < f["received_pkts"] / f["sent_pkts"] < 1.07
    assert f["fast_recoveries"] == 0 and f["goodput_bps"] == pytest.approx(base["goodput_bps"], rel=0.01)


@pytest.mark.parametrize("link,words", [
    ({"jitter": "30ms"}, "larger than the link's delay"),
    ({"jitter": "5ms", "delay": "0ms"}, "larger than the link's delay"),
    ({"reorder": 0.1, "delay": "0ms"}, "give it a delay"),
    ({"jitter": "1ms", "jitter_distribution": "pareto"}, "jitter_distribution"),
    ({"duplicate": 2}, "duplicate"),
    ({"jitter": "-1ms"}, "jitter"),
])
def test_bad_impairments_are_refused(link, words, cli_refuses):
    b = {"rate": "10Mbps", "delay": "20ms", **link}
    d = {"name": "bad", "duration": "1s", "topology": {"kind": "dumbbell", "bottleneck": b},
         "flows": [{"cc": "newreno", "rtt": "50ms"}]}
    with pytest.raises(ScenarioError) as e:
        cclab.Scenario.from_dict(d)
    assert "topology.bottleneck" in str(e.value) and words in str(e.value), str(e.value)
    cli_refuses("".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in b.items()), words)
