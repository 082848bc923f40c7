#!/usr/bin/env python3
"""Simple policies on the Gymnasium environment (cclab.gym), and a tiny one trained by the
cross-entropy method (numpy only). Results and their reading: docs/gym.md.

Scenario: the environment's default (``cclab.gym.DEFAULT_SCENARIO``: the agent + one CUBIC flow at
20 ms on 10 Mbit/s, buffer one BDP, 10 s), step 10 ms, the default reward (δ = 1, λ = 10). Each policy runs one
episode per evaluation seed (the cross flow's start is drawn from it); the table gives the mean per-step
reward of an episode as mean ± 95 % CI over seeds (Student t), and the agent's share of the link, the
bottleneck utilisation, the agent's queueing delay and loss, all over the episode.

Policies:
* ``bdp``: hold the window at the path's BDP (18 packets) whatever happens;
* ``half-bdp``: hold it at half the BDP (the fair share against one other flow);
* ``aimd``: Reno in Python: +1 packet per base RTT, halve on a step with retransmissions;
* ``random``: uniform actions;
* ``cem``: a linear policy ``a = tanh(w · [obs, 1])`` (11 weights over the sender-only observation,
  ``cclab.gym.SENDER_OBS_NAMES``) trained by the cross-entropy method on training seeds disjoint from the
  evaluation seeds.

``bdp`` and ``half-bdp`` are oracles (they are told the path's BDP); ``aimd`` and ``cem`` see only what the
sender measures.

    .venv/bin/python examples/gym_policy.py [--seeds 10] [--iters 20] [--pop 16] [--no-train]
"""
from __future__ import annotations

import argparse
import math
import time
from typing import Callable

import gymnasium
import numpy as np

import cclab.gym  # registers the environment
from cclab.gym import ENV_ID, SENDER_OBS_NAMES

STEP = 0.01
Policy = Callable[[np.ndarray, dict, "cclab.gym.CongestionControlEnv"], float]

# Two-sided 95 % Student t quantiles by degrees of freedom (1.96 beyond).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 25: 2.060, 30: 2.042}


def ci95(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    m = float(np.mean(xs))
    if n < 2:
        return m, float("nan")
    df = n - 1
    t = _T95.get(df) or next((v for k, v in sorted(_T95.items()) if k >= df), 1.96)
    return m, t * float(np.std(xs, ddof=1)) / math.sqrt(n)


def to_cwnd(target: float, cwnd: float) -> float:
    return min(max(math.log2(max(target, 1.0) / cwnd), -1.0), 1.0)


def hold(fraction: float) -> Policy:
    return lambda obs, info, env: to_cwnd(math.ceil(fraction * env.bdp_pkts), info.get("cwnd", env.initial_cwnd))


def aimd(obs: np.ndarray, info: dict, env: cclab.gym.CongestionControlEnv) -> float:
    cwnd = info.get("cwnd", env.initial_cwnd)
    if info.get("retransmits", 0) > 0:
        return to_cwnd(cwnd / 2, cwnd)
    return to_cwnd(cwnd + env.step_s / env.base_rtt, cwnd)


def random_policy(rng: np.random.Generator) -> Policy:
    return lambda obs, info, env: float(rng.uniform(-1, 1))


def linear(w: np.ndarray) -> Policy:
    return lambda obs, info, env: float(np.tanh(w[:-1] @ obs + w[-1]))


def episode(env: gymnasium.Env, policy: Policy, seed: int) -> dict[str, float]:
    u = env.unwrapped
    assert isinstance(u, cclab.gym.CongestionControlEnv)
    obs, info = env.reset(seed=seed)
    rewards, acked, link_tx, qd, retx, sent, dt = [], 0.0, 0.0, [], 0.0, 0.0, 0.0
    done = False
    while not done:
        a = policy(obs, info, u)
        obs, r, term, trunc, info = env.step(np.array([a], dtype=np.float32))
        rewards.append(r)
        acked += info["acked_pkts"] * u.packet_size * 8
        link_tx += info["link_tx_bytes"] * 8
        dt += info["dt"]
        qd.append(info["queue_delay"])
        retx += info["retransmits"]
        sent += info["sent_pkts"]
        done = term or trunc
    return {"reward": float(np.mean(rewards)), "share": acked / max(link_tx, 1.0),
            "util": link_tx / (dt * u.bottleneck_bps), "qdelay_ms": 1e3 * float(np.mean(qd)), "loss": retx / max(sent, 1.0)}


def evaluate(env: gymnasium.Env, policy: Policy, seeds: list[int]) -> dict[str, tuple[float, float]]:
    runs = [episode(env, policy, s) for s in seeds]
    return {k: ci95([r[k] for r in runs]) for k in runs[0]}


def cem(env: gymnasium.Env, seeds: list[int], iters: int, pop: int, rng: np.random.Generator) -> np.ndarray:
    """Cross-entropy method over the weights of ``linear`` (one per observed value and a bias): sample
    ``pop`` weight vectors from a diagonal Gaussian, score each on the training seeds, refit the Gaussian
    to the best quarter."""
    dim = len(SENDER_OBS_NAMES) + 1
    # Small initial weights: the features are O(1) and tanh saturates (a = ±1 every step) beyond ~2.
    mu, sigma = np.zeros(dim), np.full(dim, 0.5)
    n_elite = max(2, pop // 4)
    for it in range(iters):
        ws = mu + sigma * rng.standard_normal((pop, dim))
        scores = np.array([np.mean([episode(env, linear(w), s)["reward"] for s in seeds]) for w in ws])
        elite = ws[np.argsort(scores)[-n_elite:]]
        # Extra noise that decays keeps the search from collapsing onto the first elite (Szita & Lőrincz 2006).
        mu, sigma = elite.mean(axis=0), elite.std(axis=0) + 0.2 * 0.8**it
        print(f"  cem iteration {it + 1:2d}: best {scores.max():+.3f}, mean {scores.mean():+.3f}")
    return mu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10, help="evaluation seeds (100, 101, ...)")
    ap.add_argument("--train-seeds", type=int, default=2, help="training seeds per CEM candidate (1, 2, ...)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--pop", type=int, default=16)
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--scenario", default=None, help="a scenario file (default: the environment's)")
    args = ap.parse_args()
    env = gymnasium.make(ENV_ID, step=STEP, **({"scenario": args.scenario} if args.scenario else {}))
    eval_seeds = list(range(100, 100 + args.seeds))
    rng = np.random.default_rng(0)
    policies: dict[str, Policy] = {"bdp": hold(1.0), "half-bdp": hold(0.5), "aimd": aimd, "random": random_policy(np.random.default_rng(1))}
    t0 = time.perf_counter()
    if not args.no_train:
        print(f"training: CEM, population {args.pop}, {args.iters} iterations, {args.train_seeds} training seeds each")
        w = cem(env, list(range(1, 1 + args.train_seeds)), args.iters, args.pop, rng)
        print("  weights:", ", ".join(f"{n} {x:+.2f}" for n, x in zip((*SENDER_OBS_NAMES, "bias"), w)))
        policies["cem"] = linear(w)
    t_train = time.perf_counter() - t0
    print(f"\n{len(eval_seeds)} evaluation seeds, reward per step (δ = 1, λ = 10); mean ± 95 % CI")
    print(f"{'policy':<10} {'reward':>16} {'agent share':>14} {'utilisation':>14} {'queue delay ms':>16} {'loss':>14}")
    for name, pol in policies.items():
        r = evaluate(env, pol, eval_seeds)
        cells = [f"{r[k][0]:+.3f} ± {r[k][1]:.3f}" if k == "reward" else f"{r[k][0]:.3f} ± {r[k][1]:.3f}"
                 for k in ("reward", "share", "util", "qdelay_ms", "loss")]
        print(f"{name:<10} {cells[0]:>16} {cells[1]:>14} {cells[2]:>14} {cells[3]:>16} {cells[4]:>14}")
    print(f"\ntraining {t_train:.1f} s, total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
