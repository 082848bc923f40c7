"""H-TCP, YeAH, TCP-LP and LEDBAT in the simulator: each one's defining claim, measured on small dumbbells
(60 s, window 10-60 s, 3 seeds). The rules are unit-tested in Rust (crates/cclab-cc/src/algorithms/
htcp.rs, yeah.rs, lp.rs, ledbat.rs); ns-3 comparisons are in docs/validation.md."""
import pytest

import cclab

SEEDS = (1, 2, 3)
LFN = {"rate": "500Mbps", "loss": 1e-5, "buffer": "0.2BDP"}  # a long fat lossy pipe: 500 Mbit/s × 100 ms


def run(ccs, seed=1, rate="20Mbps", loss=0.0, buffer="BDP", params=None):
    d = {"name": "na", "duration": "60s", "seed": seed, "measure": ["10s", "60s"],
         "topology": {"kind": "dumbbell", "bottleneck": {"rate": rate, "buffer": buffer, "loss": loss}},
         "flows": [{"cc": c, "rtt": "100ms", "start": ["0s", "1s"], **({"params": params} if params and i == 0 else {})}
                   for i, c in enumerate(ccs)]}
    return cclab.run(d, progress=False, plots=False).summary


def gp(s, i=None):
    return (s["total"]["goodput_bps"] if i is None else s["flows"][i]["goodput_bps"]) / 1e6


@pytest.mark.parametrize("cc,factor", [("htcp", 3.0), ("yeah", 5.0)])
def test_high_speed_algorithms_fill_a_long_fat_pipe(cc, factor):
    # 500 Mbit/s, 100 ms, 1e-5 random loss, 0.2·BDP buffer: NewReno's window is capped by the loss rate
    # (36-66 Mbit/s measured); H-TCP's increase grows with the time since the last loss (212-251 Mbit/s),
    # YeAH grows as Scalable while it queues little (434-464 Mbit/s, utilisation 0.96).
    for s in SEEDS:
        assert gp(run([cc], s, **LFN)) > factor * gp(run(["newreno"], s, **LFN)), (cc, s)


def test_yeah_shares_with_reno():
    # YeAH's claim beside its speed: friendliness. One YeAH and one NewReno flow, 20 Mbit/s, 100 ms, BDP
    # buffer: YeAH detects the Reno flow (slow mode most rounds) and behaves as Reno. Measured YeAH/NewReno
    # 8.38/10.93, 9.57/9.73, 7.80/11.51 Mbit/s. H-TCP in the same place takes 84 % (16.22/3.09).
    for s in SEEDS:
        r = run(["yeah", "newreno"], s)
        assert 0.5 < gp(r, 0) / gp(r, 1) < 1.5, [gp(r, i) for i in (0, 1)]


@pytest.mark.parametrize("cc,params", [("lp", None), ("ledbat", {"target": 0.025})])
def test_scavengers_yield_to_reno(cc, params):
    # A scavenger beside NewReno (20 Mbit/s, 100 ms, BDP buffer = 100 ms of queue): TCP-LP sees the queue
    # NewReno builds as early congestion and stays out of its way (1.69-1.72 of 19.3 Mbit/s); LEDBAT with
    # a 25 ms target does too (0.36-1.94). Bound: under 15 % of the total. (LEDBAT at its default 100 ms
    # target does not yield here: a 100 ms buffer never shows it more than its target; docs/algorithms/
    # ledbat.md.)
    for s in SEEDS:
        r = run([cc, "newreno"], s, params=params)
        assert gp(r, 0) < 0.15 * gp(r), [gp(r, i) for i in (0, 1)]


def test_scavengers_use_an_empty_link():
    # Alone, LEDBAT fills the link and holds the queue at its target (25 ms target: mean queueing delay
    # 25.7-25.8 ms, utilisation 1.000); TCP-LP backs off at a 15 % rise of its delay range, so it leaves some
    # capacity unused but keeps the queue short (seeds 1-3: utilisation 0.707-0.713, 3.4 ms; NewReno 56 ms).
    # With an ACK per packet (profile = "paper") 0.843-0.849 and 3.8 ms: with Linux's receiver, the default,
    # the cuts are as many (seed 1: 4 in 60 s) but one more early indication falls inside the inference
    # time (seed 1 at 44.07 s: 102 -> 1 packet, as tcp_lp.c does) and the window regrows from one packet
    # for ~15 s (why Linux's receiver provokes it was not traced further). Bound 0.65: under every seed's.
    for s in SEEDS:
        led = run(["ledbat"], s, params={"target": 0.025})["links"][0]
        assert led["utilization"] > 0.99 and led["mean_queue_delay_s"] == pytest.approx(0.025, rel=0.1)
    lp = run(["lp"])["links"][0]
    assert lp["utilization"] > 0.65 and lp["mean_queue_delay_s"] < 0.01
