"""`[transport] loss_detection = "rack"` and `undo` end to end in the simulator: a path that reorders but drops
nothing (beyond its queue) must not look lossy. The rules themselves are tested with scripted ACKs in Rust
(crates/cclab-transport/src/sender_tests.rs, rack.rs, undo.rs)."""

import pytest

import cclab
from cclab.errors import ScenarioError


def reordering_path(transport, seed):
    # On the papers' transport (dupack, per-packet ACKs, no undo, no D-SACK) plus the settings under test,
    # so each setting is seen alone (the default, profile = "linux", has them all: below). One CUBIC flow,
    # 50 Mbit/s, 40 ms, 200-packet buffer, ±1 ms jitter with overtaking (netem's `delay 5ms 1ms`): a packet
    # is 0.24 ms on the wire, so reordering runs up to ~8 packets deep.
    return cclab.run(
        {
            "name": "reorder",
            "duration": "20s",
            "measure": ["5s", "20s"],
            "seed": seed,
            "transport": {"profile": "paper", **transport},
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "50Mbps", "delay": "5ms", "buffer": 200, "jitter": "1ms", "jitter_reorder": True}},
            "flows": [{"cc": "cubic", "rtt": "40ms"}],
        },
        progress=False,
        plots=False,
    ).summary


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rack_keeps_a_reordering_path_full_where_dupthresh_starves(seed):
    # Measured over 5 seeds, 60 s runs (docs/scenario.md): dupack 0.084 ± 0.010 of the link, rack
    # 1.000 ± 0.000 (Linux CUBIC through the emulator: 48.3 of 50 Mbit/s). Bounds: rack >= 0.8 (the goal),
    # dupack <= 0.2 (over twice its measured mean: each deep reordering halves its window).
    rack = reordering_path({"loss_detection": "rack"}, seed)
    dupack = reordering_path({}, seed)
    assert rack["links"][0]["utilization"] >= 0.8, rack["links"][0]
    assert dupack["links"][0]["utilization"] <= 0.2, dupack["links"][0]
    # RACK sees the shallow reorderings first and widens its window before a deep one can fool it:
    # retransmissions stay at the queue's own drops (no more than a few per second).
    f = rack["flows"][0]
    assert f["window_retransmits"] <= 5 * 15, f


def test_undo_gives_dupthresh_its_window_back_on_the_same_path():
    # With `undo` each spurious fast recovery of the DupThresh rule is undone when the original fills the
    # hole (timestamps): the link stays full, at the price of the spurious retransmissions themselves
    # (measured 5 seeds: utilisation 1.000, ~480 recoveries undone per second, goodput 42.7 Mbit/s).
    s = reordering_path({"undo": True}, 1)
    f = s["flows"][0]
    assert s["links"][0]["utilization"] >= 0.8
    assert f["spurious_recoveries_undone"] > 100 * 15, f
    assert f["spurious_recoveries_undone"] <= f["window_retransmits"]


@pytest.mark.parametrize(
    "transport, field, words",
    [
        ({"loss_detection": "fack"}, "transport.loss_detection", "dupack"),
        ({"loss_detection": "rack", "sack": False}, "transport.loss_detection", "sack = false"),
        ({"undo": "maybe"}, "transport.undo", "bool"),
    ],
)
def test_bad_settings_are_refused_by_name(transport, field, words):
    sc = {
        "name": "x",
        "duration": "1s",
        "transport": transport,
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps"}},
        "flows": [{"cc": "cubic", "rtt": "20ms"}],
    }
    with pytest.raises(ScenarioError) as e:
        cclab.run(sc, progress=False, plots=False)
    msgs = [(f, m) for f, m in e.value.errors]
    assert any(f == field and words in m for f, m in msgs), msgs


def test_dsacks_widen_racks_window_on_netem_reorder():
    # netem `reorder 1%` (a packet skips the 20 ms delay and overtakes ~2 ms of data), NewReno, 100 Mbit/s,
    # 50 ms, the receive window (434 KB: 69 Mbit/s) the only limit, as tests/test_impair.py. The early packet
    # makes RACK take everything sent well before it for lost; only D-SACKs (the receiver's `dsack`) show
    # the retransmissions needless, undo them and widen the reordering window until it covers the path.
    # Measured, seed 1: rack alone 3.4 Mbit/s, with undo and dsack 69.1 (dupack: 13.5). Bound: 90 % of the
    # receive window's rate for the full sender, and more than RACK alone gets (the D-SACKs do it).
    def goodput(transport):
        s = cclab.run(
            {
                "name": "reorder",
                "duration": "20s",
                "seed": 1,
                "measure": ["5s", "20s"],
                "transport": {"profile": "paper", "receive_window": "434KB", **transport},
                "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": 2000, "delay": "20ms", "reorder": 0.01}},
                "flows": [{"cc": "newreno", "rtt": "50ms"}],
            },
            progress=False,
            plots=False,
        ).summary
        return s["flows"][0]["goodput_bps"] / 1e6

    full = goodput({"loss_detection": "rack", "undo": True, "dsack": True})
    alone = goodput({"loss_detection": "rack"})
    assert full >= 0.9 * 69.0, full
    assert alone < full, (alone, full)
    # The default transport (profile = "linux") is the full sender with Linux's receiver: as good here
    # (measured 69.0 Mbit/s, seed 1; same bound).
    default = goodput({"profile": "linux"})
    assert default >= 0.9 * 69.0, default


def _transport_spec(transport):
    sc = {"name": "x", "duration": "1s", "transport": transport,
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps"}}, "flows": [{"cc": "cubic", "rtt": "20ms"}]}
    return cclab.Scenario.from_dict(sc).to_spec()["flows"][0]["transport"]


def test_the_default_transport_is_linuxs_and_paper_is_the_old_one():
    linux = {"loss_detection": "rack", "undo": True, "dsack": True, "receiver": "linux"}
    era = {"loss_detection": "dupack", "undo": False, "dsack": False, "receiver": "per_packet"}
    assert _transport_spec({}) == _transport_spec(linux) == _transport_spec({"profile": "linux"})
    assert _transport_spec({"profile": "paper"}) == _transport_spec(era)
    # The paper profile's spec leaves the four keys out: specs from before the default changed replay as they did.
    assert not {"loss_detection", "undo", "dsack", "receiver"} & set(_transport_spec({"profile": "paper"}))
    # A key written out wins over its profile.
    assert _transport_spec({"profile": "paper", "undo": True})["undo"] is True
    assert "undo" not in _transport_spec({"undo": False})
    # Without SACK (or with delayed ACKs set) the Linux profile falls back quietly where it must.
    no_sack = _transport_spec({"sack": False})
    assert "loss_detection" not in no_sack and "dsack" not in no_sack and no_sack["receiver"] == "linux"
    assert "receiver" not in _transport_spec({"delayed_ack": 2})
