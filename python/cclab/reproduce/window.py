"""Measurements over a time window of one run (the claims' building blocks)."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..metrics import jain, responsiveness_index, stability_index
from ..results import Result


def _grown(table: pd.DataFrame, key: str, ident: int, counter: str, t0: float, t1: float) -> float:
    """How much cumulative ``counter`` of row set ``key == ident`` grew over [t0, t1] (interpolated
    between samples)."""
    rows = table[table[key] == ident]
    t, v = rows["t"].to_numpy(float), rows[counter].to_numpy(float)
    return float(np.interp(t1, t, v) - np.interp(t0, t, v))


def goodput(r: Result, flow: int, t0: float, t1: float) -> float:
    """Bits per second delivered to flow ``flow``'s receiver in [t0, t1]."""
    return _grown(r.flows, "flow", flow, "delivered_bytes", t0, t1) * 8.0 / (t1 - t0)


def goodputs(r: Result, flows: Iterable[int], t0: float, t1: float) -> list[float]:
    return [goodput(r, i, t0, t1) for i in flows]


def mean_queue(r: Result, t0: float, t1: float, link: int = 0) -> float:
    l = r.links[r.links["link"] == link]
    return float(l[(l["t"] >= t0) & (l["t"] <= t1)]["queue_pkts"].mean())


def utilization(r: Result, t0: float, t1: float, link: int = 0) -> float:
    rate = r.summary["links"][link]["rate_bps"]
    return _grown(r.links, "link", link, "tx_bytes", t0, t1) * 8.0 / (t1 - t0) / rate


def drops(r: Result, t0: float, t1: float, link: int = 0) -> int:
    return int(round(_grown(r.links, "link", link, "drops", t0, t1)))


def rate_samples(r: Result, flows: Iterable[int], t0: float, t1: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per-sample-interval rates of ``flows`` in [t0, t1]: (sample times, one array per flow)."""
    out: list[np.ndarray] = []
    ts = np.empty(0)
    for i in flows:
        f = r.flows[(r.flows["flow"] == i) & (r.flows["t"] > t0) & (r.flows["t"] <= t1)]
        ts = f["t"].to_numpy(float)
        out.append(f["rate_bps"].to_numpy(float))
    return ts, out


def stability(r: Result, flows: Iterable[int], t0: float, t1: float) -> float:
    """FAST §VI stability index over [t0, t1] (fixed composition)."""
    return stability_index(rate_samples(r, flows, t0, t1)[1])


def responsiveness(r: Result, flows: Iterable[int], t0: float, t1: float) -> float:
    """FAST §VI responsiveness index over [t0, t1], seconds."""
    t, rates = rate_samples(r, flows, t0, t1)
    return responsiveness_index(t, rates)


def jain_of(r: Result, flows: Iterable[int], t0: float, t1: float) -> float:
    return jain(goodputs(r, flows, t0, t1))


def wire_rate(r: Result, flow: int, t0: float, t1: float) -> float:
    """Flow ``flow``'s delivered data in [t0, t1] on the wire (payload × packet size / MSS), bits per second:
    comparable with the link's rate and with what the cross traffic leaves of it."""
    tr = r.spec["flows"][flow]["transport"]
    return goodput(r, flow, t0, t1) * float(tr["packet_size"]) / float(tr["mss"])


def available(r: Result, flows: Iterable[int], t0: float, t1: float, link: int = 0) -> float:
    """C_avail over [t0, t1]: the link's rate minus what the cross traffic carried (the link's transmitted
    bits minus the ``flows``' delivered wire bits; their retransmissions, ~0.1 % here, count as cross traffic)."""
    rate = float(r.summary["links"][link]["rate_bps"])
    return rate - (utilization(r, t0, t1, link) * rate - sum(wire_rate(r, i, t0, t1) for i in flows))


# The equal-share criterion of the convergence rows (D2, D3): a flow has reached its share when its wire rate,
# averaged over SHARE_HOLD seconds, first lies within ±SHARE_TOL of C_avail/n. 20 %: the cross traffic moves
# C_avail by about that much from one second to the next on D2/D3's paths; 1 s: four RTTs at 246-260 ms.
SHARE_TOL = 0.20
SHARE_HOLD = 1.0


def reach_share(r: Result, flow: int, t0: float, t1: float, share: float, tol: float = SHARE_TOL,
                hold: float = SHARE_HOLD) -> float:
    """Seconds after ``t0`` until flow ``flow`` has spent ``hold`` seconds at ``share`` ± ``tol``: the end of
    the first interval [t, t + hold] (t on the sample grid, t ≥ t0) whose mean wire rate is within the band;
    inf if none ends by ``t1``."""
    f = r.flows[(r.flows["flow"] == flow) & (r.flows["t"] >= t0 - 1e-9) & (r.flows["t"] <= t1 + 1e-9)]
    t = f["t"].to_numpy(float)
    tr = r.spec["flows"][flow]["transport"]
    bits = f["delivered_bytes"].to_numpy(float) * 8.0 * float(tr["packet_size"]) / float(tr["mss"])
    end = np.searchsorted(t, t + hold - 1e-9)  # the first sample at or after t + hold
    ok = end < len(t)
    if not ok.any():
        return float("inf")
    i = np.nonzero(ok)[0]
    rate = (bits[end[i]] - bits[i]) / (t[end[i]] - t[i])
    hit = i[np.abs(rate - share) <= tol * share]
    return float(t[end[hit[0]]] - t0) if len(hit) else float("inf")


def settle_time(r: Result, flow: int, t0: float, t1: float, target: float, frac: float = 0.9) -> float:
    """Seconds after ``t0`` until flow's per-sample rate first reaches ``frac`` × ``target`` (inf if never
    in [t0, t1])."""
    f = r.flows[(r.flows["flow"] == flow) & (r.flows["t"] > t0) & (r.flows["t"] <= t1)]
    hit = f[f["rate_bps"] >= frac * target]
    return float(hit["t"].iloc[0] - t0) if len(hit) else float("inf")
