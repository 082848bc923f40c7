"""Which way each flow sends, and the derived metrics of a sweep (``[[metrics]]`` in a sweep file,
docs/sweep.md "Derived metrics").

A derived metric is computed per run from its summary.json, then spread over seeds like every headline
metric (``cclab.sweep.summarize``)::

    [[metrics]]
    name = "share"                    # the column of results.csv / summary.csv, and `y=share` in cclab plot
    expr = "ratio"                    # ratio: of / to;  total: of alone
    of = "group:iiad.goodput"         # <flows>.<quantity>
    to = "group:newreno.goodput"
    label = "IIAD / TCP goodput"      # optional: the axis label (default: said from the definition)

``<flows>`` is ``forward`` (every flow in the forward direction), ``reverse`` (every reverse-direction
flow: ``reverse = true``), ``all`` (both), ``group:<algorithm>`` (the forward flows of that algorithm),
``reverse:<algorithm>`` (the reverse ones) or ``flow:<id>`` (one flow, by its id in summary.json).
``<quantity>`` is one of :data:`QUANTITIES`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .errors import ScenarioError


def _q(v: Any) -> str:
    """A value of a metric's definition in a message: a string as Python quotes it ('group:cubic.goodput'), cut
    when long (a 100,000-character name would fill the terminal); anything else as the user wrote it (JSON)."""
    from .units import show_value

    if isinstance(v, str) and len(v) <= 100:
        return repr(v)
    return show_value(v)

# quantity -> (what it is, in words, for axis labels and messages; unit shown on an axis)
QUANTITIES: dict[str, tuple[str, str]] = {
    "goodput": ("goodput", "Mbit/s"),
    "goodput_per_flow": ("goodput per flow", "Mbit/s"),
    "throughput": ("throughput", "Mbit/s"),
    "flows": ("number of flows", ""),
    "jain": ("Jain's index", ""),
    "mean_rtt": ("mean RTT", "ms"),
    "p95_rtt": ("p95 RTT", "ms"),
    "loss_rate": ("loss rate", ""),
}
EXPRS = ("ratio", "total")
KEYS = ("name", "expr", "of", "to", "label")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_SET = re.compile(r"(forward|reverse|all)$|(group|reverse|flow):([A-Za-z0-9_+-]+)$")


@dataclass(frozen=True)
class Selection:
    """``<flows>.<quantity>``: which flows (``kind`` forward | reverse | all | group | reverse_group | flow,
    ``arg`` the algorithm or flow id) and what of them."""

    kind: str
    arg: Optional[str]
    quantity: str
    text: str

    def words(self) -> str:
        q = QUANTITIES[self.quantity][0]
        who = {"forward": "forward flows", "reverse": "reverse flows", "all": "all flows",
               "group": f"{self.arg} flows", "reverse_group": f"reverse {self.arg} flows",
               "flow": f"flow {self.arg}"}[self.kind]
        return f"{q} of {who}"


@dataclass(frozen=True)
class Metric:
    name: str
    expr: str
    of: Selection
    to: Optional[Selection]
    label: Optional[str]

    def words(self) -> str:
        """The axis label: ``label``, else the definition in words with the unit."""
        if self.label:
            return self.label
        if self.expr == "ratio":
            assert self.to is not None
            return f"{self.of.words()} / {self.to.words()}"
        unit = QUANTITIES[self.of.quantity][1]
        return self.of.words() + (f" ({unit})" if unit else "")

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "expr": self.expr, "of": self.of.text}
        if self.to is not None:
            d["to"] = self.to.text
        if self.label:
            d["label"] = self.label
        return d


def _selection(text: Any, field: str) -> Selection:
    if not isinstance(text, str):
        raise ScenarioError([(field, f"must be a string \"<flows>.<quantity>\" (e.g. \"group:cubic.goodput\"), "
                                     f"got {type(text).__name__}")])
    flows, dot, q = text.rpartition(".")
    if not dot:
        raise ScenarioError([(field, f"{_q(text)} has no quantity: write \"<flows>.<quantity>\", e.g. "
                                     "\"group:cubic.goodput\"")])
    if q not in QUANTITIES:
        raise ScenarioError([(field, f"{_q(text)}: unknown quantity {_q(q)}; allowed: {', '.join(QUANTITIES)}")])
    m = _SET.match(flows)
    if not m:
        raise ScenarioError([(field, f"{_q(text)}: unknown flows {_q(flows)}; allowed: forward, reverse, all, "
                                     "group:<algorithm> (its forward flows), reverse:<algorithm>, flow:<id>")])
    if m.group(1):
        return Selection(m.group(1), None, q, text)
    kind, arg = m.group(2), m.group(3)
    if kind == "flow" and not arg.isdigit():
        raise ScenarioError([(field, f"{_q(text)}: a flow is named by its id (flow:0, flow:1, …), got {_q(arg)}")])
    return Selection("reverse_group" if kind == "reverse" else kind, arg, q, text)


MAX_METRICS = 200  # derived metrics of one sweep: 10,000 took minutes to check and tabulate


def parse_metrics(raw: Any, reserved: tuple[str, ...] = (), field: str = "metrics") -> list[Metric]:
    """The ``[[metrics]]`` of a sweep file; ScenarioError naming the field (``metrics[1].of``) otherwise.
    ``reserved``: column names a metric may not take (the table's own)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise ScenarioError([(field, "must be an array of tables: [[metrics]] name = \"…\", expr = \"ratio\", "
                                     "of = \"…\", to = \"…\"")])
    if len(raw) > MAX_METRICS:
        raise ScenarioError([(field, f"{len(raw):,} metrics; at most {MAX_METRICS} (each is a column of every table)")])
    out: list[Metric] = []
    for i, m in enumerate(raw):
        f = f"{field}[{i}]"
        extra = sorted(set(m) - set(KEYS))
        if extra:
            raise ScenarioError([(f"{f}.{k}", f"unknown key; allowed: {', '.join(KEYS)}") for k in extra])
        name = m.get("name")
        if not isinstance(name, str) or not _NAME.match(name) or len(name) > 64:
            raise ScenarioError([(f"{f}.name", "must be a plain name (letters, digits, _; at most 64 characters), "
                                               f"got {_q(name)}")])
        if name in reserved or name.startswith("goodput_mbps") or name in (x.name for x in out):
            raise ScenarioError([(f"{f}.name", f"{_q(name)} is taken (a column of the results table or another "
                                               "metric); choose another name")])
        expr = m.get("expr")
        if expr not in EXPRS:
            raise ScenarioError([(f"{f}.expr", f"must be one of {', '.join(EXPRS)}, got {_q(expr)}")])
        if "of" not in m:
            raise ScenarioError([(f"{f}.of", "is missing: the flows and quantity, e.g. \"group:cubic.goodput\"")])
        of = _selection(m["of"], f"{f}.of")
        to = None
        if expr == "ratio":
            if "to" not in m:
                raise ScenarioError([(f"{f}.to", "is missing: a ratio divides `of` by `to`")])
            to = _selection(m["to"], f"{f}.to")
        elif "to" in m:
            raise ScenarioError([(f"{f}.to", "is for expr = \"ratio\"; expr = \"total\" takes `of` alone")])
        label = m.get("label")
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise ScenarioError([(f"{f}.label", "must be a string of at most 200 characters")])
        out.append(Metric(name, expr, of, to, label))
    return out


def check_applies(metrics: list[Metric], scenarios: list[dict], field: str = "metrics") -> None:
    """Each selection of ``metrics`` names flows that exist in at least one of the sweep's ``scenarios``
    (a typo would give an empty column); ScenarioError naming the field otherwise."""
    ccs: dict[bool, set[str]] = {False: set(), True: set()}
    most = 0
    for sc in scenarios:
        n = 0
        for e in sc.get("flows") or []:
            if isinstance(e, dict):
                ccs[e.get("reverse") is True].add(str(e.get("cc")))
                c = e.get("count", 1)
                n += c if isinstance(c, int) and not isinstance(c, bool) else 1
        most = max(most, n)
    for i, m in enumerate(metrics):
        for which, s in (("of", m.of), ("to", m.to)):
            if s is None:
                continue
            f = f"{field}[{i}].{which}"
            if s.kind in ("group", "reverse_group"):
                have = ccs[s.kind == "reverse_group"]
                if s.arg not in have:
                    side = "reverse" if s.kind == "reverse_group" else "forward"
                    raise ScenarioError([(f, f"{_q(s.text)}: no {side} flow of algorithm {_q(s.arg)} in any run of this "
                                             f"sweep; {side} algorithms: {', '.join(sorted(have)) or 'none'}")])
            if s.kind == "flow" and int(s.arg or 0) >= most:
                raise ScenarioError([(f, f"{_q(s.text)}: the sweep's runs have flows 0 to {most - 1}")])
            if s.kind == "reverse" and not ccs[True]:
                raise ScenarioError([(f, f"{_q(s.text)}: no run of this sweep has a reverse flow (reverse = true)")])


def reverse_flows(summary: dict, spec: Optional[dict] = None, scenario: Optional[dict] = None) -> set[int]:
    """Ids of the run's flows that send in the reverse direction (``reverse = true``: their data over the
    links that carry the forward flows' ACKs). From the run's scenario (a sweep's point.json) when given,
    else from its spec: on a dumbbell or parking lot of n forward links, link n + i is link i's reverse
    direction and a forward flow's ACKs take the reverse links, so a flow whose data path starts on a link
    ≥ n is a reverse flow. A graph's cables are not directions of one path (link 2k and 2k + 1 are the two
    directions of cable k): all its flows count as forward."""
    flows = summary.get("flows") or []
    if scenario is not None and isinstance(scenario.get("flows"), list):
        rev = {i for i, e in enumerate(scenario["flows"]) if isinstance(e, dict) and e.get("reverse") is True}
        return {int(f["id"]) for f in flows if f.get("group") in rev}
    sflows = (spec or {}).get("flows") or []
    nlinks = len((spec or {}).get("links") or [])
    if not sflows or len(sflows) != len(flows) or nlinks % 2:
        return set()
    n = nlinks // 2
    chain = all(list(sf.get("ack_path") or []) == [(l + n) % nlinks for l in reversed(sf.get("path") or [])]
                for sf in sflows)
    if not chain or n == 0:
        return set()
    return {int(f["id"]) for f, sf in zip(flows, sflows) if (sf.get("path") or [0])[0] >= n}


def _pick(s: Selection, flows: list[dict], reverse: set[int]) -> list[dict]:
    if s.kind == "all":
        return flows
    if s.kind == "forward":
        return [f for f in flows if int(f["id"]) not in reverse]
    if s.kind == "reverse":
        return [f for f in flows if int(f["id"]) in reverse]
    if s.kind == "group":
        return [f for f in flows if f.get("cc") == s.arg and int(f["id"]) not in reverse]
    if s.kind == "reverse_group":
        return [f for f in flows if f.get("cc") == s.arg and int(f["id"]) in reverse]
    return [f for f in flows if str(f["id"]) == s.arg]


def _num(v: Any) -> float:
    return math.nan if v is None or isinstance(v, bool) else float(v)


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def value(s: Selection, summary: dict, reverse: set[int]) -> float:
    """The quantity of the selected flows of one run (NaN when no flow is selected or it was not measured):
    goodput and throughput are sums in Mbit/s, RTTs means over flows in ms, the loss rate pooled
    (window drops / window packets sent)."""
    from .metrics import jain

    fl = _pick(s, summary.get("flows") or [], reverse)
    if s.quantity == "flows":
        return float(len(fl))
    if not fl:
        return math.nan
    good = [_num(f.get("goodput_bps")) for f in fl]
    calc: dict[str, Callable[[], float]] = {
        "goodput": lambda: sum(good) / 1e6,
        "goodput_per_flow": lambda: sum(good) / 1e6 / len(fl),
        "throughput": lambda: sum(_num(f.get("throughput_bps")) for f in fl) / 1e6,
        "jain": lambda: jain(good),
        "mean_rtt": lambda: _mean([_num(f.get("mean_rtt")) for f in fl]) * 1e3,
        "p95_rtt": lambda: _mean([_num(f.get("p95_rtt_s")) for f in fl]) * 1e3,
        "loss_rate": lambda: _ratio(sum(_num(f.get("window_dropped_pkts")) for f in fl),
                                    sum(_num(f.get("window_sent_pkts")) for f in fl)),
    }
    return calc[s.quantity]()


def _ratio(a: float, b: float) -> float:
    # A zero or unmeasured denominator has no ratio: NaN, left out of the mean over seeds (never inf).
    return a / b if math.isfinite(a) and math.isfinite(b) and b != 0 else math.nan


def evaluate(m: Metric, summary: dict, reverse: set[int]) -> float:
    """Metric ``m`` of one run."""
    a = value(m.of, summary, reverse)
    if m.expr == "total":
        return a
    assert m.to is not None
    return _ratio(a, value(m.to, summary, reverse))


def direction_rows(summary: dict, reverse: set[int]) -> list[tuple[str, dict]]:
    """The run table's rows when some flows send in the reverse direction: one row per algorithm of the
    forward flows, a ``forward`` total, then the reverse flows' rows (``<algorithm> (reverse)``) and a
    ``reverse`` total. Shares are of the direction's goodput and Jain is within the row, because the two
    directions cross different links (the forward flows of a 3 Mbit/s dumbbell plus its reverse flows add
    up to more than 3 Mbit/s). Loss and retransmission rates are pooled from the flows' window counts.
    An algorithm's pooled RTT percentile is the engine's when all its flows go one way; a row that mixes
    directions cannot be pooled from per-flow percentiles, and shows none."""
    flows = summary.get("flows") or []
    by_cc = summary.get("by_cc") or {}
    rows: list[tuple[str, dict]] = []
    for back in (False, True):
        side = [f for f in flows if (int(f["id"]) in reverse) == back]
        if not side:
            continue
        total = sum(_num(f.get("goodput_bps")) for f in side)
        for cc in sorted({f["cc"] for f in side}):
            fl = [f for f in side if f["cc"] == cc]
            pure = all((int(f["id"]) in reverse) == back for f in flows if f["cc"] == cc)
            pooled = (by_cc.get(cc) or {}).get("p95_rtt_s") if pure else None
            rows.append((f"{cc} (reverse)" if back else cc, _row(fl, total, pooled)))
        rows.append(("reverse" if back else "forward", _row(side, total, None)))
    return rows


def _row(fl: list[dict], total: float, pooled_p95: Optional[float]) -> dict:
    from .metrics import jain

    g = [_num(f.get("goodput_bps")) for f in fl]
    sent = sum(_num(f.get("window_sent_pkts")) for f in fl)
    return {
        "flows": len(fl), "goodput_bps": sum(g), "share": sum(g) / total if total > 0 else None,
        "jain": jain(g),
        "p95_rtt_s": fl[0].get("p95_rtt_s") if len(fl) == 1 else pooled_p95,
        "loss_rate": _or_none(_ratio(sum(_num(f.get("window_dropped_pkts")) for f in fl), sent)),
        "retransmit_rate": _or_none(_ratio(sum(_num(f.get("window_retransmits")) for f in fl), sent)),
    }


def _or_none(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None
