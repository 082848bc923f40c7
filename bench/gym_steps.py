#!/usr/bin/env python3
"""Steps per second of the Gymnasium environment (cclab.gym) on one core: results in docs/gym.md.

Scenario: the environment's default, ``cclab.gym.DEFAULT_SCENARIO`` (the agent + one CUBIC flow,
10 Mbit/s, 20 ms, BDP buffer, 10 s),
step = 10 ms (1000 steps an episode) unless --step. Each row runs whole episodes and reports:

* ``make``: through ``gymnasium.make`` (its order-enforcing and passive-checker wrappers), one action
  per step, as a training loop sees it;
* ``unwrapped``: the environment itself;
* ``stepper``: ``cclab._native.Stepper.advance`` alone (the Rust simulation + one PyO3 call per step,
  no observation or reward), the floor under the Python layer;
* ``sync2``: ``gymnasium.vector.SyncVectorEnv`` of 2 environments (steps counted per environment);
  ``sync2-noinfo`` the same with ``info_keys=[]`` (the vector wrapper merges infos key by key, which
  costs more than the simulation).

Policies: ``bdp`` (window held at the BDP: a steady flow) and ``random`` (uniform actions: the window
swings over [1, 64 BDP] and the queue overflows, so more events per step). Reported: steps per wall
second and per CPU second of this process (on a machine shared with other jobs the second is the
one-core figure: waiting for a core is not counted), simulated seconds per wall second and simulator
events per step.

    .venv/bin/python bench/gym_steps.py [--episodes 3] [--step 10ms] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import math
import time
from typing import Callable, Optional

import gymnasium
import numpy as np

import cclab.gym
from cclab import _native
from cclab.gym import DEFAULT_SCENARIO, ENV_ID
from cclab.scenario import Scenario


def policy_fn(name: str, rng: np.random.Generator) -> Callable[[np.ndarray, float, float], np.ndarray]:
    """(obs, cwnd now, BDP) -> action."""
    if name == "random":
        return lambda obs, cwnd, bdp: rng.uniform(-1, 1, size=1).astype(np.float32)
    return lambda obs, cwnd, bdp: np.array([min(max(math.log2(math.ceil(bdp) / cwnd), -1.0), 1.0)], dtype=np.float32)


Run = tuple[int, float, float, float, int]  # steps, wall s, CPU s, simulated s, simulator events


def run_env(env: gymnasium.Env, policy: str, episodes: int) -> Run:
    """Steps, wall seconds, CPU seconds, simulated seconds, simulator events."""
    u = env.unwrapped
    assert isinstance(u, cclab.gym.CongestionControlEnv)
    rng = np.random.default_rng(1)
    pol = policy_fn(policy, rng)
    steps, sim_s, events = 0, 0.0, 0
    t0, c0 = time.perf_counter(), time.process_time()
    for ep in range(episodes):
        obs, info = env.reset(seed=ep + 1)
        cwnd, done = u.initial_cwnd, False
        while not done:
            obs, _, term, trunc, info = env.step(pol(obs, cwnd, u.bdp_pkts))
            cwnd = info["cwnd"]
            steps += 1
            done = term or trunc
        sim_s += u.now
        assert u._sim is not None
        events += u._sim.events
    return steps, time.perf_counter() - t0, time.process_time() - c0, sim_s, events


def run_stepper(step: float, episodes: int) -> Run:
    spec = Scenario.from_dict(DEFAULT_SCENARIO).to_spec()
    spec["sample_interval"] = spec["duration"]
    steps, sim_s, events = 0, 0.0, 0
    t0, c0 = time.perf_counter(), time.process_time()
    for ep in range(episodes):
        spec["seed"] = ep + 1
        s = _native.Stepper(json.dumps(spec), 0, 0)
        s.set_cwnd(18.0)
        while s.now < s.end - 1e-12:
            s.advance(s.now + step)
            steps += 1
        sim_s += s.now
        events += s.events
    return steps, time.perf_counter() - t0, time.process_time() - c0, sim_s, events


def run_sync(step: float, episodes: int, info_keys: Optional[list[str]]) -> Run:
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(ENV_ID, step=step, info_keys=info_keys) for _ in range(2)])
    steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for ep in range(episodes):
        envs.reset(seed=[2 * ep + 1, 2 * ep + 2])
        done = False
        while not done:
            _, _, term, trunc, _ = envs.step(np.zeros((2, 1), dtype=np.float32))
            steps += 2
            done = bool(term.any() or trunc.any())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    envs.close()
    return steps, wall, cpu, steps * step, 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--step", default="10ms")
    ap.add_argument("--repeat", type=int, default=3, help="best of N (other load on the machine only slows a run down)")
    args = ap.parse_args()
    from cclab.units import parse_time

    step = parse_time(args.step)
    rows: list[tuple[str, Callable[[], Run]]] = []
    for policy in ("bdp", "random"):
        rows.append((f"make/{policy}", lambda p=policy: run_env(gymnasium.make(ENV_ID, step=step), p, args.episodes)))
        rows.append((f"unwrapped/{policy}", lambda p=policy: run_env(gymnasium.make(ENV_ID, step=step).unwrapped, p, args.episodes)))
    rows.append(("stepper/bdp", lambda: run_stepper(step, args.episodes)))
    rows.append(("sync2/const", lambda: run_sync(step, args.episodes, None)))
    rows.append(("sync2-noinfo/const", lambda: run_sync(step, args.episodes, [])))
    print(f"scenario {DEFAULT_SCENARIO['name']}, step {step * 1e3:g} ms, {args.episodes} episodes, best of {args.repeat}")
    print(f"{'row':<20} {'steps':>7} {'steps/s':>10} {'µs/step':>8} {'steps/CPU-s':>12} {'sim s/wall s':>13} {'events/step':>12}")
    results, cpu_results = {}, {}
    for name, fn in rows:
        runs = [fn() for _ in range(args.repeat)]
        steps, wall, _, sim_s, events = min(runs, key=lambda r: r[1])
        rate = steps / wall
        results[name] = rate
        cpu_results[name] = steps / max(min(r[2] for r in runs), 1e-9)
        ev = f"{events / steps:12.1f}" if events else f"{'':>12}"
        print(f"{name:<20} {steps:7d} {rate:10.0f} {1e6 / rate:8.1f} {cpu_results[name]:12.0f} {sim_s / wall:13.1f} {ev}")
    print(json.dumps({"step_s": step, "steps_per_s": {k: round(v) for k, v in results.items()},
                      "steps_per_cpu_s": {k: round(v) for k, v in cpu_results.items()}}))


if __name__ == "__main__":
    main()
