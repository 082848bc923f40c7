"""TCP-Madison (Kola & Vernon 2007): docs/experiments.md, "D"."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..results import Result
from . import Claim, Experiment, Runs, window as w
from .overseeds import ci, judged, per_seed


def _d2_claims(res: Runs) -> list[Claim]:
    runs = res["madison"]

    def settle(r: Result) -> float:
        s = r.summary
        _, m1 = s["measure"]
        gps = [f["goodput_bps"] for f in s["flows"]]
        last = max(range(len(gps)), key=lambda i: s["flows"][i]["start"])
        return w.settle_time(r, last, s["flows"][last]["start"], m1, gps[last])

    per_flow = " / ".join(f"{np.mean([r.summary['flows'][i]['goodput_bps'] for r in runs]) / 1e6:.1f}"
                          for i in range(len(runs[0].summary["flows"]))) + " Mbit/s"
    return [
        judged("Madison flows share equally", "equal shares", per_seed(runs, lambda r: float(r.summary["jain"])),
               "per-flow Jain ≥ 0.9", lambda v: v >= 0.9, fmt="{:.3f}", extra=per_flow),
        judged("equal share within seconds", "within seconds (Fig. 6(b))", per_seed(runs, settle),
               "the last flow at 90 % of its window rate ≤ 10 s after it starts", lambda v: v <= 10, fmt="{:.1f}",
               unit="s"),
        judged("total link load steady near C", "≈ C",
               per_seed(runs, lambda r: float(r.summary["links"][0]["utilization"])),
               "utilisation (with the cross traffic) ≥ 0.9", lambda v: v >= 0.9, fmt="{:.3f}"),
    ]


def _b_target(p: float, ratio: float = 0.0235, p_min: float = 2.55e-5) -> float:
    """Eq. 3 with Table 2's constants: the backlog (packets) a Madison flow aims for at loss rate p."""
    return (2 / 7) * ratio * (9 + np.sqrt(25 + 56 / max(p, p_min)))


def _d2_explain(res: Runs, claims: list[Claim]) -> str:
    """Where the missing load goes: Madison's target backlog at the loss rate the cross traffic causes."""
    runs = res["madison"]

    def mad(r: Result) -> list[dict]:
        return [f for f in r.summary["flows"] if f["cc"] == "madison"]

    bits = 8.0 * float(runs[0].spec["flows"][0]["transport"]["mss"])  # goodput counts payload
    p = per_seed(runs, lambda r: float(np.mean([f["loss_rate"] for f in mad(r)])))
    goal = [_b_target(x) for x in p]
    backlog = per_seed(runs, lambda r: float(np.mean([f["goodput_bps"] / bits * (f["mean_rtt"] - f["min_rtt"])
                                                      for f in mad(r)])))
    total = per_seed(runs, lambda r: sum(f["goodput_bps"] for f in mad(r)) / 1e6)
    load = per_seed(runs, lambda r: float(r.summary["links"][0]["utilization"]) * 100)
    drops = per_seed(runs, lambda r: float(r.summary["links"][0]["drops"]))
    qd = per_seed(runs, lambda r: float(np.mean([f["mean_rtt"] - f["min_rtt"] for f in mad(r)])) * 1e3)
    return (
        "Madison sets its rate S so that its own mean backlog at the bottleneck, S·d̄ with d̄ the queueing "
        "delay it measures (eq. 4), equals b_target(p) (eq. 3), which shrinks as the loss rate p grows. Here "
        "both d̄ and p come from the cross traffic: the short NewReno transfers' slow starts arrive in bursts "
        "that fill the 322-packet buffer and overflow it while the mean load stays below C "
        f"({ci(drops, '{:.0f}')} drops in the run, link load {ci(load, '{:.1f}')} %). Measured over the "
        f"window, mean over seeds: queueing delay {ci(qd, '{:.1f}')} ms, Madison's loss rate "
        f"{ci([100 * x for x in p], '{:.2f}')} %, so b_target = {ci(goal, '{:.2f}')} packets per flow, while "
        f"its backlog is {ci(backlog, '{:.1f}')} packets at {ci(total, '{:.1f}')} Mbit/s for the three "
        "flows. A queue the cross traffic keeps standing makes any rate look like too much backlog, so "
        "Madison stays well below the capacity the cross traffic leaves: the paper's \"total load near C\" "
        "needs cross traffic that leaves the queue short, which bursty responsive transfers do not.")


def _replace_madison(d: dict) -> dict:
    for f in d["flows"]:
        if f["cc"] == "madison":
            f["cc"] = "newreno"
    return d


def _d3_spans(r: Result) -> list[tuple[int, float, float]]:
    # Flows: Reno 1 (0 s to its stop), the new flow (from its start), Reno 2 (from its start to the end);
    # each Reno's rate once the newest flow has had a sixth of the span to settle.
    dur = float(r.spec["duration"])
    start = [float(f["start"]) for f in r.summary["flows"]]
    stop1 = float(r.spec["flows"][0]["stop"])
    return [(i, t0 + (t1 - t0) / 6, t1) for i, t0, t1 in ((0, start[1], stop1), (2, start[2], dur))]


def _d3_claims(res: Runs) -> list[Claim]:
    mad, ref = res["madison"], res["newreno in its place"]
    rows = []
    for k, (i, t0, t1) in enumerate(_d3_spans(mad[0])):
        ratio = [w.goodput(a, i, *_d3_spans(a)[k][1:]) / w.goodput(b, i, *_d3_spans(b)[k][1:])
                 for a, b in zip(mad, ref)]
        rows.append(judged(f"does not hurt Reno (Reno {k + 1}, {t0:.3g}-{t1:.3g} s)", "Reno keeps its rate",
                           [100 * x for x in ratio], "Reno beside Madison ≥ 90 % of its rate beside NewReno",
                           lambda v: v >= 90, fmt="{:.0f}", unit="%"))

    def reach(r: Result) -> float:
        start1 = float(r.summary["flows"][1]["start"])
        stop1 = float(r.spec["flows"][0]["stop"])
        late = start1 + (stop1 - start1) / 3
        return w.settle_time(r, 1, start1, stop1, w.goodput(r, 1, late, stop1))

    rows.append(judged("Madison reaches its share within seconds", "converges fast", per_seed(mad, reach),
                       "≤ 10 s to 90 % of its settled rate", lambda v: v <= 10, fmt="{:.1f}", unit="s"))
    return rows


def _d3_explain(res: Runs, claims: list[Claim]) -> str:
    """The mechanism, measured: the loss rate and queue beside Madison against beside NewReno, and the
    paper's before/after comparison (Reno 1's rate before the new flow joins and while it runs)."""
    def link(runs: list[Result], key: str) -> list[float]:
        return [float(r.summary["links"][0][key]) for r in runs]

    mad, ref = res["madison"], res["newreno in its place"]
    before = {k: per_seed(v, lambda r: w.goodput(r, 0, float(r.summary["flows"][1]["start"]) / 2,
                                                 float(r.summary["flows"][1]["start"]))) for k, v in res.items()}
    during = {k: per_seed(v, lambda r: w.goodput(r, 0, *_d3_spans(r)[0][1:])) for k, v in res.items()}
    lines = ["| beside | Reno 1 before the join (Mbit/s) | Reno 1 while it runs (Mbit/s) | link drops | mean queue (packets) |",
             "| --- | --- | --- | --- | --- |"]
    for k, runs in (("Madison", mad), ("NewReno", ref)):
        key = "madison" if k == "Madison" else "newreno in its place"
        lines.append(f"| {k} | {ci([x / 1e6 for x in before[key]], '{:.2f}')} | {ci([x / 1e6 for x in during[key]], '{:.2f}')} "
                     f"| {ci(link(runs, 'drops'), '{:.0f}')} | {ci(link(runs, 'mean_queue_pkts'), '{:.0f}')} |")
    more_q = np.mean(link(mad, "mean_queue_pkts")) > np.mean(link(ref, "mean_queue_pkts"))
    more_d = np.mean(link(mad, "drops")) > np.mean(link(ref, "drops"))
    verdict = (f"Beside Madison the bottleneck holds {'a longer' if more_q else 'no longer'} standing queue and "
               f"drops {'more' if more_d else 'no more'} packets than beside NewReno: the Reno flows' losses and "
               "queueing delay, not their propagation delay, set what they get.")
    return ("The Reno flows are window-capped (a 172 KB receive window), so their rate is their window over "
            "their RTT, and a loss halves it. Measured over the seeds (before the join: the first half of "
            "Reno 1's time alone):\n\n" + "\n".join(lines) + "\n\n" + verdict)



PAPER = "TCP-Madison (Kola & Vernon 2007)"

# --- D1 -------------------------------------------------------------------------------------------------

D1_TOL = 0.20  # EXPERIMENTS: the estimates match the simulator's ground truth within 20 %


def _state(r: Result, flow: int, key: str, t0: float, t1: float) -> np.ndarray:
    f = r.flows[(r.flows["flow"] == flow) & (r.flows["t"] > t0) & (r.flows["t"] <= t1)]
    x = f[f"madison.{key}"].to_numpy(float)
    return x[np.isfinite(x)]


def d1_errors(r: Result) -> dict[str, float]:
    """Each estimate's largest relative error over the flows (time means over the measure window) against
    the simulator's ground truth: C against the link rate; U (eq. 8) against the link's utilisation (all
    traffic); X_xt (eq. 10, everything but the flow's own traffic) against link throughput − the flow's
    wire throughput; n (eq. 11, a ratio of rates, averaged harmonically) against link throughput / the
    flow's wire throughput."""
    m0, m1 = (float(x) for x in r.summary["measure"])
    link = r.summary["links"][0]
    load = link["utilization"] * link["rate_bps"]
    worst = {"C": 0.0, "U": 0.0, "X_xt": 0.0, "n": 0.0}
    for i, f in enumerate(r.summary["flows"]):
        truth = {"C": link["rate_bps"] / 1e6, "U": link["utilization"], "X_xt": load - f["throughput_bps"],
                 "n": load / f["throughput_bps"]}
        n = _state(r, i, "n", m0, m1)
        est = {"C": float(np.mean(_state(r, i, "C_est", m0, m1))), "U": float(np.mean(_state(r, i, "U", m0, m1))),
               "X_xt": float(np.mean(_state(r, i, "X_xt_bps", m0, m1))), "n": float(len(n) / np.sum(1.0 / n))}
        for k in worst:
            worst[k] = max(worst[k], abs(est[k] - truth[k]) / truth[k])
    return worst


def _cross(rate: str) -> Callable[[dict], dict]:
    """D2's path with unresponsive Poisson cross traffic alone (the arrival process eq. 8 assumes)."""
    def change(d: dict) -> dict:
        d["traffic"] = [{"kind": "poisson", "rate": rate, "start": "0s"}]
        return d
    return change


def _d1_claims(res: Runs) -> list[Claim]:
    rows = []
    for k, name in (("C", "capacity C"), ("U", "utilisation U (eq. 8)"), ("X_xt", "cross traffic X_xt (eq. 10)"),
                    ("n", "flow count n (eq. 11)")):
        for load, runs in res.items():
            rows.append(judged(f"estimated {name} matches the ground truth ({load})", "the closed forms of §3-4",
                               [100 * d1_errors(r)[k] for r in runs],
                               f"largest error over the flows ≤ {100 * D1_TOL:.0f} %",
                               lambda v: v <= 100 * D1_TOL, fmt="{:.1f}", unit="%"))
    return rows


def _d1_figure(res: Runs) -> dict[str, Any]:
    """Madison's estimator traces against the ground truth (seed 1 of each load): U against the link's
    utilisation per sample, n against link throughput / flow throughput."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(res), 2, figsize=(10, 2.8 * len(res)), squeeze=False)
    for row, (load, runs) in zip(axes, res.items()):
        r = runs[0]
        l = r.links[r.links["link"] == 0]
        dt = float(r.spec["sample_interval"])
        rate = r.summary["links"][0]["rate_bps"]
        util = l["tx_bytes"].diff() * 8 / dt / rate
        row[0].plot(l["t"], util, color="black", lw=0.8, label="link utilisation (truth)")
        for i in range(len(r.summary["flows"])):
            f = r.flows[r.flows["flow"] == i]
            row[0].plot(f["t"], f["madison.U"], lw=0.8, label=f"flow {i} U")
            thr = (f["sent_bytes"].diff() * 8 / dt).to_numpy(float)
            load = np.interp(f["t"].to_numpy(float), l["t"].to_numpy(float), util.to_numpy(float)) * rate
            with np.errstate(divide="ignore", invalid="ignore"):
                truth = pd.Series(load / thr).rolling(10, min_periods=1).median()
            row[1].plot(f["t"], truth, lw=0.8, ls="--", label=f"flow {i} truth")
            row[1].plot(f["t"], f["madison.n"], lw=0.8, label=f"flow {i} n")
        row[0].set_ylim(0, 1.2)
        row[1].set_ylim(0, 10)
        row[0].set_title(f"{load}: U")
        row[1].set_title(f"{load}: n")
        row[0].legend(fontsize=7)
        row[1].legend(fontsize=7, ncol=2)
    axes[-1][0].set_xlabel("time (s)")
    axes[-1][1].set_xlabel("time (s)")
    return {"d1_estimates": fig}


# --- D4 -------------------------------------------------------------------------------------------------

D4_CC = ("madison", "fast", "bic", "newreno")
D4_LOADS = ("40Mbps", "70Mbps")


def _d4_key(cc: str, load: str) -> str:
    return f"{cc} cross {load}"


def _d4_cell(cc: str, load: str) -> Callable[[dict], dict]:
    def change(d: dict) -> dict:
        d["flows"][0]["cc"] = cc
        d["traffic"][0]["rate"] = load
        return d
    return change


def _d4_claims(res: Runs) -> list[Claim]:
    gp = lambda r: float(r.summary["flows"][0]["goodput_bps"])
    rows = []
    for load in D4_LOADS:
        mad = per_seed(res[_d4_key("madison", load)], gp)
        for other in D4_CC[1:]:
            o = per_seed(res[_d4_key(other, load)], gp)
            ratio = [a / b for a, b in zip(mad, o)]
            rows.append(judged(f"Madison ≫ {other.upper() if other != 'newreno' else 'NewReno'} (cross {load})",
                               {"fast": "up to 4×", "newreno": "up to 10×", "bic": "far more"}[other] + " (Figs. 8, 9)",
                               ratio, "Madison / it > 1.5", lambda v: v > 1.5, unit="×",
                               extra=f"{ci([x / 1e6 for x in mad], '{:.1f}')} vs {ci([x / 1e6 for x in o], '{:.1f}')} Mbit/s"))
        runs = res[_d4_key("madison", load)]
        backlog = per_seed(runs, lambda r: float(r.summary["flows"][0]["throughput_bps"]) / 12000.0
                           * float(r.summary["links"][0]["mean_queue_delay_s"]))
        rows.append(judged(f"with a backlog of a few packets (cross {load})", "a few packets",
                           backlog, "the flow's packets in the queue (rate × mean queueing delay) ≤ 10",
                           lambda v: v <= 10, fmt="{:.1f}"))
        rows.append(judged(f"and loss of a few per 10 000 (cross {load})", "≤ a few per 10 000",
                           per_seed(runs, lambda r: 1e4 * float(r.summary["flows"][0]["loss_rate"])),
                           "the flow's loss ≤ 5 per 10 000", lambda v: v <= 5, fmt="{:.1f}", unit="per 10 000"))
    return rows


def _d4_figure(res: Runs) -> dict[str, Any]:
    """Figs. 8 and 9's form: cumulative data against time per protocol (seed 1)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(D4_LOADS), figsize=(10, 3.4), sharey=True)
    for ax, load in zip(axes, D4_LOADS):
        for cc in D4_CC:
            r = res[_d4_key(cc, load)][0]
            f = r.flows[r.flows["flow"] == 0]
            ax.plot(f["t"], f["delivered_bytes"] / 1e9, label=cc)
        ax.set_title(f"cross traffic {load}")
        ax.set_xlabel("time (s)")
    axes[0].set_ylabel("cumulative data (GB)")
    axes[-1].legend(fontsize=8)
    return {"d4_cumulative": fig}

EXPERIMENTS = [
    Experiment(
        id="D1", paper=PAPER, title="the estimators against the simulator's ground truth",
        scenario="madison_d2.toml", variants={"cross 30Mbps": _cross("30Mbps"), "cross 65Mbps": _cross("65Mbps"),
                  "transfers 45Mbps + poisson 20Mbps": lambda d: d},
        claims=_d1_claims, figures=_d1_figure,
        notes="D2's path (three Madison flows, 100 Mbit/s, 246 ms) with Poisson cross traffic at 30 and 65 Mbit/s, "
              "and with D2's own mix (NewReno short transfers + Poisson); estimates are time means over 70-120 s (n "
              "harmonically). The closed forms themselves are unit-tested in Rust.",
    ),
    Experiment(
        id="D2", paper=PAPER, title="three Madison flows on a loaded long path",
        scenario="madison_d2.toml", variants={"madison": lambda d: d}, claims=_d2_claims, explain=_d2_explain,
        notes="Cross traffic in place of the live PlanetLab path: NewReno short transfers (45 Mbit/s offered) + "
              "Poisson 20 Mbit/s; 120 s.",
    ),
    Experiment(
        id="D3", paper=PAPER, title="with Reno on a loaded long path",
        scenario="madison_d3.toml", variants={"madison": lambda d: d, "newreno in its place": _replace_madison},
        claims=_d3_claims, explain=_d3_explain,
        notes="Cross traffic: NewReno short transfers (50 Mbit/s offered) + Poisson 20 Mbit/s; Reno's receive "
              "window 172 KB as the paper's.",
    ),
    Experiment(
        id="D4", paper=PAPER, title="throughput on a long, fat, loaded path",
        scenario="madison_d4.toml", variants={_d4_key(cc, l): _d4_cell(cc, l) for l in D4_LOADS for cc in D4_CC},
        claims=_d4_claims, figures=_d4_figure,
        notes="One flow, 100 Mbit/s, 150 ms, 150 KB buffer, Poisson cross traffic at 40 and 70 % load in place "
              "of the live paths; 120 s measured over 20-120 s.",
    ),
]
