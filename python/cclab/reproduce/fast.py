"""FAST TCP (Jin, Wei & Low, INFOCOM 2004): docs/experiments.md, "F".

The paper's unit of measurement is the interval of fixed flow composition (a phase, §VI); each phase is
judged on its settled second half. Every row is over the experiment's seeds (mean ± 95 % CI).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..metrics import stability_index, throughput_samples
from ..results import Result
from . import Claim, Experiment, Runs, all_flows_as as _as, window as w
from .overseeds import ci, judged, judged_each, per_seed
from .phases import phases, second_half

PAPER = "FAST TCP (Jin, Wei & Low, INFOCOM 2004)"
LOSS_BASED = ("highspeed", "newreno", "scalable")
VARIANTS: dict[str, Callable[[dict], dict]] = {"fast": lambda d: d, "highspeed": _as("highspeed"),
                                               "newreno": _as("newreno"), "scalable": _as("scalable")}


def _alpha(r: Result, flow: int = 0) -> float:
    """The flow's FAST α (packets); NaN for a flow that does not run FAST (a row about n·α then cannot hold)."""
    f = r.spec["flows"][flow]
    a = (f.get("params") or {}).get("alpha") if f.get("cc") == "fast" else None
    return float(a) if a is not None else float("nan")


def _queue_errors(r: Result) -> list[tuple[int, float]]:
    """(n, mean queue in the phase's second half) per phase."""
    return [(len(a), w.mean_queue(r, *second_half(t0, t1))) for t0, t1, a in phases(r)]


def _multi(r: Result) -> list[tuple[float, float, list[int]]]:
    return [p for p in phases(r) if len(p[2]) > 1]


def _stab(r: Result, period: float | None = None) -> float:
    """The stability index averaged over phases (settled halves), with rate samples of ``period``."""
    vals = []
    step = period or float(r.spec["sample_interval"])
    for t0, t1, a in phases(r):
        s0, s1 = second_half(t0, t1)
        if s1 - s0 >= 3 * step:  # an interval needs a few samples (random starts make slivers)
            vals.append(stability_index(throughput_samples(r.flows, s0, s1, period, a)[1]))
    return float(np.nanmean(vals)) if vals else float("nan")


def _resp(r: Result) -> float:
    return float(np.mean([w.responsiveness(r, a, t0, t1) for t0, t1, a in phases(r)]))


# Tables III/IV: FAST obtained the best fairness, HSTCP about Reno's, STCP worse than Reno; the issue's
# reading of the tables' numbers is this order.
PAPER_FAIRNESS = ("fast", "highspeed", "newreno", "scalable")


def _ranking(by_cc: dict[str, list[float]], seed: int) -> tuple[str, ...]:
    """The protocols in falling order of their value on seed index ``seed``."""
    return tuple(sorted(by_cc, key=lambda cc: by_cc[cc][seed], reverse=True))


def _orders(seen: list[tuple[str, ...]]) -> str:
    """The orders observed over seeds, most frequent first: "fast > newreno > ... on 4 of 5"."""
    from collections import Counter

    return "; ".join(f"{' > '.join(o)} on {k} of {len(seen)}" for o, k in Counter(seen).most_common())


def _dynamic_claims(res: Runs) -> list[Claim]:
    runs = res["fast"]
    alpha = _alpha(runs[0])
    rows = []
    worst = per_seed(runs, lambda r: 100 * max(abs(q - n * alpha) / (n * alpha) for n, q in _queue_errors(r)))
    qs = np.array([[q for _, q in _queue_errors(r)] for r in runs])
    ns = [n for n, _ in _queue_errors(runs[0])]
    rows.append(judged("queue stays near n·α in every phase", "queue = Σα (equilibrium, §II)", worst,
                       "worst phase's mean queue (second half) within 15 % of n·α", lambda v: v <= 15, fmt="{:.1f}",
                       unit="% worst error", extra="per phase " + ", ".join(
                           f"{m:.1f} (n·α {n * alpha:g})" for n, m in zip(ns, qs.mean(0)))))
    jmin = per_seed(runs, lambda r: min(w.jain_of(r, a, *second_half(t0, t1)) for t0, t1, a in _multi(r)))
    rows.append(judged("converges to the new equal share after each join/leave", "equal shares (Fig. 6)", jmin,
                       "Jain ≥ 0.95 in every multi-flow phase (the lowest phase)", lambda v: v >= 0.95,
                       fmt="{:.3f}"))
    resp = {cc: per_seed(v, _resp) for cc, v in res.items()}
    quickest = [resp["fast"][i] < min(resp[cc][i] for cc in res if cc != "fast") for i in range(len(runs))]
    rows.append(judged_each("responds fastest", "responsiveness index: FAST's the lowest of the four (Fig. 9, §VI)",
                            "mean over phases: " + ", ".join(f"{cc} {ci(v, '{:.1f}', 's')}" for cc, v in resp.items()),
                            "FAST's responsiveness index (mean over phases) the lowest, per seed", quickest))
    stab = {cc: per_seed(v, _stab) for cc, v in res.items()}
    lowest = [stab["fast"][i] < min(stab[cc][i] for cc in res if cc != "fast") for i in range(len(runs))]
    rows.append(judged_each("no oscillation", "stability index FAST ≪ loss-based (Fig. 7)",
                            ", ".join(f"{cc} {ci(v, '{:.3f}')}" for cc, v in stab.items()),
                            "FAST's stability index (mean over phases, 100 ms samples) the lowest, per seed", lowest))
    dur = float(runs[0].spec["duration"])
    # Start-up (slow start until the queue is seen) overshoots by up to a window when the buffer is below
    # the BDP; the paper's "no loss" is the equilibrium's (Σα below the buffer). Both are printed.
    up = per_seed(runs, lambda r: float(w.drops(r, 0, phases(r)[1][0])))
    rows.append(judged("no loss once running", "0 drops with Σα below the buffer",
                       per_seed(runs, lambda r: float(w.drops(r, phases(r)[1][0], dur))),
                       "0 drops after the first flow's phase", lambda v: v == 0, fmt="{:.1f}",
                       extra=f"{ci(up, '{:.0f}')} drops in the first flow's start-up (reported)"))
    mj = {cc: per_seed(v, lambda r: float(np.mean([w.jain_of(r, a, *second_half(t0, t1)) for t0, t1, a in _multi(r)])))
          for cc, v in res.items()}
    # Strictly: a tie with another protocol (the same algorithm under two names) is not "the fairest".
    others = [cc for cc in res if cc != "fast"]
    first = [mj["fast"][i] > max(mj[cc][i] for cc in others) for i in range(len(runs))]
    order = sorted(mj, key=lambda cc: float(np.mean(mj[cc])), reverse=True)
    measured = " > ".join(f"{cc} {ci(mj[cc], '{:.3f}')}" for cc in order)
    rows.append(judged_each("FAST is the fairest", "FAST obtained the best fairness (Tables III/IV)", measured,
                            "FAST's mean Jain (multi-flow phases) the highest, per seed", first))
    seen = [_ranking(mj, i) for i in range(len(runs))]
    rows.append(judged_each("fairness ranking, every position", "Jain FAST > HSTCP > Reno > STCP (Tables III/IV)",
                            f"{measured}; per seed: {_orders(seen)}",
                            "the four in the paper's order by mean Jain (multi-flow phases), per seed",
                            [o == PAPER_FAIRNESS for o in seen]))
    util = per_seed(runs, lambda r: min(w.utilization(r, *second_half(t0, t1)) for t0, t1, _ in phases(r)))
    rows.append(judged("high utilisation in every phase", "high utilisation", util,
                       "≥ 0.9 in every phase's second half (the lowest phase)", lambda v: v >= 0.9, fmt="{:.3f}"))
    return rows


def _dynamic_explain(res: Runs, claims: list[Claim]) -> str:
    """The stability index depends on the sampling period: measured at 0.1, 1 and 10 s."""
    periods = (0.1, 1.0, 10.0)
    tab = {cc: [float(np.mean([_stab(r, p) for r in v])) for p in periods] for cc, v in res.items()}
    r = res["fast"][0]
    first = phases(r)[0]
    fill = w.settle_time(r, 0, first[0], first[1], 0.9 * r.summary["links"][0]["rate_bps"])
    lines = [f"A lone FAST flow reaches 90 % of the link {fill:.1f} s after it starts (seed 1): after "
             "start-up its window climbs by γα per update, so each phase must last well beyond that for "
             "the second half to be at equilibrium.",
             "",
             "Stability index (mean over phases and seeds) at three sampling periods:",
             "",
             "| protocol | " + " | ".join(f"{p:g} s" for p in periods) + " |",
             "| --- | " + " | ".join("---" for _ in periods) + " |"]
    lines += [f"| {cc} | " + " | ".join("—" if np.isnan(x) else f"{x:.3f}" for x in v) + " |" for cc, v in tab.items()]
    if any(np.isnan(x) for v in tab.values() for x in v):
        lines += ["", "— : the phases' settled halves are shorter than three samples at that period."]
    over = np.mean([[(fl["min_rtt"] - fl["rtt"]) * 1e3 for fl in r.summary["flows"]] for r in res["fast"]], axis=0)
    lines += ["", "A FAST flow's baseRTT is the least RTT it has seen. A flow that joins a standing queue never "
              "sees the propagation delay alone and keeps part of that queue in its baseRTT; it then holds α "
              "packets on top of it, so the queue grows past n·α while flows join. Measured baseRTT minus "
              "propagation delay, per flow in joining order (mean over seeds): "
              + ", ".join(f"{x:.1f}" for x in over) + " ms (the least RTT over the whole run: a flow that stayed "
              "until the queue drained saw the propagation delay later)."]
    def spread_of(r: Result) -> float:
        # max/min goodput among the flows of each multi-flow phase's settled half, averaged over phases
        vals = []
        for t0, t1, a in _multi(r):
            g = w.goodputs(r, a, *second_half(t0, t1))
            vals.append(max(g) / min(g) if min(g) > 0 else np.inf)
        return float(np.mean(vals)) if vals else float("nan")

    unequal = {cc: per_seed(v, spread_of) for cc, v in res.items()}
    mj = {cc: per_seed(v, lambda r: float(np.mean([w.jain_of(r, a, *second_half(t0, t1)) for t0, t1, a in _multi(r)])))
          for cc, v in res.items()}
    seen = [_ranking(mj, i) for i in range(len(res["fast"]))]
    hs_below = sum(1 for i in range(len(seen)) if mj["highspeed"][i] < mj["newreno"][i])
    lines += ["", "Fairness ranking. Largest over smallest flow rate in a multi-flow phase (settled half; mean over "
              "phases, then over seeds): " + ", ".join(f"{cc} {ci(v)}" for cc, v in unequal.items())
              + f". Observed orders by mean Jain: {_orders(seen)}. HSTCP's Jain is below NewReno's on {hs_below} of "
              f"{len(seen)} seeds: HSTCP's increase per RTT grows with the window and its decrease shrinks, so the "
              "flow that holds the larger window (the earlier or shorter-RTT one) keeps gaining on the others "
              "between losses; NewReno's fixed +1/−½ lets the windows converge (they still differ by RTT). The "
              "paper's order of HSTCP and Reno comes from its Linux testbed (Dummynet delays), whose loss "
              "pattern at the router differs from the simulator's drop-tail queue."]
    resp = {cc: per_seed(v, _resp) for cc, v in res.items()}
    n = len(res["fast"])
    lowest = sum(1 for i in range(n) if resp["fast"][i] < min(resp[cc][i] for cc in res if cc != "fast"))
    spans = [t1 - t0 for t0, t1, _ in phases(res["fast"][0])]
    lines += ["", f"Responsiveness. FAST's index (mean over phases) was the lowest of the four on {lowest} of {n} "
              "seeds: " + ", ".join(f"{cc} {ci(v, '{:.1f}', 's')}" for cc, v in resp.items())
              + f", with phases of {min(spans):.0f}-{max(spans):.0f} s (seed 1). The index is the time until the "
              "slowest flow's running average of its rate stays within a band of its phase mean; a running "
              "average settles slowly whatever the protocol, so every protocol's index is a large fraction of "
              "the phase, and FAST's lead is small against the spread over seeds. The paper itself warns that "
              "the index of the loss-based protocols, which settle into a limit cycle rather than an "
              "equilibrium, must be read with care (§VI)."]
    f = [x for x in tab["fast"] if not np.isnan(x)]
    lines += ["", f"FAST's index hardly depends on the sampling period ({min(f):.3f}-{max(f):.3f}); the "
              "loss-based protocols' falls as the period grows past their sawtooth's cycle. So the sampling "
              "period does not decide the ranking. The index counts any trend inside an interval as "
              "variation: a phase that ends while a flow is still climbing (phases shorter than the fill "
              "time above) gives FAST a high index. With phases at equilibrium, FAST's is the lowest."]
    return "\n".join(lines)


# --- F1 -------------------------------------------------------------------------------------------------

F1_N = (1, 2, 4, 8)
F1_RTT_MS = (50, 100, 150, 200)
F1_CC = ("fast", "highspeed", "newreno", "scalable")


def _f1_name(cc: str, n: int, rtt: int) -> str:
    return f"{cc} n={n} rtt={rtt}ms"


def _f1_variant(cc: str, n: int, rtt: int) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        f = d["flows"][0]
        f["count"], f["rtt"] = n, f"{rtt}ms"
        if cc != "fast":
            f["cc"] = cc
            f.pop("params", None)
        return d
    return change


def _f1_util(res: Runs, cc: str, n: int, rtt: int) -> list[float]:
    return [r.summary["links"][0]["utilization"] for r in res[_f1_name(cc, n, rtt)]]


def _f1_claims(res: Runs) -> list[Claim]:
    cells = [(n, t) for n in F1_N for t in F1_RTT_MS]
    mean = {cc: {c: float(np.mean(_f1_util(res, cc, *c))) for c in cells} for cc in F1_CC}
    rows = []
    worst = [min(_f1_util(res, "fast", *c)[i] for c in cells) for i in range(len(res[_f1_name("fast", 1, 50)]))]
    rows.append(judged("FAST's throughput is consistent over the grid", "consistent (static-scenario figure)", worst,
                       "utilisation ≥ 0.9 in every cell (the lowest cell per seed)", lambda v: v >= 0.9, fmt="{:.3f}",
                       extra=f"range of cell means {min(mean['fast'].values()):.3f}-{max(mean['fast'].values()):.3f}"))
    big, small = (1, F1_RTT_MS[-1]), (F1_N[-1], F1_RTT_MS[0])
    for cc in LOSS_BASED:
        a, b = _f1_util(res, cc, *big), _f1_util(res, cc, *small)
        rows.append(judged_each(f"{cc} degrades as the per-flow window grows", "degrades (longer delay, fewer flows)",
                                f"{ci(a, '{:.3f}')} at 1 flow × {big[1]} ms vs {ci(b, '{:.3f}')} at {small[0]} flows × "
                                f"{small[1]} ms", "utilisation lower at the largest per-flow window, per seed",
                                [x < y for x, y in zip(a, b)]))
    low = {cc: _f1_util(res, cc, *big) for cc in F1_CC}
    rows.append(judged_each("Reno degrades the most", "Reno the most", ", ".join(f"{cc} {ci(v, '{:.3f}')}" for cc, v in low.items())
                            + f" at 1 flow × {big[1]} ms", "NewReno's utilisation the lowest there, per seed",
                            [low["newreno"][i] <= min(v[i] for v in low.values()) for i in range(len(low["fast"]))]))
    return rows


def _f1_explain(res: Runs, claims: list[Claim]) -> str:
    big = _f1_name("fast", 1, F1_RTT_MS[-1])
    fill = per_seed(res[big], lambda r: w.settle_time(r, 0, float(r.summary["flows"][0]["start"]),
                                                      float(r.spec["duration"]), r.summary["links"][0]["rate_bps"]))
    m0 = float(res[big][0].summary["measure"][0])
    return (f"FAST's weakest cell is one flow on the longest path: it reaches 90 % of the link "
            f"{ci(fill, '{:.1f}', 's')} after it starts, so the measurement window (from {m0:g} s) still holds "
            "part of its climb. Its start-up ends at a few tens of packets (slow start's two-packets-per-ACK "
            "bursts queue themselves and trip the queueing-delay threshold), and from there the window grows "
            "by γα per update: a time proportional to the pipe over α, longest at 1 flow × 200 ms. The "
            "loss-based protocols degrade where the paper says, except Scalable TCP, whose multiplicative "
            "increase recovers from a loss in a number of RTTs that does not depend on the window.")


def _f1_figures(res: Runs) -> dict:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(F1_CC), figsize=(12, 3.2), sharey=True)
    for ax, cc in zip(axes, F1_CC):
        for n in F1_N:
            m = [float(np.mean(_f1_util(res, cc, n, t))) for t in F1_RTT_MS]
            ax.plot(F1_RTT_MS, m, marker="o", label=f"n = {n}")
        ax.set(title=cc, xlabel="RTT (ms)", ylim=(0, 1.05))
    axes[0].set_ylabel("utilisation (mean over seeds)")
    axes[-1].legend(fontsize=8)
    fig.suptitle("F1: aggregate throughput over flows × delay")
    return {"f1_grid": fig}


# --- F4 -------------------------------------------------------------------------------------------------


def _f4_claims(res: Runs) -> list[Claim]:
    runs = res["α = 10/20/40"]
    m0, m1 = (float(x) for x in runs[0].summary["measure"])
    alphas = [_alpha(runs[0], i) for i in range(3)]
    rows = []
    qerr = per_seed(runs, lambda r: 100 * (w.mean_queue(r, m0, m1) / sum(alphas) - 1))
    rows.append(judged("the queue holds Σα_i packets", f"queue = Σα = {sum(alphas):g} (Theorem 1)", qerr,
                       "mean queue within 10 % of Σα", lambda v: abs(v) <= 10, fmt="{:+.1f}", unit="% error"))

    def per_alpha(r: Result) -> float:
        x = [f["goodput_bps"] / a for f, a in zip(r.summary["flows"], alphas)]
        return 100 * (max(x) / min(x) - 1)

    rows.append(judged("rates are proportional to α_i", "x_i = α_i/q (Theorem 1)", per_seed(runs, per_alpha),
                       "rate_i/α_i equal within 10 % (max/min − 1)", lambda v: v <= 10, fmt="{:.1f}", unit="%",
                       extra="rates " + " / ".join(
                           f"{np.mean([r.summary['flows'][i]['goodput_bps'] for r in runs]) / 1e6:.1f}" for i in range(3))
                       + " Mbit/s"))

    def vs_q(r: Result) -> float:
        # x_i = α_i/q: the queueing delay from the mean queue; the rate in packets/s on the wire.
        q = w.mean_queue(r, m0, m1) * 1500 * 8 / r.summary["links"][0]["rate_bps"]
        x = [f["throughput_bps"] / (1500 * 8) for f in r.summary["flows"]]
        return 100 * max(abs(xi * q / a - 1) for xi, a in zip(x, alphas))

    rows.append(judged("x_i = α_i/q with q the queueing delay", "x_i = α_i/q_i", per_seed(runs, vs_q),
                       "every flow within 10 %", lambda v: v <= 10, fmt="{:.1f}", unit="% worst error"))
    eq = res["equal α"]
    rows.append(judged("equal α gives equal rates whatever the RTT (50/100/150 ms)", "equal rates",
                       per_seed(eq, lambda r: float(r.summary["jain"])), "Jain ≥ 0.99", lambda v: v >= 0.99,
                       fmt="{:.4f}"))
    return rows


def _equal_alpha(d: dict) -> dict:
    for f in d["flows"]:
        f["params"] = {"alpha": 20}
    return d


# --- figures --------------------------------------------------------------------------------------------


def _dynamic_figures(tag: str) -> Callable[[Runs], dict]:
    def draw(res: Runs) -> dict:
        import matplotlib.pyplot as plt

        out = {}
        fig, axes = plt.subplots(len(res), 1, figsize=(8, 2.2 * len(res)), sharex=True)
        for ax, (cc, runs) in zip(np.atleast_1d(axes), res.items()):
            r = runs[0]
            for _i, f in r.flows.groupby("flow"):
                ax.plot(f["t"], f["rate_bps"] / 1e6, lw=0.6, label=f"{f['rtt'].iloc[0] * 1e3:.0f} ms")
            ax.set(ylabel="Mbit/s", title=f"{cc} (seed 1)")
        np.atleast_1d(axes)[-1].set_xlabel("time (s)")
        np.atleast_1d(axes)[0].legend(fontsize=7, ncol=4)
        out[f"{tag}_throughput"] = fig
        # The paper's Fig. 7: CDFs of the per-interval indices over all intervals, one curve per protocol.
        fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
        for cc, runs in res.items():
            st, rs = [], []
            for r in runs:
                for t0, t1, fl in phases(r):
                    s0, s1 = second_half(t0, t1)
                    st.append(stability_index(throughput_samples(r.flows, s0, s1, None, fl)[1]))
                    rs.append(w.responsiveness(r, fl, t0, t1))
            for ax, vals in ((a, st), (b, rs)):
                v = np.sort(np.asarray(vals, float))
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=cc)
        a.set(xlabel="stability index", ylabel="CDF")
        b.set(xlabel="responsiveness index (s)")
        a.legend(fontsize=8)
        out[f"{tag}_index_cdfs"] = fig
        return out
    return draw


EXPERIMENTS = [
    Experiment(
        id="F1", paper=PAPER, title="static scenario: throughput over flows × delay", scenario="fast_f1.toml",
        variants={_f1_name(cc, n, t): _f1_variant(cc, n, t) for cc in F1_CC for n in F1_N for t in F1_RTT_MS},
        claims=_f1_claims, figures=_f1_figures, explain=_f1_explain,
        notes="The paper's grid n ∈ {1,2,4,8} × RTT ∈ {50,100,150,200} ms; scaled to 100 Mbit/s, 250 packets, "
              "α = 25 (800 Mbit/s, 2000, 200 divided by 8), 90 s runs measured over 30-90 s.",
    ),
    Experiment(
        id="F2", paper=PAPER, title="dynamic scenario I: 3 flows join and leave", scenario="fast_f2.toml",
        variants=dict(VARIANTS), claims=_dynamic_claims, figures=_dynamic_figures("f2"), explain=_dynamic_explain,
        notes="100 Mbit/s, 500-packet buffer, α = 25 (the paper's 800 Mbit/s, 2000 packets, α = 200 scaled); "
              "60 s phases (a lone flow needs ≈ 14 s to fill the pipe).",
    ),
    Experiment(
        id="F3", paper=PAPER, title="dynamic scenario II: 8 flows", scenario="fast_f3.toml",
        variants=dict(VARIANTS), claims=_dynamic_claims, figures=_dynamic_figures("f3"), explain=_dynamic_explain,
        notes="8 flows of 50-200 ms joining every 30 s and leaving in reverse order (15 phases, 480 s); scaled as F2.",
    ),
    Experiment(
        id="F4", paper=PAPER, title="equilibrium: queue = Σα, x_i = α_i/q", scenario="fast_f4.toml",
        variants={"α = 10/20/40": lambda d: d, "equal α": _equal_alpha}, claims=_f4_claims,
        notes="3 flows (50/100/150 ms) on 100 Mbit/s, 90 s measured over 40-90 s.",
    ),
]
