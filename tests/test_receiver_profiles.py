"""`[transport] receiver` ("per_packet" | "linux") and `dsack` end to end: what the Linux receiver does to the
ACK count, and how bad values are refused. The rules themselves (quick ACKs, the 40 ms timer, D-SACK blocks)
are tested with scripted arrivals in crates/cclab-transport/src/{delack,receiver}.rs."""

import subprocess
import sys

import cclab

DURATION_S = 10
ACK_BYTES = 52  # packet_size 1500 - mss 1448: an ACK is a header


def clean_run(transport):
    # CUBIC at 40 ms over 100 Mbit/s with a 400 KB receive window (276 packets, under the 333-packet BDP): the
    # sender is window-limited, the queue never fills and nothing is lost, so the ACK count is the receiver's
    # policy alone.
    d = {
        "name": "receiver",
        "duration": f"{DURATION_S}s",
        "seed": 1,
        # The papers' transport (per-packet receiver, dupack, no D-SACK) with the settings under test.
        "transport": {"profile": "paper", "receive_window": "400KB", **transport},
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "100Mbps", "buffer": "BDP"}},
        "flows": [{"cc": "cubic", "rtt": "40ms"}],
    }
    return cclab.run(d, progress=False, plots=False).summary


def acks_per_packet(s):
    # ACKs cross the reverse bottleneck (links[1]) alone: its utilisation over the whole run counts them.
    rev, f = s["links"][1], s["flows"][0]
    acks = rev["utilization"] * rev["rate_bps"] * DURATION_S / (ACK_BYTES * 8)
    return acks / f["received_pkts"]


def test_linux_receiver_halves_the_ack_count_on_a_clean_dumbbell():
    per_packet, linux = clean_run({}), clean_run({"receiver": "linux"})
    for s in (per_packet, linux):
        assert s["links"][0]["drops"] == 0 and s["flows"][0]["retransmits"] == 0, "the run must be clean"
    # One ACK per packet, exactly (the count is a float product: 0.1 % covers its rounding).
    assert abs(acks_per_packet(per_packet) - 1) < 1e-3
    # One per two packets, plus the 16 quick ACKs at the start and at most one timer ACK per idle gap (none
    # here: the window-limited sender never pauses for 40 ms): 16 extra of ~34 000 is 0.05 %; bound 0.5 %.
    # Measured: 0.50012.
    ratio = acks_per_packet(linux)
    assert 0.5 <= ratio < 0.505, ratio
    # The sender still fills the window: goodput within 1 % (measured 78.33 and 78.05 Mbit/s).
    g = [s["flows"][0]["goodput_bps"] for s in (per_packet, linux)]
    assert abs(g[1] / g[0] - 1) < 0.01, g


def test_dsack_on_a_clean_path_changes_nothing():
    # No packet arrives twice, so there is nothing to report: the run is the same to the last counter.
    assert clean_run({"receiver": "linux", "dsack": True})["flows"] == clean_run({"receiver": "linux"})["flows"]


def test_bad_receiver_settings_are_refused_naming_the_field(tmp_path):
    cases = [
        ('receiver = "bsd"', "transport.receiver", "per_packet"),
        ('receiver = "linux"\ndelayed_ack = 2', "transport.delayed_ack", 'receiver = "per_packet" only'),
        ('receiver = "linux"\ndelayed_ack_timeout = "40ms"', "transport.delayed_ack_timeout", "40 ms timer"),
        ("sack = false\ndsack = true", "transport.dsack", "sack = false"),
    ]
    for i, (lines, field, words) in enumerate(cases):
        toml = tmp_path / f"bad{i}.toml"
        toml.write_text(
            f'name = "bad"\nduration = "1s"\n[transport]\n{lines}\n[topology]\nkind = "dumbbell"\n'
            '[topology.bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "newreno"\nrtt = "50ms"\n'
        )
        out = tmp_path / f"out{i}"
        r = subprocess.run([sys.executable, "-m", "cclab.cli", "run", str(toml), "--out", str(out), "--no-plots"], capture_output=True, text=True)
        assert r.returncode == 2 and field in r.stderr and words in r.stderr, (lines, r.stderr)
        assert "Traceback" not in r.stderr and not out.exists(), r.stderr


def test_dsack_reports_the_network_duplicates_to_the_sender():
    # 1 % of packets duplicated at the bottleneck (netem-like `duplicate`), CUBIC at 40 ms over 50 Mbit/s for
    # 10 s: every duplicate reaches the receiver after its original, so with `dsack` each is reported in a
    # D-SACK block, which the sender counts (`dsacks_received`). Without `dsack` there are none. Expected
    # ~1 % of ~41 000 packets = 410 (measured: 386); the binomial spread is ±40 at 2 sigma, so the bound
    # 0.5-1.5 % leaves room for the seed and for duplicates lost at the full queue.
    def flow(transport):
        d = {
            "name": "dup",
            "duration": "10s",
            "seed": 1,
            "transport": {"profile": "paper", **transport},  # dsack alone, on the papers' transport
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {"rate": "50Mbps", "buffer": "BDP", "delay": "5ms", "duplicate": 0.01},
            },
            "flows": [{"cc": "cubic", "rtt": "40ms"}],
        }
        return cclab.run(d, progress=False, plots=False).summary["flows"][0]

    off, on = flow({}), flow({"dsack": True})
    assert off["dsacks_received"] == 0
    share = on["dsacks_received"] / on["received_pkts"]
    assert 0.005 < share < 0.015, (on["dsacks_received"], on["received_pkts"])
    # Reporting duplicates changes no sending decision unless a sender switch reads them (undo, rack).
    assert on["goodput_bps"] == off["goodput_bps"] and on["retransmits"] == off["retransmits"]
