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


def settle_time(r: Result, flow: int, t0: float, t1: float, target: float, frac: float = 0.9) -> float:
    """Seconds after ``t0`` until flow's per-sample rate first reaches ``frac`` × ``target`` (inf if never
    in [t0, t1])."""
    f = r.flows[(r.flows["flow"] == flow) & (r.flows["t"] > t0) & (r.flows["t"] <= t1)]
    hit = f[f["rate_bps"] >= frac * target]
    return float(hit["t"].iloc[0] - t0) if len(hit) else float("inf")
