"""Several agent-driven flows in one simulation: a PettingZoo parallel environment (docs/gym.md,
"Several agents").

    from cclab.gym_multi import CongestionControlParallelEnv
    env = CongestionControlParallelEnv(scenario="two_flows.toml", agent_flows=[0, 1], step="10ms")
    obs, infos = env.reset(seed=1)
    obs, rewards, terminations, truncations, infos = env.step({a: env.action_space(a).sample() for a in env.agents})

Each of ``agent_flows`` is one agent, named ``"flow<i>"`` by its flow index, and is what the single-agent
environment (:class:`cclab.gym.CongestionControlEnv`) makes of its one flow: the same observation (the
sender's own, or ``privileged=True``), action (``"cwnd"``, ``"rate"`` or ``"absolute"``), default reward
(each agent's own throughput, queueing delay and loss) and arguments. All agents act at once, then the
simulation runs one step: ``step`` of simulated time, or with ``step_on="ack"`` until any agent's next ACK.
An agent whose finite flow has all its data acknowledged is terminated and leaves ``agents``; everyone is
truncated at the scenario's ``duration``. Same seed + same actions → identical steps.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from .gym import _FINISHED, _T, Reward, _action_value, _advance, _bad, _Core, _got, _reward_value
from .scenario import ScenarioLike

__all__ = ["CongestionControlParallelEnv"]


class CongestionControlParallelEnv(_Core, ParallelEnv):
    """Flows ``agent_flows`` of a cclab scenario, each driven by its own agent (see the module
    documentation); every other argument is :class:`cclab.gym.CongestionControlEnv`'s."""

    metadata: dict[str, Any] = {"name": "cclab_congestion_control_v0", "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        scenario: Optional[ScenarioLike] = None,
        *,
        agent_flows: Sequence[int] = (0, 1),
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
        if isinstance(agent_flows, (str, bytes)) or not isinstance(agent_flows, Sequence) or not agent_flows:
            raise _bad("agent_flows", f"must be a non-empty list of flow indices, got {_got(agent_flows)}")
        self._setup(scenario, list(agent_flows), action, step, history, action_scale, delay_weight, loss_weight,
                    reward, max_cwnd_bdp, max_rate, rate_cwnd_gain, link, info_keys, privileged, step_on)
        self.render_mode = None
        self.possible_agents = [f"flow{a.flow}" for a in self._agents]
        self.agents: list[str] = []
        self._by_name = dict(zip(self.possible_agents, self._agents))
        self._obs_spaces = {n: a.space(self.history) for n, a in self._by_name.items()}
        self._act_space = spaces.Box(low=-1.0, high=1.0, shape=(1,), dtype=np.float32)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        return self._act_space

    def reset(self, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
              ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        sim = self._new_episode(seed)
        self.agents = list(self.possible_agents)
        obs = {n: np.array(a.obs, dtype=np.float32) for n, a in self._by_name.items()}
        infos: dict[str, dict[str, Any]] = {
            n: {"t": sim.now, "seed": self._seed, "base_rtt": a.base_rtt, "bdp_pkts": a.bdp_pkts,
                "bottleneck_bps": a.bottleneck_bps, "step": self.step_s} for n, a in self._by_name.items()}
        return obs, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, float], dict[str, bool],
                                                      dict[str, bool], dict[str, dict[str, Any]]]:
        sim = self._sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        unknown = [k for k in actions if k not in self.agents]
        missing = [k for k in self.agents if k not in actions]
        if unknown or missing:
            raise _bad("actions", f"must give one action for each of {self.agents}, got {_got(sorted(actions))}")
        for n in self.agents:
            a = self._by_name[n]
            a.act(sim, _action_value(actions[n]), self.action_scale, self.rate_cwnd_gain)
        values = _advance(sim.advance_all, sim.now + self.step_s, self.step_on == "ack")
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for n in self.agents:
            a = self._by_name[n]
            v = values[a.index]
            info = a.observe(sim, v, self.step_on == "ack", self.history)
            rewards[n] = (_reward_value(self._reward_fn(info)) if self._reward_fn is not None
                          else a.reward(info, self.delay_weight, self.loss_weight))
            obs[n] = np.array(a.obs, dtype=np.float32)
            terms[n] = v[_FINISHED] > 0
            truncs[n] = not terms[n] and v[_T] >= sim.end - 1e-12
            infos[n] = info if self._info_keys is None else {k: info[k] for k in self._info_keys}
        self.agents = [n for n in self.agents if not (terms[n] or truncs[n])]
        return obs, rewards, terms, truncs, infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        self._sim = None

    @property
    def now(self) -> float:
        """Simulated time (s)."""
        return self._sim.now if self._sim is not None else 0.0
