"""What the figures need from a run, computed once: who is in which (algorithm, RTT) group, each flow's
base RTT and bottleneck rate, the per-flow delay and goodput statistics, and the links' buffers and queue
discipline settings. No matplotlib here, and no pandas (_table.py says why)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..traces import OPPORTUNITY_BYTES, opportunities_before
from ._table import Table, as_table

# An algorithm is drawn "many" when it has more flows than MANY or the run has more than MANY_TOTAL: each
# (algorithm, RTT) group as its median per sample with a p10-p90 band, no per-flow lines (docs/plots.md).
# Below that every flow is a line of its algorithm's colour. Why 8 and 16: up to 8 lines of one colour and
# line style can still be followed by eye where they cross (the 20-flow figure of issue 29 could not),
# and 16 lines in all is about where two algorithms' lines stop being told apart at 9 in wide.
MANY = 8
MANY_TOTAL = 16
# At most this many distinct RTTs get their own line style; more are binned into this many ranges.
MAX_RTT_GROUPS = 4


def _ms(x: float) -> str:
    # Rounded to 0.1 ms: a spec's RTT carries the serialisation of a packet (0.100002 s), not what was set.
    return f"{round(x * 1e3, 1):g}"


@dataclass
class Group:
    """Flows of one algorithm in one RTT group: one legend entry, one colour × line style."""

    cc: str
    rtt: str  # label, e.g. "40 ms" or "20–40 ms"
    flows: list[int]


@dataclass
class LinkInfo:
    """One directional link as the queue figure draws it."""

    id: int
    rate_bps: float
    queue: str
    params: dict
    buffer_pkts: Optional[float]  # the limit in packets (converted from bytes when only bytes are given)
    buffer_bytes: Optional[float]  # the limit in bytes (converted from packets likewise)
    buffer_exact: str  # "pkts" or "bytes": which of the two the scenario set
    red_th: Optional[tuple[float, float]] = None  # RED (min_th, max_th), packets

    def describe(self) -> str:
        """Two lines for the legend: the link, then its buffer in packets and in ms."""
        from ._style import si  # (matplotlib is loaded whenever a legend is drawn)

        head = f"link {self.id}: {self.queue}, {si(self.rate_bps, 'bit/s')}"
        if self.buffer_pkts is None or self.buffer_bytes is None:
            return head + "\nbuffer unlimited"
        approx = "" if self.buffer_exact == "pkts" else "≈"
        ms = self.buffer_bytes * 8.0 / self.rate_bps * 1e3
        return head + f"\nbuffer {approx}{self.buffer_pkts:.0f} pkts = {ms:.3g} ms"


@dataclass
class RunView:
    flows: Table
    links: Table
    summary: dict
    spec: Optional[dict]
    ccs: list[str] = field(default_factory=list)  # algorithms in order of first appearance
    groups: list[Group] = field(default_factory=list)
    rtt_labels: list[str] = field(default_factory=list)
    many: dict[str, bool] = field(default_factory=dict)  # per algorithm: thin lines + bold mean
    cc_of: dict[int, str] = field(default_factory=dict)
    bottleneck_bps: dict[int, float] = field(default_factory=dict)  # per flow: slowest link on its path
    base_rtt: dict[int, float] = field(default_factory=dict)  # per flow, seconds
    base_rtt_source: str = ""  # "spec" or "min_rtt"
    packet_size: int = 1500
    path_of: dict[int, list[int]] = field(default_factory=dict)  # per flow: its data path's links (spec)
    trace_s: dict[int, np.ndarray] = field(default_factory=dict)  # trace-driven links: opportunity times, s
    style: Any = None  # the _style.Style the figures are drawn in

    @property
    def sample_s(self) -> float:
        x = _num((self.spec or {}).get("sample_interval"))
        if x:
            return x
        t = np.unique(self.flows["t"]) if not self.flows.empty else np.array([])
        return float(np.median(np.diff(t))) if t.size >= 2 else math.nan

    def capacity(self, lid: int, t: np.ndarray) -> np.ndarray:
        """Link ``lid``'s capacity (bit/s) over the sample interval ending at each ``t``: from its trace
        (delivery opportunities in (t − sample, t] × 1500 B), or its constant rate."""
        # To the simulator's ns clock: a sample at 1.0999999999 s is at 1.1 s, not one opportunity short.
        t = np.round(np.asarray(t, dtype=float), 9)
        if lid in self.trace_s:
            dt = self.sample_s
            ts = self.trace_s[lid]
            n = opportunities_before(t, ts) - opportunities_before(np.round(np.maximum(t - dt, 0.0), 9), ts)
            width = np.minimum(t, dt)
            with np.errstate(all="ignore"):
                return np.where(width > 0, n * OPPORTUNITY_BYTES * 8.0 / width, np.nan)
        spec_links = (self.spec or {}).get("links") or []
        rate = _num(spec_links[lid].get("rate_bps")) if lid < len(spec_links) else None
        return np.full(t.shape, rate if rate is not None else math.nan)

    def flow_capacity(self, fid: int, t: np.ndarray) -> np.ndarray:
        """The flow's bottleneck capacity at each sample: the slowest link of its path at that time."""
        path = self.path_of.get(fid)
        if not path or not any(l in self.trace_s for l in path):
            return np.full(np.shape(t), self.bottleneck_bps.get(fid, math.nan))
        return np.min(np.vstack([self.capacity(l, t) for l in path]), axis=0)

    @property
    def delays_differ(self) -> bool:
        """Whether flows can see different queueing delays: several RTT groups, or flows whose paths
        cross different links (several bottlenecks). On one shared link with one RTT every flow sees the
        same queue, so a per-flow throughput-delay scatter is a vertical line."""
        paths = {tuple(p) for p in self.path_of.values()}
        return len(self.rtt_labels) > 1 or len(paths) > 1

    @property
    def window(self) -> tuple[float, float]:
        m0, m1 = self.summary["measure"]
        return float(m0), float(m1)

    def in_window(self, df: Table) -> Table:
        m0, m1 = self.window
        return df.where((df["t"] >= m0 - 1e-9) & (df["t"] <= m1 + 1e-9))


def _rtt_groups(rtts: dict[int, float]) -> tuple[dict[int, str], list[str]]:
    """Labels each flow's RTT: each distinct value its own group, or, with more than MAX_RTT_GROUPS
    distinct values (random graphs), MAX_RTT_GROUPS ranges holding about equal numbers of values."""
    distinct = sorted({round(r, 6) for r in rtts.values()})
    if len(distinct) <= MAX_RTT_GROUPS:
        lab = {r: f"{_ms(r)} ms" for r in distinct}
        return {f: lab[round(r, 6)] for f, r in rtts.items()}, [lab[r] for r in distinct]
    bins = np.array_split(np.array(distinct), MAX_RTT_GROUPS)
    labels, of = [], {}
    for b in bins:
        label = f"{_ms(b[0])}–{_ms(b[-1])} ms"
        labels.append(label)
        for r in b:
            of[float(r)] = label
    return {f: of[round(r, 6)] for f, r in rtts.items()}, labels


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def build_view(flows: Any, links: Any, summary: dict, spec: Optional[dict]) -> RunView:
    """The view of a run whose tables ``flows`` and ``links`` are Tables (_table.py) or pandas DataFrames."""
    flows, links = as_table(flows), as_table(links)
    v = RunView(flows, links, summary, spec)
    sflows = summary.get("flows", [])
    spec_flows = (spec or {}).get("flows") or []
    spec_links = (spec or {}).get("links") or []
    if spec_flows:
        v.packet_size = int(spec_flows[0].get("transport", {}).get("packet_size", 1500))
    for f in sflows:
        fid = int(f["id"])
        v.cc_of[fid] = f["cc"]
        if f["cc"] not in v.ccs:
            v.ccs.append(f["cc"])
    rtt_of, v.rtt_labels = _rtt_groups({int(f["id"]): float(f["rtt"]) for f in sflows})
    by_key: dict[tuple[str, str], list[int]] = {}
    for f in sflows:
        fid = int(f["id"])
        by_key.setdefault((f["cc"], rtt_of[fid]), []).append(fid)
    for cc in v.ccs:
        for r in v.rtt_labels:
            if (cc, r) in by_key:
                v.groups.append(Group(cc, r, by_key[(cc, r)]))
        v.many[cc] = sum(len(g.flows) for g in v.groups if g.cc == cc) > MANY or len(sflows) > MANY_TOTAL

    # Each flow's base RTT: what an empty network would give it. In the spec: the round-trip propagation
    # delay plus the serialisation of one data packet on every link of its path and of one ACK on every
    # link of its ACK path (the simulator's min_rtt equals this exactly when a flow ever sees empty
    # queues). The flow's own min_rtt is only the fallback: a flow that starts into a standing queue never
    # sees its base RTT, and srtt − min_rtt then misses that queue (tens of ms at 20+ flows).
    link_rate = [_num(l.get("rate_bps")) or 0.0 for l in spec_links]
    min_rtt = flows.reduce("flow", "min_rtt", np.min) if "min_rtt" in flows and not flows.empty else {}
    from_spec = len(spec_flows) == len(sflows) > 0 and all(r > 0 for r in link_rate)
    v.base_rtt_source = "spec" if from_spec else "min_rtt"
    for lid, l in enumerate(spec_links):
        if l.get("trace_ms"):
            v.trace_s[lid] = np.asarray(l["trace_ms"], dtype=float) / 1e3
    default_rate = _num((summary.get("links") or [{}])[0].get("rate_bps")) or math.nan
    for i, f in enumerate(sflows):
        fid = int(f["id"])
        if from_spec:
            sf = spec_flows[i]
            tr = sf.get("transport", {})
            ps = float(tr.get("packet_size", v.packet_size))
            ack = ps - float(tr.get("mss", ps - 52))
            path, ack_path = sf.get("path", []), sf.get("ack_path", [])
            base = float(sf.get("rtt", f["rtt"]))
            base += sum(ps * 8 / link_rate[l] for l in path)
            base += sum(ack * 8 / link_rate[l] for l in ack_path)
            v.base_rtt[fid] = base
            v.bottleneck_bps[fid] = min((link_rate[l] for l in path), default=default_rate)
            v.path_of[fid] = [int(l) for l in path]
        else:
            v.base_rtt[fid] = float(min_rtt.get(fid, math.nan))
            v.bottleneck_bps[fid] = default_rate
    return v


def link_infos(v: RunView) -> list[LinkInfo]:
    """The links the queue figure shows: link 0 and every link whose queue was ever non-empty, skipping
    the reverse (ACK) direction when it stays empty."""
    if v.links.empty:
        return []
    spec_links = (v.spec or {}).get("links") or []
    qmax = v.links.reduce("link", "queue_pkts", np.max)
    out = []
    for lid, q in qmax.items():
        lid = int(lid)
        if not (q > 0 or lid == 0):
            continue
        sl = spec_links[lid] if lid < len(spec_links) else {}
        summ: dict = next((l for l in v.summary.get("links", []) if int(l["id"]) == lid), {})
        rate = _num(sl.get("rate_bps")) or _num(summ.get("rate_bps")) or math.nan
        bp, bb = _num(sl.get("buffer_pkts")), _num(sl.get("buffer_bytes"))
        exact = "pkts" if bp is not None else "bytes"
        if bp is None and bb is not None:
            bp = bb / v.packet_size
        if bb is None and bp is not None:
            bb = bp * v.packet_size
        info = LinkInfo(lid, rate, str(sl.get("queue", "?")), dict(sl.get("queue_params") or {}), bp, bb, exact)
        if info.queue == "red":
            # Defaults as crates/cclab-cc/src/aqm/red.rs (DECISION there): 20 % and 80 % of the buffer in
            # packets (at least 1 and 2), 5 and 15 packets when the buffer is unknown.
            if bp is not None:
                dmin, dmax = max(0.2 * bp, 1.0), max(0.8 * bp, 2.0)
            else:
                dmin, dmax = 5.0, 15.0
            lo, hi = _num(info.params.get("min_th")), _num(info.params.get("max_th"))
            info.red_th = (dmin if lo is None else lo, dmax if hi is None else hi)
        out.append(info)
    return out


def window_rtts(v: RunView) -> Table:
    """The flows' RTT samples in the measurement window: flow, cc, srtt and qdelay = srtt − the flow's base
    RTT (s, ≥ 0), one row per (sample time, flow) that has an srtt."""
    w = v.in_window(v.flows)
    if "srtt" not in w or w.empty:
        return Table({"flow": np.array([], dtype="int64"), "cc": np.array([], dtype=object),
                      "srtt": np.array([]), "qdelay": np.array([])})
    w = w.where(~np.isnan(np.asarray(w["srtt"], dtype=float)))
    flow = w["flow"]
    srtt = np.asarray(w["srtt"], dtype=float)
    base = np.array([v.base_rtt.get(int(f), math.nan) for f in flow.tolist()], dtype=float)
    # The base RTT is a lower bound; the clip guards against rounding below it.
    d = np.clip(srtt - base, 0.0, None)
    cc = np.array([v.cc_of.get(int(f)) for f in flow.tolist()], dtype=object)
    return Table({"flow": flow, "cc": cc, "srtt": srtt, "qdelay": d})


def flow_stats(v: RunView, rtts: Optional[Table] = None) -> Table:
    """One row per flow of the summary, in its order: flow, cc, goodput_bps (summary: the measurement
    window), p95_qdelay_s (95th percentile of srtt − base RTT over the flow's samples in the window; NaN
    without a sample), n_rtt_samples."""
    sflows = v.summary.get("flows", [])
    r = window_rtts(v) if rtts is None else rtts
    p95, count = {}, {}
    for k, g in r.groups("flow"):
        q = np.asarray(g["qdelay"], dtype=float)
        q = q[~np.isnan(q)]
        count[k] = q.size
        p95[k] = float(np.quantile(q, 0.95)) if q.size else math.nan
    ids = [int(f["id"]) for f in sflows]
    return Table({
        "flow": np.array(ids, dtype="int64"),
        "cc": np.array([f["cc"] for f in sflows], dtype=object),
        "goodput_bps": np.array([_num(f.get("goodput_bps")) or 0.0 for f in sflows], dtype=float),
        "p95_qdelay_s": np.array([p95.get(i, math.nan) for i in ids], dtype=float),
        "n_rtt_samples": np.array([count.get(i, 0) for i in ids], dtype="int64"),
    })


def rows_of(st: Table, flows: list[int]) -> Table:
    """The rows of :func:`flow_stats`'s table for ``flows``, in that order (those it has)."""
    at = {int(f): i for i, f in enumerate(st["flow"].tolist())}
    return st.take(np.array([at[f] for f in flows if f in at], dtype="int64"))


@dataclass
class Spikes:
    """Goodput samples above the flow's bottleneck rate."""

    count: int
    flows: int
    max_ratio: float
    samples: Table  # t, flow, rate_bps, ratio


def goodput_spikes(v: RunView) -> Spikes:
    """Goodput samples above the flow's bottleneck capacity at that time (a trace-driven link's capacity
    in the sample interval or the one before: goodput is counted at the receiver, up to a propagation
    delay after the link sent it)."""
    f = v.flows
    if f.empty or "rate_bps" not in f:
        return Spikes(0, 0, 0.0, Table())
    cap = flow_capacity_series(v)
    rate = np.asarray(f["rate_bps"], dtype=float)
    with np.errstate(all="ignore"):
        ratio = rate / cap
    hit = ratio > 1.0 + 1e-9
    s = Table({"t": f["t"][hit], "flow": f["flow"][hit], "rate_bps": rate[hit], "ratio": ratio[hit]})
    return Spikes(int(hit.sum()), int(np.unique(s["flow"]).size), float(ratio[hit].max()) if hit.any() else 0.0, s)


def flow_capacity_series(v: RunView) -> np.ndarray:
    """Per row of ``v.flows``: the capacity the sample is judged against (see :func:`goodput_spikes`)."""
    f = v.flows
    flow = f["flow"]
    if not v.trace_s:
        return np.array([v.bottleneck_bps.get(int(x), math.nan) for x in flow.tolist()], dtype=float)
    out = np.full(len(f), np.nan)
    dt = v.sample_s
    for fid in np.unique(flow):
        rows = flow == fid
        t = np.asarray(f["t"][rows], dtype=float)
        c = v.flow_capacity(int(fid), t)
        prev = v.flow_capacity(int(fid), np.maximum(t - dt, dt))
        out[rows] = np.fmax(c, prev)
    return out
