"""The scenario file (docs/scenario.md): a pydantic model and its resolution into the simulator's flat
run spec (SI units, directional links, per-flow paths and access delays). Each topology kind is resolved
by its class in :mod:`cclab.topology`; quantities are parsed and checked by :mod:`cclab.units`.

Every rejection is a :class:`~cclab.errors.ScenarioError` (a ``ValueError``) whose message names the
field: ``flows[1].rtt: must be > 0, got "-5ms"``.
"""
from __future__ import annotations

import json
import math
import sys
import weakref
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10 ship no tomllib
    import tomli as tomllib

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
)

from . import _native
from .errors import ScenarioError, flatten, show
from .topology import resolver
from .units import UnitError, check_buffer, nonneg, parse_buffer, parse_rate, parse_size, parse_time, positive

# Linux kernel TCP congestion controls a flow may name as ``cc = "kernel:<name>"``: real datapath only
# (``cclab net run``; the set crates/cclab-net/src/tcp.rs accepts). The simulator has no kernel inside.
KERNEL_CCS = ("kernel:cubic", "kernel:reno", "kernel:bbr")
# What a scenario is resolved for: "sim" (``cclab run``) or "net" (``cclab net run``).
DATAPATHS = ("sim", "net")


def _quantity_type(v: Any) -> Any:
    # Checked before pydantic's union so that a wrong type gives one message, not one per member, and a
    # TOML boolean is not silently read as 1 (bool is an int in Python).
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError(f"must be a number (SI base unit) or a string with a unit, got {show(v)}")
    return v


def _param_type(v: Any) -> Any:
    if not isinstance(v, (bool, str, int, float)):
        raise ValueError(f"must be a number, a boolean or a string, got {show(v)}")
    return v


Quantity = Annotated[Union[str, int, float], BeforeValidator(_quantity_type)]
ParamValue = Annotated[Union[bool, int, float, str], BeforeValidator(_param_type)]

# The run spec's limits, defined once in Rust (crates/cclab-spec/src/limits.rs). Above MAX_SERIES_ROWS
# time-series rows (samples × (flows + links)) a run would need gigabytes of memory.
_LIMITS = _native.limits()
MAX_SERIES_ROWS = _LIMITS["max_series_rows"]


class _Model(BaseModel):
    """Every part of a scenario. Assigning to a field validates the value (``validate_assignment``) and
    raises :class:`ScenarioError` naming the field by its place in the scenario (``flows[0].cc``), as
    loading does; see :meth:`__setattr__`."""

    # Attribute docstrings are the fields' descriptions in the JSON Schema (``cclab schema``).
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True, use_attribute_docstrings=True)

    # The scenario this model is part of, weakly (set when the scenario is built, copied or unpickled):
    # an assignment's error names the field by the model's place in it.
    _root: Optional[weakref.ref[Scenario]] = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        """Validates ``value`` for field ``name`` — alone (types, units, ranges) and then in the whole
        scenario (algorithm and queue names and parameters, paths, RTTs, buffers, …) — and raises
        :class:`ScenarioError` naming the field as in the scenario file, leaving the model unchanged.
        Of the whole-scenario problems only those at or under the assigned field are raised: a change
        that needs two assignments (``cc`` and then its ``params``) is not stopped half way; ``run``
        checks everything again."""
        if name.startswith("_"):
            super().__setattr__(name, value)
            return
        root = self._root() if self._root is not None else None
        where = _path_of(root, self) if root is not None else None
        field = _join(where or "", name)
        if name not in type(self).model_fields:
            raise ScenarioError([(field, "unknown key")])
        old = self.__dict__.get(name)
        try:
            super().__setattr__(name, value)
        except ValidationError as e:
            raise ScenarioError([(_join(where or "", f), m) for f, m in flatten(e)]) from None
        if root is None or where is None:
            return  # not part of a scenario: nothing more to check against
        _bind(self.__dict__[name], root)
        try:
            root.to_spec(datapath=root._datapath)
        except ScenarioError as e:
            mine = [(f, m) for f, m in e.errors if f == field or f.startswith((field + ".", field + "["))]
            if mine:
                self.__dict__[name] = old
                raise ScenarioError(mine) from None

    def __getstate__(self) -> dict[Any, Any]:
        # A weak reference cannot be pickled; an unpickled scenario binds its parts again.
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_root": None}
        return state


def _join(where: str, field: str) -> str:
    if not where:
        return field
    if not field:
        return where
    return where + field if field.startswith("[") else f"{where}.{field}"


def _children(v: Any) -> list[tuple[str, Any]]:
    """(path step, value) of what may hold a scenario part: a model's fields, a list's items."""
    if isinstance(v, BaseModel):
        return [(f".{k}", getattr(v, k, None)) for k in type(v).model_fields]
    if isinstance(v, (list, tuple)):
        return [(f"[{i}]", x) for i, x in enumerate(v)]
    return []


def _bind(v: Any, root: Scenario) -> None:
    """Marks every model in ``v`` as part of ``root``."""
    if isinstance(v, _Model):
        v._root = weakref.ref(root)
    for _, x in _children(v):
        if isinstance(x, (BaseModel, list, tuple)):
            _bind(x, root)


def _path_of(root: Any, target: Any, here: str = "") -> Optional[str]:
    """Where ``target`` is in ``root`` (``flows[0]``, ``topology.bottleneck``; "" for root itself), by
    identity; None if it is not there (a detached copy, or a model moved out of the scenario)."""
    if root is target:
        return here
    for step, x in _children(root):
        if isinstance(x, (BaseModel, list, tuple)):
            found = _path_of(x, target, here + step)
            if found is not None:
                return found.lstrip(".")
    return None


class Transport(_Model):
    """Endpoint settings shared by all flows; a flow's ``transport`` table overrides any of them."""

    mss: Quantity = "1448B"
    """Payload per full packet (a size); must be smaller than packet_size."""
    initial_cwnd: float = Field(10, gt=0)
    """Initial congestion window, packets."""
    delayed_ack: int = Field(1, ge=1, le=_LIMITS["max_delayed_ack"])
    """ACK every N data packets (1: every packet; 2: RFC 1122 delayed ACK)."""
    delayed_ack_timeout: Quantity = "200ms"
    min_rto: Quantity = "200ms"
    """RFC 6298 minimum retransmission timeout (a time)."""
    sack: bool = True
    ecn: bool = False
    # The receiver's advertised window (bytes; None: unlimited). TCP-Madison's D3 capped Reno at 172 KB.
    receive_window: Optional[Quantity] = None

    _mss = field_validator("mss", "receive_window")(positive(parse_size))
    _dat = field_validator("delayed_ack_timeout", "min_rto")(positive(parse_time))


class Link(_Model):
    """A link: its rate, propagation delay, buffer, queue discipline and random loss."""

    rate: Quantity
    """Link rate: bit/s or a string with a unit ("100Mbps")."""
    delay: Quantity = 0
    """One-way propagation delay (a time)."""
    buffer: Quantity = "BDP"
    """Packets (500, "500p"), a size ("375KB"), or "BDP" / "2BDP" (rate × the largest RTT crossing it)."""
    queue: str = "droptail"
    """Queue discipline: a name `cclab algorithms` lists under queues."""
    params: dict[str, ParamValue] = Field(default_factory=dict)
    """The queue discipline's parameters (checked by it: unknown names are errors)."""
    loss: float = Field(0.0, ge=0.0, le=1.0)
    """Bernoulli loss probability of data packets arriving at the link."""
    loss_schedule: list[tuple[Quantity, float]] = Field(default_factory=list)
    """[[time, probability], ...], strictly increasing times: the loss probability from each time on."""

    _rate = field_validator("rate")(positive(parse_rate))
    _delay = field_validator("delay")(nonneg(parse_time))
    _buf = field_validator("buffer")(check_buffer)

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
        times = [parse_time(t) for t, _ in v]
        if any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"times must be strictly increasing, got {show([t for t, _ in v])}")
        return v


class GraphLink(Link):
    """A graph's cable between two nodes: two directional links with the same settings."""

    src: str
    dst: str


class Dumbbell(_Model):
    """One shared bottleneck (link 0) and its reverse direction (link 1, carrying the ACKs)."""

    kind: Literal["dumbbell"] = "dumbbell"
    bottleneck: Link
    # The reverse bottleneck (link 1) carries the ACKs and reverse traffic. By default it has the
    # bottleneck's rate, delay and buffer with a drop-tail queue and no random loss: ns-3's dumbbell and the
    # simulator's acceptance tests are built that way, and an AQM or loss on the ACK path would change
    # results only through the rare ACK drop. [topology.reverse] overrides it.
    reverse: Optional[Link] = None


class ParkingLot(_Model):
    """A chain of links; a flow lists the indices of the links it crosses."""

    kind: Literal["parking_lot"]
    links: list[Link] = Field(min_length=1)


class Graph(_Model):
    """Nodes and cables; a flow names src and dst and takes the shortest path by propagation delay."""

    kind: Literal["graph"]
    nodes: list[str] = Field(min_length=2)
    links: list[GraphLink] = Field(min_length=1)


def _topology_kind(v: Any) -> Optional[str]:
    if isinstance(v, dict):
        return v.get("kind", "dumbbell")
    return getattr(v, "kind", None)


Topology = Annotated[
    Union[Annotated[Dumbbell, Tag("dumbbell")], Annotated[ParkingLot, Tag("parking_lot")], Annotated[Graph, Tag("graph")]],
    Discriminator(_topology_kind),
]


def _start_type(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise ValueError(f"must be a time or [lo, hi], got {show(v)}")
        return [_quantity_type(x) for x in v]
    return _quantity_type(v)


class Flow(_Model):
    """A group of ``count`` identical flows (their ``group`` in the results is this table's index)."""

    cc: str
    """Congestion-control algorithm: a name `cclab algorithms` lists."""
    count: int = Field(1, ge=1, le=_LIMITS["max_flow_count"])
    """How many identical flows this table stands for."""
    rtt: Optional[Quantity] = None
    """Round-trip propagation delay of the flow's path (a time; optional on graphs)."""
    start: Annotated[Any, BeforeValidator(_start_type)] = 0
    """Start time, or [lo, hi] for a start drawn uniformly from the seed."""
    stop: Optional[Quantity] = None
    """Stop time (default: the end of the run)."""
    size: Quantity = "inf"
    """Bytes to send, or "inf" (bulk)."""
    params: dict[str, ParamValue] = Field(default_factory=dict)
    """The algorithm's parameters (checked by it: unknown names are errors)."""
    links: Optional[list[int]] = None
    src: Optional[str] = None
    dst: Optional[str] = None
    transport: Optional[dict[str, Any]] = None

    _rtt = field_validator("rtt")(positive(parse_time))
    _stop = field_validator("stop")(nonneg(parse_time))

    @field_validator("start")
    @classmethod
    def _start(cls, v: Any) -> Any:
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        for x in vals:
            nonneg(parse_time)(x)
        if len(vals) == 2 and parse_time(vals[0]) > parse_time(vals[1]):
            raise ValueError(f"[lo, hi] needs lo <= hi, got {json.dumps(list(vals))}")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if v == "inf":
            return v
        return positive(parse_size)(v)


class Traffic(_Model):
    """Traffic without congestion control: constant rate, Poisson, or Pareto on/off."""

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

    _rate = field_validator("rate")(positive(parse_rate))
    _ps = field_validator("packet_size")(positive(parse_size))
    _t = field_validator("start", "stop")(nonneg(parse_time))
    _on = field_validator("mean_on", "mean_off")(positive(parse_time))


class Scenario(_Model):
    """A scenario as in docs/scenario.md. Build with :meth:`load` (TOML file), :meth:`from_toml` or
    :meth:`from_dict`; :meth:`to_spec` resolves it for the simulator."""

    name: str = "scenario"
    duration: Quantity
    """Length of the run (a time: seconds or "60s")."""
    seed: int = Field(1, ge=0, lt=_LIMITS["seed_limit"])
    """Same scenario + seed → identical results."""
    sample_interval: Quantity = "100ms"
    """Time-series resolution (a time)."""
    measure: Optional[tuple[Quantity, Quantity]] = None
    """[start, end] of the window for the summary statistics (default: the whole run)."""
    packet_size: Quantity = "1500B"
    """On-the-wire size of a full data packet."""
    transport: Transport = Field(default_factory=Transport)
    topology: Topology
    flows: list[Flow] = Field(min_length=1)
    traffic: list[Traffic] = Field(default_factory=list)
    trace_packets: bool = False

    _dur = field_validator("duration", "sample_interval")(positive(parse_time))
    _ps = field_validator("packet_size")(positive(parse_size))
    # The datapath this scenario was validated for (model_validate's ``datapath``); assignments are
    # checked for it.
    _datapath: str = PrivateAttr(default="sim")

    def model_post_init(self, context: Any, /) -> None:
        _bind(self, self)

    def __deepcopy__(self, memo: Optional[dict[int, Any]] = None) -> Scenario:
        # The copy's parts are copies: they belong to the copy, not to this scenario.
        c = super().__deepcopy__(memo)
        _bind(c, c)
        return c

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        _bind(self, self)

    @field_validator("measure")
    @classmethod
    def _measure(cls, v: Any) -> Any:
        if v is None:
            return v
        for x in v:
            nonneg(parse_time)(x)
        return v

    # ---- construction ----

    @classmethod
    def model_validate(cls, obj: Any, *, strict: Optional[bool] = None, from_attributes: Optional[bool] = None,
                       context: Optional[Any] = None, datapath: str = "sim", **kwargs: Any) -> Scenario:
        """Validates a scenario dict completely: the model (keys, types, units) and then everything that
        needs the whole scenario (paths, RTTs, buffers, algorithm and queue parameters). Every problem
        is reported at once in one :class:`ScenarioError`. ``datapath="net"`` validates for the real
        datapath, which also accepts ``cc = "kernel:cubic" | "kernel:reno" | "kernel:bbr"``."""
        try:
            sc = super().model_validate(obj, strict=strict, from_attributes=from_attributes, context=context, **kwargs)
        except ValidationError as e:
            raise ScenarioError(flatten(e)) from None
        sc.to_spec(datapath=datapath)  # semantic checks (paths, units, algorithms) happen here
        sc._datapath = datapath
        return sc

    @classmethod
    def from_dict(cls, data: dict[str, Any], datapath: str = "sim") -> Scenario:
        """Same as :meth:`model_validate`."""
        if not isinstance(data, dict):
            raise ScenarioError([("", f"a scenario is a table (dict), got {type(data).__name__}")])
        return cls.model_validate(data, datapath=datapath)

    @classmethod
    def from_toml(cls, text: str, datapath: str = "sim") -> Scenario:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError([("", f"malformed TOML: {e}")]) from None
        return cls.from_dict(data, datapath=datapath)

    @classmethod
    def load(cls, path: Union[str, Path], datapath: str = "sim") -> Scenario:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise ScenarioError([("", f"cannot read scenario file {str(p)!r}: {e.strerror}")]) from None
        return cls.from_toml(text, datapath=datapath)

    # ---- resolution ----

    def to_spec(self, seed: Optional[int] = None, trace_packets: Optional[bool] = None,
                datapath: str = "sim") -> dict[str, Any]:
        """The simulator's run spec (crates/cclab-sim/src/spec.rs) as a dict; the real datapath
        (``datapath="net"``) takes the same spec and also accepts kernel TCP flows."""
        if datapath not in DATAPATHS:
            raise ValueError(f"datapath must be one of {DATAPATHS}, got {datapath!r}")
        # Resolved from a fresh validation of this scenario's values, so that a part changed in place
        # (an item appended to ``flows``, a dict put where a model belongs) is checked like a loaded one
        # and any problem is reported naming its field, never as a crash of the resolver.
        try:
            checked: Scenario = type(self).__pydantic_validator__.validate_python(self.model_dump(warnings=False))
        except ValidationError as e:
            raise ScenarioError(flatten(e)) from None
        errors: list[tuple[str, str]] = []
        spec = _Resolver(checked, errors, datapath).resolve()
        if errors:
            raise ScenarioError(errors)
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < _LIMITS["seed_limit"]:
                raise ScenarioError([("seed", f"must be an integer in [0, 2^63), got {show(seed)}")])
            spec["seed"] = seed
        if trace_packets is not None:
            spec["trace_packets"] = trace_packets
        return spec


# What ``cclab.run`` and ``cclab.net.run`` accept as a scenario.
ScenarioLike = Union[Scenario, dict, str, Path]


def as_scenario(s: ScenarioLike, datapath: str = "sim") -> Scenario:
    """``s`` if it is a :class:`Scenario`, else validated from a dict or loaded from a TOML file, for
    ``datapath``."""
    if isinstance(s, Scenario):
        return s
    if isinstance(s, dict):
        return Scenario.from_dict(s, datapath=datapath)
    return Scenario.load(s, datapath=datapath)


def json_schema() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 2020-12), from the model (``cclab schema``): keys, types,
    defaults, ranges, and the fields' descriptions. It checks a scenario's shape; units, algorithm and
    queue names and parameters, paths and everything else that needs the whole scenario are checked by
    :meth:`Scenario.model_validate` (``cclab validate``)."""
    schema = Scenario.model_json_schema()
    # A flow's ``transport`` table overrides [transport]'s keys: the same table (every key optional).
    flow = schema["$defs"]["Flow"]["properties"]
    flow["transport"] = {"anyOf": [{"$ref": "#/$defs/Transport"}, {"type": "null"}], "default": None,
                         "title": "Transport", "description": "Overrides of [transport] for this flow group."}
    schema["title"] = "cclab scenario"
    schema["description"] = ("A cclab scenario file (TOML), docs/scenario.md. The schema checks keys and types; "
                             "`cclab validate` also checks units, names, parameters and paths.")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


class _Resolver:
    """Resolves a validated scenario into the run spec for ``datapath``, appending every problem found
    to ``errors`` (``to_spec`` raises them together)."""

    def __init__(self, sc: Scenario, errors: list[tuple[str, str]], datapath: str = "sim"):
        self.sc = sc
        self.errors = errors
        self.datapath = datapath

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

        topo = resolver(sc.topology, self.err)
        links = topo.links
        flows = []
        rtts_per_link: dict[int, list[float]] = {}
        for g, f in enumerate(sc.flows):
            field = f"flows[{g}]"
            tr = self._transport(base_transport, f.transport, f"{field}.transport", packet_size)
            if tr is None:
                continue
            self._check_sender(f, field, tr)
            route = topo.route(f, field)
            if route is None:
                continue
            path, ack_path, rtt, access_delay = route
            start: Any
            if isinstance(f.start, (list, tuple)):
                start = [parse_time(f.start[0]), parse_time(f.start[1])]
            else:
                start = parse_time(f.start)
            stop = parse_time(f.stop) if f.stop is not None else None
            if not self._check_window(field, f.start, f.stop, duration):
                continue
            size = None if f.size == "inf" else int(math.ceil(parse_size(f.size)))
            for l in path:
                rtts_per_link.setdefault(l, []).append(rtt)
            for l in ack_path:
                rtts_per_link.setdefault(l, []).append(rtt)
            for _ in range(f.count):
                flows.append({
                    "group": g, "cc": f.cc, "params": f.params, "path": path, "ack_path": ack_path,
                    "extra_delay_fwd": access_delay, "extra_delay_rev": access_delay, "rtt": rtt,
                    "start": start, "stop": stop, "size": size, "transport": tr,
                })
        traffic = []
        for i, t in enumerate(sc.traffic):
            field = f"traffic[{i}]"
            tpath = topo.traffic_path(t, field)
            if tpath is None or not self._check_window(field, t.start, t.stop, duration):
                continue
            traffic.append({
                "kind": t.kind, "rate_bps": parse_rate(t.rate), "packet_size": int(round(parse_size(t.packet_size))),
                "start": parse_time(t.start), "stop": parse_time(t.stop) if t.stop is not None else None,
                "path": tpath,
                "mean_on": parse_time(t.mean_on) if t.mean_on is not None else None,
                "mean_off": parse_time(t.mean_off) if t.mean_off is not None else None,
                "shape": t.shape,
            })
        rows = (math.floor(duration / sample) + 1) * (len(flows) + len(links))
        if rows > MAX_SERIES_ROWS:
            self.err("sample_interval", f"{show(sc.sample_interval)} would record {rows:,} time-series rows "
                     f"(samples × (flows + links)); at most {MAX_SERIES_ROWS:,}: use a coarser sample_interval")
        # Buffers: BDP = rate × the largest RTT of the flows crossing the link.
        out_links = []
        for i, cfg in enumerate(links):
            field = cfg.field
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
            except _native.SpecError as e:
                self.err(f"{field}.{'params.' + e.field if e.field != 'queue' else 'queue'}", e.message)
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

    def _check_window(self, field: str, start: Any, stop: Any, duration: float) -> bool:
        """A flow or traffic source must start before the run ends and stop after it starts."""
        _, hi = (start if isinstance(start, (list, tuple)) else (start, start))
        if parse_time(hi) >= duration:
            self.err(f"{field}.start", f"must be < duration ({duration:g} s), got {show(start)}")
            return False
        if stop is not None and parse_time(stop) <= parse_time(hi):
            self.err(f"{field}.stop", f"must be > start ({parse_time(hi):g} s), got {show(stop)}")
            return False
        return True

    def _transport(self, base: Transport, override: Optional[dict[str, Any]], field: str,
                   packet_size: int) -> Optional[dict[str, Any]]:
        data = base.model_dump()
        if override:
            data.update(override)

        def at(key: str) -> str:
            # A setting the flow overrides is the flow's field; any other comes from [transport].
            top = key.split(".", 1)[0].split("[", 1)[0]
            return f"{field}.{key}" if override and top in override else f"transport.{key}"

        try:
            t = Transport.model_validate(data)
        except ValidationError as e:
            for f, m in flatten(e):
                self.err(at(f), m)
            return None
        mss = int(round(parse_size(t.mss)))
        if mss >= packet_size:
            self.err(at("mss"), f"must be smaller than packet_size ({packet_size} B), got {json.dumps(t.mss)}")
            return None
        out = {
            "mss": mss, "packet_size": packet_size, "initial_cwnd": float(t.initial_cwnd),
            "delayed_ack": t.delayed_ack, "delack_timeout": parse_time(t.delayed_ack_timeout),
            "min_rto": parse_time(t.min_rto), "sack": t.sack, "ecn": t.ecn,
        }
        if t.receive_window is not None:
            # Whole segments, as a sender fills an advertised window with full-sized segments.
            pkts = int(parse_size(t.receive_window) // mss)
            if pkts < 1:
                self.err(at("receive_window"), f"must hold at least one mss ({mss} B), got {json.dumps(t.receive_window)}")
                return None
            out["max_window"] = pkts
        return out

    def _check_sender(self, f: Flow, field: str, tr: dict[str, Any]) -> None:
        if f.cc.startswith("kernel:"):
            # Linux TCP runs only on real sockets; its settings are the kernel's, not our parameters.
            if self.datapath != "net":
                self.err(f"{field}.cc", f"{f.cc!r} is Linux kernel TCP, which runs only on the real datapath "
                         "(`cclab net run`); the simulator runs the algorithms `cclab algorithms` lists")
            elif f.cc not in KERNEL_CCS:
                self.err(f"{field}.cc", f"unknown kernel algorithm {f.cc!r}; allowed: {', '.join(KERNEL_CCS)}")
            elif f.params:
                self.err(f"{field}.params", f"kernel TCP ({f.cc}) takes no parameters, got {', '.join(sorted(f.params))}")
            return
        try:
            _native.validate_sender(f.cc, json.dumps(f.params), tr["mss"], tr["packet_size"], tr["initial_cwnd"])
        except _native.SpecError as e:
            self.err(f"{field}.cc" if e.field == "cc" else f"{field}.params.{e.field}", e.message)
