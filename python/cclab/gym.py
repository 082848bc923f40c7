"""A Gymnasium environment for learning congestion control on the simulator (docs/gym.md).

Importing this module registers ``"cclab/CongestionControl-v0"``::

    import gymnasium, cclab.gym
    env = gymnasium.make("cclab/CongestionControl-v0", scenario="my_scenario.toml", step="10ms")
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

One flow of the scenario (``agent_flow``) is driven by the agent: its algorithm is replaced by the
``external`` sender, whose window (``action="cwnd"`` or ``"absolute"``) or pacing rate (``action="rate"``)
the agent sets once per step; every other flow and cross-traffic source runs as the scenario says. A step
is a fixed slice of simulated time (``step``, default the agent flow's round-trip propagation delay), or
with ``step_on="ack"`` lasts until the agent's next ACK (at most ``step``). The simulator runs in-process
(no sockets, no ZMQ as in ns3-gym): a step is one call into Rust. Several agent-driven flows in one
simulation: :mod:`cclab.gym_multi` (PettingZoo's parallel API).

Observation (float32, one vector per step, the last ``history`` of them concatenated oldest first). By
default (``SENDER_OBS_NAMES``) only what the agent's sender measures, normalised only by its own
estimates: ``max_bw``, the largest delivery rate it has measured (over the last minimum RTT), and the
estimated BDP ``max_bw × min RTT``:

* ``delivery_rate``, ``send_rate``: delivered and sent (wire) bits over the last minimum RTT / max_bw;
* ``rtt_latest``, ``srtt``: the latest RTT sample and the smoothed RTT / the minimum RTT (1 before one);
* ``min_rtt``: the minimum RTT, seconds;
* ``loss_frac``: retransmissions / packets sent in the step; ``ecn_frac``: ECN echoes / ACKs;
* ``cwnd``, ``inflight``: the window and the packets in flight / the estimated BDP (the initial window
  before there is an estimate);
* ``rate``: the pacing rate / max_bw (0 in window mode).

With ``privileged=True`` (``OBS_NAMES``) the observation knows the path, as in earlier versions:

* ``delivery_rate``: packets newly acknowledged × packet size × 8 / step / bottleneck rate;
* ``send_rate``: wire bits sent (retransmissions included) / step / bottleneck rate;
* ``rtt_ratio``: mean RTT sample of the step / the minimum RTT seen so far (≥ 1; the last value is kept
  through a step without samples, 1 before the first);
* ``loss_frac``: retransmissions / packets sent in the step;
* ``ecn_frac``: ACKs carrying ECN-Echo / ACKs in the step;
* ``cwnd``: the window / the path's BDP (bottleneck rate × base RTT / packet size);
* ``rate``: the pacing rate / bottleneck rate (0 in window mode).

Action: a Box of one value ``a`` in [-1, 1]; the window (or pacing rate) is multiplied by
``2 ** (action_scale · a)`` and clipped to [1, ``max_cwnd_bdp`` × BDP] packets (or [one packet per base
RTT, ``max_rate`` × bottleneck rate]); ``action="absolute"`` sets the window to
``2 ** ((a + 1) / 2 · log2(max_cwnd_bdp × BDP))`` packets (log-uniform over the same range). The clips
are the environment's limits, not something the agent observes.

Reward (default; ``reward=callable(info) -> float`` replaces it)::

    delivery_rate − delay_weight · queue_delay / base_rtt − loss_weight · loss_frac

with ``queue_delay = max(mean RTT of the step − base RTT, 0)`` (per ACK, ``delivery_rate`` is over the last
minimum RTT: one ACK's step alone has no rate) and the base RTT the path's true minimum (round-trip
propagation + one packet's serialisation at each link of the data path and an ACK's on the way back),
the Aurora/Orca shape of throughput − δ·delay − λ·loss, each term normalised.

An episode runs from the agent flow's start to the scenario's ``duration`` (``truncated``); it is
``terminated`` only when a finite or stopped agent flow has all its data acknowledged.
``reset(seed=s)`` re-creates the simulation with seed ``s``; ``reset()`` without a seed uses the
scenario's seed the first time and the previous episode's seed + 1 after that. Same seed + same actions
→ identical observations, rewards and infos.
"""
from __future__ import annotations

import collections
import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional, SupportsFloat, Union

import gymnasium
import numpy as np
from gymnasium import spaces

from . import _native
from .errors import ScenarioError
from .scenario import ScenarioLike, as_scenario
from .units import UnitError, parse_time, show_value


def _advance(call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` (the stepper's ``advance``/``advance_all``), with a run that went over its budget
    (``[limits]``) raised as the ScenarioError ``cclab.run`` gives for it, naming the limit."""
    try:
        return call(*args)
    except _native.SpecError as e:
        if e.field.startswith("limits."):
            raise ScenarioError([(e.field, e.message)]) from None
        raise


__all__ = ["DEFAULT_SCENARIO", "ENV_ID", "INFO_KEYS", "LIMITS", "OBS_NAMES", "SENDER_OBS_NAMES", "CongestionControlEnv"]

ENV_ID = "cclab/CongestionControl-v0"
#: The scenario used when none is given: the agent's flow (flow 0; its ``cc`` is a placeholder, replaced
#: by the agent) and one CUBIC flow as cross traffic share a 10 Mbit/s drop-tail bottleneck, both at 20 ms
#: RTT, buffer one BDP (17 packets), 10 s: 1000 steps of 10 ms, 500 of the default step (one RTT). Kept
#: here rather than in scenarios/, whose files are the papers' experiments (and the golden specs').
DEFAULT_SCENARIO: dict[str, Any] = {
    "name": "gym-small",
    "duration": "10s",
    "seed": 1,
    "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP", "queue": "droptail"}},
    "flows": [
        {"cc": "newreno", "rtt": "20ms"},
        {"cc": "cubic", "rtt": "20ms", "start": ["0s", "0.1s"]},
    ],
}
#: The observation with ``privileged=True``: normalised by the bottleneck's rate and the path's true BDP.
OBS_NAMES = ("delivery_rate", "send_rate", "rtt_ratio", "loss_frac", "ecn_frac", "cwnd", "rate")
PRIVILEGED_OBS_NAMES = OBS_NAMES
#: The default observation: only what the sender measures, normalised only by its own estimates.
SENDER_OBS_NAMES = ("delivery_rate", "send_rate", "rtt_latest", "srtt", "min_rtt", "loss_frac", "ecn_frac", "cwnd",
                    "inflight", "rate")
ACTIONS = ("cwnd", "rate", "absolute")
STEP_ON = ("interval", "ack")
_FIELDS: list[str] = list(_native.Stepper.FIELDS)
_F = {k: i for i, k in enumerate(_FIELDS)}
(_T, _DT, _ACKS, _ACKED, _ECN, _RTT_N, _RTT_MEAN, _SENT_PKTS, _SENT_BYTES, _RETX, _CWND, _PACING,
 _FINISHED, _MIN_RTT, _LINK_TX, _SRTT, _IN_FLIGHT, _RTT_LAST) = (
    _F[k] for k in ("t", "dt", "acks", "acked_pkts", "ecn_acks", "rtt_n", "rtt_mean", "sent_pkts", "sent_bytes", "retransmits",
                    "cwnd", "pacing_bps", "finished", "min_rtt", "link_tx_bytes", "srtt", "in_flight", "rtt_last"))

#: Every key of a step's info dict: the simulator's values (``_native.Stepper.FIELDS``) and the derived ones.
INFO_KEYS: tuple[str, ...] = (*_FIELDS, "delivery_rate", "loss_frac", "ecn_frac", "queue_delay", "utilization")

Reward = Callable[[dict[str, float]], SupportsFloat]


def _bad(arg: str, msg: str) -> ValueError:
    return ValueError(f"{arg}: {msg}")


def _got(v: Any) -> str:
    """A value in a message: its repr, cut when long, or its type when the repr is Python's default
    ``<object object at 0x…>`` (which says nothing to the user)."""
    text = repr(v)
    if " at 0x" in text:
        return f"a Python {type(v).__name__}"
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text)} characters)"


#: Upper bounds of the constructor's arguments (and the shortest step), each refused above with a
#: ValueError naming the argument (docs/gym.md "Errors"). Why these values:
#: ``history``: each step copies the stack (10 × history values), so 1000 already costs about what the
#: simulator's step does, and is 10 s of history at 10 ms, the whole default episode (10^9 ran out of
#: memory at reset). ``action_scale``: one step multiplies by up to 2^scale; 2^64 ≈ 1.8e19 already
#: jumps from one clip to the other of any window or rate range allowed here (2000 overflowed a float).
#: ``max_cwnd_bdp``, ``max_rate``: a window of 10^6 BDP is far above any buffer the simulator allows,
#: so larger clips change nothing, and keep the observation finite in float32 (1e300 became inf).
#: ``rate_cwnd_gain``: a window cap of 1000 × rate × srtt no longer caps anything. ``delay_weight``,
#: ``loss_weight``: the reward's terms are normalised to about 1, so 10^6 already makes the others
#: vanish (1e308 gave rewards of -9e307). ``step_min``: 1 µs, about one 1500-byte packet at 10 Gbit/s; a
#: shorter step advances no event (1e-12 s made an episode of 10^13 empty steps).
LIMITS: dict[str, Any] = {"history": 1000, "action_scale": 64.0, "max_cwnd_bdp": 1e6, "max_rate": 1e6,
                          "rate_cwnd_gain": 1e3, "delay_weight": 1e6, "loss_weight": 1e6, "step_min": 1e-6}


def _number(v: Any) -> bool:
    return not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.integer, np.floating))


# Below the range the messages are those of before the upper bounds ("must be a positive number, got 0");
# above it they give the whole range.
def _positive(arg: str, v: Any) -> float:
    """A number in (0, LIMITS[arg]]."""
    hi = LIMITS[arg]
    if not _number(v) or math.isnan(v) or v <= 0:
        raise _bad(arg, f"must be a positive number, got {_got(v)}")
    if not v <= hi:
        raise _bad(arg, f"must be a number in (0, {hi:g}], got {_got(v)}")
    return float(v)


def _nonneg(arg: str, v: Any) -> float:
    """A number in [0, LIMITS[arg]]."""
    hi = LIMITS[arg]
    if not _number(v) or math.isnan(v) or v < 0:
        raise _bad(arg, f"must be a finite number ≥ 0, got {_got(v)}")
    if not v <= hi:
        raise _bad(arg, f"must be a number in [0, {hi:g}], got {_got(v)}")
    return float(v)


def _count(arg: str, v: Any) -> int:
    """An integer in [1, LIMITS[arg]] (numpy integers included)."""
    hi = LIMITS[arg]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
        raise _bad(arg, f"must be a positive integer, got {_got(v)}")
    if v > hi:
        raise _bad(arg, f"must be an integer in [1, {hi}], got {_got(v)}")
    return int(v)


def _action_value(action: Any) -> float:
    """The one value of an action, checked against the action space Box(-1, 1, (1,), float32): numbers
    only (not strings, booleans or objects), exactly one value in any shape ((1,), (), (1, 1)), finite,
    within [-1, 1]. Before: an empty action raised IndexError, an object TypeError, the second value of a
    2-element action was ignored and 1.5 was silently clipped."""
    if type(action) is np.ndarray and action.shape == (1,) and action.dtype.kind == "f":
        a = float(action[0])  # the common case (an agent's float32 array), checked in a fraction of a µs
    elif isinstance(action, (float, int)) and not isinstance(action, bool):
        a = float(action)
    else:
        try:
            arr = np.asarray(action)
        except (ValueError, TypeError):  # ragged nested lists
            raise _bad("action", f"must be a number or an array of numbers, got {show_value(action)}") from None
        if arr.dtype.kind not in "fiu":
            got = show_value(action) if arr.dtype.kind == "O" else f"an array of {arr.dtype}"
            raise _bad("action", f"must be a number or an array of numbers, got {got}")
        if arr.size != 1:
            raise _bad("action", f"must hold exactly one value (the action space is Box(-1, 1, (1,))), got shape {arr.shape}")
        a = float(arr.reshape(-1)[0])
    if not math.isfinite(a):
        raise _bad("action", f"must be finite, got {a}")
    if not -1.0 <= a <= 1.0:
        raise _bad("action", f"must be within the action space [-1, 1], got {a:g} (clip it, e.g. with "
                             "gymnasium.wrappers.ClipAction)")
    return a


class _SenderView:
    """What one sender has measured, kept across the steps of an episode, and its observation from that
    alone (``SENDER_OBS_NAMES``): rates over the last minimum RTT, normalised by the largest delivery
    rate measured over the last ``BW_WINDOW_RTTS`` minimum RTTs (the sender's estimate of its bottleneck
    bandwidth, BBR's windowed max filter: a capacity that falls is followed within that window, where an
    episode-long maximum kept the old rate forever); RTTs by the minimum RTT; the window and data in
    flight by the estimated BDP (that bandwidth × the minimum RTT)."""

    #: The bandwidth filter's window in minimum RTTs (BBR's BtlBw filter spans 10 round trips).
    BW_WINDOW_RTTS = 10.0

    #: Upper bounds of the observation (its lower bounds are 0).
    HIGH = (1.0, 8.0, 100.0, 100.0, 10.0, 1.0, 1.0, 1e3, 1e3, 1e3)

    def __init__(self, packet_size: int, initial_cwnd: float) -> None:
        self.packet_size = packet_size
        self.initial_cwnd = initial_cwnd
        self.reset(0.0)

    def reset(self, t: float) -> None:
        self._hist: collections.deque[tuple[float, float, float]] = collections.deque([(t, 0.0, 0.0)])
        # (time, rate) samples, rates strictly decreasing from the front: the front is the window's max.
        self._bw: collections.deque[tuple[float, float]] = collections.deque()
        self._acked = self._sent = 0.0
        self.max_bw = self.delivery_bps = self.send_bps = 0.0
        self.min_rtt = self.srtt = self.latest = 0.0

    def update(self, v: Sequence[float]) -> None:
        """Takes one step's values (``Stepper.FIELDS``)."""
        t = v[_T]
        self._acked += v[_ACKED] * self.packet_size * 8.0
        self._sent += v[_SENT_BYTES] * 8.0
        self.min_rtt, self.srtt = v[_MIN_RTT], v[_SRTT]
        if v[_RTT_N] > 0:
            self.latest = v[_RTT_LAST]
        # Rates over the last minimum RTT (over the step when longer, or since the start before a sample):
        # one ACK's step alone would say nothing about a rate.
        hist = self._hist
        hist.append((t, self._acked, self._sent))
        span = max(self.min_rtt, v[_DT])
        while len(hist) > 2 and hist[1][0] <= t - span:
            hist.popleft()
        t0, a0, s0 = hist[0]
        if t > t0:
            self.delivery_bps = (self._acked - a0) / (t - t0)
            self.send_bps = (self._sent - s0) / (t - t0)
        bw = self._bw
        while bw and bw[-1][1] <= self.delivery_bps:
            bw.pop()
        bw.append((t, self.delivery_bps))
        if self.min_rtt > 0:
            while bw[0][0] < t - self.BW_WINDOW_RTTS * self.min_rtt:
                bw.popleft()
        self.max_bw = bw[0][1]

    def bdp_pkts(self) -> float:
        """The estimated BDP in packets; the initial window before there is an estimate."""
        if self.max_bw > 0 and self.min_rtt > 0:
            return max(self.max_bw * self.min_rtt / (8.0 * self.packet_size), 1.0)
        return max(self.initial_cwnd, 1.0)

    def observe(self, loss: float, ecn: float, cwnd: float, in_flight: float, pacing_bps: float) -> list[float]:
        bw, rtt0, bdp = self.max_bw, self.min_rtt, self.bdp_pkts()
        x = [self.delivery_bps / bw if bw > 0 else 0.0, self.send_bps / bw if bw > 0 else 0.0,
             self.latest / rtt0 if rtt0 > 0 and self.latest > 0 else 1.0,
             self.srtt / rtt0 if rtt0 > 0 and self.srtt > 0 else 1.0,
             rtt0, loss, ecn, cwnd / bdp, in_flight / bdp, pacing_bps / bw if bw > 0 else 0.0]
        return [min(max(a, 0.0), hi) for a, hi in zip(x, self.HIGH)]


class _Agent:
    """One driven flow: its constants (from the run spec), the control the agent set, what its sender
    measured, and the step's observation and default reward from them."""

    def __init__(self, spec: dict[str, Any], index: int, flow_ix: int, link: int, action: str, privileged: bool,
                 max_cwnd_bdp: float, max_rate: float) -> None:
        flow, links = spec["flows"][flow_ix], spec["links"]
        self.index, self.flow, self.action, self.privileged = index, flow_ix, action, privileged
        tr = flow["transport"]
        self.packet_size = int(tr["packet_size"])
        header = self.packet_size - int(tr["mss"])
        # The slowest link of this flow's data path (first of equals), or the one asked for (agent 0).
        bottleneck = link if index == 0 else min(flow["path"], key=lambda l: (links[l]["rate_bps"], l))
        self.bottleneck_bps = float(links[bottleneck]["rate_bps"])
        # The path's true minimum RTT: propagation + one data packet serialised at each link of the
        # data path and one ACK at each link of the ACK path (store and forward).
        self.base_rtt = (float(flow["rtt"]) + sum(self.packet_size * 8 / links[l]["rate_bps"] for l in flow["path"])
                         + sum(header * 8 / links[l]["rate_bps"] for l in flow["ack_path"]))
        self.bdp_pkts = self.bottleneck_bps * self.base_rtt / (8 * self.packet_size)
        self.initial_cwnd = float(tr["initial_cwnd"])
        self.cwnd_max = max(max_cwnd_bdp * self.bdp_pkts, 1.0)
        self.rate_min = self.packet_size * 8 / self.base_rtt
        self.rate_max = max(max_rate * self.bottleneck_bps, self.rate_min)
        if privileged:
            self.names: tuple[str, ...] = PRIVILEGED_OBS_NAMES
            self.high = [float(np.float32(x)) for x in (8.0, 8.0, 100.0, 1.0, 1.0, self.cwnd_max / self.bdp_pkts,
                                                        self.rate_max / self.bottleneck_bps)]
        else:
            self.names = SENDER_OBS_NAMES
            self.high = list(_SenderView.HIGH)
        self.view = _SenderView(self.packet_size, self.initial_cwnd)
        self.ctl = 0.0
        self.rtt_ratio = 1.0
        self.last_rtt = 0.0
        self.obs: list[float] = []

    def space(self, history: int) -> spaces.Box:
        high = np.array(self.high, dtype=np.float32)
        return spaces.Box(low=np.zeros(len(self.names) * history, dtype=np.float32), high=np.tile(high, history),
                          dtype=np.float32)

    def reset(self, sim: Any, t: float, rate_cwnd_gain: float, history: int) -> None:
        if self.action == "rate":
            self.ctl = min(max(self.initial_cwnd * self.packet_size * 8 / self.base_rtt, self.rate_min), self.rate_max)
            sim.set_rate(self.ctl, rate_cwnd_gain, self.index)
        else:
            self.ctl = min(max(self.initial_cwnd, 1.0), self.cwnd_max)
            sim.set_cwnd(self.ctl, self.index)
        self.rtt_ratio, self.last_rtt = 1.0, 0.0
        self.view.reset(t)
        if self.privileged:
            first = self._privileged_obs(sim, [0.0, 0.0, 1.0, 0.0, 0.0])
        else:
            first = self.view.observe(0.0, 0.0, self.ctl if self.action != "rate" else sim.cwnd_of(self.index),
                                      0.0, self.ctl if self.action == "rate" else 0.0)
        self.obs = first * history

    def act(self, sim: Any, a: float, action_scale: float, rate_cwnd_gain: float) -> None:
        if self.action == "absolute":
            # Log-uniform over [1, cwnd_max]: -1 is one packet, +1 the largest window, 0 their geometric mean.
            self.ctl = min(max(2.0 ** ((a + 1.0) / 2.0 * math.log2(self.cwnd_max)), 1.0), self.cwnd_max)
            sim.set_cwnd(self.ctl, self.index)
        elif self.action == "cwnd":
            self.ctl = min(max(self.ctl * 2.0 ** (action_scale * a), 1.0), self.cwnd_max)
            sim.set_cwnd(self.ctl, self.index)
        else:
            self.ctl = min(max(self.ctl * 2.0 ** (action_scale * a), self.rate_min), self.rate_max)
            sim.set_rate(self.ctl, rate_cwnd_gain, self.index)

    def observe(self, sim: Any, v: Sequence[float], per_ack: bool, history: int) -> dict[str, float]:
        """Takes the step's values: updates the observation stack and returns the step's info."""
        dt = v[_DT]
        norm = 8.0 / (dt * self.bottleneck_bps) if dt > 0 else 0.0
        self.view.update(v)
        # One ACK's step says nothing about a rate: per ACK, the delivery rate is over the last minimum RTT.
        delivery = self.view.delivery_bps / self.bottleneck_bps if per_ack else v[_ACKED] * self.packet_size * norm
        send = v[_SENT_BYTES] * norm
        if v[_RTT_N] > 0:
            self.last_rtt = v[_RTT_MEAN]
            self.rtt_ratio = v[_RTT_MEAN] / v[_MIN_RTT]
        rtt = self.last_rtt
        loss = v[_RETX] / v[_SENT_PKTS] if v[_SENT_PKTS] > 0 else 0.0
        ecn = v[_ECN] / v[_ACKS] if v[_ACKS] > 0 else 0.0
        if self.privileged:
            obs1 = self._privileged_obs(sim, [delivery, send, self.rtt_ratio, loss, ecn])
        else:
            obs1 = self.view.observe(loss, ecn, v[_CWND], v[_IN_FLIGHT], v[_PACING])
        self.obs = self.obs[len(self.names):] + obs1 if history > 1 else obs1
        info = dict(zip(_FIELDS, v))
        info["delivery_rate"] = delivery
        info["loss_frac"] = loss
        info["ecn_frac"] = ecn
        info["queue_delay"] = max(rtt - self.base_rtt, 0.0) if rtt > 0 else 0.0
        info["utilization"] = v[_LINK_TX] * norm
        return info

    def reward(self, info: dict[str, float], delay_weight: float, loss_weight: float) -> float:
        return info["delivery_rate"] - delay_weight * info["queue_delay"] / self.base_rtt - loss_weight * info["loss_frac"]

    def _privileged_obs(self, sim: Any, measured: list[float]) -> list[float]:
        """The privileged observation: the measured values, then the control's, clipped to the space."""
        if self.action == "rate":
            measured += [sim.cwnd_of(self.index) / self.bdp_pkts, self.ctl / self.bottleneck_bps]
        else:
            measured += [self.ctl / self.bdp_pkts, 0.0]
        return [min(max(x, 0.0), hi) for x, hi in zip(measured, self.high)]


def _reward_value(got: Any) -> float:
    """A reward callable's value as a finite float, or a ValueError naming ``reward``."""
    try:
        reward = float(got)
    except (TypeError, ValueError, OverflowError):
        reward = math.nan
    if not math.isfinite(reward):  # a NaN or inf reward would poison any training silently
        raise _bad("reward", f"the callable must return a finite number, got {_got(got)}")
    return reward


class _Core:
    """What the single- and the multi-agent environment share: the arguments' checks, the driven flows
    (:class:`_Agent`) and the simulation."""

    history: int
    action_scale: float
    delay_weight: float
    loss_weight: float
    rate_cwnd_gain: float
    action_kind: str
    privileged: bool
    step_on: str
    link: int
    step_s: float
    _info_keys: Optional[tuple[str, ...]]
    _spec: dict[str, Any]
    _reward_fn: Optional[Reward]
    _agents: list[_Agent]
    _seed: int
    _first_reset: bool
    _sim: Optional[Any]

    def _setup(self, scenario: Optional[ScenarioLike], agents: Sequence[Any], action: str,
               step: Union[float, str, None], history: int, action_scale: float, delay_weight: float,
               loss_weight: float, reward: Optional[Reward], max_cwnd_bdp: float, max_rate: float,
               rate_cwnd_gain: float, link: Optional[int], info_keys: Optional[Sequence[str]], privileged: bool,
               step_on: str) -> None:
        """Checks the arguments shared by the single- and the multi-agent environment and sets up."""
        if action not in ACTIONS:
            raise _bad("action", f"must be one of {', '.join(map(repr, ACTIONS))}, got {_got(action)}")
        if step_on not in STEP_ON:
            raise _bad("step_on", f"must be one of {', '.join(map(repr, STEP_ON))}, got {_got(step_on)}")
        if not isinstance(privileged, (bool, np.bool_)):
            raise _bad("privileged", f"must be True or False, got {_got(privileged)}")
        if reward is not None and not callable(reward):
            raise _bad("reward", f"must be a callable taking the step's info dict, got {_got(reward)}")
        if scenario is None:
            scenario = copy.deepcopy(DEFAULT_SCENARIO)
        if not isinstance(scenario, (str, Path, dict)) and not hasattr(scenario, "to_spec"):
            raise _bad("scenario", f"must be a scenario file path, a dict or a cclab.Scenario, got {_got(scenario)}")
        spec = as_scenario(scenario).to_spec()
        nflows = len(spec["flows"])
        for a in agents:
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < nflows:
                raise _bad("agent_flow", f"must be a flow index in [0, {nflows}), got {_got(a)}")
        if len(set(agents)) != len(agents):
            raise _bad("agent_flow", f"each flow may be driven once, got {_got(list(agents))}")
        flow = spec["flows"][agents[0]]
        if step is None:
            step_s = float(flow["rtt"])
        else:
            try:
                step_s = parse_time(step)
            except UnitError as e:
                raise _bad("step", str(e)) from None
            if not math.isfinite(step_s) or step_s <= 0:
                raise _bad("step", f"must be a positive number, got {_got(step_s)}")
            if step_s < LIMITS["step_min"]:
                raise _bad("step", f"must be at least 1 µs ({LIMITS['step_min']:g} s), got {step_s:g}")
        self.history = _count("history", history)
        self.action_scale = _positive("action_scale", action_scale)
        self.delay_weight = _nonneg("delay_weight", delay_weight)
        self.loss_weight = _nonneg("loss_weight", loss_weight)
        max_cwnd_bdp = _positive("max_cwnd_bdp", max_cwnd_bdp)
        max_rate = _positive("max_rate", max_rate)
        self.rate_cwnd_gain = _positive("rate_cwnd_gain", rate_cwnd_gain)
        links = spec["links"]
        if link is None:
            link = min(flow["path"], key=lambda l: (links[l]["rate_bps"], l))
        elif isinstance(link, bool) or not isinstance(link, int) or not 0 <= link < len(links):
            raise _bad("link", f"must be a directional link index in [0, {len(links)}), got {_got(link)}")
        if info_keys is not None:
            try:
                keys = None if isinstance(info_keys, str) else list(info_keys)
            except TypeError:  # not iterable
                keys = None
            if keys is None or not all(isinstance(k, str) for k in keys):
                raise _bad("info_keys", f"must be a list of key names, got {_got(info_keys)}")
            unknown = [k for k in keys if k not in INFO_KEYS]
            if unknown:
                raise _bad("info_keys", f"unknown key {_got(unknown[0])}; allowed: {', '.join(INFO_KEYS)}")
            self._info_keys = tuple(keys)
        else:
            self._info_keys = None
        # The stepped run needs no time series: one sample at the start and one at the end.
        spec["sample_interval"] = spec["duration"]
        spec["trace_packets"] = False
        self._spec = spec
        self.action_kind = action
        self.privileged = bool(privileged)
        self.step_on = step_on
        self.link = link
        self.step_s = step_s
        self._reward_fn = reward
        self._agents = [_Agent(spec, i, a, link, action, bool(privileged), max_cwnd_bdp, max_rate) for i, a in enumerate(agents)]
        self._seed = int(spec["seed"])
        self._first_reset = True
        self._sim = None

    def _new_episode(self, seed: Optional[int]) -> Any:
        """The seed logic of ``reset`` and a new simulation run to the first driven flow's start."""
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
                raise _bad("seed", f"must be an integer in [0, 2^63), got {_got(seed)}")
            self._seed = int(seed)
        elif not self._first_reset:
            self._seed = (self._seed + 1) % 2**63
        self._first_reset = False
        self._spec["seed"] = self._seed
        agents = self._agents
        try:
            sim = _native.Stepper(json.dumps(self._spec), agents[0].flow, self.link, [a.flow for a in agents[1:]])
        except _native.SpecError as e:
            raise ValueError(f"scenario: the simulator rejects the run spec: {e}") from None
        self._sim = sim
        _advance(sim.advance, min(sim.starts))  # up to the first driven flow's start (cross traffic may run before it)
        for a in agents:
            a.reset(sim, sim.now, self.rate_cwnd_gain, self.history)
        return sim


class CongestionControlEnv(_Core, gymnasium.Env[np.ndarray, np.ndarray]):
    """One flow of a cclab scenario driven by the agent (see the module documentation).

    Arguments (all keyword, given to ``gymnasium.make``):

    * ``scenario``: a scenario TOML path, a dict or a :class:`cclab.Scenario` (default
      ``DEFAULT_SCENARIO``);
    * ``agent_flow``: index of the agent's flow in the resolved scenario (flows expanded by ``count``),
      default 0; its ``cc`` and ``params`` are not used;
    * ``action``: ``"cwnd"`` (default: the window scaled by 2^(scale·a)), ``"rate"`` (the pacing rate
      scaled the same way) or ``"absolute"`` (the window set to 2^((a+1)/2 · log2 max) packets);
    * ``privileged``: False (default) observes only what the sender measures (``SENDER_OBS_NAMES``);
      True the observation normalised by the bottleneck's rate and the true BDP (``OBS_NAMES``);
    * ``step_on``: ``"interval"`` (default: a step is ``step`` of simulated time) or ``"ack"`` (a step
      ends at the agent's next ACK, or after ``step`` without one);
    * ``step``: the step's simulated time, seconds or a string with a unit (``"10ms"``); default the
      agent flow's ``rtt``;
    * ``history``: observations stacked (default 1);
    * ``action_scale``: the action's exponent scale (default 1: one step at most halves or doubles);
    * ``delay_weight`` (δ, default 1.0), ``loss_weight`` (λ, default 10.0), or ``reward``: a callable
      taking the step's info dict;
    * ``max_cwnd_bdp`` (default 64), ``max_rate`` (default 64): upper clips of the window (× BDP) and
      of the pacing rate (× bottleneck rate);
    * ``rate_cwnd_gain``: in rate mode, the window cap over pacing rate × smoothed RTT (default 2);
    * ``link``: index of the directional link the info's ``link_*`` / ``queue_*`` values and the
      normalisation use; default the slowest link of the agent's path (first of equals);
    * ``info_keys``: the keys a step's info keeps (default all of ``INFO_KEYS``; ``[]`` makes vector
      environments, which merge infos key by key, ~4× faster).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class attribute)

    def __init__(
        self,
        scenario: Optional[ScenarioLike] = None,
        *,
        agent_flow: int = 0,
        action: str = "cwnd",
        step: Union[float, str, None] = None,
        history: int = 1,
        action_scale: float = 1.0,
        delay_weight: float = 1.0,
        loss_weight: float = 10.0,
        reward: Optional[Reward] = None,
        max_cwnd_bdp: float = 64.0,
        max_rate: float = 64.0,
        rate_cwnd_gain: float = 2.0,
        link: Optional[int] = None,
        info_keys: Optional[Sequence[str]] = None,
        privileged: bool = False,
        step_on: str = "interval",
        render_mode: Optional[str] = None,
    ) -> None:
        if render_mode is not None:
            raise _bad("render_mode", f"this environment does not render, got {_got(render_mode)}")
        self._setup(scenario, [agent_flow], action, step, history, action_scale, delay_weight, loss_weight, reward,
                    max_cwnd_bdp, max_rate, rate_cwnd_gain, link, info_keys, privileged, step_on)
        a = self._agents[0]
        self.agent_flow = agent_flow
        self.obs_names = a.names
        self.packet_size, self.bottleneck_bps, self.base_rtt = a.packet_size, a.bottleneck_bps, a.base_rtt
        self.bdp_pkts, self.initial_cwnd, self.cwnd_max = a.bdp_pkts, a.initial_cwnd, a.cwnd_max
        self.rate_min, self.rate_max = a.rate_min, a.rate_max
        self.observation_space = a.space(self.history)
        self.action_space = spaces.Box(low=-1.0, high=1.0, shape=(1,), dtype=np.float32)

    # ---- Gymnasium API ----

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63):
            raise _bad("seed", f"must be an integer in [0, 2^63), got {_got(seed)}")
        super().reset(seed=None if seed is None else int(seed))
        sim = self._new_episode(seed)
        a = self._agents[0]
        info = {"t": sim.now, "seed": self._seed, "base_rtt": self.base_rtt, "bdp_pkts": self.bdp_pkts,
                "bottleneck_bps": self.bottleneck_bps, "step": self.step_s}
        return np.array(a.obs, dtype=np.float32), info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        sim = self._sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        a = self._agents[0]
        a.act(sim, _action_value(action), self.action_scale, self.rate_cwnd_gain)
        v = _advance(sim.advance, sim.now + self.step_s, self.step_on == "ack")
        info = a.observe(sim, v, self.step_on == "ack", self.history)
        if self._reward_fn is not None:
            reward = _reward_value(self._reward_fn(info))  # an exception inside the user's callable is theirs
        else:
            reward = a.reward(info, self.delay_weight, self.loss_weight)
        if self._info_keys is not None:
            info = {k: info[k] for k in self._info_keys}
        terminated = v[_FINISHED] > 0
        truncated = not terminated and v[_T] >= sim.end - 1e-12
        return np.array(a.obs, dtype=np.float32), reward, terminated, truncated, info

    @property
    def now(self) -> float:
        """Simulated time (s)."""
        return self._sim.now if self._sim is not None else 0.0


def _register() -> None:
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="cclab.gym:CongestionControlEnv")


_register()
