"""The scenario file (docs/scenario.md): a pydantic model, its validation errors, and its resolution
into the simulator's flat run spec (SI units, directional links, per-flow paths and access delays).

Every rejection is a :class:`ScenarioError` (a ``ValueError``) whose message names the field:
``flows[1].rtt: must be > 0, got "-5ms"``.
"""
from __future__ import annotations

import heapq
import json
import math
import tomllib
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import _native
from .units import UnitError, parse_buffer, parse_rate, parse_size, parse_time

Quantity = Union[str, int, float]


class ScenarioError(ValueError):
    """A scenario that cannot run. ``errors`` holds (field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("\n".join(f"{f}: {m}" if f else m for f, m in errors))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def _bounded(parse, strict: bool):
    """A field validator: parse the quantity (unit errors become field errors) and require > 0
    (``strict``) or >= 0."""

    def check(v: Any) -> Any:
        if v is None:
            return v
        try:
            x = parse(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        if (x <= 0) if strict else (x < 0):
            raise ValueError(f"must be {'>' if strict else '>='} 0, got {json.dumps(v)}")
        return v

    return check


def _positive(parse, _what: str = ""):
    return _bounded(parse, strict=True)


def _nonneg(parse):
    return _bounded(parse, strict=False)


def _check_buffer(v: Any) -> Any:
    try:
        _, x = parse_buffer(v)
    except UnitError as e:
        raise ValueError(str(e)) from None
    if not x > 0:
        raise ValueError(f"must be > 0, got {json.dumps(v)}")
    return v


class Transport(_Model):
    mss: Quantity = "1448B"
    initial_cwnd: float = Field(10, gt=0)
    delayed_ack: int = Field(1, ge=1, le=64)
    delayed_ack_timeout: Quantity = "200ms"
    min_rto: Quantity = "200ms"
    sack: bool = True
    ecn: bool = False

    _mss = field_validator("mss")(_positive(parse_size, "size"))
    _dat = field_validator("delayed_ack_timeout", "min_rto")(_positive(parse_time, "time"))


class Link(_Model):
    rate: Quantity
    delay: Quantity = 0
    buffer: Quantity = "BDP"
    queue: str = "droptail"
    params: dict[str, Union[bool, float, int, str]] = Field(default_factory=dict)
    loss: float = Field(0.0, ge=0.0, le=1.0)
    loss_schedule: list[tuple[Quantity, float]] = Field(default_factory=list)

    _rate = field_validator("rate")(_positive(parse_rate, "rate"))
    _delay = field_validator("delay")(_nonneg(parse_time))
    _buf = field_validator("buffer")(_check_buffer)

    @field_validator("loss_schedule")
    @classmethod
    def _sched(cls, v: list[tuple[Quantity, float]]) -> list[tuple[Quantity, float]]:
        for i, (t, p) in enumerate(v):
            try:
                parse_time(t)
            except UnitError as e:
                raise ValueError(f"[{i}] time {e}") from None
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"[{i}] loss probability must be in [0, 1], got {p}")
        return v


class GraphLink(Link):
    src: str
    dst: str


class Topology(_Model):
    kind: Literal["dumbbell", "parking_lot", "graph"] = "dumbbell"
    bottleneck: Optional[Link] = None
    links: Optional[list[Union[GraphLink, Link]]] = None
    nodes: Optional[list[str]] = None

    @model_validator(mode="after")
    def _shape(self) -> "Topology":
        if self.kind == "dumbbell":
            if self.bottleneck is None:
                raise ValueError("dumbbell needs [topology.bottleneck] with at least rate")
            if self.links is not None or self.nodes is not None:
                raise ValueError("dumbbell takes [topology.bottleneck], not links/nodes")
        elif self.kind == "parking_lot":
            if not self.links:
                raise ValueError("parking_lot needs links = [{rate, delay, buffer, queue, loss}, ...]")
            if self.bottleneck is not None or self.nodes is not None:
                raise ValueError("parking_lot takes links, not bottleneck/nodes")
        else:
            if not self.nodes or not self.links:
                raise ValueError("graph needs nodes = [...] and links = [{src, dst, rate, ...}, ...]")
            for i, l in enumerate(self.links):
                if not isinstance(l, GraphLink):
                    raise ValueError(f"links[{i}]: graph links need src and dst")
        return self


class Flow(_Model):
    cc: str
    count: int = Field(1, ge=1, le=100_000)
    rtt: Optional[Quantity] = None
    start: Union[Quantity, tuple[Quantity, Quantity]] = 0
    stop: Optional[Quantity] = None
    size: Quantity = "inf"
    params: dict[str, Union[bool, float, int, str]] = Field(default_factory=dict)
    links: Optional[list[int]] = None
    src: Optional[str] = None
    dst: Optional[str] = None
    transport: Optional[dict[str, Any]] = None

    _rtt = field_validator("rtt")(_positive(parse_time, "time"))
    _stop = field_validator("stop")(_nonneg(parse_time))

    @field_validator("start")
    @classmethod
    def _start(cls, v: Any) -> Any:
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        for x in vals:
            _nonneg(parse_time)(x)
        if len(vals) == 2 and parse_time(vals[0]) > parse_time(vals[1]):
            raise ValueError(f"[lo, hi] needs lo <= hi, got {json.dumps(list(vals))}")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if v == "inf":
            return v
        return _positive(parse_size, "size")(v)


class Traffic(_Model):
    kind: Literal["cbr", "onoff", "poisson"]
    rate: Quantity
    start: Quantity = 0
    stop: Optional[Quantity] = None
    links: Optional[list[int]] = None
    src: Optional[str] = None
    dst: Optional[str] = None
    reverse: bool = False
    packet_size: Quantity = "1500B"
    mean_on: Optional[Quantity] = None
    mean_off: Optional[Quantity] = None
    shape: Optional[float] = Field(None, gt=1.0)

    _rate = field_validator("rate")(_positive(parse_rate, "rate"))
    _ps = field_validator("packet_size")(_positive(parse_size, "size"))
    _t = field_validator("start", "stop")(_nonneg(parse_time))
    _on = field_validator("mean_on", "mean_off")(_positive(parse_time, "time"))


class Scenario(_Model):
    """A scenario as in docs/scenario.md. Build with :meth:`load` (TOML file), :meth:`from_toml` or
    :meth:`from_dict`; :meth:`to_spec` resolves it for the simulator."""

    name: str = "scenario"
    duration: Quantity
    seed: int = Field(1, ge=0, lt=2**63)
    sample_interval: Quantity = "100ms"
    measure: Optional[tuple[Quantity, Quantity]] = None
    packet_size: Quantity = "1500B"
    transport: Transport = Field(default_factory=Transport)
    topology: Topology
    flows: list[Flow] = Field(min_length=1)
    traffic: list[Traffic] = Field(default_factory=list)
    trace_packets: bool = False

    _dur = field_validator("duration", "sample_interval")(_positive(parse_time, "time"))
    _ps = field_validator("packet_size")(_positive(parse_size, "size"))

    @field_validator("measure")
    @classmethod
    def _measure(cls, v: Any) -> Any:
        if v is None:
            return v
        for x in v:
            _nonneg(parse_time)(x)
        return v

    # ---- construction ----

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Scenario":
        try:
            sc = cls.model_validate(data)
        except ValidationError as e:
            raise ScenarioError(_flatten(e)) from None
        sc.to_spec()  # semantic checks (paths, units, algorithms) happen here
        return sc

    @classmethod
    def from_toml(cls, text: str) -> "Scenario":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError([("", f"malformed TOML: {e}")]) from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Scenario":
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise ScenarioError([("", f"cannot read scenario file {str(p)!r}: {e.strerror}")]) from None
        return cls.from_toml(text)

    # ---- resolution ----

    def to_spec(self, seed: Optional[int] = None, trace_packets: Optional[bool] = None) -> dict[str, Any]:
        """The simulator's run spec (crates/cclab-sim/src/spec.rs) as a dict."""
        errors: list[tuple[str, str]] = []
        spec = _Resolver(self, errors).resolve()
        if errors:
            raise ScenarioError(errors)
        if seed is not None:
            spec["seed"] = seed
        if trace_packets is not None:
            spec["trace_packets"] = trace_packets
        return spec


def _flatten(e: ValidationError) -> list[tuple[str, str]]:
    out = []
    for err in e.errors():
        loc = ""
        for part in err["loc"]:
            if isinstance(part, int):
                loc += f"[{part}]"
            elif part in ("GraphLink", "Link", "function-after[_shape(), Topology]") or "[" in str(part) and "(" in str(part):
                continue
            else:
                loc += ("." if loc else "") + str(part)
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required"
        elif err["type"].startswith("literal_error"):
            msg = f"{msg}, got {json.dumps(err.get('input'))}"
        elif "input" in err and err["type"] not in ("value_error",) and not isinstance(err["input"], (dict, list)):
            msg = f"{msg}, got {json.dumps(err['input'], default=str)}"
        out.append((loc, msg))
    # A union tries each member: keep one message per field.
    seen, uniq = set(), []
    for f, m in out:
        if f not in seen:
            seen.add(f)
            uniq.append((f, m))
    return uniq


class _Resolver:
    def __init__(self, sc: Scenario, errors: list[tuple[str, str]]):
        self.sc = sc
        self.errors = errors

    def err(self, field: str, msg: str) -> None:
        self.errors.append((field, msg))

    def resolve(self) -> dict[str, Any]:
        sc = self.sc
        duration = parse_time(sc.duration)
        packet_size = int(round(parse_size(sc.packet_size)))
        measure = [0.0, duration]
        if sc.measure is not None:
            measure = [parse_time(sc.measure[0]), parse_time(sc.measure[1])]
            if not measure[0] < measure[1]:
                self.err("measure", f"needs start < end, got {json.dumps(list(sc.measure))}")
            if measure[1] > duration + 1e-9:
                self.err("measure", f"end must be <= duration ({duration:g} s), got {json.dumps(sc.measure[1])}")
        sample = parse_time(sc.sample_interval)
        if sample > duration:
            self.err("sample_interval", f"must be <= duration ({duration:g} s), got {json.dumps(sc.sample_interval)}")
        base_transport = sc.transport
        self.packet_size = packet_size

        links, fwd_of, rev_of, path_fn = self._topology()
        flows = []
        rtts_per_link: dict[int, list[float]] = {}
        for g, f in enumerate(sc.flows):
            field = f"flows[{g}]"
            tr = self._transport(base_transport, f.transport, f"{field}.transport", packet_size)
            if tr is None:
                continue
            self._check_sender(f, field, tr)
            paths = path_fn(f, field)
            if paths is None:
                continue
            path, ack_path, prop_rtt = paths
            if f.rtt is None:
                if sc.topology.kind != "graph":
                    self.err(f"{field}.rtt", "required")
                    continue
                rtt = prop_rtt
            else:
                rtt = parse_time(f.rtt)
            extra = (rtt - prop_rtt) / 2.0
            if extra < -1e-12:
                self.err(f"{field}.rtt", f"must be >= the round-trip delay of its links ({prop_rtt * 1e3:g} ms), got {json.dumps(f.rtt)}")
                continue
            start: Any
            if isinstance(f.start, (list, tuple)):
                start = [parse_time(f.start[0]), parse_time(f.start[1])]
            else:
                start = parse_time(f.start)
            stop = parse_time(f.stop) if f.stop is not None else None
            size = None if f.size == "inf" else int(math.ceil(parse_size(f.size)))
            for l in path:
                rtts_per_link.setdefault(l, []).append(rtt)
            for l in ack_path:
                rtts_per_link.setdefault(l, []).append(rtt)
            for _ in range(f.count):
                flows.append({
                    "group": g, "cc": f.cc, "params": f.params, "path": path, "ack_path": ack_path,
                    "extra_delay_fwd": max(extra, 0.0), "extra_delay_rev": max(extra, 0.0), "rtt": rtt,
                    "start": start, "stop": stop, "size": size, "transport": tr,
                })
        traffic = []
        for i, t in enumerate(sc.traffic):
            field = f"traffic[{i}]"
            path = self._traffic_path(t, field, fwd_of, rev_of)
            if path is None:
                continue
            traffic.append({
                "kind": t.kind, "rate_bps": parse_rate(t.rate), "packet_size": int(round(parse_size(t.packet_size))),
                "start": parse_time(t.start), "stop": parse_time(t.stop) if t.stop is not None else None,
                "path": path,
                "mean_on": parse_time(t.mean_on) if t.mean_on is not None else None,
                "mean_off": parse_time(t.mean_off) if t.mean_off is not None else None,
                "shape": t.shape,
            })
        # Buffers: BDP = rate × the largest RTT of the flows crossing the link.
        out_links = []
        for i, (cfg, field) in enumerate(links):
            kind, x = parse_buffer(cfg.buffer)
            bp, bb = None, None
            if kind == "pkts":
                if x != int(x):
                    self.err(f"{field}.buffer", f"a packet count must be a whole number, got {json.dumps(cfg.buffer)}")
                bp = int(x)
            elif kind == "bytes":
                bb = int(x)
                if bb < packet_size:
                    self.err(f"{field}.buffer", f"must hold at least one packet ({packet_size} B), got {json.dumps(cfg.buffer)}")
            else:
                rtts = rtts_per_link.get(i, [])
                rtt = max(rtts) if rtts else 2 * parse_time(cfg.delay)
                bp = max(1, int(round(x * parse_rate(cfg.rate) * rtt / 8.0 / packet_size)))
            queue = cfg.queue
            params = cfg.params
            try:
                _native.validate_queue(queue, json.dumps(params), parse_rate(cfg.rate), bp, bb, packet_size)
            except ValueError as e:
                f_, m_ = _split_native(e)
                self.err(f"{field}.{'params.' + f_ if f_ != 'queue' else 'queue'}", m_)
            out_links.append({
                "rate_bps": parse_rate(cfg.rate), "delay": parse_time(cfg.delay),
                "buffer_pkts": bp, "buffer_bytes": bb, "queue": queue, "queue_params": params,
                "loss": cfg.loss, "loss_schedule": [[parse_time(t), p] for t, p in cfg.loss_schedule],
                "loss_data_only": True,
            })
        return {
            "name": sc.name, "seed": sc.seed, "duration": duration, "sample_interval": sample,
            "measure": measure, "links": out_links, "flows": flows, "traffic": traffic,
            "trace_packets": sc.trace_packets,
        }

    def _transport(self, base: Transport, override: Optional[dict[str, Any]], field: str, packet_size: int):
        data = base.model_dump()
        if override:
            data.update(override)
        try:
            t = Transport.model_validate(data)
        except ValidationError as e:
            for f, m in _flatten(e):
                self.err(f"{field}.{f}", m)
            return None
        mss = int(round(parse_size(t.mss)))
        if mss >= packet_size:
            self.err(f"{field}.mss", f"must be smaller than packet_size ({packet_size} B), got {json.dumps(t.mss)}")
            return None
        return {
            "mss": mss, "packet_size": packet_size, "initial_cwnd": float(t.initial_cwnd),
            "delayed_ack": t.delayed_ack, "delack_timeout": parse_time(t.delayed_ack_timeout),
            "min_rto": parse_time(t.min_rto), "sack": t.sack, "ecn": t.ecn,
        }

    def _check_sender(self, f: Flow, field: str, tr: dict[str, Any]) -> None:
        try:
            _native.validate_sender(f.cc, json.dumps(f.params), tr["mss"], tr["packet_size"], tr["initial_cwnd"])
        except ValueError as e:
            name, msg = _split_native(e)
            self.err(f"{field}.cc" if name == "cc" else f"{field}.params.{name}", msg)

    # ---- topologies ----

    def _topology(self):
        topo = self.sc.topology
        links: list[tuple[Link, str]] = []
        if topo.kind == "dumbbell":
            b = topo.bottleneck
            assert b is not None
            links.append((b, "topology.bottleneck"))
            # The reverse direction has the same rate and buffer; ACKs and reverse traffic share it.
            rev = Link(rate=b.rate, delay=b.delay, buffer=b.buffer, queue="droptail")
            links.append((rev, "topology.bottleneck"))
            delay = parse_time(b.delay)

            def path_fn(f: Flow, field: str):
                if f.links is not None or f.src or f.dst:
                    self.err(field, "a dumbbell flow takes no links/src/dst")
                    return None
                return [0], [1], 2 * delay

            return links, {0: 0}, {0: 1}, path_fn
        if topo.kind == "parking_lot":
            assert topo.links is not None
            n = len(topo.links)
            for i, l in enumerate(topo.links):
                links.append((l, f"topology.links[{i}]"))
            for i, l in enumerate(topo.links):
                links.append((Link(rate=l.rate, delay=l.delay, buffer=l.buffer, queue="droptail"), f"topology.links[{i}]"))

            def path_fn(f: Flow, field: str):
                if not f.links:
                    self.err(f"{field}.links", "required for parking_lot: the link indices the flow crosses, e.g. [0, 1]")
                    return None
                for k, l in enumerate(f.links):
                    if not 0 <= l < n:
                        self.err(f"{field}.links[{k}]", f"link {l} does not exist (parking_lot has links 0..{n - 1})")
                        return None
                path = list(f.links)
                ack = [n + l for l in reversed(path)]
                prop = 2 * sum(parse_time(topo.links[l].delay) for l in path)
                return path, ack, prop

            return links, {i: i for i in range(n)}, {i: n + i for i in range(n)}, path_fn
        # graph: every undirected link becomes two directional links (2k: src->dst, 2k+1: dst->src)
        assert topo.nodes is not None and topo.links is not None
        nodes = {name: i for i, name in enumerate(topo.nodes)}
        if len(nodes) != len(topo.nodes):
            self.err("topology.nodes", "node names must be unique")
        adj: dict[int, list[tuple[int, int, float]]] = {i: [] for i in range(len(nodes))}
        for k, l in enumerate(topo.links):
            assert isinstance(l, GraphLink)
            for end in ("src", "dst"):
                if getattr(l, end) not in nodes:
                    self.err(f"topology.links[{k}].{end}", f"unknown node {getattr(l, end)!r}; nodes: {', '.join(topo.nodes)}")
            links.append((l, f"topology.links[{k}]"))
            links.append((Link(rate=l.rate, delay=l.delay, buffer=l.buffer, queue=l.queue, params=l.params), f"topology.links[{k}]"))
            if l.src in nodes and l.dst in nodes:
                d = parse_time(l.delay)
                adj[nodes[l.src]].append((nodes[l.dst], 2 * k, d))
                adj[nodes[l.dst]].append((nodes[l.src], 2 * k + 1, d))

        def shortest(src: int, dst: int) -> Optional[list[int]]:
            # Dijkstra by delay; ties broken by hop count, then by link index: deterministic.
            best: dict[int, tuple[float, int, list[int]]] = {src: (0.0, 0, [])}
            heap = [(0.0, 0, [], src)]
            while heap:
                d, h, path, u = heapq.heappop(heap)
                if u == dst:
                    return path
                if (d, h, path) != best.get(u):
                    continue
                for v, lid, w in adj[u]:
                    cand = (d + w, h + 1, path + [lid])
                    if v not in best or cand < best[v]:
                        best[v] = cand
                        heapq.heappush(heap, (cand[0], cand[1], cand[2], v))
            return None

        def path_fn(f: Flow, field: str):
            if not f.src or not f.dst:
                self.err(field, "a graph flow needs src and dst")
                return None
            for end in ("src", "dst"):
                if getattr(f, end) not in nodes:
                    self.err(f"{field}.{end}", f"unknown node {getattr(f, end)!r}; nodes: {', '.join(topo.nodes)}")
                    return None
            path = shortest(nodes[f.src], nodes[f.dst])
            if path is None or not path:
                self.err(field, f"no route from {f.src!r} to {f.dst!r}")
                return None
            ack = [l ^ 1 for l in reversed(path)]
            prop = 2 * sum(parse_time(topo.links[l // 2].delay) for l in path)
            return path, ack, prop

        self._graph_path = path_fn
        return links, None, None, path_fn

    def _traffic_path(self, t: Traffic, field: str, fwd_of, rev_of) -> Optional[list[int]]:
        kind = self.sc.topology.kind
        if kind == "dumbbell":
            if t.links is not None and t.links != [0]:
                self.err(f"{field}.links", f"a dumbbell has one bottleneck: links must be [0] or absent, got {t.links}")
                return None
            return [1] if t.reverse else [0]
        if kind == "parking_lot":
            n = len(fwd_of)
            if not t.links:
                self.err(f"{field}.links", "required for parking_lot")
                return None
            for k, l in enumerate(t.links):
                if not 0 <= l < n:
                    self.err(f"{field}.links[{k}]", f"link {l} does not exist (parking_lot has links 0..{n - 1})")
                    return None
            return [rev_of[l] for l in reversed(t.links)] if t.reverse else list(t.links)
        fake = Flow(cc="newreno", src=t.src, dst=t.dst)
        res = self._graph_path(fake, field)
        if res is None:
            return None
        return res[1] if t.reverse else res[0]


def _split_native(e: ValueError) -> tuple[str, str]:
    s = str(e)
    if "\x1f" in s:
        f, m = s.split("\x1f", 1)
        return f, m
    return "", s
