"""cclab.gym's options (docs/gym.md): the sender-only observation (the default) and ``privileged=True``,
per-ACK stepping (``step_on="ack"``), the absolute-window action, and several agent-driven flows in one
simulation (cclab.gym_multi, PettingZoo's parallel API)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import cclab.gym  # noqa: E402
from cclab.gym import ENV_ID, OBS_NAMES, SENDER_OBS_NAMES  # noqa: E402

BASE_RTT = 0.0212416  # 20 ms + 1.2 ms data + 0.0416 ms ACK serialisation (tests/test_gym.py's one_flow)
BDP = 10e6 * BASE_RTT / 8 / 1500  # 17.70 packets


def one_flow(duration: str = "3s", flows: int = 1) -> dict:
    # An ACK per packet, as tests/test_gym.py's one_flow (why there).
    return {"name": "gym-opt", "duration": duration, "seed": 1, "transport": {"profile": "paper"},
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbps", "buffer": "BDP"}},
            "flows": [{"cc": "newreno", "rtt": "20ms"} for _ in range(flows)]}


def parking_lot() -> dict:
    """The agent crosses a 10 Mbit/s and a 40 Mbit/s link: directional links 0 (10) and 1 (40) are both on
    its path, so ``link=`` can point the privileged normalisation at either."""
    return {"name": "gym-pl", "duration": "2s", "seed": 1,
            "topology": {"kind": "parking_lot", "links": [{"rate": "10Mbps", "delay": "5ms", "buffer": "BDP"},
                                                          {"rate": "40Mbps", "delay": "5ms", "buffer": "BDP"}]},
            "flows": [{"cc": "newreno", "links": [0, 1], "rtt": "20ms"}]}


def hold(env, a: float, steps: int = 10**9):
    """Steps with action ``a`` until the episode ends (or ``steps``); (obs, reward, info) per step."""
    out = []
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(np.array([a], dtype=np.float32))
        out.append((obs, r, info))
        if term or trunc:
            break
    return out


@pytest.mark.parametrize("kw", [{}, {"step_on": "ack"}, {"action": "absolute"}, {"action": "rate", "step_on": "ack"},
                                {"privileged": True}, {"history": 3, "step_on": "ack"}])
def test_check_env_passes_for_each_option(kw):
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make(ENV_ID, step="10ms", **kw)
    names = OBS_NAMES if kw.get("privileged") else SENDER_OBS_NAMES
    assert env.unwrapped.obs_names == names
    assert env.observation_space.shape == (len(names) * kw.get("history", 1),)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_sender_observation_reads_no_link_and_privileged_does():
    # The same run observed with `link` pointing at the 10 or the 40 Mbit/s link of the agent's path:
    # the sender's observation is the same, bit for bit; the privileged one is normalised by that link.
    def obs(privileged, link):
        env = cclab.gym.CongestionControlEnv(parking_lot(), step="10ms", privileged=privileged, link=link)
        env.reset(seed=3)
        # The window grows to 160 packets and stays: below both links' clips (64 BDP), which are the
        # environment's limits and do depend on `link`.
        return np.array([o for o, _, _ in hold(env, 0.1, 40) + hold(env, 0.0, 60)])
    assert np.array_equal(obs(False, 0), obs(False, 1))
    a, b = obs(True, 0), obs(True, 1)
    i = OBS_NAMES.index("cwnd")
    # The window over the BDP: the same base RTT (the path's), the link's rate 4x, so exactly 1/4.
    assert a[-1, i] / b[-1, i] == pytest.approx(4.0, rel=1e-6)


def test_sender_observation_is_the_senders_own_estimates():
    """The agent alone with its window held at 18 packets (the BDP is 17.7): its own bandwidth estimate
    is the link's rate, its minimum RTT the path's, so its normalised window is ~1 and its delivery
    rate over the last minimum RTT ~1 of its maximum."""
    env = cclab.gym.CongestionControlEnv(one_flow(), step="10ms")
    env.reset(seed=1)
    i = {n: k for k, n in enumerate(SENDER_OBS_NAMES)}
    steps = hold(env, math.log2(18 / 10), 1) + hold(env, 0.0)
    late = [o for o, _, info in steps[100:]]
    view = env._agents[0].view
    # One packet of 1500 B in a window: the estimate is the largest rate over one minimum RTT, so at most
    # one packet more than a minimum RTT's worth (18 / 17.7 = 1.7 %): 3 %.
    assert view.max_bw == pytest.approx(10e6, rel=0.03)
    assert view.min_rtt == pytest.approx(BASE_RTT, abs=1e-6)  # no queue ever: the minimum is the path's
    assert np.mean([o[i["min_rtt"]] for o in late]) == pytest.approx(BASE_RTT, abs=1e-6)
    assert np.mean([o[i["cwnd"]] for o in late]) == pytest.approx(18 / BDP, rel=0.03)
    # Delivery per minimum RTT moves by one packet in 17.7 (5.6 %) with the ACK clock's phase: 0.06.
    assert np.mean([o[i["delivery_rate"]] for o in late]) == pytest.approx(1.0, abs=0.06)
    assert np.mean([o[i["srtt"]] for o in late]) == pytest.approx(1.0, abs=0.05)  # (a 0.3-packet queue)
    assert all(o[i["loss_frac"]] == 0 and o[i["rate"]] == 0 for o in late)


def test_per_ack_steps_end_at_each_ack_and_change_nothing_else():
    def run(step_on):
        env = cclab.gym.CongestionControlEnv(one_flow(duration="1s"), step="10ms", step_on=step_on)
        env.reset(seed=2)
        return hold(env, 0.0)
    per_ack, per_interval = run("ack"), run("interval")
    acks = [info["acks"] for _, _, info in per_ack]
    # Every step but the last (truncated at the duration) ends right after one ACK, or after the 10 ms
    # cap without one: a window of 10 packets on a 17.7-packet path leaves a gap of ~10 ms per RTT.
    waits = [info for _, _, info in per_ack[:-1] if info["acks"] == 0]
    assert all(a in (0, 1) for a in acks) and all(info["dt"] == pytest.approx(0.01, abs=1e-12) for info in waits)
    assert 0 < len(waits) < 0.1 * len(per_ack)
    assert all(info["dt"] <= 0.01 + 1e-12 for _, _, info in per_ack)
    # The window never changes (action 0), so the simulation is the same whatever the stepping: the
    # same packets delivered, ACKs and bytes sent over the run.
    for key in ("acked_pkts", "acks", "sent_bytes"):
        assert sum(i[key] for _, _, i in per_ack) == sum(i[key] for _, _, i in per_interval), key
    assert len(per_ack) == sum(acks) + len(waits) + (acks[-1] == 0)
    # Determinism per ACK too.
    again = run("ack")
    assert len(again) == len(per_ack) and all(np.array_equal(a[0], b[0]) and a[1] == b[1]
                                              for a, b in zip(again, per_ack))


def test_ack_steps_wait_at_most_step_without_an_ack():
    # A 200 ms RTT with a 5 ms cap: before the first ACK (one RTT) the steps are the cap, with no ACK.
    scenario = one_flow(duration="1s")
    scenario["flows"][0]["rtt"] = "200ms"
    env = cclab.gym.CongestionControlEnv(scenario, step="5ms", step_on="ack")
    env.reset(seed=1)
    first = hold(env, 0.0, 50)
    waits = [info for _, _, info in first if info["acks"] == 0]
    assert len(waits) >= 39 and all(info["dt"] == pytest.approx(0.005, abs=1e-9) for info in waits)


def test_absolute_action_sets_the_window_log_uniformly():
    env = cclab.gym.CongestionControlEnv(one_flow(), step="10ms", action="absolute", max_cwnd_bdp=4)
    env.reset(seed=1)
    top = env.cwnd_max
    assert top == pytest.approx(4 * BDP)
    for a, want in ((-1.0, 1.0), (1.0, top), (0.0, math.sqrt(top)), (0.5, top ** 0.75)):
        _, _, _, _, info = env.step(np.array([a], dtype=np.float32))
        assert info["cwnd"] == pytest.approx(want, rel=1e-9), a
    # Holding a = 0.5 twice keeps the window (an absolute action does not compound).
    env.step(np.array([0.5], dtype=np.float32))
    _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    assert info["cwnd"] == pytest.approx(top ** 0.75, rel=1e-9)


def test_bad_new_arguments_name_themselves():
    with pytest.raises(ValueError, match="step_on: must be one of 'interval', 'ack', got 'packet'"):
        cclab.gym.CongestionControlEnv(step_on="packet")
    with pytest.raises(ValueError, match="privileged: must be True or False, got 1"):
        cclab.gym.CongestionControlEnv(privileged=1)


pettingzoo = pytest.importorskip("pettingzoo", reason="pettingzoo is installed by `make setup`")


def test_multi_agent_parallel_api():
    from pettingzoo.test import parallel_api_test

    from cclab.gym_multi import CongestionControlParallelEnv

    parallel_api_test(CongestionControlParallelEnv(one_flow(flows=2), agent_flows=[0, 1], step="10ms"),
                      num_cycles=200)
    parallel_api_test(CongestionControlParallelEnv(one_flow(flows=3), agent_flows=[2, 0], step="10ms",
                                                   step_on="ack", action="absolute"), num_cycles=200)


def test_two_agents_with_equal_windows_share_the_link():
    from cclab.gym_multi import CongestionControlParallelEnv

    def run():
        env = CongestionControlParallelEnv(one_flow(duration="3s", flows=2), agent_flows=[0, 1], step="10ms")
        obs, infos = env.reset(seed=5)
        assert set(obs) == {"flow0", "flow1"} and obs["flow0"].shape == (len(SENDER_OBS_NAMES),)
        acked = {"flow0": 0.0, "flow1": 0.0}
        trace = []
        first = True
        while env.agents:
            # 9 packets each (9.5: a window is used in whole packets): 18 in all, the BDP is 17.7.
            acts = {a: np.array([math.log2(9.5 / 10) if first else 0.0], np.float32) for a in env.agents}
            first = False
            obs, rewards, _, _, infos = env.step(acts)
            for a in obs:
                acked[a] += infos[a]["acked_pkts"]
            trace.append((obs, rewards))
        return acked, trace
    acked, trace = run()
    # Equal windows on equal paths: each delivers half, within 2 % (the flows start 0 ms apart and
    # their ACK clocks interleave; the difference is a packet or two over 2500).
    assert acked["flow0"] / acked["flow1"] == pytest.approx(1.0, rel=0.02)
    assert (acked["flow0"] + acked["flow1"]) * 1500 * 8 / 3.0 == pytest.approx(10e6, rel=0.03)
    acked2, trace2 = run()
    assert acked2 == acked and all(all(np.array_equal(o[k], o2[k]) for k in o) and r == r2
                                   for (o, r), (o2, r2) in zip(trace, trace2))


def test_multi_agent_bad_arguments():
    from cclab.gym_multi import CongestionControlParallelEnv

    with pytest.raises(ValueError, match="agent_flow: each flow may be driven once"):
        CongestionControlParallelEnv(one_flow(flows=2), agent_flows=[1, 1])
    with pytest.raises(ValueError, match=r"agent_flow: must be a flow index in \[0, 2\), got 2"):
        CongestionControlParallelEnv(one_flow(flows=2), agent_flows=[0, 2])
    with pytest.raises(ValueError, match="agent_flows: must be a non-empty list"):
        CongestionControlParallelEnv(one_flow(flows=2), agent_flows=[])
    env = CongestionControlParallelEnv(one_flow(flows=2), agent_flows=[0, 1], step="10ms")
    env.reset(seed=1)
    with pytest.raises(ValueError, match="actions: must give one action for each of"):
        env.step({"flow0": np.zeros(1, np.float32)})


def test_sender_bandwidth_estimate_follows_a_capacity_drop():
    """The sender's max_bw is a windowed maximum over 10 minimum RTTs (BBR's filter), not the episode's:
    steps of 10 ms at 20 Mbit/s for 1 s, then at 5 Mbit/s. An episode maximum would stay at 20 Mbit/s (and
    the observation's delivery_rate at 1/4); the window forgets the old rate 10 × 20 ms after the drop."""
    from cclab import gym as g

    view = g._SenderView(packet_size=1500, initial_cwnd=10)
    view.reset(0.0)
    acked = 0.0
    seen = []
    for k in range(1, 201):
        t = k * 0.01
        rate = 20e6 if t <= 1.0 else 5e6
        acked += rate * 0.01 / (1500 * 8)
        v = [0.0] * len(g._FIELDS)
        v[g._T], v[g._DT], v[g._ACKED], v[g._MIN_RTT], v[g._SRTT] = t, 0.01, rate * 0.01 / (1500 * 8), 0.02, 0.02
        v[g._SENT_BYTES] = rate * 0.01 / 8
        view.update(v)
        seen.append((t, view.max_bw))
    before = [bw for t, bw in seen if 0.5 < t <= 1.0]
    # One minimum RTT after the drop the delivery rate over the last minimum RTT still mixes both rates;
    # 10 minimum RTTs (0.2 s) later plus that RTT the window holds only the new rate.
    after = [bw for t, bw in seen if t > 1.0 + 0.2 + 0.02 + 1e-9]
    assert before and all(bw == pytest.approx(20e6, rel=1e-9) for bw in before)
    assert after and all(bw == pytest.approx(5e6, rel=1e-9) for bw in after)
    # Within the window the old maximum is kept (a filter, not the last sample).
    assert dict(seen)[1.1] == pytest.approx(20e6, rel=1e-9)
