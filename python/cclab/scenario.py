"""The scenario file (docs/scenario.md): a pydantic model and its resolution into the simulator's flat
run spec (SI units, directional links, per-flow paths and access delays). Each topology kind is resolved
by its class in :mod:`cclab.topology`; quantities are parsed and checked by :mod:`cclab.units`.

Every rejection is a :class:`~cclab.errors.ScenarioError` (a ``ValueError``) whose message names the
field: ``flows[1].rtt: must be > 0, got "-5ms"``.

Why one file of ~1 200 lines: the models and the resolver below share their private validators and
field-naming helpers; what stands alone has moved out (reading TOML files: :mod:`cclab.tomlfile`,
topologies: :mod:`cclab.topology`, quantities: :mod:`cclab.units`).
"""
from __future__ import annotations

import json
import math
import re
import sys
import weakref
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.9/3.10 ship no tomllib
    pass

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from . import _native, traces
from .errors import ScenarioError, did_you_mean, each_param_error, flatten, show, suggest, without_bad_keys
from .tomlfile import MAX_DEPTH, check_nesting as _check_nesting, parse_toml, read_text
from .topology import resolver
from .units import (
    check_buffer,
    invisible_char,
    nonneg,
    parse_buffer,
    parse_rate,
    parse_size,
    parse_time,
    positive,
    show_value,
)

# Linux kernel TCP congestion controls a flow may name as ``cc = "kernel:<name>"``: real datapath only
# (``cclab net run``; the set crates/cclab-net/src/tcp.rs accepts). The simulator has no kernel inside.
KERNEL_CCS = ("kernel:cubic", "kernel:reno", "kernel:bbr")
# ``cc = "bpf:<algorithm>"``: Linux TCP steered by one of our algorithms through the kernel datapath
# (crates/cclab-bpf; real datapath only). These need a field of our own header and cannot run there
# (crates/cclab-net/src/run.rs, BPF_REFUSED).
BPF_REFUSED = {"maxnet": "needs the router price carried in our own header, which Linux TCP has no field for"}
# What a scenario is resolved for: "sim" (``cclab run``) or "net" (``cclab net run``).
DATAPATHS = ("sim", "net")


def _numpy_scalar(v: Any) -> Any:
    """A NumPy scalar (np.int64(2), np.float32(0.5), np.bool_) as the Python value it holds: values computed
    with NumPy are numbers like any other (np.int64 is no int subclass, so it was refused as "not a number")."""
    if type(v).__module__ == "numpy" and callable(getattr(v, "item", None)) and getattr(v, "ndim", None) == 0:
        return v.item()
    return v


def _quantity_type(v: Any) -> Any:
    # Checked before pydantic's union so that a wrong type gives one message, not one per member, and a
    # TOML boolean is not silently read as 1 (bool is an int in Python).
    v = _numpy_scalar(v)
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError(f"must be a number (SI base unit) or a string with a unit, got {show(v)}")
    return v


def _param_type(v: Any) -> Any:
    v = _numpy_scalar(v)
    if not isinstance(v, (bool, str, int, float)):
        raise ValueError(f"must be a number, a boolean or a string, got {show(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"must be a finite number, got {show(v)}")
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63:
        raise ValueError(f"must be a finite number of at most 2^63, got an integer of {len(str(abs(v)))} digits")
    if isinstance(v, str) and len(v) > 1000:
        raise ValueError(f"must be a string of at most 1000 characters, got {len(v)}")
    return v


def _no_bool(what: str) -> Any:
    """A check before pydantic's own for a field that holds ``what`` ("an integer", "a number"): a TOML or
    Python boolean is refused, and so is a string. bool is an int subclass and pydantic's lax mode reads
    true as 1, so ``seed = true`` ran seed 1 and ``loss = true`` lost every packet. Lax mode also reads the
    string "7" as 7, while a quantity's "100" (no unit) is refused: ``count = "2"`` ran, ``buffer = "100"``
    did not. A quoted number in a number field is a mistake of the same kind (a spreadsheet's export, a
    template's substitution), so it is refused by name too; ``--set`` reads its values as TOML, where 7 is
    a number."""

    def check(v: Any) -> Any:
        v = _numpy_scalar(v)
        if isinstance(v, bool):
            raise ValueError(f"must be {what}, not a boolean, got {show(v)}")
        if isinstance(v, str):
            raise ValueError(f"must be {what}, not a string, got {show(v)} (write the number without quotes)")
        return v

    return BeforeValidator(check)


Quantity = Annotated[Union[str, int, float], BeforeValidator(_quantity_type)]
ParamValue = Annotated[Union[bool, int, float, str], BeforeValidator(_param_type)]
Int = Annotated[int, _no_bool("an integer")]
Float = Annotated[float, _no_bool("a number")]

# The run spec's limits, defined once in Rust (crates/cclab-spec/src/limits.rs; docs/scenario.md "Limits").
# Above MAX_SERIES_ROWS time-series rows (samples × (flows + links)) a run would need gigabytes of memory.
_LIMITS = _native.limits()
MAX_SERIES_ROWS = _LIMITS["max_series_rows"]
# Hard bounds on single values: every time fits the engine's u64 nanosecond clock with margin and every
# count its integer type. Never raised.
MAX_TIME = _LIMITS["max_time_ns"] / 1e9  # seconds
MIN_RATE, MAX_RATE = float(_LIMITS["min_rate_bps"]), float(_LIMITS["max_rate_bps"])
MIN_PACKET, MAX_PACKET = _LIMITS["min_packet_size"], _LIMITS["max_packet_size"]
MAX_INITIAL_CWND = _LIMITS["max_initial_cwnd"]
MAX_WINDOW = _LIMITS["max_window_pkts"]
MAX_RTO = _LIMITS["max_rto_ns"] / 1e9  # seconds
MAX_SCHEDULED_DELAY = _LIMITS["max_scheduled_delay_ns"] / 1e9  # seconds
MAX_BUFFER_PKTS, MAX_BUFFER_BYTES = _LIMITS["max_buffer_pkts"], _LIMITS["max_buffer_bytes"]
MAX_FLOW_SIZE = _LIMITS["max_flow_size"]
MAX_FLOWS = _LIMITS["max_flows"]
# The budget: a run's estimated memory and events are refused above these unless [limits] raises them.
DEFAULT_MAX_MEMORY, DEFAULT_MAX_EVENTS = _LIMITS["default_max_memory"], _LIMITS["default_max_events"]
# Inputs: the longest name (file size and nesting depth: cclab.tomlfile).
MAX_NAME = 100
# An algorithm, queue, node or parameter name: a short string (a long one is no name, and would fill
# the message that says it is unknown).
def _check_visible(v: str) -> str:
    bad = invisible_char(v)
    if bad:
        raise ValueError(f"must be a name of visible characters, got {show(v)}, which holds {bad}")
    return v


Name = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_check_visible)]
# The estimate's bytes per flow (crates/cclab-spec/src/limits.rs FLOW_BYTES), to refuse a huge count early.
_LIMITS_FLOW_BYTES = 6000.0


def _check_name(v: str) -> str:
    """A scenario's name names its results folder (``results/<name>``): a plain name, never a path."""
    why = None
    if v and invisible_char(v) and len(v) <= MAX_NAME:  # before emptiness: "\u2028" is whitespace to strip()
        why = f"contains a control, format, line-separator or invisible character ({invisible_char(v)})"
    elif not v.strip():
        why = "is empty"
    elif len(v) > MAX_NAME:
        why = f"has {len(v)} characters (at most {MAX_NAME})"
    elif "/" in v or "\\" in v:
        why = 'contains a path separator ("/" or "\\")'
    elif v.startswith("."):
        why = 'starts with "." (".", ".." and hidden folders are not names)'
    elif invisible_char(v):
        why = f"contains a control, format, line-separator or invisible character ({invisible_char(v)})"
    if why:
        shown = show(v) if len(v) <= MAX_NAME else show(v[:40] + "…")
        raise ValueError(f"must be a plain name (1–{MAX_NAME} characters, no path separators, control characters "
                         f"or leading \".\"; it names the results folder results/<name>): {why}, got {shown}")
    return v


class _Model(BaseModel):
    """Every part of a scenario. Assigning to a field validates the value (``validate_assignment``) and
    raises :class:`ScenarioError` naming the field by its place in the scenario (``flows[0].cc``), as
    loading does; see :meth:`__setattr__`."""

    # Attribute docstrings are the fields' descriptions in the JSON Schema (``cclab schema``). They are read
    # from this file's source when the schema is asked for (``_attribute_docs``), not by pydantic's
    # ``use_attribute_docstrings``, which parses the source for every model at import: a quarter of
    # ``import cclab``'s own time, paid by every ``cclab run``.
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True, defer_build=True)

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
            raise ScenarioError([(field, "unknown key" + did_you_mean(name, type(self).model_fields))])
        old = self.__dict__.get(name)
        _check_nesting(value, field)
        try:
            super().__setattr__(name, value)
        except ValidationError as e:
            raise ScenarioError([(_join(where or "", f), m) for f, m in flatten(e, type(self))]) from None
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
    initial_cwnd: Float = Field(10, gt=0, le=MAX_INITIAL_CWND, allow_inf_nan=False)
    """Initial congestion window, packets."""
    delayed_ack: Int = Field(1, ge=1, le=_LIMITS["max_delayed_ack"])
    """ACK every N data packets (1: every packet; 2: RFC 1122 delayed ACK)."""
    delayed_ack_timeout: Quantity = "200ms"
    min_rto: Quantity = "200ms"
    """RFC 6298 minimum retransmission timeout (a time)."""
    sack: bool = True
    ecn: bool = False
    prr: bool = False
    """Proportional Rate Reduction (RFC 6937) sets what is sent during fast recovery (Linux's rule); off:
    the pipe is kept at the algorithm's window (RFC 6675)."""
    hystart: Optional[bool] = None
    """Reno, NewReno, SACK and CUBIC leave slow start by HyStart++ (RFC 9406) when the RTT rises, before the
    overshoot; off: slow start runs until the first loss. Unset: on for CUBIC, off for the Reno family, as
    Linux and ns-3 run them (HyStart is part of their CUBIC only)."""
    tlp: bool = False
    """Tail loss probes (RFC 8985): a lost tail is found by a probe sent 2·SRTT after the last ACK, and
    RACK's time rule marks lost what was sent well before a delivered packet; off: the tail waits for the
    RTO."""
    cwnd_validation: bool = False
    """Congestion-window validation (RFC 7661's growth rule): while the receive window limits the sender,
    the algorithm's window does not grow; off: it keeps growing however little is in flight."""
    rto_undo: bool = False
    """Detect spurious retransmission timeouts by timestamps (RFC 3522) and undo their window reduction, as
    Linux does (F-RTO); off: every RTO's reduction stands."""
    profile: Literal["linux", "paper"] = "linux"
    """The defaults of the four settings below: "linux" (RACK-TLP, undo, D-SACK, Linux's receiver: what Linux
    runs, and what the simulator agrees with Linux best with, docs/validation.md "Default transport") or
    "paper" (dupack loss detection, no undo, no D-SACK, an ACK per packet: the transport of the ns-2/ns-3
    simulations the papers' figures come from; the shipped paper scenarios and ``cclab reproduce`` use it).
    A setting written out wins over its profile's default."""
    loss_detection: Optional[Literal["dupack", "rack"]] = None
    """How lost packets are found: "dupack" (RFC 6675: three packets SACKed above a hole) or "rack" (RACK-TLP,
    RFC 8985, as Linux runs it: by time, with a reordering window that widens when the path reorders, and tail
    loss probes). Needs ``sack``. Unset: the profile's ("rack"; "dupack" with ``sack = false`` or
    ``profile = "paper"``)."""
    receiver: Optional[Literal["per_packet", "linux"]] = None
    """When the receiver ACKs: "per_packet" (an ACK every ``delayed_ack`` in-order packets, ``delayed_ack_timeout``
    timer) or "linux" (Linux's receiver: one ACK per packet for the first 16, then one per two packets with a 40 ms
    timer; at once for out-of-order data, duplicates and filled holes; ``delayed_ack`` and its timeout do not
    apply). Unset: the profile's ("linux"; "per_packet" when ``delayed_ack`` or ``delayed_ack_timeout`` is set
    away from its default, or with ``profile = "paper"``)."""
    dsack: Optional[bool] = None
    """The receiver reports a packet that arrives twice in a D-SACK block (RFC 2883), as Linux does; needs
    ``sack``. Unset: the profile's (true; false with ``sack = false`` or ``profile = "paper"``)."""
    undo: Optional[bool] = None
    """Undo window reductions shown spurious, as Linux does: a fast recovery whose retransmissions all come back
    D-SACKed or whose hole the original filled (timestamps), an RTO likewise or by F-RTO; includes ``rto_undo``.
    Unset: the profile's (true; false with ``profile = "paper"``)."""
    # The receiver's advertised window (bytes; None: unlimited). TCP-Madison's D3 capped Reno at 172 KB.
    receive_window: Optional[Quantity] = None

    _mss = field_validator("mss")(positive(parse_size, hi=MAX_PACKET))
    _rwnd = field_validator("receive_window")(positive(parse_size, hi=MAX_WINDOW * MAX_PACKET))
    _dat = field_validator("delayed_ack_timeout")(positive(parse_time, hi=MAX_TIME))
    # The RTO's maximum is 60 s (RFC 6298 §2.5): its minimum cannot be above it.
    _rto = field_validator("min_rto")(positive(parse_time, hi=MAX_RTO))


class Link(_Model):
    """A link: its rate (or capacity trace), propagation delay, buffer, queue discipline and random loss."""

    rate: Optional[Quantity] = None
    """Link rate: bit/s or a string with a unit ("100Mbps"). Give this or ``trace``."""
    trace: Optional[str] = None
    """A capacity trace in place of ``rate`` (mahimahi format: a shipped trace's name (``cclab algorithms`` lists them) or
    a file's path, relative to the scenario file)."""
    delay: Quantity = 0
    """One-way propagation delay (a time)."""
    buffer: Quantity = "BDP"
    """Packets (500, "500p"), a size ("375KB"), or "BDP" / "2BDP" (rate × the largest RTT crossing it)."""
    queue: Name = "droptail"
    """Queue discipline: a name `cclab algorithms` lists under queues."""
    params: dict[Name, ParamValue] = Field(default_factory=dict)
    """The queue discipline's parameters (checked by it: unknown names are errors)."""
    loss: Float = Field(0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    """Bernoulli loss probability of data packets arriving at the link."""
    loss_schedule: list[tuple[Quantity, Float]] = Field(default_factory=list)
    """[[time, probability], ...], strictly increasing times: the loss probability from each time on."""
    delay_schedule: list[tuple[Quantity, Quantity]] = Field(default_factory=list)
    """[[time, delay], ...], strictly increasing times: the one-way propagation delay from each time on
    (``delay`` before the first). A packet takes the delay in force when it finishes serialisation, and
    never overtakes the one ahead of it (docs/scenario.md, "Delay schedules")."""
    jitter: Quantity = 0
    """Delay jitter (a time, at most ``delay``): each packet's delay is ``delay`` ± uniform(``jitter``), or
    normal with this standard deviation (``jitter_distribution``)."""
    jitter_distribution: Literal["uniform", "normal"] = "uniform"
    """How the jitter is drawn."""
    jitter_reorder: bool = False
    """Let jittered packets overtake each other (netem's behaviour); by default they keep their order."""
    reorder: Float = Field(0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    """Probability that a packet skips the link's delay and overtakes those in flight (netem ``reorder``)."""
    duplicate: Float = Field(0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    """Probability that an arriving packet is queued twice (netem ``duplicate``)."""

    _rate = field_validator("rate")(positive(parse_rate, lo=MIN_RATE, hi=MAX_RATE))
    _delay = field_validator("delay")(nonneg(parse_time, hi=MAX_TIME))
    _jitter = field_validator("jitter")(nonneg(parse_time, hi=MAX_TIME))
    _buf = field_validator("buffer")(check_buffer)

    @field_validator("trace")
    @classmethod
    def _trace(cls, v: Optional[str]) -> Optional[str]:
        if v is None:
            return v
        tr = traces.load(v)  # reads and checks the file (cached)
        if not MIN_RATE <= tr.mean_rate_bps <= MAX_RATE:
            raise ValueError(f"the trace's mean rate {tr.mean_rate_bps:.4g} bit/s is outside "
                             f"[{MIN_RATE:g}, {MAX_RATE:g}]")
        # A relative path is kept as the file it named when the scenario was loaded (its folder), so the
        # scenario means the same file wherever it is run from; a shipped trace keeps its name.
        return v if v in traces.builtin() else tr.source

    @model_validator(mode="after")
    def _rate_or_trace(self) -> Link:
        if (self.rate is None) == (self.trace is None):
            raise ValueError("give the link a rate or a trace (one of them)" if self.rate is None
                             else "a link has a rate or a trace, not both")
        if parse_time(self.jitter) > parse_time(self.delay):
            raise ValueError(f"jitter {show(self.jitter)} is larger than the link's delay {show(self.delay)}: the "
                             "delay would go below 0 (give the link a delay of at least the jitter)")
        jitter = parse_time(self.jitter)
        for i, (_, d) in enumerate(self.delay_schedule):
            if parse_time(d) < jitter:
                raise ValueError(f"delay_schedule[{i}]: delay {show(d)} is below the link's jitter {show(self.jitter)}: "
                                 "the delay would go below 0")
        if self.reorder > 0 and parse_time(self.delay) == 0:
            raise ValueError("reorder lets packets skip the link's delay, and this link has none: give it a delay")
        return self

    def rate_bps(self) -> float:
        """The rate, or the trace's mean rate."""
        return parse_rate(self.rate) if self.trace is None else traces.load(self.trace).mean_rate_bps

    @field_validator("loss_schedule")
    @classmethod
    def _sched(cls, v: list[tuple[Quantity, float]]) -> list[tuple[Quantity, float]]:
        for i, (t, p) in enumerate(v):
            try:
                nonneg(parse_time, hi=MAX_TIME)(t)
            except ValueError as e:
                raise ValueError(f"[{i}] time {e}") from None
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"[{i}] loss probability must be in [0, 1], got {p}")
        times = [parse_time(t) for t, _ in v]
        if any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"times must be strictly increasing, got {show([t for t, _ in v])}")
        return v

    @field_validator("delay_schedule")
    @classmethod
    def _delay_sched(cls, v: list[tuple[Quantity, Quantity]]) -> list[tuple[Quantity, Quantity]]:
        for i, (t, d) in enumerate(v):
            try:
                nonneg(parse_time, hi=MAX_TIME)(t)
            except ValueError as e:
                raise ValueError(f"[{i}] time {e}") from None
            try:
                nonneg(parse_time, hi=MAX_SCHEDULED_DELAY)(d)
            except ValueError as e:
                raise ValueError(f"[{i}] delay {e}") from None
        times = [parse_time(t) for t, _ in v]
        if any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"times must be strictly increasing, got {show([t for t, _ in v])}")
        return v


class GraphLink(Link):
    """A graph's cable between two nodes: two directional links with the same settings."""

    src: Name
    dst: Name


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
    nodes: list[Name] = Field(min_length=2)
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

    cc: Name
    """Congestion-control algorithm: a name `cclab algorithms` lists."""
    count: Int = Field(1, ge=1, le=_LIMITS["max_flow_count"])
    """How many identical flows this table stands for."""
    rtt: Optional[Quantity] = None
    """Round-trip propagation delay of the flow's path (a time; optional on graphs)."""
    start: Annotated[Any, BeforeValidator(_start_type)] = 0
    """Start time, or [lo, hi] for a start drawn uniformly from the seed."""
    stop: Optional[Quantity] = None
    """Stop time (default: the end of the run)."""
    size: Quantity = "inf"
    """Bytes to send, or "inf" (bulk)."""
    params: dict[Name, ParamValue] = Field(default_factory=dict)
    """The algorithm's parameters (checked by it: unknown names are errors)."""
    links: Optional[list[Int]] = None
    src: Optional[Name] = None
    dst: Optional[Name] = None
    reverse: bool = False
    """Send in the reverse direction (dumbbell, parking lot): data over the reverse links, ACKs over the
    forward ones, as the binomial paper's reverse-direction TCP flows that compress the forward ACKs."""
    transport: Optional[dict[str, Any]] = None

    _rtt = field_validator("rtt")(positive(parse_time, hi=MAX_TIME))
    _stop = field_validator("stop")(nonneg(parse_time, hi=MAX_TIME))

    @field_validator("start")
    @classmethod
    def _start(cls, v: Any) -> Any:
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        for x in vals:
            nonneg(parse_time, hi=MAX_TIME)(x)
        if len(vals) == 2 and parse_time(vals[0]) > parse_time(vals[1]):
            raise ValueError(f"[lo, hi] needs lo <= hi, got {json.dumps(list(vals))}")
        return v

    @field_validator("size")
    @classmethod
    def _size(cls, v: Any) -> Any:
        if v == "inf":
            return v
        return positive(parse_size, hi=MAX_FLOW_SIZE)(v)


class Traffic(_Model):
    """Background traffic: without congestion control (constant rate, Poisson, Pareto on/off), or short
    congestion-controlled transfers (``transfers``: Poisson arrivals, Pareto sizes, each a flow of ``cc``
    that sends its size and ends)."""

    kind: Literal["cbr", "onoff", "poisson", "transfers"]
    rate: Quantity
    """The rate (cbr, poisson), the peak rate (onoff), or the offered load (transfers: arrivals × mean size)."""
    mean_size: Optional[Quantity] = None
    """transfers: the mean transfer size ("100KB" if absent); sizes are Pareto with ``shape`` (1.5)."""
    cc: Optional[Name] = None
    """transfers: every transfer's algorithm ("newreno" if absent)."""
    params: dict[Name, ParamValue] = Field(default_factory=dict)
    """transfers: the algorithm's parameters."""
    rtt: Optional[Quantity] = None
    """transfers: the transfers' round-trip propagation delay (required except on graphs)."""
    transport: Optional[dict[str, Any]] = None
    """transfers: overrides of [transport] for the transfers."""
    start: Quantity = 0
    stop: Optional[Quantity] = None
    links: Optional[list[Int]] = None
    src: Optional[Name] = None
    dst: Optional[Name] = None
    reverse: bool = False
    packet_size: Quantity = "1500B"
    mean_on: Optional[Quantity] = None
    mean_off: Optional[Quantity] = None
    shape: Optional[Float] = Field(None, gt=1.0, le=_LIMITS["max_shape"], allow_inf_nan=False)

    _rate = field_validator("rate")(positive(parse_rate, lo=MIN_RATE, hi=MAX_RATE))
    _ps = field_validator("packet_size")(positive(parse_size, lo=MIN_PACKET, hi=MAX_PACKET))
    _t = field_validator("start", "stop")(nonneg(parse_time, hi=MAX_TIME))
    _on = field_validator("mean_on", "mean_off")(positive(parse_time, hi=MAX_TIME))
    _size = field_validator("mean_size")(positive(parse_size, hi=MAX_FLOW_SIZE))
    _rtt = field_validator("rtt")(positive(parse_time, hi=MAX_TIME))

    @model_validator(mode="after")
    def _transfer_fields(self) -> Traffic:
        # The transfer settings mean nothing to the other kinds: refused there, not silently ignored.
        if self.kind != "transfers":
            for key in ("mean_size", "cc", "rtt", "transport"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} is for kind = \"transfers\" only (this source is {self.kind!r})")
            if self.params:
                raise ValueError(f"params is for kind = \"transfers\" only (this source is {self.kind!r})")
        elif self.mean_on is not None or self.mean_off is not None:
            raise ValueError("mean_on/mean_off are for kind = \"onoff\"; transfers take mean_size and shape")
        return self


class Limits(_Model):
    """``[limits]``: the run's budget (docs/scenario.md "Limits"). A run whose estimated memory or events
    exceed it is refused before it starts; raise them here for a run that needs more."""

    max_memory: Quantity = f"{DEFAULT_MAX_MEMORY}B"
    max_events: Float = Field(DEFAULT_MAX_EVENTS, gt=0, le=1e18, allow_inf_nan=False)

    _mem = field_validator("max_memory")(positive(parse_size, hi=1e18))


class Scenario(_Model):
    """A scenario as in docs/scenario.md. Build with :meth:`load` (TOML file), :meth:`from_toml` or
    :meth:`from_dict`; :meth:`to_spec` resolves it for the simulator."""

    name: Annotated[str, AfterValidator(_check_name)] = "scenario"
    duration: Quantity
    """Length of the run (a time: seconds or "60s")."""
    seed: Int = Field(1, ge=0, lt=_LIMITS["seed_limit"])
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
    limits: Optional[Limits] = None

    # The clock ticks in nanoseconds: a run or a sample interval shorter than a microsecond means nothing.
    _dur = field_validator("duration", "sample_interval")(positive(parse_time, lo=1e-6, hi=MAX_TIME))
    _ps = field_validator("packet_size")(positive(parse_size, lo=MIN_PACKET, hi=MAX_PACKET))
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
            nonneg(parse_time, hi=MAX_TIME)(x)
        return v

    # ---- construction ----

    @classmethod
    def model_validate(cls, obj: Any, *, strict: Optional[bool] = None, from_attributes: Optional[bool] = None,
                       context: Optional[Any] = None, datapath: str = "sim", **kwargs: Any) -> Scenario:
        """Validates a scenario dict completely: the model (keys, types, units) and then everything that
        needs the whole scenario (paths, RTTs, buffers, algorithm and queue parameters, the run spec's own
        checks and the budget). Every problem is reported at once in one :class:`ScenarioError`.
        ``datapath="net"`` validates for the real datapath, which also accepts
        ``cc = "kernel:cubic" | "kernel:reno" | "kernel:bbr"`` and ``cc = "bpf:<algorithm>"``."""
        if isinstance(obj, Scenario):
            obj = obj.model_dump(warnings=False)
        _check_nesting(obj)
        try:
            sc = super().model_validate(obj, strict=strict, from_attributes=from_attributes, context=context, **kwargs)
        except ValidationError as e:
            # Every mistake at once: without the wrong keys (unknown ones, and bad values of keys that
            # have a default) the rest of the scenario is checked on (names, parameters, paths); its
            # problems are reported beside these, except at the fields already named.
            errors, rest = flatten(e, cls), without_bad_keys(obj, e, cls)
            if rest is not None:
                try:
                    cls.model_validate(rest, strict=strict, from_attributes=from_attributes, context=context,
                                       datapath=datapath, **kwargs)
                except ScenarioError as more:
                    # (nor at a table holding one: "give the link a rate" once its bad rate is left out)
                    named = [f for f, _ in errors]
                    errors += [(f, m) for f, m in more.errors if not any(
                        f == g or f.startswith((g + ".", g + "[")) or g.startswith((f + ".", f + "[")) for g in named)]
            raise ScenarioError(errors) from None
        except RecursionError:  # _check_nesting bounds the depth; this is the net under it
            raise ScenarioError([("scenario", f"nested too deeply (at most {MAX_DEPTH} levels of tables and arrays)")]) from None
        sc.to_spec(datapath=datapath)  # semantic checks (paths, units, algorithms, the spec) happen here
        sc._datapath = datapath
        return sc

    @classmethod
    def from_dict(cls, data: dict[str, Any], datapath: str = "sim") -> Scenario:
        """Same as :meth:`model_validate`."""
        if not isinstance(data, dict):
            raise ScenarioError([("scenario", f"a scenario is a table (dict), got {type(data).__name__}")])
        return cls.model_validate(data, datapath=datapath)

    @classmethod
    def from_toml(cls, text: str, datapath: str = "sim") -> Scenario:
        return cls.from_dict(parse_toml(text, "scenario"), datapath=datapath)

    @classmethod
    def load(cls, path: Union[str, Path], datapath: str = "sim") -> Scenario:
        """Reads a TOML scenario file (UTF-8, at most 16 MiB); problems with the file itself name it."""
        p = Path(path)
        data = parse_toml(read_text(p, "scenario file"), str(p))
        token = traces.BASE_DIR.set(p.resolve().parent)  # relative trace paths are the file's neighbours
        try:
            return cls.from_dict(data, datapath=datapath)
        finally:
            traces.BASE_DIR.reset(token)

    # ---- resolution ----

    def to_spec(self, seed: Optional[int] = None, trace_packets: Optional[bool] = None,
                datapath: str = "sim") -> dict[str, Any]:
        """The simulator's run spec (crates/cclab-spec/src/spec.rs) as a dict; the real datapath
        (``datapath="net"``) takes the same spec and also accepts kernel TCP flows. The spec is checked
        exactly as the simulator will check it (``RunSpec::validate``, building every algorithm and queue,
        the budget) before it is returned: what this returns, ``cclab.run`` runs."""
        if datapath not in DATAPATHS:
            raise ValueError(f"datapath must be one of {DATAPATHS}, got {datapath!r}")
        # Resolved from a fresh validation of this scenario's values, so that a part changed in place
        # (an item appended to ``flows``, a dict put where a model belongs) is checked like a loaded one
        # and any problem is reported naming its field, never as a crash of the resolver.
        try:
            checked: Scenario = type(self).__pydantic_validator__.validate_python(self.model_dump(warnings=False))
        except ValidationError as e:
            raise ScenarioError(flatten(e, type(self))) from None
        errors: list[tuple[str, str]] = []
        resolver = _Resolver(checked, errors, datapath)
        spec = resolver.resolve()
        if errors:
            raise ScenarioError(errors)
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < _LIMITS["seed_limit"]:
                raise ScenarioError([("seed", f"must be an integer in [0, 2^63), got {show(seed)}")])
            spec["seed"] = seed
        if trace_packets is not None:
            if not isinstance(trace_packets, bool):
                raise ScenarioError([("trace_packets", f"must be true or false, got {show(trace_packets)}")])
            spec["trace_packets"] = trace_packets
        resolver.check_spec(spec)
        if errors:
            raise ScenarioError(errors)
        return spec

    def estimate(self, seed: Optional[int] = None, trace_packets: Optional[bool] = None) -> dict[str, float]:
        """What running this scenario is estimated to need, and its budget (docs/scenario.md "Limits"):
        ``memory`` (bytes), ``events``, ``packets``, ``in_flight``, ``series_rows``, ``trace_records``, the
        memory's terms, ``max_memory`` and ``max_events``."""
        return dict(_native.estimate(json.dumps(self.to_spec(seed=seed, trace_packets=trace_packets))))


# What ``cclab.run`` and ``cclab.net.run`` accept as a scenario.
ScenarioLike = Union[Scenario, dict, str, Path]


def as_scenario(s: ScenarioLike, datapath: str = "sim") -> Scenario:
    """``s`` validated for ``datapath``: a :class:`Scenario` (validated again, whatever was done to it
    since), a dict, or the path of a TOML file."""
    if isinstance(s, Scenario):
        return Scenario.model_validate(s, datapath=datapath)
    if isinstance(s, dict):
        return Scenario.from_dict(s, datapath=datapath)
    if isinstance(s, (str, Path)):
        return Scenario.load(s, datapath=datapath)
    raise ScenarioError([("scenario", f"must be a Scenario, a dict or the path of a TOML file, got {type(s).__name__}")])


def _memory_cap() -> Optional[float]:
    """What this process may still allocate under ``ulimit -v`` (RLIMIT_AS), bytes; None without a limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                used = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return float(max(0, soft - used))


def _show_bytes(x: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if x >= scale:
            return f"{x / scale:.1f} {unit}"
    return f"{x:.0f} B"


def _show_count(x: float) -> str:
    return f"{x:,.0f}" if x < 1e7 else f"{x:.2g}"


def json_schema() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 2020-12), from the model (``cclab schema``): keys, types,
    defaults, ranges, and the fields' descriptions. It checks a scenario's shape; units, algorithm and
    queue names and parameters, paths and everything else that needs the whole scenario are checked by
    :meth:`Scenario.model_validate` (``cclab validate``)."""
    schema = Scenario.model_json_schema()
    docs = _attribute_docs()
    classes = {c.__name__: c for c in _subclasses(_Model)}
    for name, model in [("Scenario", schema), *schema.get("$defs", {}).items()]:
        mro = [c.__name__ for c in classes[name].__mro__] if name in classes else [name]
        for field, prop in model.get("properties", {}).items():
            # A field documented where it is declared, in this model or the one it extends.
            doc = next((docs[(c, field)] for c in mro if (c, field) in docs), None)
            if doc and "description" not in prop:
                # Where pydantic puts it: its keys come in alphabetical order.
                model["properties"][field] = dict(sorted({**prop, "description": doc}.items()))
    # A flow's ``transport`` table overrides [transport]'s keys: the same table (every key optional).
    flow = schema["$defs"]["Flow"]["properties"]
    flow["transport"] = {"anyOf": [{"$ref": "#/$defs/Transport"}, {"type": "null"}], "default": None,
                         "title": "Transport", "description": "Overrides of [transport] for this flow group."}
    schema["title"] = "cclab scenario"
    schema["description"] = ("A cclab scenario file (TOML), docs/scenario.md. The schema checks keys and types; "
                             "`cclab validate` also checks units, names, parameters and paths.")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _subclasses(cls: type) -> list[type]:
    subs: list[type] = cls.__subclasses__()
    return [c for sub in subs for c in (sub, *_subclasses(sub))]


def _attribute_docs() -> dict[tuple[str, str], str]:
    """{(class, field): the string literal right after the field's annotated assignment} for the models of
    this file: what pydantic's ``use_attribute_docstrings`` would read, cleaned the same way
    (``inspect.cleandoc``)."""
    import ast
    import inspect

    docs: dict[tuple[str, str], str] = {}
    for node in ast.parse(Path(__file__).read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt, nxt in zip(node.body, node.body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[(node.name, stmt.target.id)] = inspect.cleandoc(nxt.value.value)
    return docs


class _Resolver:
    """Resolves a validated scenario into the run spec for ``datapath``, appending every problem found
    to ``errors`` (``to_spec`` raises them together)."""

    def __init__(self, sc: Scenario, errors: list[tuple[str, str]], datapath: str = "sim"):
        self.sc = sc
        self.errors = errors
        self.datapath = datapath
        self.link_fields: list[str] = []
        self._spec_flow_groups: list[int] = []  # run-spec flow index -> its [[flows]] table

    def err(self, field: str, msg: str) -> None:
        self.errors.append((field, msg))

    def budget(self) -> tuple[float, float, Optional[float]]:
        """(max memory in bytes, max events, what ``ulimit -v`` leaves this process or None): the run's
        budget, from ``[limits]`` or the defaults."""
        lim = self.sc.limits
        mem = parse_size(lim.max_memory) if lim is not None else float(DEFAULT_MAX_MEMORY)
        events = float(lim.max_events) if lim is not None else float(DEFAULT_MAX_EVENTS)
        return mem, events, _memory_cap()

    def resolve(self) -> dict[str, Any]:
        sc = self.sc
        total = sum(f.count for f in sc.flows)
        mem, _, cap = self.budget()
        # Before expanding the groups into flows (each a dict here): refused by the count alone.
        if total > MAX_FLOWS:
            self.err("flows", f"at most {MAX_FLOWS:,} flows in a run (all groups' count), got {total:,}")
            return {}
        flow_bytes = total * _LIMITS_FLOW_BYTES
        if flow_bytes > min(mem, cap if cap is not None else math.inf):
            self.err("limits.max_memory", f"{total:,} flows need an estimated {_show_bytes(flow_bytes)} of memory "
                     f"(~{_LIMITS_FLOW_BYTES / 1e3:g} kB each), over the budget of {_show_bytes(min(mem, cap or mem))}: "
                     "use fewer flows, or raise [limits] max_memory (docs/scenario.md \"Limits\")")
            return {}
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
            tr = self._transport(base_transport, f.transport, f"{field}.transport", packet_size, f.cc)
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
            self._spec_flow_groups += [g] * f.count
            for _ in range(f.count):
                flows.append({
                    "group": g, "cc": f.cc, "params": f.params, "path": path, "ack_path": ack_path,
                    "extra_delay_fwd": access_delay, "extra_delay_rev": access_delay, "rtt": rtt,
                    "start": start, "stop": stop, "size": size, "transport": tr,
                })
        traffic = []
        for i, t in enumerate(sc.traffic):
            field = f"traffic[{i}]"
            if t.kind == "transfers":
                tr_spec = self._transfers(t, i, field, topo, base_transport, packet_size, duration)
                if tr_spec is not None:
                    traffic.append(tr_spec)
                continue
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
        rows = (math.floor(duration / sample) + 1.0) * (len(flows) + len(links))
        if rows > MAX_SERIES_ROWS:
            self.err("sample_interval", f"{show(sc.sample_interval)} would record {rows:,.0f} time-series rows "
                     f"(samples × (flows + links)); at most {MAX_SERIES_ROWS:,}: use a coarser sample_interval")
        # Buffers: BDP = rate × the largest RTT of the flows crossing the link.
        out_links = []
        for i, cfg in enumerate(links):
            field = cfg.field
            kind, x = parse_buffer(cfg.buffer)
            bp, bb = None, None
            bounded = True
            if kind == "pkts":
                if x != int(x):
                    self.err(f"{field}.buffer", f"a packet count must be a whole number, got {json.dumps(cfg.buffer)}")
                if x > MAX_BUFFER_PKTS:
                    self.err(f"{field}.buffer", f"must be at most {MAX_BUFFER_PKTS:,} packets, got {show_value(cfg.buffer)}")
                    bounded = False
                bp = int(x)
            elif kind == "bytes":
                bb = int(x)
                if bb < packet_size:
                    self.err(f"{field}.buffer", f"must hold at least one packet ({packet_size} B), got {json.dumps(cfg.buffer)}")
                if bb > MAX_BUFFER_BYTES:
                    self.err(f"{field}.buffer", f"must be at most {MAX_BUFFER_BYTES:,} bytes, got {show_value(cfg.buffer)}")
                    bounded = False
            else:
                rtts = rtts_per_link.get(i, [])
                rtt = max(rtts) if rtts else 2 * parse_time(cfg.delay)
                bdp = x * parse_rate(cfg.rate) * rtt / 8.0 / packet_size
                if not bdp <= MAX_BUFFER_PKTS:
                    self.err(f"{field}.buffer", f"{show_value(cfg.buffer)} is {bdp:.3g} packets here (rate × the largest "
                             f"RTT crossing the link); at most {MAX_BUFFER_PKTS:,}")
                    bounded = False
                    bdp = 1
                bp = max(1, int(round(bdp)))
            queue = cfg.queue
            params = cfg.params
            if bounded:
                check = partial(_validate_queue, queue, rate=parse_rate(cfg.rate), pkts=bp, size=bb, mtu=packet_size)
                for name, m in each_param_error(check, params, _native.SpecError):
                    self.err(f"{field}.{'params.' + name if name != 'queue' else 'queue'}", suggest(m, queue) if name == "queue" else m)
            out_links.append({
                "rate_bps": parse_rate(cfg.rate), "delay": parse_time(cfg.delay),
                "buffer_pkts": bp, "buffer_bytes": bb, "queue": queue, "queue_params": params,
                "loss": cfg.loss, "loss_schedule": [[parse_time(t), p] for t, p in cfg.loss_schedule],
                "loss_data_only": True,
                # (added only when set, so a spec without them is byte for byte what it was)
                **({"delay_schedule": [[parse_time(t), parse_time(d)] for t, d in cfg.delay_schedule]}
                   if cfg.delay_schedule else {}),
                **({"trace_ms": list(traces.load(cfg.trace).times_ms)} if cfg.trace is not None else {}),
                **({"jitter": parse_time(cfg.jitter), "jitter_dist": cfg.jitter_distribution,
                    "jitter_reorder": cfg.jitter_reorder, "reorder": cfg.reorder, "duplicate": cfg.duplicate}
                   if cfg.jitter_on() else {}),
            })
        self.link_fields = [cfg.field for cfg in links]
        spec: dict[str, Any] = {
            "name": sc.name, "seed": sc.seed, "duration": duration, "sample_interval": sample,
            "measure": measure, "links": out_links, "flows": flows, "traffic": traffic,
            "trace_packets": sc.trace_packets,
        }
        if sc.limits is not None:  # (absent by default: a spec without it runs under the defaults)
            spec["limits"] = {"max_memory": int(parse_size(sc.limits.max_memory)), "max_events": int(sc.limits.max_events)}
        return spec

    def check_spec(self, spec: dict[str, Any]) -> None:
        """The resolved spec within the budget, then checked by the core exactly as a run checks it
        (``RunSpec::validate`` and building the simulation), its errors named by scenario fields."""
        text = json.dumps(spec)
        mem, events, cap = self.budget()
        try:
            est = _native.estimate(text)
        except _native.SpecError as e:
            self.err(self._field(e.field), e.message)
            return
        limit = min(mem, cap) if cap is not None else mem
        if not est["memory"] <= limit:
            terms = [("flows and links", est["memory_state"], f"{len(spec['flows']):,} flows, {len(spec['links'])} links"),
                     ("time series", est["memory_series"], f"{_show_count(est['series_rows'])} rows"),
                     ("packets in flight", est["memory_packets"], f"{_show_count(est['in_flight'])} packets"),
                     ("packet trace", est["memory_trace"], f"{_show_count(est['trace_records'])} records"),
                     ("running transfers", est["memory_transfers"], f"{_show_count(est['transfers_running'])} at the end"),
                     ("senders' retransmission logs", est["memory_logs"], "a source that ignores loss")]
            parts = ", ".join(f"{k} {_show_bytes(v)} ({what})" for k, v, what in sorted(terms, key=lambda t: -t[1]) if v > 0)
            where = (f"what this process may still allocate (ulimit -v), {_show_bytes(cap)}" if cap is not None and cap < mem
                     else f"the budget of {_show_bytes(mem)}")
            self.err("limits.max_memory", f"the run needs an estimated {_show_bytes(est['memory'])} of memory ({parts}), "
                     f"over {where}: make the run smaller (duration, flows, a coarser sample_interval), or raise "
                     f"[limits] max_memory (docs/scenario.md \"Limits\")")
        if not est["events"] <= events:
            self.err("limits.max_events", f"the run needs an estimated {_show_count(est['events'])} events "
                     f"({_show_count(est['packets'])} packet transmissions; ~{est['events'] / 7e6 / 60:.0f} min of "
                     f"simulation at 7 M events/s), over the budget of {_show_count(events)}: make the run smaller "
                     f"(duration, rates, traffic packet_size), or raise [limits] max_events (docs/scenario.md \"Limits\")")
        if self.errors:
            return
        try:
            if self.datapath == "sim":
                _native.validate_spec(text)
            else:  # kernel TCP flows have no sender to build: the spec's own checks only
                _native.validate_spec(text, build=False)
        except _native.SpecError as e:
            self.err(self._field(e.field), e.message)

    def _field(self, field: str) -> str:
        """A run-spec field (``flows[37].transport.min_rto``, ``links[1].rate_bps``) as the scenario
        field it came from (``flows[2].transport.min_rto``, ``topology.bottleneck.rate``)."""
        renames = {"rate_bps": "rate", "extra_delay_fwd": "rtt", "extra_delay_rev": "rtt", "delack_timeout":
                   "delayed_ack_timeout", "max_window": "receive_window", "path": "", "ack_path": ""}

        def tail(rest: str) -> str:
            m = re.match(r"\.?([A-Za-z_]+)(.*)$", rest)
            if not m:
                return rest
            name = renames.get(m.group(1), m.group(1))
            return f".{name}{m.group(2)}" if name else ""

        m = re.match(r"^flows\[(\d+)\](.*)$", field)
        flows = self.sc.flows
        if m:
            k = int(m.group(1))
            group = self._spec_flow_groups[k] if k < len(self._spec_flow_groups) else k
            return f"flows[{group}]{tail(m.group(2))}" if group < len(flows) else field
        m = re.match(r"^links\[(\d+)\](.*)$", field)
        if m and int(m.group(1)) < len(self.link_fields):
            return f"{self.link_fields[int(m.group(1))]}{tail(m.group(2))}"
        m = re.match(r"^traffic\[(\d+)\](.*)$", field)
        if m:
            return f"traffic[{m.group(1)}]{tail(m.group(2))}"
        return field or "scenario"

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
                   packet_size: int, cc: str) -> Optional[dict[str, Any]]:
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
            for f, m in flatten(e, Transport):
                self.err(at(f), m)
            return None
        mss = int(round(parse_size(t.mss)))
        if mss < 1:
            self.err(f"{field}.mss", f"must be at least 1 B, got {json.dumps(t.mss)}")
            return None
        if mss >= packet_size:
            self.err(at("mss"), f"must be smaller than packet_size ({packet_size} B), got {json.dumps(t.mss)}")
            return None
        out: dict[str, Any] = {
            "mss": mss, "packet_size": packet_size, "initial_cwnd": float(t.initial_cwnd),
            "delayed_ack": t.delayed_ack, "delack_timeout": parse_time(t.delayed_ack_timeout),
            "min_rto": parse_time(t.min_rto), "sack": t.sack, "ecn": t.ecn,
        }
        if t.prr:
            out["prr"] = True
        if t.rto_undo:
            out["rto_undo"] = True
        if (cc == "cubic") if t.hystart is None else t.hystart:
            out["hystart"] = True
        if t.cwnd_validation:
            out["cwnd_validation"] = True
        if t.tlp:
            out["tlp"] = True
        # The profile's defaults for what the scenario leaves unset. Linux's needs SACK for RACK and D-SACK,
        # and its receiver replaces delayed_ack and its timer: with sack = false, or delayed ACKs set, those
        # quietly fall back to dupack / no D-SACK / the per-packet receiver (the user asked for that
        # transport); written out, they are checked below.
        linux = t.profile == "linux"
        delack_given = [k for k, v in (("delayed_ack", t.delayed_ack != 1),
                                       ("delayed_ack_timeout", parse_time(t.delayed_ack_timeout) != 0.2)) if v]
        loss_detection = t.loss_detection or ("rack" if linux and t.sack else "dupack")
        receiver = t.receiver or ("linux" if linux and not delack_given else "per_packet")
        dsack = t.dsack if t.dsack is not None else (linux and t.sack)
        undo = t.undo if t.undo is not None else linux
        if loss_detection == "rack":
            if not t.sack:
                self.err(at("loss_detection"), 'must be "dupack" when sack = false (RACK finds losses from SACK '
                         'blocks), got "rack"')
                return None
            out["loss_detection"] = "rack"
        if undo:
            out["undo"] = True
        if receiver == "linux":
            # Set away from their defaults (the resolver sees values, not which keys were written).
            if delack_given:
                self.err(at(delack_given[0]), 'applies to receiver = "per_packet" only (receiver = "linux" ACKs '
                         f'every second packet with a 40 ms timer): leave it out, got {json.dumps(data[delack_given[0]])}')
                return None
            out["receiver"] = "linux"
        if dsack:
            if not t.sack:
                self.err(at("dsack"), "must be false when sack = false (a D-SACK block is a SACK block), got true")
                return None
            out["dsack"] = True
        if t.receive_window is not None:
            # Whole segments, as a sender fills an advertised window with full-sized segments.
            pkts = int(parse_size(t.receive_window) // mss)
            if pkts < 1:
                self.err(at("receive_window"), f"must hold at least one mss ({mss} B), got {json.dumps(t.receive_window)}")
                return None
            if pkts > MAX_WINDOW:
                self.err(f"{field}.receive_window", f"must be at most {MAX_WINDOW:,} packets of mss ({mss} B) "
                         f"= {MAX_WINDOW * mss:,} B (the transport's own cap: leave it out for no limit), "
                         f"got {json.dumps(t.receive_window)}")
                return None
            out["max_window"] = pkts
        return out

    def _transfers(self, t: Traffic, i: int, field: str, topo: Any, base: Transport, packet_size: int,
                   duration: float) -> Optional[dict[str, Any]]:
        """A ``transfers`` source: routed and given a transport like a flow (its template), or None
        (reported)."""
        cc = t.cc or "newreno"
        tr = self._transport(base, t.transport, f"{field}.transport", packet_size, cc)
        if tr is None:
            return None
        self._check_sender(Flow(cc=cc, params=t.params), field, tr)
        route = topo.route(t, field)
        if route is None or not self._check_window(field, t.start, t.stop, duration):
            return None
        path, ack_path, rtt, access_delay = route
        return {
            "kind": "transfers", "rate_bps": parse_rate(t.rate), "packet_size": tr["packet_size"],
            "start": parse_time(t.start), "stop": parse_time(t.stop) if t.stop is not None else None,
            "path": path, "shape": t.shape,
            "mean_size": float(parse_size(t.mean_size if t.mean_size is not None else "100KB")),
            "flow": {"group": i, "cc": cc, "params": t.params, "path": path, "ack_path": ack_path,
                     "extra_delay_fwd": access_delay, "extra_delay_rev": access_delay, "rtt": rtt,
                     "start": 0.0, "stop": None, "size": None, "transport": tr},
        }

    def _check_sender(self, f: Flow, field: str, tr: dict[str, Any]) -> None:
        if f.cc.startswith("kernel:"):
            # Linux TCP runs only on real sockets; its settings are the kernel's, not our parameters.
            if self.datapath != "net":
                self.err(f"{field}.cc", f"{f.cc!r} is Linux kernel TCP, which runs only on the real datapath "
                         "(`cclab net run`); the simulator runs the algorithms `cclab algorithms` lists")
            elif f.cc not in KERNEL_CCS:
                self.err(f"{field}.cc", suggest(f"unknown kernel algorithm {f.cc!r}; allowed: {', '.join(KERNEL_CCS)}", f.cc))
            elif f.params:
                self.err(f"{field}.params", f"kernel TCP ({f.cc}) takes no parameters, got {', '.join(sorted(f.params))}")
            return
        name = f.cc
        if f.cc.startswith("bpf:"):
            # Linux TCP steered by our algorithm: our parameters, Linux's sockets.
            name = f.cc[len("bpf:"):]
            if self.datapath != "net":
                self.err(f"{field}.cc", f"{f.cc!r} is Linux TCP steered by our algorithm (the kernel datapath), "
                         f"which runs only on the real datapath (`cclab net run`); the simulator runs {name!r} itself")
                return
            if name in BPF_REFUSED:
                self.err(f"{field}.cc", f"{f.cc!r}: {name} {BPF_REFUSED[name]}")
                return
        check = partial(_validate_sender, name, mss=tr["mss"], size=tr["packet_size"], cwnd=tr["initial_cwnd"])
        for p, m in each_param_error(check, f.params, _native.SpecError):
            self.err(f"{field}.cc" if p == "cc" else f"{field}.params.{p}", suggest(m, name) if p == "cc" else m)


def _validate_sender(name: str, params: dict[str, Any], mss: int, size: int, cwnd: float) -> None:
    _native.validate_sender(name, json.dumps(params), mss, size, cwnd)


def _validate_queue(queue: str, params: dict[str, Any], rate: float, pkts: Optional[int], size: Optional[int],
                    mtu: int) -> None:
    _native.validate_queue(queue, json.dumps(params), rate, pkts, size, mtu)
