"""Binomial congestion control (Bansal & Balakrishnan, INFOCOM 2001): docs/experiments.md, "B"."""
from __future__ import annotations

import statistics
from typing import Any, Callable, Optional

import numpy as np

from ..metrics import jain
from ..results import Result
from ..stats import spread
from . import Claim, Experiment, Runs, window as w
from .overseeds import ci, judged, judged_axis, judged_each, per_seed


def _second(cc: str, params: Optional[dict] = None) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["flows"][1]["cc"] = cc
        if params:
            d["flows"][1]["params"] = dict(params)
        return d
    return change


def _ratio(s: dict) -> float:
    tcp, other = (f["goodput_bps"] for f in s["flows"][:2])
    return tcp / other


FRIENDLY = (0.75, 1.33)  # "≈ 1": the band B1 judges by (a third either way, the spread of the paper's Fig. 5)
FRIENDLY_TEXT = "mean in [0.75, 1.33]"


def _friendly(v: float) -> bool:
    return FRIENDLY[0] <= v <= FRIENDLY[1]


def _b1_claims(res: Runs) -> list[Claim]:
    ratios = {k: per_seed(v, lambda r: _ratio(r.summary)) for k, v in res.items()}
    rows = []
    for k in ("sqrt", "iiad"):
        rows.append(judged(f"TCP-friendly: TCP/{k.upper()} throughput ratio ≈ 1 (k + l = 1)", "≈ 1 (Fig. 5)",
                           ratios[k], FRIENDLY_TEXT, _friendly))
    rows.append(judged("k + l = 0.5 takes more than TCP", "ratio < 1", ratios["k+l=0.5"], "mean < 1", lambda v: v < 1))
    rows.append(judged("k + l = 1.5 takes less than TCP", "ratio > 1", ratios["k+l=1.5"], "mean > 1", lambda v: v > 1))
    # Fig. 5 itself: the ratio against k for each k + l (the general member, α 1, β ½ as TCP's).
    for kl, crit, text, test in ((1.0, "≈ 1", FRIENDLY_TEXT, _friendly), (0.5, "< 1", "mean < 1", lambda v: v < 1),
                                 (1.5, "> 1", "mean > 1", lambda v: v > 1)):
        pts = {f"k = {k:g}": ratios[_b1_k_name(k, kl)] for k in B1_K_SWEEP[kl]}
        rows.append(judged_axis(f"k + l = {kl:g}: TCP/binomial ratio {crit} whatever k (α 1, β ½)",
                                f"ratio {crit} across k (Fig. 5)", "k", pts, text, test))
    return rows


def _b1_explain(res: Runs, claims: list[Claim]) -> str:
    """The k axis: ratio, timeouts and loss events of the two flows, per member (mean over seeds)."""
    def per_flow(name: str, i: int, key: str) -> list[float]:
        return [float(r.summary["flows"][i][key]) for r in res[name]]

    lines = ["| member | TCP/binomial | timeouts, TCP / binomial | retransmits, TCP / binomial |",
             "| --- | --- | --- | --- |"]
    for name in res:
        lines.append(f"| {name} | {ci(per_seed(res[name], lambda r: _ratio(r.summary)))} | "
                     f"{ci(per_flow(name, 0, 'timeouts'), '{:.1f}')} / {ci(per_flow(name, 1, 'timeouts'), '{:.1f}')} | "
                     f"{ci(per_flow(name, 0, 'retransmits'), '{:.0f}')} / {ci(per_flow(name, 1, 'retransmits'), '{:.0f}')} |")
    return ("Over RED both flows see the same drop probability, so eq. 7 predicts the ratio from k + l alone "
            "(and from α/β): below 1 for k + l < 1, above for k + l > 1. A row over the k axis is "
            "inconclusive where one point's interval reaches past the band's edge. Per member, mean ± 95 % CI "
            "over every seed run:\n\n" + "\n".join(lines))


# Fig. 5's k axis for each k + l (0 ≤ l ≤ 1): the general binomial member at TCP's α 1, β ½.
B1_K_SWEEP = {0.5: (0.0, 0.25, 0.5), 1.0: (0.0, 0.25, 0.5, 0.75, 1.0), 1.5: (0.5, 0.75, 1.0)}


def _b1_k_name(k: float, kl: float) -> str:
    return f"k={k:g} l={kl - k:g}"


def _b1_variants() -> dict[str, Callable[[dict], dict]]:
    out: dict[str, Callable[[dict], dict]] = {
        "sqrt": lambda d: d, "iiad": _second("iiad"),
        "k+l=0.5": _second("binomial", {"k": 0.25, "l": 0.25}),
        "k+l=1.5": _second("binomial", {"k": 0.75, "l": 0.75})}
    for kl, ks in B1_K_SWEEP.items():
        for k in ks:
            out[_b1_k_name(k, kl)] = _second("binomial", {"k": k, "l": kl - k})
    return out


def _b1_figure(res: Runs) -> dict[str, Any]:
    """The paper's Fig. 5 form: TCP/binomial throughput ratio against k + l, mean and 95 % CI over seeds."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for kl, ks in B1_K_SWEEP.items():
        stats = [spread([_ratio(r.summary) for r in res[_b1_k_name(k, kl)]]) for k in ks]
        ax.errorbar(list(ks), [m for m, *_ in stats], yerr=[h for *_, h in stats], fmt="o-", capsize=4,
                    label=f"k + l = {kl:g} (α 1, β ½)")
    for k, name in ((0.5, "sqrt"), (1.0, "iiad")):
        m, _, _, half = spread([_ratio(r.summary) for r in res[name]])
        ax.errorbar([k + 0.02], [m], yerr=[half], fmt="s", capsize=4, label=f"{name.upper()} (α/β 1.5)")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("k")
    ax.set_ylabel("TCP / binomial throughput")
    ax.legend(fontsize=8)
    ax.set_title("B1: the k + l rule, Fig. 5 (mean, 95 % CI)")
    return {"b1_ratio_vs_kl": fig}



# --- helpers for B2-B6 ----------------------------------------------------------------------------------

def _group_ratio(s: dict, tcp_groups: set[int], other_groups: set[int]) -> float:
    """Mean TCP flow throughput / mean binomial flow throughput (each over its groups' flows)."""
    tcp = [f["goodput_bps"] for f in s["flows"] if f["group"] in tcp_groups]
    oth = [f["goodput_bps"] for f in s["flows"] if f["group"] in other_groups]
    return statistics.fmean(tcp) / statistics.fmean(oth)


def _set_cc(groups: tuple[int, ...], cc: str, params: Optional[dict] = None) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        for g in groups:
            d["flows"][g]["cc"] = cc
            d["flows"][g].pop("params", None)
            if params:
                d["flows"][g]["params"] = dict(params)
        return d
    return change


def _then(*changes: Callable[[dict], dict]) -> Callable[[dict], dict]:
    def all_of(d: dict) -> dict:
        for c in changes:
            d = c(d)
        return d
    return all_of


def _axis_row(claim: str, paper: str, axis: str, points: dict[str, list[float]], criterion: str,
              test: Callable[[float], bool], fmt: str = "{:.2f}") -> Claim:
    """One row for a claim over an axis (every point must hold): :func:`.overseeds.judged_axis`."""
    return judged_axis(claim, paper, axis, points, criterion, test, fmt)


# --- B2 -------------------------------------------------------------------------------------------------

B2_RTTS_MS = (10, 20, 40, 80, 160, 320, 640)


def _rtt(ms: int) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        for f in d["flows"]:
            f["rtt"] = f"{ms}ms"
        return d
    return change


B2_LONG = "iiad 640ms 1500s"  # the supporting run the explanation cites: does a longer run bring 640 ms back?


def _longer(seconds: int) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["duration"] = f"{seconds}s"
        d["measure"] = [d["measure"][0], f"{seconds}s"]
        return d
    return change


def _b2_variants() -> dict[str, Callable[[dict], dict]]:
    out = {}
    for cc in ("iiad", "sqrt"):
        for ms in B2_RTTS_MS:
            out[f"{cc} {ms}ms"] = _then(_set_cc((1,), cc), _rtt(ms))
    out[B2_LONG] = _then(_set_cc((1,), "iiad"), _rtt(640), _longer(1500))
    return out


def _b2_claims(res: Runs) -> list[Claim]:
    rows = []
    for cc in ("iiad", "sqrt"):
        pts = {f"{ms} ms": per_seed(res[f"{cc} {ms}ms"], lambda r: _group_ratio(r.summary, {0}, {1}))
               for ms in B2_RTTS_MS}
        rows.append(_axis_row(f"TCP-friendly at every RTT: TCP/{cc.upper()} throughput ratio ≈ 1",
                              "≈ 1 from 10 to 640 ms (§III.B, Fig. 6)", "RTT", pts, FRIENDLY_TEXT, _friendly))
    return rows


def _b2_figure(res: Runs) -> dict[str, Any]:
    """The paper's Fig. 6 form: TCP/binomial throughput ratio against the RTT, mean and 95 % CI over seeds."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for cc, dx in (("iiad", 0.97), ("sqrt", 1.03)):
        ms = np.array(B2_RTTS_MS, float)
        stats = [spread([_group_ratio(r.summary, {0}, {1}) for r in res[f"{cc} {m}ms"]]) for m in B2_RTTS_MS]
        ax.errorbar(ms * dx, [m for m, *_ in stats], yerr=[h for *_, h in stats], fmt="o-", capsize=3, label=cc.upper())
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xticks(list(B2_RTTS_MS), [str(m) for m in B2_RTTS_MS])
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("TCP / binomial throughput")
    ax.legend(fontsize=8)
    ax.set_title("B2: TCP-friendliness vs RTT (mean, 95 % CI)")
    return {"b2_ratio_vs_rtt": fig}


def _regrow_rtts(k: float, alpha: float, w: float) -> float:
    """RTTs a binomial flow needs to grow from w/2 back to w by eq. 2's increase, dw/dRTT = α/w^k
    (the window after a timeout's slow start, ssthresh = w/2): (w^(k+1) − (w/2)^(k+1)) / ((k+1)·α)."""
    return (w ** (k + 1) - (w / 2) ** (k + 1)) / ((k + 1) * alpha)


def _b2_explain(res: Runs, claims: list[Claim]) -> str:
    """The measured mechanism at long RTTs: timeouts, and how long each member needs to regrow after one."""
    def group(r: Result, g: int, key: str) -> float:
        return float(np.mean([float(f[key]) for f in r.summary["flows"] if f["group"] == g]))

    members = {"iiad": (1.0, 1.5), "sqrt": (0.5, 1.0)}  # (k, α) of the defaults
    lines = ["| RTT | member | TCP/binomial | timeouts per flow, TCP / binomial | mean window (packets), TCP / "
             "binomial | RTTs to regrow TCP's window from half: TCP / binomial (s at this RTT) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for ms in B2_RTTS_MS:
        for cc, (k, alpha) in members.items():
            runs = res[f"{cc} {ms}ms"]
            ratio = per_seed(runs, lambda r: _group_ratio(r.summary, {0}, {1}))
            to = [[group(r, g, "timeouts") for r in runs] for g in (0, 1)]
            cw = [[group(r, g, "mean_cwnd_pkts") for r in runs] for g in (0, 1)]
            wt = float(np.mean(cw[0]))
            tcp_n, bin_n = wt / 2, _regrow_rtts(k, alpha, wt)
            lines.append(f"| {ms} ms | {cc} | {ci(ratio)} | {ci(to[0], '{:.1f}')} / {ci(to[1], '{:.1f}')} "
                         f"| {ci(cw[0], '{:.1f}')} / {ci(cw[1], '{:.1f}')} | {tcp_n:.0f} / {bin_n:.0f} "
                         f"({tcp_n * ms / 1e3:.0f} / {bin_n * ms / 1e3:.0f} s) |")
    long_ = per_seed(res[B2_LONG], lambda r: _group_ratio(r.summary, {0}, {1}))
    return ("The ratio leaves 1 from 160 ms on, where the windows grow large. Every flow here times out a few "
            "times per run (the reverse flows' ACK compression and RED's drops come in bursts, several per "
            "window). After a timeout a flow slow-starts to half its window and then grows by its own rule: "
            "TCP regains the other half in w/2 RTTs, IIAD (α/w per RTT) in 3w²/(8α) and SQRT in "
            "(2/3)(w^1.5 − (w/2)^1.5)/α, which at TCP's window of the 640 ms runs is far longer than the run. "
            "So the binomial flows spend the run regrowing, their mean window stays a fraction of TCP's, and "
            f"running longer does not bring the ratio back (1500 s at 640 ms, measured over 100-1500 s: TCP/IIAD "
            f"{ci(long_)}, against {ci(per_seed(res['iiad 640ms'], lambda r: _group_ratio(r.summary, {0}, {1})))} "
            "in the 300 s runs). The "
            "paper's claim rests on the equilibrium analysis, in which timeouts are rare against the regrowth "
            "time; that holds at short RTTs (small windows) and not at 640 ms with reverse traffic. Measured, "
            "mean over seeds:\n\n" + "\n".join(lines))


# --- B3 -------------------------------------------------------------------------------------------------

B3_ALGOS = {"tcp": ("newreno", None), "iiad": ("iiad", None), "sqrt": ("sqrt", None),
            "aimd(0.31,0.125)": ("binomial", {"k": 0.0, "l": 1.0, "alpha": 0.31, "beta": 0.125})}


def _b3_bursts(r: Result) -> list[tuple[float, float]]:
    """The 25 % bursts: (start, end) from the scenario's loss schedule."""
    sched = r.spec["links"][0]["loss_schedule"]
    return [(t, sched[i + 1][0]) for i, (t, p) in enumerate(sched[:-1]) if p > 0.1]


def _b3_smooth(r: Result) -> float:
    """Coefficient of variation (std/mean) of the 0.2 s-averaged rate in the 0.5 % phases, leaving out the
    10 s after each burst (the recovery is the response, not the steady oscillation)."""
    t, (x,) = w.rate_samples(r, [0], 0.0, float(r.spec["duration"]))
    keep = t > 10.0
    for b0, b1 in _b3_bursts(r):
        keep &= ~((t > b0) & (t <= b1 + 10.0))
    x = x[keep]
    return float(np.std(x) / np.mean(x))


def _b3_response(r: Result) -> float:
    """The rate in the second half of each 1 s burst over the rate in the 5 s before it (mean over bursts):
    how much of its rate the flow still sends 0.5 s into a 25 % loss episode (lower = faster response)."""
    out = []
    for b0, b1 in _b3_bursts(r):
        if b1 > float(r.spec["duration"]):
            continue
        before = w.goodput(r, 0, b0 - 5.0, b0)
        out.append(_wire(r, 0, (b0 + b1) / 2, b1) / before)
    # a run shortened below the first burst (the test scale) has nothing to measure: nan, shown as "—"
    return float(np.mean(out)) if out else float("nan")


def _wire(r: Result, flow: int, t0: float, t1: float) -> float:
    """Bits per second the flow sent in [t0, t1] (its wire rate: during a 25 % loss burst what it offers
    matters, not what arrives)."""
    return w._grown(r.flows, "flow", flow, "sent_bytes", t0, t1) * 8.0 / (t1 - t0)


def _b3_claims(res: Runs) -> list[Claim]:
    cv = {k: per_seed(v, _b3_smooth) for k, v in res.items()}
    resp = {k: per_seed(v, _b3_response) for k, v in res.items()}
    rows = []
    for k in ("iiad", "sqrt", "aimd(0.31,0.125)"):
        rows.append(judged_each(f"{k.upper() if k != 'aimd(0.31,0.125)' else 'AIMD(0.31, 0.125)'} oscillates less than TCP",
                                "much smaller rate oscillation (§III.C, Figs. 10-13)",
                                f"CoV of the 0.2 s rate {ci(cv[k])} vs TCP {ci(cv['tcp'])}",
                                "CoV lower than TCP's, per seed", [a < b for a, b in zip(cv[k], cv["tcp"])]))
    for k in ("iiad", "sqrt"):
        rows.append(judged_each(f"{k.upper()} responds more slowly to the 25 % bursts", "slower response",
                                f"rate kept 0.5-1 s into a burst {ci(resp[k])} vs TCP {ci(resp['tcp'])}",
                                "a larger fraction kept than TCP, per seed",
                                [a > b for a, b in zip(resp[k], resp["tcp"])]))
    return rows


def _b3_detrended(r: Result) -> float:
    """The coefficient of variation of :func:`_b3_smooth` with each 0.5 % phase's straight-line trend
    removed first: what is left is the oscillation around the trend, not a climb back after a burst."""
    t, (x,) = w.rate_samples(r, [0], 0.0, float(r.spec["duration"]))
    edges = [10.0] + [e for b0, b1 in _b3_bursts(r) for e in (b0, b1 + 10.0)] + [float(r.spec["duration"])]
    resid, level = [], []
    for a, b in zip(edges[::2], edges[1::2]):
        m = (t > a) & (t <= b)
        if m.sum() >= 3:
            fit = np.polyval(np.polyfit(t[m], x[m], 1), t[m])
            resid.append(x[m] - fit)
            level.append(x[m])
    if not resid:
        return float("nan")
    return float(np.std(np.concatenate(resid)) / np.mean(np.concatenate(level)))


def _b3_segments(r: Result) -> list[tuple[float, float, float, float]]:
    """Per 0.5 % phase as the CoV sees it: (mean rate bit/s, slope bit/s per s, CoV, start time)."""
    t, (x,) = w.rate_samples(r, [0], 0.0, float(r.spec["duration"]))
    edges = [10.0] + [e for b0, b1 in _b3_bursts(r) for e in (b0, b1 + 10.0)] + [float(r.spec["duration"])]
    out = []
    for a, b in zip(edges[::2], edges[1::2]):
        m = (t > a) & (t <= b)
        if m.sum() >= 3:
            out.append((float(x[m].mean()), float(np.polyfit(t[m], x[m], 1)[0]), float(x[m].std() / x[m].mean()), a))
    return out


def _b3_explain(res: Runs, claims: list[Claim]) -> str:
    cv = {k: per_seed(v, _b3_smooth) for k, v in res.items()}
    flat = {k: per_seed(v, _b3_detrended) for k, v in res.items()}
    seg = {k: [_b3_segments(r) for r in v] for k, v in res.items()}

    def first(k: str, i: int) -> list[float]:
        return [s[0][i] for s in seg[k]]

    def later(k: str, i: int) -> list[float]:
        return [float(np.mean([x[i] for x in s[1:]])) for s in seg[k] if len(s) > 1]

    lines = ["| algorithm | CoV of the 0.2 s rate | CoV around each phase's linear trend | first 0.5 % phase: mean "
             "rate (Mbit/s), slope (Mbit/s per s), CoV | later phases: mean rate, CoV |",
             "| --- | --- | --- | --- | --- |"]
    for k in res:
        lines.append(f"| {k} | {ci(cv[k])} | {ci(flat[k])} | {ci([v / 1e6 for v in first(k, 0)])}, "
                     f"{ci([v / 1e6 for v in first(k, 1)], '{:.3f}')}, {ci(first(k, 2))} | "
                     f"{ci([v / 1e6 for v in later(k, 0)])}, {ci(later(k, 2))} |")
    worst = int(np.argmax(np.asarray(cv["iiad"]) - np.asarray(cv["tcp"])))
    return ("The coefficient of variation counts any change of the rate in a 0.5 % phase as oscillation, "
            "including a trend. IIAD's comes from the first phase: slow start leaves it with a window far above "
            "its equilibrium at 0.5 % loss, and IIAD gives back one packet per loss, so it is still coming "
            "down tens of seconds later (a falling rate in the first phase); in the later phases, which start "
            "from its equilibrium, its CoV is well below TCP's. How high the start-up leaves it varies from "
            "seed to seed, hence the wide interval and the split seeds. Removing each phase's straight-line "
            "trend leaves the oscillation around it. Mean ± CI over every seed run:\n\n" + "\n".join(lines)
            + f"\n\nIIAD's largest CoV above TCP's is on seed {res['iiad'][worst].spec.get('seed', worst + 1)} "
            f"(IIAD {cv['iiad'][worst]:.2f}, TCP {cv['tcp'][worst]:.2f}; around the trend IIAD "
            f"{flat['iiad'][worst]:.2f}, TCP {flat['tcp'][worst]:.2f}).")


# --- B4 -------------------------------------------------------------------------------------------------

B4_N = (5, 10, 20, 40, 60)


def _b4_n(n: int) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        for f in d["flows"]:
            if not f.get("reverse"):
                f["count"] = n // 5
        return d
    return change


def _forward(r: Result) -> list[dict]:
    """The summaries of the flows in the forward direction (the reverse TCP flows only load the ACK path)."""
    return [f for f, sp in zip(r.summary["flows"], r.spec["flows"]) if sp["path"] == [0]]


def _b4_claims(res: Runs) -> list[Claim]:
    def group_jain(r: Result) -> float:
        by: dict[int, list[float]] = {}
        for f in _forward(r):
            by.setdefault(f["group"], []).append(f["goodput_bps"])
        return jain([statistics.fmean(v) for v in by.values()])

    def flow_jain(r: Result) -> float:
        return jain([f["goodput_bps"] for f in _forward(r)])

    pts_g = {f"n = {n}": per_seed(res[f"n={n}"], group_jain) for n in B4_N}
    pts_f = {f"n = {n}": per_seed(res[f"n={n}"], flow_jain) for n in B4_N}
    big, small = f"n = {B4_N[-1]}", f"n = {B4_N[0]}"
    return [
        judged_axis("the five k (l = 1 − k) share fairly at every n", "Jain's index ≈ 1, tiny error bars (§III.D, Fig. 14)",
                    "n", pts_g, "Jain of the five algorithms' mean throughputs ≥ 0.95", lambda v: v >= 0.95,
                    fmt="{:.3f}"),
        judged_each("fairness improves with n", "near 1 as n grows",
                    f"{ci(pts_g[small], '{:.3f}')} at {small} vs {ci(pts_g[big], '{:.3f}')} at {big}",
                    f"Jain higher at {big} than at {small}, per seed",
                    [a > b for a, b in zip(pts_g[big], pts_g[small])]),
        judged_axis("per flow too, at every n", "Jain's index ≈ 1 (Fig. 14)", "n", pts_f, "per-flow Jain ≥ 0.9",
                    lambda v: v >= 0.9, fmt="{:.3f}"),
    ]


def _b4_explain(res: Runs, claims: list[Claim]) -> str:
    """Where the small-n runs lose fairness: each k's share of the forward goodput, and timeouts."""
    lines = ["| n | share of the forward goodput by k = 0 / 0.25 / 0.5 / 0.75 / 1 (mean over seeds) | lowest "
             "flow / mean flow | timeouts per forward flow |", "| --- | --- | --- | --- |"]
    for n in B4_N:
        runs = res[f"n={n}"]
        shares, low, tos = [], [], []
        for r in runs:
            fw = _forward(r)
            tot = sum(f["goodput_bps"] for f in fw)
            shares.append([sum(f["goodput_bps"] for f in fw if f["group"] == g) / tot for g in range(5)])
            g = [f["goodput_bps"] for f in fw]
            low.append(min(g) / statistics.fmean(g))
            tos.append(statistics.fmean(float(f["timeouts"]) for f in fw))
        sh = np.mean(shares, axis=0)
        lines.append(f"| {n} | {' / '.join(f'{x:.2f}' for x in sh)} | {ci(low)} | {ci(tos, '{:.1f}')} |")
    return ("An equal share is 0.20 per k. With few flows each k has one or two flows, and a flow that times "
            "out early (the four reverse flows' ACK compression) spends much of the 80 s window regrowing; "
            "which k that hits varies from seed to seed, hence the wide intervals at small n. With many flows "
            "per k the misfortunes average out within each k:\n\n" + "\n".join(lines))


def _b4_figure(res: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for k in range(5):
        m = [np.mean([np.mean([f["goodput_bps"] for f in r.summary["flows"] if f["group"] == k]) for r in res[f"n={n}"]])
             for n in B4_N]
        ax.plot(B4_N, [x / 1e6 for x in m], marker="o", label=f"k = {k / 4:g}")
    ax.set_xlabel("flows n")
    ax.set_ylabel("mean throughput per flow (Mbit/s)")
    ax.legend(fontsize=8)
    ax.set_title("B4: binomial mixture, 50 Mbit/s")
    return {"b4_per_k": fig}


# --- B5 -------------------------------------------------------------------------------------------------


def _b5_claims(res: Runs) -> list[Claim]:
    rows = []
    for cc in ("sqrt", "iiad"):
        runs = res[cc]
        tcp = {g for g, f in enumerate(runs[0].spec["flows"]) if f["cc"] == "newreno"}
        groups = {f["group"] for f in runs[0].summary["flows"]}
        rows.append(judged(f"long path (3 bottlenecks): TCP/{cc.upper()} ratio ≈ 1",
                           "fair sharing persists (§III.D, Figs. 15-16)",
                           per_seed(runs, lambda r: _group_ratio(r.summary, {0}, {1})), FRIENDLY_TEXT, _friendly))
        rows.append(judged(f"all flows: TCP/{cc.upper()} ratio ≈ 1", "fair sharing persists",
                           [_group_ratio(r.summary, tcp, groups - tcp) for r in runs], FRIENDLY_TEXT,
                           _friendly))
    return rows


# --- B6 -------------------------------------------------------------------------------------------------


def _b6_claims(res: Runs) -> list[Claim]:
    rows = []
    for cc in ("iiad", "sqrt"):
        dt = per_seed(res[f"{cc} droptail"], lambda r: _ratio(r.summary))
        red = per_seed(res[f"{cc} red"], lambda r: _ratio(r.summary))
        rows.append(judged(f"over drop-tail {cc.upper()} takes more than TCP", "binomial > its share (§IV, Fig. 17)", dt,
                           "TCP/binomial ratio < 1", lambda v: v < 1, extra=f"over RED {ci(red)}"))
        rows.append(judged_each(f"unlike RED ({cc.upper()})", "RED restores fairness",
                                f"drop-tail {ci(dt)} vs RED {ci(red)}", "ratio lower over drop-tail, per seed",
                                [a < b for a, b in zip(dt, red)]))
    return rows


def _queue(kind: str) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["topology"]["bottleneck"]["queue"] = kind
        return d
    return change


# --- B7 -------------------------------------------------------------------------------------------------

B7_P = (0.001, 0.002, 0.005, 0.01)
B7_MEMBERS = {"aimd": ("binomial", {}, 0.0, 1.0), "iiad": ("iiad", {}, 1.0, 0.0), "sqrt": ("sqrt", {}, 0.5, 0.5),
              "k+l=0.5": ("binomial", {"k": 0.25, "l": 0.25}, 0.25, 0.25),
              "k+l=1.5": ("binomial", {"k": 0.75, "l": 0.75}, 0.75, 0.75)}
B7_TOL = 0.10  # EXPERIMENTS: the fitted exponent within 10 % of 1/(k+l+1)


def _b7_cell(cc: str, params: dict, p: float) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["flows"][0]["cc"] = cc
        d["flows"][0]["params"] = {"initial_ssthresh": 16, **params}
        d["topology"]["bottleneck"]["loss"] = p
        return d
    return change


def fitted_exponent(ps: list[float], rates: list[float]) -> float:
    """−slope of log λ against log p (least squares)."""
    return float(-np.polyfit(np.log(ps), np.log(rates), 1)[0])


def _b7_claims(res: Runs) -> list[Claim]:
    rows = []
    for name, (_, _, k, l) in B7_MEMBERS.items():
        theory = 1.0 / (k + l + 1.0)
        n = len(res[f"{name} p={B7_P[0]}"])
        exps = [fitted_exponent(list(B7_P), [float(res[f"{name} p={p}"][s].summary["flows"][0]["goodput_bps"])
                                              for p in B7_P]) for s in range(n)]
        rows.append(judged(f"{name} (k = {k:g}, l = {l:g}): λ ∝ p^(−1/(k+l+1))", f"exponent {theory:.3f} (eq. 7)", exps,
                           f"fitted exponent within {100 * B7_TOL:.0f} % of {theory:.3f}",
                           _within(theory, B7_TOL), fmt="{:.3f}"))
    return rows


def _b7_figure(res: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name in B7_MEMBERS:
        m = [np.mean([r.summary["flows"][0]["goodput_bps"] for r in res[f"{name} p={p}"]]) / 1e6 for p in B7_P]
        ax.loglog([100 * p for p in B7_P], m, marker="o", label=name)
    ax.set_xlabel("loss rate p (%)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.legend(fontsize=8)
    ax.set_title("B7: the throughput law (mean over seeds)")
    return {"b7_law": fig}

# --- B8 -------------------------------------------------------------------------------------------------

B8_CATCH_UP = 5.0  # "after about t = 25 seconds": the newcomer (started at 20 s) holds its share 5 s after joining


def _b8_windows(r: Result) -> tuple[float, float, float]:
    """(join, start of the catch-up window, end of the run)."""
    t0 = float(r.summary["flows"][0]["start"])
    return t0, t0 + B8_CATCH_UP, float(r.spec["duration"])


def _b8_share(r: Result, t0: float, t1: float) -> float:
    """The TCP newcomer's goodput over the mean forward IIAD flow's in [t0, t1]."""
    iiad = [i for i, f in enumerate(_forward(r)) if f["group"] == 1]
    return w.goodput(r, 0, t0, t1) / statistics.fmean(w.goodputs(r, iiad, t0, t1))


def _b8_claims(res: Runs) -> list[Claim]:
    rows = []
    for name, runs in res.items():
        late = per_seed(runs, lambda r: _b8_share(r, _b8_windows(r)[1], _b8_windows(r)[1] + B8_CATCH_UP))
        m0, m1 = (float(x) for x in runs[0].summary["measure"])
        long_ = [_b8_share(r, m0, m1) for r in runs]
        who = name.upper()
        rows.append(judged(f"a TCP flow joining 15 long-running {who} flows catches up within {B8_CATCH_UP:g} s",
                           "TCP grabs its fair share from about t = 25 s (Fig. 9)", late,
                           f"TCP / mean {who} flow over the {B8_CATCH_UP:g} s from {B8_CATCH_UP:g} s after the join: "
                           + FRIENDLY_TEXT, _friendly))
        rows.append(judged(f"and keeps its share ({who})", "its fair share", long_,
                           f"TCP / mean {who} flow over {m0:g}-{m1:g} s: " + FRIENDLY_TEXT, _friendly))
    return rows


def _b8_figure(res: Runs) -> dict[str, Any]:
    """The paper's Fig. 9 form: windows against time, the TCP newcomer and five IIAD flows (seed 1)."""
    import matplotlib.pyplot as plt

    r = res["iiad"][0]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for i, f in r.flows.groupby("flow"):
        if i <= 5:
            ax.plot(f["t"], f["cwnd"], lw=0.8 if i else 1.4, label="TCP" if i == 0 else f"IIAD {i}")
    ax.set(xlabel="time (s)", ylabel="window (packets)", title="B8: TCP joins 15 IIAD flows (seed 1)")
    ax.legend(fontsize=7, ncol=3)
    return {"b8_windows": fig}


PAPER = "Binomial congestion control (Bansal & Balakrishnan, INFOCOM 2001)"
# "we simulated each topology and workload ten times" (§III): every experiment starts from ten seeds.
RUNS = tuple(range(1, 11))

# --- B9 -------------------------------------------------------------------------------------------------

B9_HALVING = 0.25  # "no factor-of-two reductions": the typical decrease under half of AIMD's halving (ours)


def _b9_cwnd(r: Result) -> np.ndarray:
    m0, m1 = (float(x) for x in r.summary["measure"])
    f = r.flows[(r.flows["flow"] == 0) & (r.flows["t"] > m0) & (r.flows["t"] <= m1)]
    return f["cwnd"].to_numpy(float)


def b9_cov(r: Result) -> float:
    """The window's coefficient of variation over the measurement window: the magnitude of its oscillation."""
    c = _b9_cwnd(r)
    return float(np.std(c) / np.mean(c))


def b9_decrease(r: Result) -> float:
    """The median relative decrease of the window from one sample to the next, over the samples where it
    fell by more than 1 % (each a response to a loss: growth never lowers it); nan if it never fell."""
    c = _b9_cwnd(r)
    d = -np.diff(c) / c[:-1]
    d = d[d > 0.01]
    return float(np.median(d)) if d.size else float("nan")


def _b9_claims(res: Runs) -> list[Claim]:
    sq, tcp = res["sqrt"], res["newreno"]
    ratio = [b9_cov(a) / b9_cov(b) for a, b in zip(sq, tcp)]
    return [
        judged("SQRT's window oscillates less than AIMD's would", "oscillations smaller than AIMD's (Fig. 18)",
               ratio, "window CoV of SQRT / of NewReno (same seed) < 1", lambda v: v < 1, fmt="{:.3f}",
               extra=f"CoV {ci(per_seed(sq, b9_cov), '{:.3f}')} vs {ci(per_seed(tcp, b9_cov), '{:.3f}')}"),
        judged("SQRT avoids TCP's factor-of-two reductions", "no \"factor-of-two\" reductions (Fig. 18)",
               per_seed(sq, b9_decrease), f"median decrease of the window < {B9_HALVING:g} of it",
               lambda v: v < B9_HALVING, fmt="{:.3f}",
               extra=f"NewReno {ci(per_seed(tcp, b9_decrease), '{:.3f}')}"),
    ]


def _b9_figure(res: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, runs in res.items():
        f = runs[0].flows[runs[0].flows["flow"] == 0]
        ax.plot(f["t"], f["cwnd"], lw=0.8, label=name)
    ax.set(xlabel="time (s)", ylabel="window (packets)", title="B9: 50 Kbit/s, 900 ms (DummyNet pipe)")
    ax.legend(fontsize=8)
    return {"b9_window": fig}


EXPERIMENTS = [
    Experiment(
        id="B1", paper=PAPER,
        title="the k + l rule: 1 TCP vs 1 binomial flow over RED", scenario="binomial_b1.toml",
        variants=_b1_variants(), claims=_b1_claims, seeds=RUNS, explain=_b1_explain,
        notes="3 Mbit/s, 50 ms, RED, 4 reverse TCP flows (the paper's topology), 200 s, 10 seeds as the paper "
              "(throughput over 50-200 s). SQRT and IIAD at their defaults (α/β = 1.5); Fig. 5's k axis for k + l = "
              "0.5, 1 and 1.5 with the general member at TCP's α 1, β ½.",
        figures=_b1_figure,
    ),
    Experiment(
        id="B2", paper=PAPER, title="TCP-friendliness from 10 to 640 ms, with reverse TCP traffic",
        scenario="binomial_b2.toml", variants=_b2_variants(), claims=_b2_claims, explain=_b2_explain,
        figures=_b2_figure, seeds=RUNS,
        notes="5 TCP + 5 binomial flows, 4 reverse TCP flows, 10 Mbit/s RED; RTT 10-640 ms (7 points); 300 s "
              "measured over 100-300 s.",
    ),
    Experiment(
        id="B3", paper=PAPER, title="oscillation and response under a loss rate switching 0.5 % / 25 %",
        scenario="binomial_b3.toml",
        variants={k: _set_cc((0,), cc, p) for k, (cc, p) in B3_ALGOS.items()}, claims=_b3_claims,
        explain=_b3_explain, seeds=RUNS,
        notes="One flow at a time, 10 Mbit/s, 50 ms, Bernoulli loss 0.5 % for 50 s then 25 % for 1 s, three cycles.",
    ),
    Experiment(
        id="B4", paper=PAPER, title="a mixture of k = 0 … 1 (l = 1 − k) as n grows",
        scenario="binomial_b4.toml", variants={f"n={n}": _b4_n(n) for n in B4_N}, claims=_b4_claims,
        figures=_b4_figure, explain=_b4_explain, seeds=RUNS,
        notes="50 Mbit/s, 50 ms, RED, 4 reverse TCP flows; n = 5-60 (n/5 of each k); 100 s measured over 20-100 s.",
    ),
    Experiment(
        id="B5", paper=PAPER, title="three bottlenecks with web-like and constant-rate background traffic",
        scenario="binomial_b5.toml",
        variants={"sqrt": lambda d: d, "iiad": _set_cc((1, 3, 5, 7), "iiad")}, claims=_b5_claims, seeds=RUNS,
        notes="Parking lot of three 10 Mbit/s RED links; Pareto on/off (0.5 Mbit/s mean) and 1 Mbit/s CBR on each.",
    ),
    Experiment(
        id="B6", paper=PAPER, title="drop-tail lets the binomial flow take more",
        scenario="binomial_b6.toml",
        variants={"iiad droptail": lambda d: d, "sqrt droptail": _set_cc((1,), "sqrt"),
                  "iiad red": _queue("red"), "sqrt red": _then(_set_cc((1,), "sqrt"), _queue("red"))},
        claims=_b6_claims, seeds=RUNS, notes="B1's pair (3 Mbit/s, 50 ms, buffer = BDP, 4 reverse TCP flows) over drop-tail, and "
                                 "over RED for comparison.",
    ),
    Experiment(
        id="B7", paper=PAPER, title="the throughput law λ ∝ p^(−1/(k+l+1)) under random loss",
        scenario="binomial_b7.toml",
        variants={f"{name} p={p}": _b7_cell(cc, params, p) for name, (cc, params, _, _) in B7_MEMBERS.items()
                  for p in B7_P},
        claims=_b7_claims, figures=_b7_figure, seeds=RUNS,
        notes="One flow at a time, 100 Mbit/s, 50 ms, Bernoulli loss 0.1-1 %; 300 s measured over 20-300 s.",
    ),
    Experiment(
        id="B8", paper=PAPER, title="a TCP flow joins 15 long-running IIAD flows", scenario="binomial_b8.toml",
        variants={"iiad": lambda d: d, "sqrt": _set_cc((1,), "sqrt")}, claims=_b8_claims, figures=_b8_figure,
        seeds=RUNS,
        notes="Fig. 9's setting (9 Mbit/s, 50 ms, RED, n = 16: 15 IIAD flows and one NewReno flow that starts at "
              "20 s) with the paper's four reverse TCP flows; 80 s measured from 30 s. SQRT in IIAD's place as "
              "the text's \"similar results hold for IIAD and SQRT\".",
    ),
    Experiment(
        id="B9", paper=PAPER, title="SQRT for an audio session over a 50 Kbit/s, 900 ms pipe",
        scenario="binomial_b9.toml", variants={"sqrt": lambda d: d, "newreno": _set_cc((0,), "newreno")},
        claims=_b9_claims, figures=_b9_figure, seeds=RUNS,
        notes="Fig. 18's DummyNet pipe (50 Kbit/s, 900 ms, 50-slot drop-tail queue) with vat-sized packets "
              "(212 B); a long-running flow for the network-limited 64 Kbit/s audio; 600 s measured from 60 s. "
              "Fig. 19 (an application-limited session across the Internet) is not modelled.",
    ),
]


def _within(target: float, tol: float) -> Callable[[float], bool]:
    """The criterion "within ``tol`` (relative) of ``target``" as a verdict function."""
    return lambda v: abs(v - target) <= tol * target
