"""Short transfers (`[[traffic]] kind = "transfers"`): Poisson arrivals of Pareto-sized NewReno
transfers, aggregated into flow-completion-time statistics (docs/scenario.md, "Short transfers")."""
import math

import pytest

import cclab


def _scenario(**traffic):
    return {
        "duration": "120s", "measure": ["10s", "110s"], "seed": 1,
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "1Gbps", "delay": "10ms", "buffer": "BDP"}},
        "flows": [{"cc": "newreno", "rtt": "40ms", "size": "1KB"}],
        "traffic": [{"kind": "transfers", "rtt": "40ms", **traffic}],
    }


def test_offered_load_sizes_and_completion_times_on_an_idle_link():
    # 20 Mbit/s of 50 KB transfers (Pareto shape 3: a finite variance, so 120 s of arrivals pin the mean
    # down) on 1 Gbit/s: nothing queues, so the load delivered is the load offered and a transfer's
    # completion time is its slow-start rounds.
    r = cclab.run(_scenario(rate="20Mbps", mean_size="50KB", shape=3), None, progress=False, plots=False)
    (t,) = r.summary["transfers"]
    # Arrivals: Poisson with mean 20e6 × 120 / (8 × 50e3) = 6000; 4σ ≈ 310.
    assert abs(t["arrivals"] - 6000) < 4 * math.sqrt(6000)
    # Unfinished at the end: those that arrived in the last completion time or so (50 arrivals/s × a
    # p99 of 0.16 s ≈ 8 measured).
    assert t["unfinished"] <= 20 and t["completed"] + t["unfinished"] == t["arrivals"]
    # Sizes: the sample mean of ~6000 Pareto(3) draws with mean 50 KB (std √3·50/… ≈ 29 KB): within 3 %
    # (about 4 standard errors).
    assert t["fct"]["mean_size_bytes"] == pytest.approx(50e3, rel=0.03)
    assert t["completed_bytes"] * 8 / 120 == pytest.approx(20e6, rel=0.05)
    # Completion times: a 40 ms path, initial window 10 (14.5 KB). Pareto(3) with mean 50 KB starts at
    # 33 KB: every transfer needs 2-3 windows (10 + 20 + 40 packets = 101 KB), so 2-3 RTTs plus the
    # serialisation (< 1 ms at 1 Gbit/s). The median sits between 2 and 3 RTTs.
    assert 0.080 <= t["fct"]["p50_s"] <= 0.125  # measured 0.0802: two RTTs
    assert t["fct"]["p99_s"] <= 0.25
    buckets = {b["lo_bytes"]: b for b in t["fct_by_size"]}
    assert buckets[0]["count"] == 0 and buckets[10_000]["count"] > 0
    assert sum(b["count"] for b in t["fct_by_size"]) == t["fct"]["count"]
    # The window counts arrivals in [10, 110) s only: about 100/120 of them.
    assert t["window_arrivals"] == pytest.approx(t["arrivals"] * 100 / 120, rel=0.05)


def test_transfers_congest_and_are_deterministic():
    # 80 Mbit/s offered to a 100 Mbit/s link beside a bulk flow: the transfers queue behind it, their
    # completion times grow, and the same seed gives the same aggregate bit for bit.
    d = _scenario(rate="80Mbps")
    d["topology"]["bottleneck"]["rate"] = "100Mbps"
    d["flows"][0].pop("size")
    d["duration"], d["measure"] = "40s", ["5s", "40s"]
    a = cclab.run(d, None, progress=False, plots=False)
    b = cclab.run(d, None, progress=False, plots=False)
    assert a.summary["transfers"] == b.summary["transfers"]
    t = a.summary["transfers"][0]
    assert t["peak_active"] > 5
    assert a.summary["links"][0]["utilization"] > 0.9  # measured 0.93
    # Each transfer still finishes (its state is freed then; unfinished ones are the last arrivals).
    assert t["unfinished"] < 0.02 * t["arrivals"]
    d["seed"] = 2
    c = cclab.run(d, None, progress=False, plots=False)
    assert c.summary["transfers"] != a.summary["transfers"]


@pytest.mark.parametrize("change,field", [
    ({"mean_size": "0B"}, "traffic[0].mean_size"),
    ({"shape": 1.0}, "traffic[0].shape"),
    ({"cc": "nosuch"}, "traffic[0].cc"),
    ({"params": {"nosuch": 1}, "cc": "cubic"}, "traffic[0].params.nosuch"),
    ({"rtt": None}, "traffic[0].rtt"),
    ({"mean_on": "1s"}, "traffic[0]"),
])
def test_bad_transfer_settings_name_their_field(change, field):
    d = _scenario(rate="10Mbps", **{k: v for k, v in change.items() if v is not None})
    if change.get("rtt", 0) is None:
        d["traffic"][0].pop("rtt")
    with pytest.raises(cclab.ScenarioError) as e:
        cclab.Scenario.from_dict(d).to_spec()
    assert any(f == field or f.startswith(field) for f, _ in e.value.errors), e.value.errors


def test_transfer_settings_on_other_kinds_are_refused():
    d = _scenario(rate="10Mbps")
    d["traffic"][0]["kind"] = "poisson"
    with pytest.raises(cclab.ScenarioError, match="transfers"):
        cclab.Scenario.from_dict(d)
