"""A link's delay schedule end to end through the front door and the simulator (the engine's arrival
rule is pinned exactly in crates/cclab-sim/tests/delay_schedule.rs, the emulator's in its core tests)."""

import cclab


def spike(**bottleneck):
    return {
        "name": "spike", "duration": "4s", "seed": 1, "sample_interval": "50ms",
        "topology": {"kind": "dumbbell", "bottleneck": {
            "rate": "20Mbps", "delay": "20ms", "buffer": "BDP",
            "delay_schedule": [["2s", "300ms"], ["2.5s", "20ms"]], **bottleneck}},
        "flows": [{"cc": "cubic", "rtt": "40ms"}],
    }


def test_the_spike_shows_in_the_rtt_and_goes_away():
    res = cclab.run(spike(), progress=False, plots=False)
    f = res.flows
    srtt = dict(zip(f["t"].round(3), f["srtt"]))
    # 20 + 20 ms of propagation before and after; during the spike the forward 300 ms enters the
    # smoothed RTT within a few samples (RFC 6298's 1/8 gain over ~50 ACKs a sample)
    assert srtt[1.9] < 0.1
    assert max(v for t, v in srtt.items() if 2.3 <= t <= 2.8) > 0.3
    assert srtt[3.9] < 0.1


def test_same_seed_same_result():
    a = cclab.run(spike(), progress=False, plots=False).summary["flows"][0]
    b = cclab.run(spike(), progress=False, plots=False).summary["flows"][0]
    assert a["goodput_bps"] == b["goodput_bps"] and a["retransmits"] == b["retransmits"]


def test_a_schedule_at_the_links_own_delay_changes_nothing():
    plain = spike()
    del plain["topology"]["bottleneck"]["delay_schedule"]
    flat = spike(delay_schedule=[["0s", "20ms"], ["2s", "20ms"]])
    a = cclab.run(plain, progress=False, plots=False).summary["flows"][0]
    b = cclab.run(flat, progress=False, plots=False).summary["flows"][0]
    assert a["goodput_bps"] == b["goodput_bps"] and a["mean_rtt"] == b["mean_rtt"]
