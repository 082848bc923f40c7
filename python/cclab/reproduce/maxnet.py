"""TCP MaxNet (Suchara, Caltech B.S. thesis 2006): docs/experiments.md, "M".

The thesis judges in words ("quickly", "within a few RTTs", "virtually no queue"); the numbers behind
them are ours and printed in each row: "a few RTTs" = 10 RTTs; "a fraction of a second" (the conclusion's
time to equilibrium at 1 Gbit/s) = under 1 s; "queue ≈ 0" = a mean queueing delay under 1 ms (3.6 % of
the 28 ms RTT: a delay, not a packet count, which would depend on the link rate).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..results import Result
from . import Claim, Experiment, Runs, window as w
from .overseeds import ci, judged, judged_each, per_seed
from .phases import phases, second_half

MU = 0.94  # the routers' target utilisation (thesis default; the scenarios keep it)
ALPHA, ETA, T_DEMAND = 0.3, 0.14, 0.05  # the sources' α, η and T (thesis defaults; the scenarios keep them)
PAPER = "TCP MaxNet (Suchara, Caltech 2006)"
FEW_RTTS = 10  # "a few RTTs"
FRACTION_OF_A_SECOND = 1.0
QUEUE_ZERO_MS = 1.0


def _rate(r: Result, link: int = 0) -> float:
    return float(r.summary["links"][link]["rate_bps"])


def _rtt(r: Result, flow: int = 0) -> float:
    return float(r.spec["flows"][flow]["rtt"])


def _sample(r: Result) -> float:
    return float(r.spec["sample_interval"])


def _pkt_bits(r: Result) -> float:
    return 8.0 * float(r.spec["flows"][0].get("packet_size", 1500))


def queue_delay_ms(r: Result, t0: float, t1: float, link: int = 0) -> float:
    """Mean queueing delay over [t0, t1]: the mean queue (packets) × a packet's transmission time."""
    return w.mean_queue(r, t0, t1, link) * _pkt_bits(r) / _rate(r, link) * 1e3


def _few_rtts(r: Result) -> float:
    # A rate is only seen per sample: the bound rounded up to the sampling interval.
    return math.ceil(FEW_RTTS * _rtt(r) / _sample(r) - 1e-9) * _sample(r)


def _wire_settle(r: Result, flow: int, t0: float, t1: float, target: float, tol: float = 0.1) -> float:
    """Seconds after ``t0`` until the flow's wire rate enters ±tol of ``target`` and stays there until t1
    (inf if it never settles): settling, not a first crossing."""
    f = r.flows[(r.flows["flow"] == flow) & (r.flows["t"] > t0) & (r.flows["t"] <= t1)]
    t = f["t"].to_numpy(float)
    x = np.diff(f["sent_bytes"].to_numpy(float), prepend=np.nan) * 8 / _sample(r)
    ok = np.abs(x - target) <= tol * target
    ok[0] = ok[0] if np.isfinite(x[0]) else False
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return float(t[0] - t0 - _sample(r))
    if bad[-1] == len(t) - 1:
        return math.inf
    return float(t[bad[-1]] - t0)


def _queue_clear(r: Result, t0: float, t1: float, ms: float = QUEUE_ZERO_MS, link: int = 0) -> float:
    """Seconds after ``t0`` until the queueing delay drops under ``ms`` and stays under it until t1."""
    l = r.links[(r.links["link"] == link) & (r.links["t"] > t0) & (r.links["t"] <= t1)]
    delay = l["queue_pkts"].to_numpy(float) * _pkt_bits(r) / _rate(r, link) * 1e3
    bad = np.flatnonzero(delay >= ms)
    if len(bad) == 0:
        return 0.0
    t = l["t"].to_numpy(float)
    return math.inf if bad[-1] == len(t) - 1 else float(t[bad[-1]] - t0)


def _queue_rows(runs: list[Result]) -> list[Claim]:
    dur = float(runs[0].spec["duration"])
    qd = per_seed(runs, lambda r: queue_delay_ms(r, 0, dur))
    dr = per_seed(runs, lambda r: w.drops(r, 0, dur))
    return [
        judged("the queue stays ≈ 0 throughout", "virtually no queue", qd,
               f"mean queueing delay < {QUEUE_ZERO_MS:g} ms", lambda v: v < QUEUE_ZERO_MS, fmt="{:.3f}", unit="ms"),
        judged("no packet is dropped", "no drops", [float(d) for d in dr], "0 drops", lambda v: v == 0,
               fmt="{:.1f}"),
    ]


# --- M1 -------------------------------------------------------------------------------------------------


def _m1_claims(res: Runs) -> list[Claim]:
    runs = res["maxnet"]
    r0 = runs[0]
    m0, m1 = (float(x) for x in r0.summary["measure"])
    u = per_seed(runs, lambda r: w.utilization(r, m0, m1))
    rtt = per_seed(runs, lambda r: (r.summary["flows"][0]["mean_rtt"] - _rtt(r)) * 1e3)
    t_up = per_seed(runs, lambda r: _wire_settle(r, 0, float(r.summary["flows"][0]["start"]), m1, MU * _rate(r)))
    # The price's equilibrium: x_max·exp(−q/T) = μC, i.e. the source's price-window rate at the router's
    # target. The time series carries the source's price; its rate is what the price sets.
    return [
        judged("one flow runs the link at μ", f"utilisation ≈ μ = {MU}", u, "within 0.02 of μ",
               lambda v: abs(v - MU) <= 0.02, fmt="{:.3f}"),
        judged("the RTT stays at the propagation delay", "RTT = two-way propagation delay", rtt,
               f"mean RTT − propagation < {QUEUE_ZERO_MS:g} ms", lambda v: v < QUEUE_ZERO_MS, fmt="{:.3f}",
               unit="ms"),
        judged("the rate converges quickly", "converges quickly (Fig. 10)", t_up,
               f"wire rate settled within ±10 % of μC in < {FRACTION_OF_A_SECOND:g} s",
               lambda v: v < FRACTION_OF_A_SECOND, unit="s"),
        *_queue_rows(runs),
    ]


# --- M2 -------------------------------------------------------------------------------------------------


def _m2_claims(res: Runs) -> list[Claim]:
    runs = res["maxnet"]

    def span(r: Result) -> tuple[tuple[float, float], tuple[float, float, list[int]], tuple[float, float]]:
        (a0, a1, _), (b0, b1, both), (c0, c1, _) = phases(r)[:3]
        return (a0, a1), (b0, b1, both), (c0, c1)

    u = per_seed(runs, lambda r: w.utilization(r, *second_half(*span(r)[0])))
    t_join = per_seed(runs, lambda r: _wire_settle(r, 1, span(r)[1][0], span(r)[1][1], MU * _rate(r) / 2))
    j = per_seed(runs, lambda r: w.jain_of(r, span(r)[1][2], *second_half(*span(r)[1][:2])))
    t_back = per_seed(runs, lambda r: _wire_settle(r, 0, span(r)[2][0], span(r)[2][1], MU * _rate(r)))
    few = _few_rtts(runs[0])
    return [
        judged("one flow alone runs the link at μ", f"utilisation ≈ μ = {MU}", u, "within 0.02 of μ",
               lambda v: abs(v - MU) <= 0.02, fmt="{:.3f}"),
        judged("the newcomer gets half the link quickly (QuickStart, then price mode)",
               "equilibrium in a fraction of a second (ch. 7)", t_join,
               f"its wire rate settled within ±10 % of μC/2 in < {FRACTION_OF_A_SECOND:g} s",
               lambda v: v < FRACTION_OF_A_SECOND, unit="s"),
        judged("two flows split the link in equal halves", "equal halves of μC", j, "Jain ≥ 0.99",
               lambda v: v >= 0.99, fmt="{:.4f}"),
        judged("the first flow regains the full rate after the second leaves", "within a few RTTs", t_back,
               f"settled within ±10 % of μC in ≤ {FEW_RTTS} RTTs ({few:.2f} s at this sampling)",
               lambda v: v <= few + 1e-9, unit="s"),
        *_queue_rows(runs),
    ]


def _m2_explain(res: Runs, claims: list[Claim]) -> str:
    r = res["maxnet"][0]
    b0 = phases(r)[1][0]
    f = r.flows[(r.flows["flow"] == 1) & (r.flows["t"] > b0) & (r.flows["t"] <= b0 + 2)]
    mode = f["maxnet.mode"].to_numpy(float) if "maxnet.mode" in f else np.empty(0)
    switch = float(f["t"].iloc[int(np.argmax(mode > 0))] - b0) if mode.size and (mode > 0).any() else math.nan
    return (f"The newcomer's first packets carry the router's QuickStart grant; it doubles its rate per RTT "
            f"until the rates meet and then follows the price (seed 1: price mode {switch:.2f} s after the "
            f"join). The settling time counts until the wire rate stays within ±10 % of μC/2: "
            f"{claims[1].measured}.")


# --- M3 -------------------------------------------------------------------------------------------------


def _m3_claims(res: Runs) -> list[Claim]:
    runs = res["maxnet"]

    def last(r: Result) -> tuple[float, float, list[int]]:
        return phases(r)[-1]

    j = per_seed(runs, lambda r: w.jain_of(r, last(r)[2], *second_half(*last(r)[:2])))
    t_eq = per_seed(runs, lambda r: _wire_settle(r, 2, last(r)[0], last(r)[1], MU * _rate(r) / 3))
    ratio = per_seed(runs, lambda r: w.goodput(r, 2, *second_half(*last(r)[:2]))
                     / float(np.mean(w.goodputs(r, [0, 1], *second_half(*last(r)[:2])))))
    return [
        judged("the three rates become equal despite the RTTs (56, 56, 28 ms)", "equal rates (Fig. 12)", j,
               "Jain ≥ 0.99 (second half after the join)", lambda v: v >= 0.99, fmt="{:.4f}"),
        judged("the 28 ms flow gets what a 56 ms flow gets", "equal", ratio, "ratio within 5 % of 1",
               lambda v: abs(v - 1) <= 0.05, fmt="{:.3f}"),
        judged("the newcomer reaches its third quickly", "quickly", t_eq,
               f"settled within ±10 % of μC/3 in < {FRACTION_OF_A_SECOND:g} s",
               lambda v: v < FRACTION_OF_A_SECOND, unit="s"),
    ]


# --- M4 -------------------------------------------------------------------------------------------------


def _udp_span(r: Result) -> tuple[float, float]:
    src = r.spec["traffic"][0]
    return float(src["start"]), float(src["stop"])


def _m4_claims(res: Runs) -> list[Claim]:
    runs = res["maxnet"]
    few = _few_rtts(runs[0])

    def udp(r: Result) -> float:
        return float(r.spec["traffic"][0]["rate_bps"])

    t_give = per_seed(runs, lambda r: _wire_settle(r, 0, _udp_span(r)[0], _udp_span(r)[1],
                                                   MU * _rate(r) - udp(r)))
    t_clear = per_seed(runs, lambda r: _queue_clear(r, _udp_span(r)[0], _udp_span(r)[1]))
    peak = per_seed(runs, lambda r: float(r.links[(r.links["link"] == 0) & (r.links["t"] > _udp_span(r)[0])
                                                   & (r.links["t"] <= _udp_span(r)[1])]["queue_pkts"].max())
                    * _pkt_bits(r) / _rate(r) * 1e3)
    during = per_seed(runs, lambda r: queue_delay_ms(r, _udp_span(r)[0] + few, _udp_span(r)[1]))
    t_back = per_seed(runs, lambda r: _wire_settle(r, 0, _udp_span(r)[1], float(r.spec["duration"]), MU * _rate(r)))
    return [
        judged("MaxNet gives up the UDP rate within a few RTTs", "within a few RTTs (\"almost immediately\")",
               t_give, f"wire rate settled within ±10 % of μC − UDP in ≤ {FEW_RTTS} RTTs ({few:.2f} s)",
               lambda v: v <= few + 1e-9, unit="s"),
        judged("the queue quickly returns to ≈ 0", "the RTT rises briefly", t_clear,
               f"queueing delay under {QUEUE_ZERO_MS:g} ms for good within {FEW_RTTS} RTTs of the join",
               lambda v: v <= few + 1e-9, unit="s", extra=f"peak {ci(peak, '{:.1f}')} ms"),
        judged("no standing queue while UDP runs", "queue ≈ 0", during,
               f"mean queueing delay < {QUEUE_ZERO_MS:g} ms after the first {FEW_RTTS} RTTs",
               lambda v: v < QUEUE_ZERO_MS, fmt="{:.3f}", unit="ms"),
        judged("back to the full rate after UDP leaves", "returns to the full rate", t_back,
               f"settled within ±10 % of μC in ≤ {FEW_RTTS} RTTs ({few:.2f} s)", lambda v: v <= few + 1e-9,
               unit="s"),
    ]


def _m4_explain(res: Runs, claims: list[Claim]) -> str:
    r = res["maxnet"][0]
    t0, t1 = _udp_span(r)
    l = r.links[(r.links["link"] == 0) & (r.links["t"] > t0) & (r.links["t"] <= t1)]
    q = l["queue_pkts"].to_numpy(float)
    t_peak = float(l["t"].iloc[int(np.argmax(q))] - t0)
    price = l["maxnet.price"].to_numpy(float) if "maxnet.price" in l else np.full(len(l), np.nan)
    settled = price[-1]
    t_price = float(l["t"].iloc[int(np.argmax(np.abs(price - settled) <= 0.05 * abs(settled)))] - t0) \
        if np.isfinite(settled) and settled else math.nan
    rtt = _rtt(r)
    spare = (1 - MU) * _rate(r) / _pkt_bits(r)
    return (f"The router's price reacts at once (within 5 % of its new level {t_price:.2f} s after the UDP "
            f"flow starts, seed 1), but the source hears it one feedback delay later: until then the link "
            f"receives μC + 470 Mbit/s and the queue peaks {t_peak:.2f} s after the join at {q.max():.0f} "
            f"packets. MaxNet's rate then follows the price within a few RTTs ({claims[0].measured}), and the "
            f"backlog drains at the spare (1 − μ)·C the virtual queue leaves ({spare:.0f} packets/s, "
            f"{q.max() / spare:.2f} s for the peak): {claims[1].measured.split(';')[0]} "
            f"({claims[1].seeds_held[0] if claims[1].seeds_held else 0} of {len(res['maxnet'])} seeds within "
            f"{FEW_RTTS} RTTs = {FEW_RTTS * rtt:.2f} s). The thesis's \"quickly returns to zero\" holds on the "
            f"scale of a second, not of a few RTTs.")


# --- M5 -------------------------------------------------------------------------------------------------

M5_LOSS = (0.0, 0.0001, 0.0002, 0.0005, 0.001, 0.0015, 0.002, 0.0025)  # the thesis's axis, 0 … 0.25 %
M5_CC = ("maxnet", "newreno", "bic", "westwood")


def _m5_variant(cc: str, loss: float) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["topology"]["bottleneck"]["loss"] = loss
        if cc != "maxnet":
            d["topology"]["bottleneck"]["queue"] = "droptail"  # the loss-based ones ignore the price
        for f in d["flows"]:
            f["cc"] = cc
        return d
    return change


def _m5_name(cc: str, loss: float) -> str:
    return f"{cc} loss={loss * 100:g}%"


def _m5_goodput(res: Runs, cc: str, loss: float) -> list[float]:
    return [r.summary["flows"][0]["goodput_bps"] / 1e6 for r in res[_m5_name(cc, loss)]]


def _m5_claims(res: Runs) -> list[Claim]:
    rows = []
    top = M5_LOSS[-1]
    mx = _m5_goodput(res, "maxnet", top)
    c = _rate(res[_m5_name("maxnet", top)][0]) / 1e6
    rows.append(judged(f"MaxNet keeps its rate under loss ({top * 100:g} %)", "loss does not reduce its window",
                       mx, f"≥ 0.9·μC ({0.9 * MU * c:.0f} Mbit/s)", lambda v: v >= 0.9 * MU * c, fmt="{:.0f}",
                       unit="Mbit/s"))
    for cc in M5_CC[1:]:
        at = _m5_goodput(res, cc, 0.001)
        rows.append(judged(f"0.1 % loss is devastating for {cc}", "\"loss as low as 0.1 % is devastating\"", at,
                           "below a quarter of the link", lambda v: v < 0.25 * c, fmt="{:.1f}", unit="Mbit/s"))
    for loss in M5_LOSS[1:]:
        m = _m5_goodput(res, "maxnet", loss)
        best = {cc: np.mean(_m5_goodput(res, cc, loss)) for cc in M5_CC[1:]}
        ok = [m[i] > max(_m5_goodput(res, cc, loss)[i] for cc in M5_CC[1:]) for i in range(len(m))]
        rows.append(judged_each(f"MaxNet above the others at {loss * 100:g} % loss", "far above the others (Fig. 14)",
                                f"MaxNet {ci(m, '{:.0f}')}; " + ", ".join(f"{k} {v:.1f}" for k, v in best.items())
                                + " Mbit/s", "MaxNet's goodput the highest on every seed", ok))
    return rows


def _m5_figures(res: Runs) -> dict:
    import matplotlib.pyplot as plt

    from ..stats import spread

    fig, ax = plt.subplots(figsize=(6, 4))
    for cc in M5_CC:
        s = [spread(_m5_goodput(res, cc, p)) for p in M5_LOSS]
        ax.errorbar([p * 100 for p in M5_LOSS], [x[0] for x in s], yerr=[np.nan_to_num(x[3]) for x in s],
                    marker="o", capsize=3, label=cc)
    ax.set(xlabel="random loss (%)", ylabel="goodput (Mbit/s)", title="M5: throughput vs loss (mean, 95 % CI)")
    ax.legend()
    return {"m5_throughput_vs_loss": fig}


# --- M6 -------------------------------------------------------------------------------------------------


def max_min(caps: list[float], paths: list[list[int]]) -> list[float]:
    """Water-filling: raise every unfrozen flow's rate together; freeze the flows of each link as it fills."""
    rate = [0.0] * len(paths)
    left = list(caps)
    live = set(range(len(paths)))
    while live:
        share = min(left[l] / sum(1 for i in live if l in paths[i]) for l in range(len(caps))
                    if any(l in paths[i] for i in live))
        for i in live:
            rate[i] += share
        for l in range(len(caps)):
            left[l] -= share * sum(1 for i in live if l in paths[i])
        full = {l for l in range(len(caps)) if left[l] <= 1e-9 * caps[l]}
        live = {i for i in live if not full & set(paths[i])}
    return rate


def proportional_two_link(c0: float, c1: float) -> list[float]:
    """Proportionally fair rates (max Σ log x) of the parking lot: long flow x across both links, short
    flows c0 − x and c1 − x: 1/x = 1/(c0 − x) + 1/(c1 − x), solved in closed form (the root in (0, c1))."""
    # x(c1 − x) + x(c0 − x) = (c0 − x)(c1 − x)  →  3x² − 2(c0 + c1)x + c0·c1 = 0
    b = 2 * (c0 + c1)
    x = (b - math.sqrt(b * b - 12 * c0 * c1)) / 6
    return [x, c0 - x, c1 - x]


def _m6_rates(r: Result) -> list[float]:
    return [f["throughput_bps"] / 1e6 for f in r.summary["flows"]]


def _m6_claims(res: Runs) -> list[Claim]:
    r0 = res["maxnet"][0]
    caps = [l["rate_bps"] / 1e6 for l in r0.summary["links"][:2]]
    mm = max_min([MU * c for c in caps], [[0, 1], [0], [1]])
    pf = proportional_two_link(*caps)
    rows = []
    err = per_seed(res["maxnet"], lambda r: max(abs(g / m - 1) for g, m in zip(_m6_rates(r), mm)))
    rows.append(judged("MaxNet's rates are max-min fair", "max-min fair (§1.2)", [100 * e for e in err],
                       "every flow within 10 % of the max-min rates at μC "
                       f"({' / '.join(f'{x:.1f}' for x in mm)} Mbit/s)", lambda v: v <= 10, fmt="{:.1f}",
                       unit="% worst error"))
    fe = per_seed(res["fast"], lambda r: max(abs(g / m - 1) for g, m in zip(_m6_rates(r), pf)))
    rows.append(judged("FAST's rates are proportionally fair", "weighted proportional fairness (FAST §V)",
                       [100 * e for e in fe], "every flow within 10 % of the proportionally fair rates "
                       f"({' / '.join(f'{x:.1f}' for x in pf)} Mbit/s)", lambda v: v <= 10, fmt="{:.1f}",
                       unit="% worst error"))
    for cc in ("fast", "vegas"):
        long_ = per_seed(res[cc], lambda r: _m6_rates(r)[0])
        rows.append(judged(f"{cc}: the long flow gets less than its max-min share",
                           "less than max-min", long_, f"long flow < {caps[1] / 2:.1f} Mbit/s (half of link 1)",
                           lambda v: v < caps[1] / 2, fmt="{:.1f}", unit="Mbit/s"))
    return rows


def _m6_explain(res: Runs, claims: list[Claim]) -> str:
    """Why Vegas's long-flow row can straddle its criterion: the spread of its allocation over seeds."""
    r0 = res["maxnet"][0]
    caps = [l["rate_bps"] / 1e6 for l in r0.summary["links"][:2]]
    pf = proportional_two_link(*caps)
    rows = []
    for cc in ("fast", "vegas"):
        long_ = per_seed(res[cc], lambda r: _m6_rates(r)[0])
        short1 = per_seed(res[cc], lambda r: _m6_rates(r)[2])
        rows.append(f"{cc}: long flow {min(long_):.1f}-{max(long_):.1f} Mbit/s over {len(long_)} seeds "
                    f"({ci(long_, '{:.1f}')}), link 1's own flow {ci(short1, '{:.1f}')}")
    return ("FAST holds α packets per flow in the queues on its path: one equilibrium, the proportionally fair "
            f"one (long flow {pf[0]:.1f} Mbit/s here), whatever the seed. Vegas holds between two thresholds "
            "of packets per flow (a band, not a point), so any allocation whose queues fall inside the band is "
            "an equilibrium, and where a run settles can differ from seed to seed (the seeds differ in the flows' "
            "start times). "
            "Its long flow's rate therefore spreads over seeds around half of link 1, the row's criterion: "
            + "; ".join(rows) + ".")


def _m6_figures(res: Runs) -> dict:
    import matplotlib.pyplot as plt

    r0 = res["maxnet"][0]
    caps = [l["rate_bps"] / 1e6 for l in r0.summary["links"][:2]]
    mm = max_min([MU * c for c in caps], [[0, 1], [0], [1]])
    pf = proportional_two_link(*caps)
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = np.arange(3)
    for k, (cc, runs) in enumerate(res.items()):
        rates = np.array([_m6_rates(r) for r in runs])
        ax.bar(xs + 0.2 * k - 0.2, rates.mean(0), 0.2, label=cc)
    ax.scatter(xs, mm, marker="_", s=400, color="k", label="max-min at μC", zorder=3)
    ax.scatter(xs, pf, marker="x", color="r", label="proportionally fair", zorder=3)
    ax.set(xticks=xs, xticklabels=["long (links 0+1)", "link 0", "link 1"], ylabel="rate (Mbit/s)",
           title="M6: parking lot rates")
    ax.legend()
    return {"m6_parking_lot": fig}


# --- M7 -------------------------------------------------------------------------------------------------

M7_RATE = 460.0  # Mbit/s, the thesis's stable rate with averaging (0.92 of the 500 Mbit/s cap)
M7_NEAR = 0.05  # "stabilised at 460": the mean within 5 % of it (ours)
M7_STABLE_COV = 0.05  # "stable": the 10 ms rate samples' coefficient of variation under 5 % (ours)
M7_MUCH_LARGER = 5.0  # "unstable" against "stable": a CoV at least five times the averaged one (ours)


def _wire(r: Result, flow: int, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """A flow's wire rate (bit/s) per sample over (t0, t1]: the bytes sent in each sampling interval."""
    f = r.flows[r.flows["flow"] == flow]
    t = f["t"].to_numpy(float)
    x = np.diff(f["sent_bytes"].to_numpy(float), prepend=np.nan) * 8 / _sample(r)
    keep = (t > t0 + 1e-9) & (t <= t1 + 1e-9) & np.isfinite(x)
    return t[keep], x[keep]


def _m7_window(r: Result) -> tuple[float, float]:
    m0, m1 = (float(x) for x in r.summary["measure"])
    return m0, m1


def m7_mean_mbps(r: Result) -> float:
    return float(np.mean(_wire(r, 0, *_m7_window(r))[1])) / 1e6


def m7_cov(r: Result) -> float:
    """Coefficient of variation of the 10 ms wire-rate samples over the measurement window."""
    x = _wire(r, 0, *_m7_window(r))[1]
    return float(np.std(x) / np.mean(x))


def _m7_claims(res: Runs) -> list[Claim]:
    avg, raw = res["averaging"], res["no averaging"]
    lo, hi = (1 - M7_NEAR) * M7_RATE, (1 + M7_NEAR) * M7_RATE
    ratio = [m7_cov(b) / m7_cov(a) for a, b in zip(avg, raw)]
    return [
        judged("with price averaging the throughput stabilises at 460 Mbit/s", "460 Mbit/s (0.92 of the cap)",
               per_seed(avg, m7_mean_mbps), f"mean wire rate within {M7_NEAR:.0%} of {M7_RATE:g} "
               f"({lo:.0f}-{hi:.0f} Mbit/s)", lambda v: lo <= v <= hi, fmt="{:.1f}", unit="Mbit/s"),
        judged("with price averaging the rate is stable", "stable (Fig. 7b)", per_seed(avg, m7_cov),
               f"CoV of the {_sample(avg[0]) * 1e3:g} ms rate samples < {M7_STABLE_COV:g}",
               lambda v: v < M7_STABLE_COV, fmt="{:.4f}"),
        judged("without price averaging the transmission is unstable", "unstable", ratio,
               f"CoV without averaging ≥ {M7_MUCH_LARGER:g} × the CoV with it (same seed)",
               lambda v: v >= M7_MUCH_LARGER, fmt="{:.2f}", unit="×",
               extra=f"CoV {ci(per_seed(raw, m7_cov), '{:.4f}')}"),
    ]


def _m7_explain(res: Runs, claims: list[Claim]) -> str:
    r = res["no averaging"][0]
    l = r.links[(r.links["link"] == 0) & (r.links["t"] > _m7_window(r)[0])]
    price = l["maxnet.price"].to_numpy(float) if "maxnet.price" in l else np.full(len(l), np.nan)
    swing = float(np.nanstd(np.diff(price)))
    b = _rtt(r)
    gain = ALPHA / b  # α/baseRTT: the window's log-sensitivity to the price
    return (f"The price the router writes is an integrator over 1 ms intervals (a virtual queue served at μC), "
            f"not an instantaneous load: here it changes by {swing * 1e6:.1f} µs (standard deviation) from one "
            f"{_sample(r) * 1e3:g} ms sample to the next (seed 1, no averaging). The source's window depends on "
            f"the price through exp(−q·α/baseRTT): a change of that size moves it by {swing * gain:.2%}. The "
            f"simulated sender's packets reach the router spread by the ACK clock of a constant-rate link, so "
            f"the immediate price carries no burst noise for averaging to remove, and the two variants run "
            f"alike: CoV {claims[1].measured.split(' (')[0]} with averaging, "
            f"{claims[2].measured.split('CoV ')[-1]} without. The thesis's instability came from bursts that "
            f"this model does not produce (its token bucket's, its kernel's); the claim that averaging is "
            f"needed is not reproduced, the stable rate with it is (μC = {MU * _rate(r) / 1e6:.0f} Mbit/s "
            f"against the thesis's 460).")


def _m7_figures(res: Runs) -> dict:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, runs in res.items():
        t, x = _wire(runs[0], 0, 0, float(runs[0].spec["duration"]))
        ax.plot(t, x / 1e6, lw=0.8, label=name)
    ax.axhline(M7_RATE, color="k", ls=":", lw=0.8, label=f"thesis: {M7_RATE:g} Mbit/s")
    ax.set(xlabel="time (s)", ylabel="wire rate (Mbit/s)", title="M7: 500 Mbit/s cap, with and without averaging")
    ax.legend(fontsize=8)
    return {"m7_price_averaging": fig}


def _params(**kv: object) -> Callable[[dict], dict]:
    """A variant: every MaxNet flow's params updated with ``kv``."""
    def change(d: dict) -> dict:
        for f in d["flows"]:
            if f["cc"] == "maxnet":
                f["params"] = {**f.get("params", {}), **kv}
        return d
    return change


# --- M8 -------------------------------------------------------------------------------------------------

M8_XI_TOL = 0.01  # ξ "converged": within 1 % of its fixed point (ours)
M8_IMMEDIATE_RTTS = 1  # "immediate": within one RTT of the drop (ours; rounded up to the sampling)
M8_BIN = 0.04  # the thesis printed its measurements every 40 ms (tcp_maxnet_message_dt, §4.3): its figures' grain
M8_DIP = 0.1  # a throughput dip: a 40 ms sample more than 10 % below μC (ours)
M8_BAND = 0.05  # "undisturbed": the 40 ms rate within ±5 % of μC (ours)
M8_OVERSHOOT = 1.05  # an oscillation, not a recovery: after the dip a 40 ms sample above 1.05·μC (ours)


def _m8_half(d: dict) -> dict:
    """The drop at half the duration (10 s of the thesis's 20 s; also in a quick run)."""
    from ..units import parse_time

    return _params(base_rtt_drop_at=parse_time(d["duration"]) / 2)(d)


def _m8_variant(eq12: bool) -> Callable[[dict], dict]:
    return lambda d: _params(base_rtt_correction=eq12)(_m8_half(d))


def _m8_drop(r: Result) -> tuple[float, float]:
    p = r.spec["flows"][0].get("params", {})
    return float(p["base_rtt_drop_at"]), float(p["base_rtt_drop"])


def m8_xi_settle(r: Result) -> float:
    """Seconds after the drop until ξ is within M8_XI_TOL of its fixed point ξ* = q·(α/b − 1/T) at the new
    base RTT b, and stays there (to the end of the run); inf if never."""
    at, drop = _m8_drop(r)
    f = r.flows[(r.flows["flow"] == 0) & (r.flows["t"] > at)]
    b = _rtt(r) - drop
    star = f["maxnet.price"].to_numpy(float) * (ALPHA / b - 1 / T_DEMAND)
    ok = np.abs(f["maxnet.xi"].to_numpy(float) - star) <= M8_XI_TOL * np.abs(star)
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return float(f["t"].iloc[0] - at)
    return math.inf if bad[-1] == len(ok) - 1 else float(f["t"].iloc[bad[-1] + 1] - at)


def _m8_binned(r: Result, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
    """The wire rate over (t0, t1] in M8_BIN bins, as a fraction of μC (bin end times, fractions)."""
    f = r.flows[r.flows["flow"] == 0]
    t, sent = f["t"].to_numpy(float), f["sent_bytes"].to_numpy(float)
    edges = t0 + M8_BIN * np.arange(int(round((t1 - t0) / M8_BIN)) + 1)
    b = np.interp(edges, t, sent)
    return edges[1:], np.diff(b) * 8 / M8_BIN / (MU * _rate(r))


def m8_dip(r: Result) -> float:
    """The lowest 40 ms wire rate in the second after the drop, as a fraction of μC."""
    at, _ = _m8_drop(r)
    return float(np.min(_m8_binned(r, at, at + 1.0)[1]))


def m8_overshoot(r: Result) -> float:
    """The highest 40 ms wire rate in the second after the drop, after its lowest, as a fraction of μC."""
    at, _ = _m8_drop(r)
    x = _m8_binned(r, at, at + 1.0)[1]
    return float(np.max(x[int(np.argmin(x)):]))


def m8_rate_settle(r: Result) -> float:
    """Seconds after the drop until the 40 ms wire rate enters ±M8_BAND of μC and stays (to the end)."""
    at, _ = _m8_drop(r)
    t, x = _m8_binned(r, at, float(r.spec["duration"]))
    bad = np.flatnonzero(np.abs(x - 1) > M8_BAND)
    if len(bad) == 0:
        return 0.0
    return math.inf if bad[-1] == len(x) - 1 else float(t[bad[-1]] - at)


def _m8_claims(res: Runs) -> list[Claim]:
    on, off = res["eq. 12"], res["no eq. 12"]
    imm = math.ceil(M8_IMMEDIATE_RTTS * _rtt(on[0]) / _sample(on[0]) - 1e-9) * _sample(on[0])
    xi_crit = f"ξ within {M8_XI_TOL:.0%} of ξ* for good"
    return [
        judged("with eq. 12, ξ converges immediately", "convergence of ξ is immediate (Fig. 8f)",
               per_seed(on, m8_xi_settle), f"{xi_crit} ≤ {M8_IMMEDIATE_RTTS} RTT after the drop ({imm:.2f} s "
               "at this sampling)", lambda v: v <= imm + 1e-9, unit="s"),
        judged("with eq. 12, no throughput dip", "throughput undisturbed (Fig. 8b)", per_seed(on, m8_dip),
               f"every {M8_BIN * 1e3:g} ms rate in the second after the drop ≥ {1 - M8_DIP:g}·μC",
               lambda v: v >= 1 - M8_DIP, fmt="{:.3f}", unit="of μC (lowest)"),
        judged("with eq. 12, the rate stays at μC", "throughput undisturbed (Fig. 8b)", per_seed(on, m8_rate_settle),
               f"{M8_BIN * 1e3:g} ms rate within ±{M8_BAND:.0%} of μC for good ≤ one {M8_BIN * 1e3:g} ms sample "
               "after the drop", lambda v: v <= M8_BIN + 1e-9, unit="s"),
        judged("without eq. 12, ξ re-converges slowly", "ξ converges slowly (Fig. 8e)",
               per_seed(off, m8_xi_settle), f"{xi_crit} later than {imm:.2f} s ({M8_IMMEDIATE_RTTS} RTT) after "
               "the drop", lambda v: v > imm + 1e-9, unit="s"),
        judged("without eq. 12, the throughput dips", "window mismatch, temporary instability (Fig. 8a)",
               per_seed(off, m8_dip), f"a {M8_BIN * 1e3:g} ms rate in the second after the drop < "
               f"{1 - M8_DIP:g}·μC", lambda v: v < 1 - M8_DIP, fmt="{:.3f}", unit="of μC (lowest)",
               extra=f"back within ±{M8_BAND:.0%} for good after {ci(per_seed(off, m8_rate_settle), '{:.2f}')} s"),
        judged("without eq. 12, the throughput oscillates", "oscillations (Fig. 8a)", per_seed(off, m8_overshoot),
               f"after the dip, a {M8_BIN * 1e3:g} ms rate ≥ {M8_OVERSHOOT:g}·μC (a swing past μC, not only a "
               "recovery)", lambda v: v >= M8_OVERSHOOT, fmt="{:.3f}", unit="of μC (highest)"),
    ]


def _m8_explain(res: Runs, claims: list[Claim]) -> str:
    r = res["no eq. 12"][0]
    at, drop = _m8_drop(r)
    f = r.flows[(r.flows["flow"] == 0) & (r.flows["t"] <= at)]
    q = float(f["maxnet.price"].iloc[-1])
    b0 = _rtt(r)
    jump = math.exp(-q * ALPHA * (1 / (b0 - drop) - 1 / b0))
    tau = (b0 - drop) ** 2 / (ETA * T_DEMAND)
    peak = m8_overshoot(r)
    return (f"Without eq. 12 the lower estimate shrinks the window at once by exp(−q·α·(1/b_new − 1/b_old)) = "
            f"{jump:.3f} at the price q = {q:.4f} s before the drop (seed 1); eq. 9 then pulls ξ back to its "
            f"fixed point with the time constant baseRTT²/(η·T) = {tau:.3f} s, and the rate recovers "
            f"({claims[4].measured.split('; ')[-1]}) with an overshoot to {peak:.3f}·μC in its 40 ms rates: "
            f"one swing, not a sustained oscillation. "
            f"With eq. 12 ξ is moved to the new fixed point in the same step, so the exponent of eq. 8 is "
            f"unchanged; the window still scales with the estimate (by {(b0 - drop) / b0:.3f}) because the path "
            f"did not change, which the router's price absorbs (lowest {M8_BIN * 1e3:g} ms rate {claims[1].measured.split(' (')[0]}).")


def _m8_figures(res: Runs) -> dict:
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    for name, runs in res.items():
        r = runs[0]
        at, drop = _m8_drop(r)
        t, x = _wire(r, 0, at - 1.0, at + 2.0)
        a.plot(t, x / 1e6, lw=0.8, label=name)
        f = r.flows[(r.flows["flow"] == 0) & (r.flows["t"] > at - 1.0) & (r.flows["t"] <= at + 2.0)]
        b.plot(f["t"], f["maxnet.xi"], lw=0.8, label=f"ξ, {name}")
    f = f[f["t"] > at]  # ξ* at the new estimate: defined from the drop on
    b.plot(f["t"], f["maxnet.price"] * (ALPHA / (_rtt(r) - drop) - 1 / T_DEMAND), lw=0.6, ls=":", color="k",
           label="ξ* at the new baseRTT")
    a.set(ylabel="wire rate (Mbit/s)", title="M8: base-RTT estimate lowered by 1 ms")
    b.set(xlabel="time (s)", ylabel="ξ")
    a.legend(fontsize=8)
    b.legend(fontsize=8)
    return {"m8_base_rtt_drop": fig}


# --- shared figures ---------------------------------------------------------------------------------------


def _traces(title: str) -> Callable[[Runs], dict]:
    """The thesis's trace figures: each flow's wire rate and the queueing delay against time (seed 1)."""
    def draw(res: Runs) -> dict:
        import matplotlib.pyplot as plt

        r = next(iter(res.values()))[0]
        fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        for i, f in r.flows.groupby("flow"):
            a.plot(f["t"], np.diff(f["sent_bytes"].to_numpy(float), prepend=0) * 8 / _sample(r) / 1e6,
                   lw=0.8, label=f"flow {i} ({f['rtt'].iloc[0] * 1e3:.0f} ms)")
        l = r.links[r.links["link"] == 0]
        b.plot(l["t"], l["queue_pkts"] * _pkt_bits(r) / _rate(r) * 1e3, lw=0.8, color="k")
        a.set(ylabel="wire rate (Mbit/s)", title=title)
        a.legend(fontsize=8)
        b.set(xlabel="time (s)", ylabel="queueing delay (ms)")
        return {title.split(":")[0].lower() + "_traces": fig}
    return draw


def _cc_everywhere(cc: str, queue: str, params: dict | None = None) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        for l in d["topology"]["links"]:
            l["queue"] = queue
        for f in d["flows"]:
            f["cc"] = cc
            if params:
                f["params"] = dict(params)
        return d
    return change


EXPERIMENTS = [
    Experiment(
        id="M1", paper=PAPER, title="one flow at 1 Gbit/s", scenario="maxnet_m1.toml",
        variants={"maxnet": lambda d: d}, claims=_m1_claims, figures=_traces("M1: one flow"),
        notes="Full size: 1 Gbit/s, 28 ms, one-BDP buffer; 10 s, measured over 2-10 s.",
    ),
    Experiment(
        id="M2", paper=PAPER, title="join and leave", scenario="maxnet_m2.toml",
        variants={"maxnet": lambda d: d}, claims=_m2_claims, figures=_traces("M2: join and leave"),
        explain=_m2_explain,
        notes="Full size: 1 Gbit/s, 28 ms, 40 s, join at 13-13.5 s (per seed), leave at 27 s.",
    ),
    Experiment(
        id="M3", paper=PAPER, title="RTT fairness", scenario="maxnet_m3.toml",
        variants={"maxnet": lambda d: d}, claims=_m3_claims, figures=_traces("M3: RTT fairness"),
        notes="Full size: 400 Mbit/s (as the thesis), 56/56/28 ms; 30 s with the join at 10-10.5 s.",
    ),
    Experiment(
        id="M4", paper=PAPER, title="beside an unresponsive UDP flow", scenario="maxnet_m4.toml",
        variants={"maxnet": lambda d: d}, claims=_m4_claims, figures=_traces("M4: beside 470 Mbit/s UDP"),
        explain=_m4_explain,
        notes="Full size: 1 Gbit/s, 28 ms, 40 s, UDP 470 Mbit/s from 13 s to 27 s; measured from the join.",
    ),
    Experiment(
        id="M5", paper=PAPER, title="random loss", scenario="maxnet_m5.toml",
        variants={_m5_name(cc, p): _m5_variant(cc, p) for cc in M5_CC for p in M5_LOSS}, claims=_m5_claims,
        figures=_m5_figures,
        notes="Full size: 1 Gbit/s, 28 ms, 20 s per transfer, the thesis's loss axis 0-0.25 %; five seeds stand for "
              "its five consecutive transfers; loss on data packets only.",
    ),
    Experiment(
        id="M6", paper=PAPER, title="max-min fairness on a parking lot", scenario="maxnet_m6.toml",
        variants={"maxnet": lambda d: d, "fast": _cc_everywhere("fast", "droptail", {"alpha": 20}),
                  "vegas": _cc_everywhere("vegas", "droptail")},
        claims=_m6_claims, figures=_m6_figures, explain=_m6_explain,
        notes="Links of 100 and 50 Mbit/s, 40 ms RTT for every flow; FAST with α = 20 packets.",
    ),
    Experiment(
        id="M7", paper=PAPER, title="price averaging under a 500 Mbit/s cap", scenario="maxnet_m7.toml",
        variants={"averaging": lambda d: d, "no averaging": _params(price_averaging=False)},
        claims=_m7_claims, figures=_m7_figures, explain=_m7_explain,
        notes="500 Mbit/s MaxNet bottleneck (no token bucket in the simulator), 2 ms RTT (none in the thesis), "
              "ACK-clocked sender (pacing off, as the thesis's kernel); 10 s, measured over 2-10 s.",
    ),
    Experiment(
        id="M8", paper=PAPER, title="base-RTT estimate drops by 1 ms", scenario="maxnet_m8.toml",
        variants={"eq. 12": _m8_variant(True), "no eq. 12": _m8_variant(False)},
        claims=_m8_claims, figures=_m8_figures, explain=_m8_explain,
        notes="1 Gbit/s, 28 ms, one-BDP buffer, 20 s; the sender's base-RTT estimate (not the path) is lowered by "
              "1 ms at 10 s, as the thesis did.",
    ),
]
