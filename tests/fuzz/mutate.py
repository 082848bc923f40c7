"""A generator of hostile scenarios: the shipped scenario files, mutated the ways an adversarial user
(or a broken script) would: wrong types, out-of-range and non-finite numbers, integers past 64 bits,
unit garbage, deep nesting, unknown and duplicate keys, graph shapes, odd strings (NUL, path
separators, non-ASCII), and raw bytes (non-UTF-8, truncation) for the file readers.

The error contract (docs/scenario.md) says every one of them is either accepted or rejected with a
ScenarioError (a ValueError naming the field): never another exception, a panic or a hang.
Deterministic: case i of a given seed is always the same case.
"""
from __future__ import annotations

import copy
import random
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).resolve().parents[2] / "python" / "cclab" / "scenarios"

NASTY_SCALARS: list[Any] = [
    0, -1, 1, 2**31, 2**32 + 1, 2**63, 2**64 + 5, 10**30, -(10**30), 1e308, -1e308, 1e-320, 0.0, -0.0,
    float("inf"), float("-inf"), float("nan"), True, False, "", " ", "1e400s", "-1e400ms", "nan s", "infMbps",
    "1e400Mbps", "1e-400s", "0s", "0Mbps", "0B", "1B", "1bps", "1ns", "1e20s", "1e15Gbps", "100", "abc",
    "100 parsecs", "BDP", "bdp", "x" * 5000, "a\x00b", "../../etc", "/tmp/x", "naïve", "\u202e", [], {},
    [1, 2, 3], {"a": 1}, [[[[[]]]]], "drop-tail", "droptail", "red", "maxnet", "newreno", "kernel:cubic",
]

KEY_NAMES = ["duration", "seed", "rate", "delay", "rtt", "buffer", "queue", "cc", "params", "start", "stop",
             "loss", "name", "measure", "sample_interval", "packet_size", "min_rto", "mss", "initial_cwnd",
             "delayed_ack", "max_window", "receive_window", "links", "nodes", "path", "kind", "unknown_key",
             "trace", "jitter", "jitter_distribution", "jitter_reorder", "reorder", "duplicate",
             "prr", "rto_undo", "tlp", "hystart", "cwnd_validation", "profile", "receiver", "dsack",
             "loss_detection", "undo"]


# Valid scenarios for fields no shipped scenario sets, so that their values get mutated too (a key absent
# from every base is only ever added with a nasty value, never taken from a good one): a link's
# delay_schedule, loss_schedule, jitter (normal, reordering), reorder and duplicate; the reverse link's
# schedule; a capacity trace; a transport with its switches written out.
EXTRA_BASES: list[dict] = [
    {"name": "fuzz-impairments", "duration": "3s", "seed": 1,
     "topology": {"kind": "dumbbell",
                  "bottleneck": {"rate": "20Mbps", "delay": "10ms", "buffer": "BDP", "jitter": "2ms",
                                 "jitter_distribution": "normal", "jitter_reorder": True, "reorder": 0.01,
                                 "duplicate": 0.001, "loss_schedule": [["0s", 0.0], ["1s", 0.01]],
                                 "delay_schedule": [["0s", "10ms"], ["1s", "200ms"], ["1.5s", "10ms"]]},
                  "reverse": {"rate": "20Mbps", "delay": "10ms", "delay_schedule": [["0.5s", "30ms"]]}},
     "flows": [{"cc": "cubic", "rtt": "40ms", "count": 2}, {"cc": "newreno", "rtt": "80ms", "start": "0.5s"}]},
    {"name": "fuzz-trace", "duration": "2s", "seed": 2,
     "topology": {"kind": "dumbbell", "bottleneck": {"trace": "step-6-24mbps", "buffer": 100}},
     "flows": [{"cc": "bbr", "rtt": "20ms"}]},
    {"name": "fuzz-switches", "duration": "2s", "seed": 3,
     "transport": {"sack": True, "loss_detection": "rack", "dsack": True, "undo": True, "rto_undo": True,
                   "tlp": True, "prr": True, "hystart": True, "cwnd_validation": True, "delayed_ack": 2},
     "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "delay": "5ms", "buffer": 50, "reorder": 0.02}},
     "flows": [{"cc": "cubic", "rtt": "30ms"}]},
]


def base_scenarios() -> list[dict]:
    return [tomllib.loads(p.read_text()) for p in sorted(SCENARIOS.glob("*.toml"))] + copy.deepcopy(EXTRA_BASES)


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path to a value (dict keys and list indices) in a nested scenario, down to depth 8 (deeper
    values are the nesting mutation's own)."""
    yield prefix
    if len(prefix) >= 8:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:60]):
            yield from _paths(v, (*prefix, i))


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _nest(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = [v]
    return v


def mutate(rng: random.Random, sc: dict) -> Any:
    """One to three mutations of a scenario dict."""
    sc = copy.deepcopy(sc)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(sc) if p]
        if not paths:
            break
        path = rng.choice(paths)
        op = rng.randrange(10)
        parent = _get(sc, path[:-1])
        if op <= 3:  # a nasty scalar in place of a value
            sc = _set(sc, path, copy.deepcopy(rng.choice(NASTY_SCALARS)))  # (a copy: later mutations edit in place)
        elif op == 4:  # a scaled number
            v = _get(sc, path)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                sc = _set(sc, path, type(v)(v * rng.choice([-1, 0, 1e-9, 1e9, 1e18])))
            elif isinstance(v, str):
                sc = _set(sc, path, rng.choice(["1e300", "-", "1e-300", "999999999999999999999"]) + v.lstrip("0123456789."))
        elif op == 5:  # delete a key / entry
            if isinstance(parent, dict):
                del parent[path[-1]]
            elif isinstance(parent, list) and len(parent) > 1:
                del parent[path[-1]]
        elif op == 6 and isinstance(parent, dict):  # an extra or unknown key
            parent[rng.choice(KEY_NAMES)] = copy.deepcopy(rng.choice(NASTY_SCALARS))
        elif op == 7 and isinstance(parent, list):  # duplicate entries (many flows, repeated nodes)
            parent.extend(copy.deepcopy(parent[path[-1]]) for _ in range(rng.choice([1, 2, 50])))
        elif op == 8:  # deep nesting (last: nothing walks into it afterwards)
            sc = _set(sc, path, _nest(rng.choice([5, 50, 2000])))
            break
        else:  # a string where a table is expected, or the reverse
            v = _get(sc, path)
            try:
                text = str(v)
            except RecursionError:  # a deeply nested value (a [1]-in-[1] chain from an earlier case's shape)
                text = "[...]"
            sc = _set(sc, path, {"x": v} if not isinstance(v, dict) else text)
    return sc


def graph_cases() -> list[dict]:
    """Graph topologies with bad shapes: duplicate node names, self loops, unreachable hosts."""
    link = {"rate": "10Mbps", "delay": "5ms", "buffer": 50}
    flow = {"cc": "newreno", "src": "a", "dst": "b"}
    shapes = [
        {"nodes": ["a", "a", "b"], "links": [dict(link, src="a", dst="b")]},
        {"nodes": ["a", "b"], "links": [dict(link, src="a", dst="a")]},
        {"nodes": ["a", "b", "c"], "links": [dict(link, src="a", dst="c")]},
        {"nodes": ["a", "b"], "links": [dict(link, src="a", dst="b"), dict(link, src="a", dst="b")]},
        {"nodes": [], "links": []},
        {"nodes": ["a", "b"], "links": [dict(link, src="a", dst="zz")]},
        {"nodes": [1, 2], "links": [dict(link, src=1, dst=2)]},
    ]
    return [{"name": "g", "duration": "2s", "topology": dict(kind="graph", **s), "flows": [flow]} for s in shapes]


def raw_file_cases(rng: random.Random) -> list[bytes]:
    """Whole files as bytes: encodings, truncation, binary noise."""
    text = (SCENARIOS / "maxnet_m2.toml").read_bytes()
    return [
        b"\xff\xfe" + text, text.decode().encode("utf-16"), text[: len(text) // 2], b"\x00" * 100,
        bytes(rng.randrange(256) for _ in range(300)), b"name = \"\xc3\x28\"\n", b"[" * 10000,
        b"a = " + b"[" * 5000 + b"]" * 5000, b"duration = 1e400\n", b"seed = 99999999999999999999999999\n",
    ]


def cases(seed: int, n: int) -> Iterator[Any]:
    """n mutated scenario dicts (plus the fixed graph cases first)."""
    rng = random.Random(seed)
    bases = base_scenarios()
    yield from graph_cases()
    for _ in range(n):
        yield mutate(rng, rng.choice(bases))


PARAM_VALUES: list[Any] = [0, -1, 1, 0.5, 2, 3, 100, 0.999, 1.0001, 1e-300, 1e-9, 1e9, 1e18, 1e300, 2**62, True, False, "x"]


def _allowed(kind: str, name: str) -> list[str]:
    """The parameter names an algorithm or queue takes, from the registry's "unknown parameter" message."""
    from cclab import _native

    try:
        if kind == "cc":
            _native.validate_sender(name, '{"zz_unknown": 1}')
        else:
            _native.validate_queue(name, '{"zz_unknown": 1}', 1e7, 100)
    except _native.SpecError as e:
        if "allowed:" in e.message:
            return [x.strip() for x in e.message.split("allowed:")[1].split(",")]
    return []


def _profile_keys(sw: random.Random, t: dict) -> dict:
    """``t`` with the transport profile and the four keys it defaults (receiver, loss_detection, dsack,
    undo), each left unset (the profile's, or its quiet fallback with sack = false or delayed ACKs) or
    written out, from the switches' own stream. Only combinations that validate: RACK and D-SACK written
    out without SACK, or the Linux receiver with delayed ACKs, are refused by name (tests/test_rack.py,
    tests/test_receiver_profiles.py), and here they would only shrink the share of cases that run."""
    t = dict(t)
    t["profile"] = sw.choice([None, "linux", "paper"])
    t["receiver"] = sw.choice([None, "per_packet"] + (["linux"] if t["delayed_ack"] == 1 else []))
    t["loss_detection"] = sw.choice([None, "dupack"] + (["rack"] if t["sack"] else []))
    t["dsack"] = sw.choice([None, False] + ([True] if t["sack"] else []))
    t["undo"] = sw.choice([None, False, True])
    return {k: v for k, v in t.items() if v is not None}


def param_cases(seed: int, n: int) -> Iterator[dict]:
    """n short dumbbell scenarios with random algorithm and queue parameters (extreme values included),
    random transports and links: the algorithms' and queues' own checks and their behaviour at the edges."""
    import cclab

    rng = random.Random(seed)
    ccs = {c: _allowed("cc", c) for c in cclab.algorithms()}
    queues = {q: _allowed("queue", q) for q in cclab.queues()}
    for i in range(n):
        sw = random.Random(seed * 1_000_003 + i)
        cc, q = rng.choice(sorted(ccs)), rng.choice(sorted(queues))
        if cc == "maxnet" and rng.random() < 0.5:
            q = "maxnet"
        fp = {k: rng.choice(PARAM_VALUES) for k in rng.sample(ccs[cc], min(len(ccs[cc]), rng.randint(0, 3)))}
        qp = {k: rng.choice(PARAM_VALUES) for k in rng.sample(queues[q], min(len(queues[q]), rng.randint(0, 3)))}
        yield {
            "name": "params", "duration": f"{rng.choice([0.5, 1, 2])}s", "seed": i,
            "topology": {"bottleneck": {"rate": rng.choice(["1Mbps", "20Mbps", "1Gbps"]), "queue": q, "params": qp,
                                        "buffer": rng.choice(["BDP", 5, "0.1BDP", 10000]), "loss": rng.choice([0, 0.01, 0.5]),
                                        # the link impairments, at and beyond their edges
                                        "delay": rng.choice(["0ms", "5ms"]), "jitter": rng.choice(["0ms", "1ms", "5ms", "6ms"]),
                                        "jitter_reorder": rng.random() < 0.5, "reorder": rng.choice([0, 0.01, 1]),
                                        "duplicate": rng.choice([0, 0.01, 1])}},
            "flows": [{"cc": cc, "rtt": rng.choice(["1ms", "40ms", "1s"]), "params": fp, "count": rng.choice([1, 3]),
                       "start": ["0s", "0.2s"]}],
            "transport": _profile_keys(sw, {
                "delayed_ack": rng.choice([1, 2, 64]), "initial_cwnd": rng.choice([1, 10, 1000]),
                "sack": rng.random() < 0.5, "ecn": rng.random() < 0.3,
                # the Linux-like switches, in every combination over the campaign; drawn from their own
                # stream so that the other draws (and so the cases that validate) stay as they were
                **{k: sw.random() < 0.5 for k in ("prr", "rto_undo", "tlp", "hystart", "cwnd_validation")}}),
            "limits": {"max_events": 5e6},
        }
