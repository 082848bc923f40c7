"""TCP-Madison (Kola & Vernon 2007): docs/experiments.md, "D"."""
from __future__ import annotations

import numpy as np

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


EXPERIMENTS = [
    Experiment(
        id="D2", paper="TCP-Madison (Kola & Vernon 2007)", title="three Madison flows on a loaded long path",
        scenario="madison_d2.toml", variants={"madison": lambda d: d}, claims=_d2_claims,
        notes="Cross traffic: Poisson 65 Mbit/s in place of the live PlanetLab path; 120 s.",
    ),
    Experiment(
        id="D3", paper="TCP-Madison (Kola & Vernon 2007)", title="with Reno on a loaded long path",
        scenario="madison_d3.toml", variants={"madison": lambda d: d, "newreno in its place": _replace_madison},
        claims=_d3_claims, explain=_d3_explain,
        notes="Cross traffic Poisson 55 + Pareto on/off 15 Mbit/s mean; Reno's receive window 172 KB as the paper's.",
    ),
]
