"""Topology resolution (docs/scenario.md "Topologies"): a scenario's topology becomes what the simulator
runs — directional links, and for each flow a data path, an ACK path and the access delays that make up
the rest of its RTT, and for each traffic source a path.

One resolver per kind, with one interface (:class:`TopologyResolver`): :class:`DumbbellResolver`,
:class:`ParkingLotResolver`, :class:`GraphResolver`; :func:`resolver` picks the kind's. Problems are
reported through the ``err(field, message)`` callback the scenario resolver collects them with; a flow or
traffic source that cannot be routed resolves to None. Units, buffers and queue disciplines are resolved
by the scenario (:mod:`cclab.scenario`), which also owns the models these classes read.
"""
from __future__ import annotations

import heapq
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Callable, ClassVar, Literal, NamedTuple, Optional, Protocol, Union

from .units import parse_time

# What the resolvers read of the scenario model (cclab.scenario's Link, Dumbbell, ParkingLot, Graph,
# Flow, Traffic), as structural types: the model imports this module to resolve itself, so this module
# names the attributes it needs, read-only, instead of importing the model back (no import circle).


class Link(Protocol):
    @property
    def rate(self) -> Any: ...
    @property
    def delay(self) -> Any: ...
    @property
    def buffer(self) -> Any: ...
    @property
    def queue(self) -> str: ...
    @property
    def params(self) -> Mapping[str, Any]: ...
    @property
    def loss(self) -> float: ...
    @property
    def loss_schedule(self) -> Any: ...
    @property
    def delay_schedule(self) -> Any: ...
    @property
    def trace(self) -> Optional[str]: ...
    @property
    def jitter(self) -> Any: ...
    @property
    def jitter_distribution(self) -> str: ...
    @property
    def jitter_reorder(self) -> bool: ...
    @property
    def reorder(self) -> float: ...
    @property
    def duplicate(self) -> float: ...
    def rate_bps(self) -> float: ...


class GraphLink(Link, Protocol):
    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...


class Dumbbell(Protocol):
    @property
    def kind(self) -> Literal["dumbbell"]: ...
    @property
    def bottleneck(self) -> Link: ...
    @property
    def reverse(self) -> Optional[Link]: ...


class ParkingLot(Protocol):
    @property
    def kind(self) -> Literal["parking_lot"]: ...
    @property
    def links(self) -> Sequence[Link]: ...


class Graph(Protocol):
    @property
    def kind(self) -> Literal["graph"]: ...
    @property
    def nodes(self) -> Sequence[str]: ...
    @property
    def links(self) -> Sequence[GraphLink]: ...


Topology = Union[Dumbbell, ParkingLot, Graph]


class Traffic(Protocol):
    """Whatever travels a path: where it goes (``links``, or ``src`` and ``dst``) and which way."""

    @property
    def links(self) -> Optional[list[int]]: ...
    @property
    def src(self) -> Optional[str]: ...
    @property
    def dst(self) -> Optional[str]: ...
    @property
    def reverse(self) -> bool: ...


class Flow(Traffic, Protocol):
    """A flow: a path, and a base RTT its access delays are chosen for."""

    @property
    def rtt(self) -> Any: ...

# The topology kinds, as a scenario's ``topology.kind`` names them.
KINDS = ("dumbbell", "parking_lot", "graph")

# Reports one problem: (field, message).
Err = Callable[[str, str], None]


@dataclass
class DirectedLink:
    """One direction of a configured link, with the scenario settings it takes (units unresolved) and
    ``field``, the scenario field errors about it name."""

    field: str
    rate: Any
    delay: Any
    buffer: Any
    queue: str = "droptail"
    params: dict[str, Any] = dataclass_field(default_factory=dict)
    loss: float = 0.0
    loss_schedule: list[tuple[Any, float]] = dataclass_field(default_factory=list)
    trace: Optional[str] = None
    """The capacity trace in place of ``rate`` (``rate`` is then its mean rate in bit/s)."""
    jitter: Any = 0
    jitter_distribution: str = "uniform"
    jitter_reorder: bool = False
    reorder: float = 0.0
    duplicate: float = 0.0
    delay_schedule: list[tuple[Any, Any]] = dataclass_field(default_factory=list)
    """The forward direction's delay schedule; an ACK side keeps the constant ``delay``."""

    def jitter_on(self) -> bool:
        """Whether any netem-like impairment is set."""
        return parse_time(self.jitter) > 0 or self.reorder > 0 or self.duplicate > 0

    @classmethod
    def forward(cls, link: Link, field: str) -> DirectedLink:
        """The direction that takes every setting of the link."""
        return cls(field, link.rate_bps(), link.delay, link.buffer, link.queue, dict(link.params), link.loss,
                   list(link.loss_schedule), link.trace, link.jitter, link.jitter_distribution, link.jitter_reorder,
                   link.reorder, link.duplicate, list(link.delay_schedule))

    @classmethod
    def ack_side(cls, link: Link, field: str) -> DirectedLink:
        """A dumbbell's or parking lot's reverse (ACK) direction: the link's rate, delay and buffer, a
        drop-tail queue and no random loss (docs/scenario.md). A trace-driven link's ACK side is a
        constant link at the trace's mean rate: a cellular uplink has its own trace, which
        ``[topology.reverse]`` takes."""
        return cls(field, link.rate_bps(), link.delay, link.buffer)


class Route(NamedTuple):
    """A flow through the topology: directional link ids of its data and ACK paths, its round-trip time
    and the one-way access delay each end adds to the path's propagation delay to make that RTT."""

    path: list[int]
    ack_path: list[int]
    rtt: float
    access_delay: float


class TopologyResolver(ABC):
    """A resolved topology: :attr:`links` (directional link i of the run spec is ``links[i]``),
    :meth:`route` for flows and :meth:`traffic_path` for traffic sources."""

    kind: ClassVar[str]
    # Whether a flow may leave out its rtt (it is then its path's round-trip propagation delay).
    rtt_optional: ClassVar[bool] = False
    # Whether a flow may take ``reverse = true`` (its data over its ACK links and back).
    reversible: ClassVar[bool] = True

    def __init__(self, err: Err):
        self.err = err
        self.links: list[DirectedLink] = []

    def route(self, f: Flow, field: str) -> Optional[Route]:
        """The flow's paths, RTT and access delays, or None (reported) if it has none."""
        paths = self._paths(f, field)
        if paths is None:
            return None
        path, ack_path, prop_rtt = paths
        if f.reverse:
            if not self.reversible:
                self.err(f"{field}.reverse", f"a {self.kind} flow's direction is given by src and dst; "
                         "reverse is for dumbbell and parking_lot")
                return None
            # The same links, crossed the other way: data takes what were the ACKs' links and back.
            path, ack_path = ack_path, path
        if f.rtt is None:
            if not self.rtt_optional:
                self.err(f"{field}.rtt", "required")
                return None
            rtt = prop_rtt
        else:
            rtt = parse_time(f.rtt)
        extra = (rtt - prop_rtt) / 2.0
        if extra < -1e-12:
            self.err(f"{field}.rtt", f"must be >= the round-trip delay of its links ({prop_rtt * 1e3:g} ms), got {json.dumps(f.rtt)}")
            return None
        return Route(path, ack_path, rtt, max(extra, 0.0))

    @abstractmethod
    def _paths(self, f: Flow, field: str) -> Optional[tuple[list[int], list[int], float]]:
        """The flow's data path, ACK path and round-trip propagation delay, or None (reported)."""

    @abstractmethod
    def traffic_path(self, t: Traffic, field: str) -> Optional[list[int]]:
        """The traffic source's path (its reverse direction when ``t.reverse``), or None (reported)."""

    def _refuse(self, obj: Union[Flow, Traffic], keys: tuple[str, ...], field: str, msg: str) -> bool:
        """Reports the first of ``keys`` that ``obj`` sets (this kind does not take it): True if one is."""
        for key in keys:
            if getattr(obj, key) is not None:
                self.err(f"{field}.{key}", msg)
                return True
        return False


class DumbbellResolver(TopologyResolver):
    """Link 0 is the bottleneck, link 1 its reverse direction (ACKs and reverse traffic)."""

    kind = "dumbbell"

    def __init__(self, topo: Dumbbell, err: Err):
        super().__init__(err)
        b = topo.bottleneck
        self.links.append(DirectedLink.forward(b, "topology.bottleneck"))
        if topo.reverse is not None:
            self.links.append(DirectedLink.forward(topo.reverse, "topology.reverse"))
        else:
            self.links.append(DirectedLink.ack_side(b, "topology.bottleneck"))
        self.prop_rtt = parse_time(b.delay) + parse_time(self.links[1].delay)

    def _paths(self, f: Flow, field: str) -> Optional[tuple[list[int], list[int], float]]:
        if self._refuse(f, ("links", "src", "dst"), field, "a dumbbell flow crosses the bottleneck: it takes no links/src/dst"):
            return None
        return [0], [1], self.prop_rtt

    def traffic_path(self, t: Traffic, field: str) -> Optional[list[int]]:
        if self._refuse(t, ("src", "dst"), field, "dumbbell traffic names links, not src/dst"):
            return None
        if t.links is not None and t.links != [0]:
            self.err(f"{field}.links", f"a dumbbell has one bottleneck: links must be [0] or absent, got {t.links}")
            return None
        return [1] if t.reverse else [0]


class ParkingLotResolver(TopologyResolver):
    """A chain of n links: link i (0 ≤ i < n) forward, link n + i its reverse (ACK) direction."""

    kind = "parking_lot"

    def __init__(self, topo: ParkingLot, err: Err):
        super().__init__(err)
        self.topo = topo
        self.n = len(topo.links)
        self.links += [DirectedLink.forward(l, f"topology.links[{i}]") for i, l in enumerate(topo.links)]
        self.links += [DirectedLink.ack_side(l, f"topology.links[{i}]") for i, l in enumerate(topo.links)]

    def _check_links(self, links: list[int], field: str) -> bool:
        for k, l in enumerate(links):
            if not 0 <= l < self.n:
                self.err(f"{field}.links[{k}]", f"link {l} does not exist (parking_lot has links 0..{self.n - 1})")
                return False
        return True

    def _paths(self, f: Flow, field: str) -> Optional[tuple[list[int], list[int], float]]:
        if self._refuse(f, ("src", "dst"), field, "a parking_lot flow names the links it crosses (links = [0, 1]), not src/dst"):
            return None
        if not f.links:
            self.err(f"{field}.links", "required for parking_lot: the link indices the flow crosses, e.g. [0, 1]")
            return None
        if not self._check_links(f.links, field):
            return None
        if len(set(f.links)) != len(f.links):
            self.err(f"{field}.links", f"a link may appear only once, got {f.links}")
            return None
        path = list(f.links)
        prop = 2 * sum(parse_time(self.topo.links[l].delay) for l in path)
        return path, [self.n + l for l in reversed(path)], prop

    def traffic_path(self, t: Traffic, field: str) -> Optional[list[int]]:
        if self._refuse(t, ("src", "dst"), field, "parking_lot traffic names links, not src/dst"):
            return None
        if not t.links:
            self.err(f"{field}.links", "required for parking_lot")
            return None
        if not self._check_links(t.links, field):
            return None
        return [self.n + l for l in reversed(t.links)] if t.reverse else list(t.links)


class GraphResolver(TopologyResolver):
    """Every (undirected) link k becomes two directional links: 2k src→dst and 2k+1 dst→src, both with
    every setting of the link. Routes are shortest paths by propagation delay."""

    kind = "graph"
    rtt_optional = True
    reversible = False

    def __init__(self, topo: Graph, err: Err):
        super().__init__(err)
        self.topo = topo
        self.nodes = {name: i for i, name in enumerate(topo.nodes)}
        if len(self.nodes) != len(topo.nodes):
            err("topology.nodes", "node names must be unique")
        # node -> [(neighbour, directional link id, delay)]
        # (keyed by the nodes' ids: with a name listed twice they are not 0..len(nodes) - 1)
        self.adj: dict[int, list[tuple[int, int, float]]] = {i: [] for i in self.nodes.values()}
        for k, l in enumerate(topo.links):
            for end in ("src", "dst"):
                if getattr(l, end) not in self.nodes:
                    err(f"topology.links[{k}].{end}", f"unknown node {getattr(l, end)!r}; nodes: {', '.join(topo.nodes)}")
            if l.src == l.dst:
                err(f"topology.links[{k}]", f"a link joins two different nodes, got {l.src!r} to itself")
            # A graph link is a cable between two routers: both directions get every setting of it
            # (queue, parameters, random loss), unlike a dumbbell's or parking lot's reverse (ACK) side.
            self.links.append(DirectedLink.forward(l, f"topology.links[{k}]"))
            self.links.append(DirectedLink.forward(l, f"topology.links[{k}]"))
            if l.src in self.nodes and l.dst in self.nodes:
                d = parse_time(l.delay)
                self.adj[self.nodes[l.src]].append((self.nodes[l.dst], 2 * k, d))
                self.adj[self.nodes[l.dst]].append((self.nodes[l.src], 2 * k + 1, d))

    def _shortest(self, src: int, dst: int) -> Optional[list[int]]:
        # Dijkstra by delay; ties broken by hop count, then by link index: deterministic.
        best: dict[int, tuple[float, int, list[int]]] = {src: (0.0, 0, [])}
        heap: list[tuple[float, int, list[int], int]] = [(0.0, 0, [], src)]
        while heap:
            d, h, path, u = heapq.heappop(heap)
            if u == dst:
                return path
            if (d, h, path) != best.get(u):
                continue
            for v, lid, w in self.adj[u]:
                cand = (d + w, h + 1, [*path, lid])
                if v not in best or cand < best[v]:
                    best[v] = cand
                    heapq.heappush(heap, (cand[0], cand[1], cand[2], v))
        return None

    def _route(self, src: Optional[str], dst: Optional[str], field: str) -> Optional[list[int]]:
        """The shortest path from node ``src`` to node ``dst``, or None (reported)."""
        if not src or not dst:
            self.err(field, "a graph flow needs src and dst")
            return None
        if src == dst:
            self.err(f"{field}.dst", f"must differ from src, got {dst!r}")
            return None
        for end, name in (("src", src), ("dst", dst)):
            if name not in self.nodes:
                self.err(f"{field}.{end}", f"unknown node {name!r}; nodes: {', '.join(self.topo.nodes)}")
                return None
        path = self._shortest(self.nodes[src], self.nodes[dst])
        if not path:
            self.err(field, f"no route from {src!r} to {dst!r}")
            return None
        return path

    def _paths(self, f: Flow, field: str) -> Optional[tuple[list[int], list[int], float]]:
        if self._refuse(f, ("links",), field, "a graph flow names src and dst (routes are shortest paths), not links"):
            return None
        path = self._route(f.src, f.dst, field)
        if path is None:
            return None
        prop = 2 * sum(parse_time(self.topo.links[l // 2].delay) for l in path)
        return path, [l ^ 1 for l in reversed(path)], prop

    def traffic_path(self, t: Traffic, field: str) -> Optional[list[int]]:
        if self._refuse(t, ("links",), field, "graph traffic names src and dst, not links"):
            return None
        path = self._route(t.src, t.dst, field)
        if path is None:
            return None
        return [l ^ 1 for l in reversed(path)] if t.reverse else path


def resolver(topo: Topology, err: Err) -> TopologyResolver:
    """The resolver of ``topo``'s kind (reporting problems of the topology itself through ``err``)."""
    if topo.kind == "dumbbell":
        return DumbbellResolver(topo, err)
    if topo.kind == "parking_lot":
        return ParkingLotResolver(topo, err)
    return GraphResolver(topo, err)
