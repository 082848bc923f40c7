"""`[transport] receive_window`: the receiver's advertised window caps what a sender has in flight,
whatever its algorithm's window (TCP-Madison's D3 capped Reno at 172 KB)."""
import pytest

import cclab
from cclab.scenario import ScenarioError


def scenario(rw, cc="cubic"):
    # An ACK per packet: one window per round trip holds when every packet's ACK goes at once. With Linux's
    # receiver, the default, CUBIC and NewReno still deliver 10 packets per mean RTT (1.029 Mbit/s), Libra
    # 0.996 against 1.030 (-3.4 %, its 10 packets go out in uneven groups, acknowledged in pairs).
    return {"name": "rw", "duration": "20s", "measure": ["5s", "20s"], "transport": {"receiver": "per_packet"},
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": "BDP"}},
            "flows": [{"cc": cc, "rtt": "100ms", "transport": {"receive_window": rw}},
                      {"cc": "newreno", "rtt": "100ms"}]}


@pytest.mark.parametrize("cc", ["cubic", "newreno", "libra"])
def test_a_window_limited_flow_sends_one_window_per_rtt(cc):
    # 14480 B = 10 packets of 1448 B: the flow delivers 10 · 1448 B per round trip, so its goodput is
    # 10 · 1448 · 8 / (mean RTT), measured 1.027 Mbit/s against 1.029 for cubic. 2 %: the mean RTT is
    # averaged over samples while goodput counts packets, and the window's edges fall between samples.
    r = cclab.run(scenario("14480B", cc), progress=False)
    f = r.summary["flows"][0]
    assert f["goodput_bps"] == pytest.approx(10 * 1448 * 8 / f["mean_rtt"], rel=0.02)
    assert r.flows[r.flows["flow"] == 0]["in_flight"].max() == 10
    assert r.spec["flows"][0]["transport"]["max_window"] == 10
    # The other flow is not capped and takes the rest of the link.
    assert r.summary["flows"][1]["goodput_bps"] > 80e6


def test_partial_segments_round_down_and_too_small_is_refused():
    assert cclab.Scenario.from_dict(scenario("20000B")).to_spec()["flows"][0]["transport"]["max_window"] == 13
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.transport\.receive_window: must hold at least one mss"):
        cclab.Scenario.from_dict(scenario("1000B"))
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.transport\.receive_window"):
        cclab.Scenario.from_dict(scenario("-5KB"))
    assert "max_window" not in cclab.Scenario.from_dict(scenario(None)).to_spec()["flows"][0]["transport"]


@pytest.mark.parametrize("cc", ["newreno", "madison"])
def test_a_capped_flow_under_loss_keeps_running(cc):
    # Loss recovery while the receive window binds: SACKed data still counts against the window, so the
    # sender may have room in its congestion window and none in the receive window. It must wait for the
    # ACK (a sender that asked to be woken "now" in that state looped forever at one instant, which this
    # run would expose as a hang: it did for Madison, which paces, before the fix). 1 % random loss,
    # 20-packet window.
    d = scenario("28960B", cc)
    d["topology"]["bottleneck"]["loss"] = 0.01
    r = cclab.run(d, progress=False)
    f = r.summary["flows"][0]
    assert f["retransmits"] > 0 and r.flows[r.flows["flow"] == 0]["in_flight"].max() <= 20
    assert 0 < f["goodput_bps"] <= 20 * 1448 * 8 / 0.1
