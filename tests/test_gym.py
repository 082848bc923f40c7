"""cclab.gym: the Gymnasium environment (docs/gym.md)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import cclab  # noqa: E402
import cclab.gym  # noqa: E402
from cclab.gym import ENV_ID, OBS_NAMES, SENDER_OBS_NAMES  # noqa: E402


def one_flow(duration: str = "3s", buffer: object = "BDP", **flow: object) -> dict:
    """The agent alone on a 10 Mbit/s drop-tail bottleneck at 20 ms: the true minimum RTT is 21.2416 ms
    (20 ms + 1.2 ms data and 0.0416 ms ACK serialisation), the BDP 17.70 packets, the buffer 17. An ACK per
    packet (``profile = "paper"``): the window arithmetic below (BDP + 0.3 packets keeps the link busy, a
    step per ACK) needs every packet ACKed at once; with Linux's delayed ACKs, the default, a window of 18
    leaves the link 4 % idle (measured utilisation 0.962)."""
    return {
        "name": "gym-test", "duration": duration, "seed": 1, "transport": {"profile": "paper"},
        "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": buffer}},
        "flows": [dict({"cc": "newreno", "rtt": "20ms"}, **flow)],
    }


def make(**kw: object):
    kw.setdefault("step", "10ms")
    return gymnasium.make(ENV_ID, **kw)


def to_cwnd(target: float, current: float) -> np.ndarray:
    """The action that takes the window from ``current`` to ``target`` (action_scale 1), clipped."""
    return np.array([min(max(math.log2(target / current), -1.0), 1.0)], dtype=np.float32)


def run_constant_cwnd(env, target: float, seed: int = 1) -> list[tuple[float, dict]]:
    """Sets the window to ``target`` packets in the first steps and keeps it; (reward, info) per step."""
    env.reset(seed=seed)
    cwnd = env.unwrapped.initial_cwnd
    out = []
    done = False
    while not done:
        a = to_cwnd(target, cwnd)
        _, r, term, trunc, info = env.step(a)
        cwnd = info["cwnd"]
        out.append((r, info))
        done = term or trunc
    return out


def test_registered_and_check_env_passes_without_warnings():
    from gymnasium.utils.env_checker import check_env

    assert ENV_ID in gymnasium.registry
    for kw in ({}, {"action": "rate", "history": 3}, {"scenario": one_flow(), "step": 0.005}):
        env = make(**kw)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
        assert env.observation_space.shape == (len(SENDER_OBS_NAMES) * kw.get("history", 1),)
        assert env.action_space.shape == (1,)


def test_external_is_not_a_scenario_algorithm():
    assert "external" not in cclab.algorithms()
    with pytest.raises(cclab.ScenarioError, match="unknown algorithm"):
        cclab.Scenario.from_dict(one_flow(cc="external"))


def test_same_seed_and_actions_give_identical_steps_and_other_seeds_differ():
    def episode(seed: int):
        env = make()  # the default scenario: the cross flow's start is drawn from the seed
        obs0, _ = env.reset(seed=seed)
        rng = np.random.default_rng(7)
        steps = [obs0]
        for _ in range(300):
            obs, r, _, _, info = env.step(rng.uniform(-1, 1, size=1).astype(np.float32))
            steps.append((obs, r, info))
        return steps

    a, b, c = episode(5), episode(5), episode(6)
    assert np.array_equal(a[0], b[0])
    for (oa, ra, ia), (ob, rb, ib) in zip(a[1:], b[1:]):
        assert np.array_equal(oa, ob) and ra == rb and ia == ib
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a[1:], c[1:]))


def test_reset_without_seed_uses_the_scenario_seed_then_the_next():
    env = make(scenario=one_flow(duration="1s"))
    assert env.reset()[1]["seed"] == 1
    assert env.reset()[1]["seed"] == 2
    assert env.reset(seed=40)[1]["seed"] == 40
    assert env.reset()[1]["seed"] == 41


def test_constant_bdp_window_fills_the_link_with_no_queue():
    """A window of 18 packets over a BDP of 17.70 (bottleneck rate × true minimum RTT): the link is busy
    all the time and 18 − 17.70 = 0.30 packets wait on average, so after the first 50 ms the
    utilisation is ≥ 0.99 (a step may count one 1.2 ms packet fewer or more than 10 ms hold: 0.96
    or 1.08, which average out) and the mean queue is 0.30 packets; no loss; reward ≈ delivery_rate ≈ 1
    less δ × 0.36 ms / 21.24 ms = 0.017."""
    env = make(scenario=one_flow())
    u = env.unwrapped
    assert u.base_rtt == pytest.approx(0.0212416)
    assert u.bdp_pkts == pytest.approx(17.7013, abs=1e-3)
    steps = run_constant_cwnd(env, 18.0)
    assert len(steps) == 300
    late = steps[5:]
    util = np.mean([i["utilization"] for _, i in late])
    queue = np.mean([i["queue_mean_pkts"] for _, i in late])
    assert util > 0.99, util
    assert queue == pytest.approx(18 - 17.7013, abs=0.02)  # measured 0.2986
    assert sum(i["retransmits"] for _, i in steps) == 0
    assert np.mean([i["delivery_rate"] for _, i in late]) == pytest.approx(1.0, abs=0.01)
    # the 0.3 packets waiting, at 1.2 ms each
    assert np.mean([i["queue_delay"] for _, i in late]) == pytest.approx(0.3 * 0.0012, abs=3e-5)
    assert np.mean([r for r, _ in late]) == pytest.approx(1.0 - 0.017, abs=0.01)


def test_window_far_above_bdp_fills_the_queue_and_costs_reward_with_delay_weight():
    """4 × BDP (71 packets) with a 17-packet buffer: the queue stays nearly full (measured 16.3
    packets on average: it drains a little after each drop), ≈ 16.3 × 1.2 ms = 19.6 ms of queueing delay =
    0.92 base RTT, while the throughput is the same as at BDP, so with δ = 1, λ = 0 the reward drops by
    ≈ 0.9; with δ = 0 it does not drop."""
    def mean_reward(target: float, delay_weight: float) -> tuple[float, float, float]:
        env = make(scenario=one_flow(), delay_weight=delay_weight, loss_weight=0.0)
        late = run_constant_cwnd(env, target)[20:]
        return (float(np.mean([r for r, _ in late])), float(np.mean([i["queue_mean_pkts"] for _, i in late])),
                float(np.mean([i["queue_delay"] for _, i in late])))

    r_bdp, q_bdp, d_bdp = mean_reward(18.0, 1.0)
    r_big, q_big, d_big = mean_reward(4 * 17.7, 1.0)
    assert q_bdp < 1.0 and 15.0 < q_big <= 17.0, (q_bdp, q_big)
    assert d_big == pytest.approx(q_big * 0.0012, rel=0.02) and d_bdp < 0.0012, (d_bdp, d_big)
    assert r_big == pytest.approx(r_bdp - (d_big - d_bdp) / 0.0212416, abs=0.01), (r_bdp, r_big)
    assert r_big < r_bdp - 0.8
    r_bdp0, _, _ = mean_reward(18.0, 0.0)
    r_big0, _, _ = mean_reward(4 * 17.7, 0.0)
    assert r_big0 == pytest.approx(r_bdp0, abs=0.05)


def test_rate_action_paces_the_flow():
    """Rate mode, pacing held at half the bottleneck rate: delivery ≈ 0.5, no queue (the privileged
    observation's rate is over the bottleneck's)."""
    env = make(scenario=one_flow(), action="rate", privileged=True)
    env.reset(seed=1)
    u = env.unwrapped
    rate = u.initial_cwnd * u.packet_size * 8 / u.base_rtt  # the initial rate
    steps = []
    for _ in range(200):
        a = np.array([min(max(math.log2(5e6 / rate), -1.0), 1.0)], dtype=np.float32)
        obs, _, _, _, info = env.step(a)
        rate = info["pacing_bps"]
        steps.append((obs, info))
    assert rate == pytest.approx(5e6)
    late = steps[20:]
    assert np.mean([i["delivery_rate"] for _, i in late]) == pytest.approx(0.5, abs=0.01)
    assert max(i["queue_pkts"] for _, i in late) <= 1
    assert late[-1][0][OBS_NAMES.index("rate")] == pytest.approx(0.5)


def test_episode_is_truncated_at_the_duration_or_terminated_when_a_finite_flow_completes():
    env = make(scenario=one_flow(duration="1s"))
    env.reset(seed=1)
    n, term, trunc = 0, False, False
    while not (term or trunc):
        _, _, term, trunc, info = env.step(np.zeros(1, np.float32))
        n += 1
    assert (n, term, trunc) == (100, False, True)
    assert info["t"] == pytest.approx(1.0)

    env = make(scenario=one_flow(duration="5s", size="150KB"))
    env.reset(seed=1)
    n, term, trunc = 0, False, False
    while not (term or trunc):
        _, _, term, trunc, info = env.step(np.zeros(1, np.float32))
        n += 1
    assert term and not trunc and n < 100  # 104 packets at a window of 10: ~11 RTTs
    assert info["finished"] == 1.0


def test_custom_reward_history_and_info_keys():
    env = make(scenario=one_flow(duration="1s"), reward=lambda info: -info["queue_pkts"], history=2,
               info_keys=["queue_pkts", "utilization"])
    obs, _ = env.reset(seed=1)
    assert obs.shape == (2 * len(SENDER_OBS_NAMES),)
    prev = None
    for _ in range(10):
        obs, r, _, _, info = env.step(np.ones(1, np.float32))
        assert r == -info["queue_pkts"] and list(info) == ["queue_pkts", "utilization"]
        if prev is not None:
            assert np.array_equal(obs[: len(SENDER_OBS_NAMES)], prev[len(SENDER_OBS_NAMES):])  # oldest first
        prev = obs


def test_sync_vector_env_runs_and_matches_single_envs():
    envs = gymnasium.vector.SyncVectorEnv([lambda: make() for _ in range(2)])
    obs, _ = envs.reset(seed=[3, 4])
    assert obs.shape == (2, len(SENDER_OBS_NAMES))
    single = make()
    s_obs, _ = single.reset(seed=4)
    assert np.array_equal(obs[1], s_obs)
    actions = np.linspace(-1, 1, 100, dtype=np.float32)
    for a in actions:
        obs, r, _, _, _ = envs.step(np.array([[a], [a]], dtype=np.float32))
        s_obs, s_r, _, _, _ = single.step(np.array([a], dtype=np.float32))
        assert obs.shape == (2, len(SENDER_OBS_NAMES)) and np.isfinite(r).all()
        assert np.array_equal(obs[1], s_obs) and r[1] == s_r
    envs.close()
    # info_keys=[]: nothing for the vector environment to merge; the same observations.
    envs = gymnasium.vector.SyncVectorEnv([lambda: make(info_keys=[]) for _ in range(2)])
    obs, _ = envs.reset(seed=[3, 4])
    single.reset(seed=4)
    for a in actions[:20]:
        obs, _, _, _, info = envs.step(np.array([[a], [a]], dtype=np.float32))
        s_obs, _, _, _, _ = single.step(np.array([a], dtype=np.float32))
        assert np.array_equal(obs[1], s_obs) and info == {}
    envs.close()


@pytest.mark.parametrize(("kw", "msg"), [
    ({"action": "window"}, "action: must be one of 'cwnd', 'rate', 'absolute', got 'window'"),
    ({"agent_flow": 2}, r"agent_flow: must be a flow index in \[0, 2\), got 2"),
    ({"agent_flow": -1}, r"agent_flow: must be a flow index in \[0, 2\), got -1"),
    ({"agent_flow": True}, "agent_flow: must be a flow index"),
    ({"step": "10"}, "step: needs a unit"),
    ({"step": 0}, "step: must be a positive number, got 0.0"),
    ({"history": 0}, "history: must be a positive integer, got 0"),
    ({"delay_weight": -1}, "delay_weight: must be a finite number ≥ 0, got -1"),
    ({"link": 5}, r"link: must be a directional link index in \[0, 2\), got 5"),
    ({"reward": 3}, "reward: must be a callable"),
    ({"info_keys": ["t", "queue"]}, "info_keys: unknown key 'queue'; allowed: t, dt, "),
    ({"info_keys": "t"}, "info_keys: must be a list of key names"),
    ({"render_mode": "human"}, "render_mode: this environment does not render"),
])
def test_bad_arguments_name_the_argument(kw, msg):
    with pytest.raises(ValueError, match=msg):
        cclab.gym.CongestionControlEnv(**kw)  # gymnasium.make passes its keywords through to it
    if "render_mode" not in kw:  # (make warns about a render mode the environment does not list)
        with pytest.raises(ValueError, match=msg):
            make(**kw)


def test_bad_reset_seed_and_action():
    env = make()
    with pytest.raises(ValueError, match="seed: must be an integer"):
        env.unwrapped.reset(seed=-1)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="action: must be finite"):
        env.unwrapped.step(np.array([np.nan], np.float32))


def _make_for_worker():
    return make(info_keys=[])


def test_async_vector_env_matches_single_envs():
    """AsyncVectorEnv builds each environment in a worker process (the constructor is pickled, not the
    environment): same seeds and actions, same observations as in-process."""
    envs = gymnasium.vector.AsyncVectorEnv([_make_for_worker, _make_for_worker])
    try:
        obs, _ = envs.reset(seed=[3, 4])
        single = make(info_keys=[])
        s_obs, _ = single.reset(seed=4)
        assert np.array_equal(obs[1], s_obs)
        for a in np.linspace(-1, 1, 30, dtype=np.float32):
            obs, r, _, _, _ = envs.step(np.array([[a], [a]], dtype=np.float32))
            s_obs, s_r, _, _, _ = single.step(np.array([a], dtype=np.float32))
            assert np.array_equal(obs[1], s_obs) and r[1] == s_r
    finally:
        envs.close()


def test_a_stepped_run_over_its_budget_raises_naming_the_limit():
    # A run the estimate misjudges (transfers that stall behind 90 % random loss and pile up, as in
    # crates/cclab-sim/tests/budget.rs) goes over its memory budget while the agent steps: the step
    # raises the ScenarioError `cclab.run` gives for it (2.4 s into the run at step 24), and so does
    # every later step, instead of the process filling its memory.
    sc = {"name": "flood", "duration": "60s", "seed": 1,
          "topology": {"kind": "dumbbell", "bottleneck": {"rate": "1Gbps", "buffer": 100, "loss": 0.9}},
          "flows": [{"cc": "newreno", "rtt": "50ms"}],
          "traffic": [{"kind": "transfers", "rate": "200Mbps", "mean_size": "10kB", "cc": "newreno", "rtt": "50ms"}],
          "limits": {"max_memory": "48MiB"}}
    env = cclab.gym.CongestionControlEnv(sc, step="100ms")
    env.reset(seed=1)
    with pytest.raises(cclab.ScenarioError, match=r"limits\.max_memory: the run went over its memory budget"):
        for _ in range(600):
            env.step(np.zeros(1, dtype=np.float32))
    with pytest.raises(cclab.ScenarioError, match=r"limits\.max_memory"):
        env.step(np.zeros(1, dtype=np.float32))
