"""FAST TCP (Jin, Wei & Low, INFOCOM 2004): docs/experiments.md, "F"."""
from __future__ import annotations

import numpy as np

# _as: α is FAST's; the others run their defaults
from . import Claim, Experiment, Runs, all_flows_as as _as, window as w
from .phases import phases, second_half


def _f2_claims(res: Runs) -> list[Claim]:
    r = res["fast"][0]
    alpha = r.spec["flows"][0]["params"]["alpha"]
    ph = phases(r)
    rows = []
    # F4's equilibrium inside F2: the queue holds Σα packets (each flow keeps α in the queue).
    qs = [(len(a), w.mean_queue(r, *second_half(t0, t1))) for t0, t1, a in ph]
    worst = max(abs(q - n * alpha) / (n * alpha) for n, q in qs)
    rows.append(Claim(
        "queue stays near n·α in every phase", "queue = Σα (equilibrium, §II)",
        ", ".join(f"{q:.1f} (n·α {n * alpha})" for n, q in qs),
        "each phase's mean queue (second half) within 15 % of n·α", worst <= 0.15))
    # Converges to the new equal share: Jain in the settled half of each multi-flow phase, and the FAST
    # paper's responsiveness index (time for the slowest running average to settle within 10 %).
    multi = [(t0, t1, a) for t0, t1, a in ph if len(a) > 1]
    jains = [w.jain_of(r, a, *second_half(t0, t1)) for t0, t1, a in multi]
    rows.append(Claim(
        "converges to the new equal share after each join/leave", "equal shares (Fig. 6)",
        "Jain " + ", ".join(f"{j:.3f}" for j in jains), "Jain ≥ 0.95 in every multi-flow phase",
        min(jains) >= 0.95))
    resp = [w.responsiveness(r, a, t0, t1) for t0, t1, a in ph]
    rows.append(Claim(
        "responds in a few RTTs", "responsiveness index, §VI (FAST lowest of the four)",
        ", ".join(f"{x:.1f} s" for x in resp), "reported per phase (the paper plots CDFs, no bound)", None))
    stab = {cc: float(np.mean([w.stability(res[cc][0], a, *second_half(t0, t1)) for t0, t1, a in ph]))
            for cc in res}
    rows.append(Claim(
        "no oscillation", "stability index FAST ≪ loss-based (Fig. 7)",
        ", ".join(f"{cc} {v:.3f}" for cc, v in stab.items()),
        "FAST's stability index (mean over phases) the lowest",
        stab["fast"] == min(stab.values())))
    rows.append(Claim("no loss", "0 drops with α·n below the buffer", f"{w.drops(r, 0, float(r.spec['duration']))} drops",
                      "0 drops", w.drops(r, 0, float(r.spec["duration"])) == 0))
    # Fairness ranking: FAST > HSTCP > Reno > STCP (Jain, multi-flow phases, settled halves).
    mj = {cc: float(np.mean([w.jain_of(res[cc][0], a, *second_half(t0, t1)) for t0, t1, a in multi]))
          for cc in res}
    order = sorted(mj, key=lambda cc: mj[cc], reverse=True)
    rows.append(Claim(
        "fairness ranking", "Jain FAST > HSTCP > Reno > STCP",
        " > ".join(f"{cc} {mj[cc]:.3f}" for cc in order), "FAST first",
        order[0] == "fast"))
    return rows


EXPERIMENTS = [
    Experiment(
        id="F2", paper="FAST TCP (Jin, Wei & Low, INFOCOM 2004)", title="dynamic scenario I: 3 flows join and leave",
        scenario="fast_f2.toml",
        variants={"fast": lambda d: d, "highspeed": _as("highspeed"), "newreno": _as("newreno"),
                  "scalable": _as("scalable")},
        claims=_f2_claims,
        notes="100 Mbit/s, 500-packet buffer, α = 25 (the paper's 800 Mbit/s, 2000 packets, α = 200 scaled).",
    ),
]
