"""The Gym environment's arguments and actions (issue 28, item 11): every bad constructor argument and
every bad action raises ValueError naming it (docs/gym.md "Errors"), at construction or at the step,
never OverflowError, IndexError, TypeError or MemoryError, and never silently. Each case failed before
(noted)."""
import math

import numpy as np
import pytest

import cclab.gym
from cclab.gym import LIMITS, CongestionControlEnv


@pytest.mark.parametrize(("kw", "msg"), [
    # Before: accepted, then OverflowError (2 ** 2000) at the first step.
    ({"action_scale": 2000}, r"action_scale: must be a number in \(0, 64\], got 2000"),
    # Before: accepted, then MemoryError at reset (the stack of 7 × 10^9 values, 26 GiB as floats).
    ({"history": 10**9}, r"history: must be an integer in \[1, 1000\], got 1000000000"),
    ({"history": 2.0}, r"history: must be a positive integer, got 2.0"),
    # Before: accepted; observations became inf in float32.
    ({"max_cwnd_bdp": 1e300}, r"max_cwnd_bdp: must be a number in \(0, 1e\+06\], got 1e\+300"),
    ({"max_rate": 1e300}, r"max_rate: must be a number in \(0, 1e\+06\], got 1e\+300"),
    ({"rate_cwnd_gain": 1e300}, r"rate_cwnd_gain: must be a number in \(0, 1000\], got 1e\+300"),
    # Before: accepted; the reward was -9e307 (and -inf one overflow later).
    ({"delay_weight": 1e308}, r"delay_weight: must be a number in \[0, 1e\+06\], got 1e\+308"),
    ({"loss_weight": math.inf}, r"loss_weight: must be a number in \[0, 1e\+06\], got inf"),
    # Before: accepted; 10^13 steps of no simulated time per episode.
    ({"step": 1e-12}, r"step: must be at least 1 µs \(1e-06 s\), got 1e-12"),
    ({"step": "1ns"}, r"step: must be at least 1 µs"),
])
def test_out_of_range_arguments_name_the_argument_and_the_range(kw, msg):
    with pytest.raises(ValueError, match=msg):
        CongestionControlEnv(**kw)


def test_the_bounds_themselves_are_accepted():
    env = CongestionControlEnv(history=LIMITS["history"], action_scale=LIMITS["action_scale"],
                               max_cwnd_bdp=LIMITS["max_cwnd_bdp"], delay_weight=LIMITS["delay_weight"],
                               step=LIMITS["step_min"])
    obs, _ = env.reset(seed=1)
    assert obs.shape == (len(env.obs_names) * LIMITS["history"],)
    for a in (1.0, 1.0, -1.0):
        obs, r, _, _, _ = env.step(np.array([a], np.float32))
        assert np.isfinite(obs).all() and math.isfinite(r)
    # numpy integers are integers.
    assert CongestionControlEnv(history=np.int64(3)).history == 3


@pytest.mark.parametrize(("action", "msg"), [
    (np.array([]), r"action: must hold exactly one value \(the action space is Box\(-1, 1, \(1,\)\)\), got shape \(0,\)"),
    (np.array([0.5, 3.0]), r"action: must hold exactly one value .*got shape \(2,\)"),   # before: 3.0 ignored
    ([0.1, 0.2], r"got shape \(2,\)"),
    (object(), "action: must be a number or an array of numbers, got a Python object"),  # before: TypeError
    (np.array(["0.5"]), "action: must be a number or an array of numbers, got an array of <U3"),
    ("0.5", "action: must be a number or an array of numbers"),  # before: accepted as 0.5
    (np.array([True]), "action: must be a number or an array of numbers, got an array of bool"),
    (np.array([np.nan], np.float32), "action: must be finite, got nan"),
    (np.array([1.5], np.float32), r"action: must be within the action space \[-1, 1\], got 1.5"),  # before: clipped
    (-1.01, r"action: must be within the action space \[-1, 1\], got -1.01"),
])
def test_bad_actions_name_the_action(action, msg):
    env = CongestionControlEnv()
    env.reset(seed=1)
    before = env.now
    with pytest.raises(ValueError, match=msg):
        env.step(action)
    assert env.now == before  # a refused action does not step
    env.step(np.array([0.0], np.float32))  # and the environment goes on


def test_good_actions_of_any_one_value_shape_are_the_same_step():
    out = []
    for a in (np.array([0.5], np.float32), np.float32(0.5), 0.5, [0.5], np.array([[0.5]]), np.array(0.5)):
        env = CongestionControlEnv()
        env.reset(seed=3)
        out.append(env.step(a)[0])
    assert all(np.array_equal(out[0], o) for o in out[1:])


def test_gymnasium_make_passes_the_checks_through():
    import gymnasium

    with pytest.raises(ValueError, match="history: must be an integer"):
        gymnasium.make(cclab.gym.ENV_ID, history=10**9)


# Red-team pass (2026-11-27): every constructor argument given values of every kind (None, strings,
# lists, dicts, object(), NumPy scalars and arrays, NaN, ±inf, 10^40, booleans, bytes, sets): 315 cases.
# Before: 11 raised TypeError (info_keys not iterable) and 6 quoted "<object object at 0x…>".
_KINDS = [None, "x", "", [], {}, [1], object(), np.float32(1.0), np.int64(2), np.array([1.0]), np.nan, -np.inf,
          10**40, -1, 0, True, 1e-320, "10ms", b"x", {1, 2}, 2**63]
_ARGS = ["agent_flow", "action", "step", "history", "action_scale", "delay_weight", "loss_weight", "reward",
         "max_cwnd_bdp", "max_rate", "rate_cwnd_gain", "link", "info_keys", "render_mode", "scenario"]


@pytest.mark.parametrize("arg", _ARGS)
def test_any_value_of_any_argument_is_accepted_or_a_value_error_naming_it(arg):
    for v in _KINDS:
        try:
            CongestionControlEnv(**{arg: v})
        except ValueError as e:
            assert str(e).startswith(arg) or arg == "scenario", (arg, v, str(e))
            assert " at 0x" not in str(e), str(e)
        # anything else (TypeError, …) fails the test


@pytest.mark.parametrize("value", ["x", None, [1, 2], math.nan, math.inf, 10**400])
def test_a_reward_callable_must_return_a_finite_number(value):
    # Red-team pass: "x", None, [1, 2] and 10**400 raised ValueError/TypeError/OverflowError from float()
    # without naming the reward; NaN and inf were returned as rewards.
    env = CongestionControlEnv(reward=lambda info: value)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="reward: the callable must return a finite number"):
        env.step(np.array([0.0], np.float32))
    ok = CongestionControlEnv(reward=lambda info: np.float32(2.5))
    ok.reset(seed=1)
    assert ok.step(np.array([0.0], np.float32))[1] == 2.5
