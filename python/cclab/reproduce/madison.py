"""TCP-Madison (Kola & Vernon 2007): docs/experiments.md, "D"."""
from __future__ import annotations

from . import Claim, Experiment, Runs, window as w


def _d2_claims(res: Runs) -> list[Claim]:
    r = res["madison"][0]
    s = r.summary
    _, m1 = s["measure"]
    gps = [f["goodput_bps"] for f in s["flows"]]
    u = s["links"][0]["utilization"]
    last = max(range(len(gps)), key=lambda i: s["flows"][i]["start"])
    t_in = w.settle_time(r, last, s["flows"][last]["start"], m1, gps[last])
    return [
        Claim("Madison flows share equally", "equal shares", f"Jain {s['jain']:.3f} ("
              + " / ".join(f"{g / 1e6:.1f}" for g in gps) + " Mbit/s)", "Jain ≥ 0.9", s["jain"] >= 0.9),
        Claim("equal share within seconds", "within seconds (Fig. 6(b))",
              f"the last flow at 90 % of its window rate {t_in:.1f} s after it starts", "≤ 10 s", t_in <= 10),
        Claim("total link load steady near C", "≈ C", f"utilisation {u:.3f} (with the cross traffic)", "≥ 0.9",
              u >= 0.9),
    ]


def _replace_madison(d: dict) -> dict:
    for f in d["flows"]:
        if f["cc"] == "madison":
            f["cc"] = "newreno"
    return d


def _d3_claims(res: Runs) -> list[Claim]:
    mad, ref = res["madison"][0], res["newreno in its place"][0]
    # Flows: Reno 1 (0 s to its stop), the new flow (from its start), Reno 2 (from its start to the end).
    dur = float(mad.spec["duration"])
    start = [float(f["start"]) for f in mad.summary["flows"]]
    reno1_stop = float(mad.spec["flows"][0]["stop"])
    spans = [(0, start[1], reno1_stop), (2, start[2], dur)]
    rows = []
    for i, t0, t1 in spans:
        # Each Reno's rate once the newest flow has had a sixth of the span to settle.
        t0 += (t1 - t0) / 6
        a, b = w.goodput(mad, i, t0, t1), w.goodput(ref, i, t0, t1)
        rows.append(Claim(f"does not hurt Reno (Reno {1 if i == 0 else 2}, {t0:.3g}-{t1:.3g} s)",
                          "Reno keeps its rate", f"{a / 1e6:.1f} Mbit/s beside Madison, {b / 1e6:.1f} beside NewReno",
                          "≥ 90 % of its rate beside NewReno", a >= 0.9 * b))
    late = start[1] + (reno1_stop - start[1]) / 3
    share = w.goodput(mad, 1, late, reno1_stop)
    t_in = w.settle_time(mad, 1, start[1], reno1_stop, share)
    rows.append(Claim("Madison reaches its share within seconds", "converges fast",
                      f"{t_in:.1f} s to 90 % of its {late:g}-{reno1_stop:g} s rate ({share / 1e6:.1f} Mbit/s)",
                      "≤ 10 s", t_in <= 10))
    return rows


EXPERIMENTS = [
    Experiment(
        id="D2", paper="TCP-Madison (Kola & Vernon 2007)", title="three Madison flows on a loaded long path",
        scenario="madison_d2.toml", variants={"madison": lambda d: d}, claims=_d2_claims,
        notes="Cross traffic: Poisson 65 Mbit/s in place of the live PlanetLab path; 120 s.",
    ),
    Experiment(
        id="D3", paper="TCP-Madison (Kola & Vernon 2007)", title="with Reno on a loaded long path",
        scenario="madison_d3.toml", variants={"madison": lambda d: d, "newreno in its place": _replace_madison},
        claims=_d3_claims,
        notes="Cross traffic Poisson 55 + Pareto on/off 15 Mbit/s mean; Reno's receive window 172 KB as the paper's.",
    ),
]
