"""Environment construction on the real Meta-World and Mountain Car environments."""

import gymnasium as gym
import numpy as np
import pytest

from cvl_eval.envs.make import MOUNTAIN_CAR, TASK_NAMES, canonical_name, make_env


def test_there_are_fifty_v3_tasks():
    assert len(TASK_NAMES) == 50
    assert all(name.endswith("-v3") for name in TASK_NAMES)
    assert len(set(TASK_NAMES)) == 50


def test_every_task_name_builds_and_steps():
    # goals="random" skips the ~1 s MT1 goal-set computation per task; the env class, the
    # wrappers and the observation layout are the same as with the default goals="mt1".
    for i, name in enumerate(TASK_NAMES):
        short = name.removesuffix("-v3")
        env = make_env(short if i % 2 else name, seed=i, goals="random")
        try:
            obs, _ = env.reset()
            assert obs.shape == (39,) and obs.dtype == np.float32, name
            assert np.any(obs[-3:] != 0.0), f"{name}: goal not observable"
            assert env.observation_space.shape == (39,)
            assert env.action_space.shape == (4,)
            for _ in range(3):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                assert obs.shape == (39,) and np.isfinite(obs).all(), name
                assert 0.0 <= reward <= 10.0, name
                assert "success" in info and not terminated and not truncated
        finally:
            env.close()


def test_names_with_and_without_suffix_are_the_same_task():
    assert canonical_name("drawer-open") == "drawer-open-v3"
    assert canonical_name("drawer-open-v3") == "drawer-open-v3"
    assert canonical_name(MOUNTAIN_CAR) == MOUNTAIN_CAR


def test_unknown_name_lists_the_valid_names():
    with pytest.raises(ValueError) as error:
        make_env("drawer-opne")
    message = str(error.value)
    assert "drawer-opne" in message
    assert MOUNTAIN_CAR in message
    for name in TASK_NAMES:
        assert name.removesuffix("-v3") in message


def test_reset_seed_fixes_the_episode_and_mt1_goals_come_from_the_seed():
    env = make_env("reach", seed=3)
    try:
        first, _ = env.reset()  # the construction seed
        again, _ = env.reset(seed=3)
        other, _ = env.reset(seed=4)
        np.testing.assert_array_equal(first, again)
        assert not np.array_equal(first[-3:], other[-3:])
        goal_low, goal_high = env.observation_space.low[-3:], env.observation_space.high[-3:]
        assert np.all(goal_low < goal_high), "goal bounds are those of the goal-observable env"
    finally:
        env.close()


def test_mt1_mode_matches_gym_make_metaworld_mt1():
    """Our cached construction is the env gym.make('Meta-World/MT1') builds, goal for goal."""
    import metaworld  # noqa: F401  (registers Meta-World/MT1)

    ours = make_env("push", seed=7)
    theirs = gym.make("Meta-World/MT1", env_name="push-v3", seed=7, disable_env_checker=True)
    try:
        for episode_seed in (11, 12):
            obs, _ = ours.reset(seed=episode_seed)
            theirs.unwrapped.seed(episode_seed)  # Meta-World ignores reset(seed=...)
            reference, _ = theirs.reset()
            np.testing.assert_allclose(obs, reference.astype(np.float32))
            action = np.array([0.3, -0.2, 0.1, 0.5], dtype=np.float32)
            step_ours = ours.step(action)
            step_theirs = theirs.step(action)
            np.testing.assert_allclose(step_ours[0], step_theirs[0].astype(np.float32))
            assert step_ours[1] == pytest.approx(step_theirs[1])
    finally:
        ours.close()
        theirs.close()


def test_random_goal_mode_draws_a_new_seeded_goal_each_reset():
    env = make_env("reach", seed=0, goals="random")
    try:
        goals = [env.reset(seed=s)[0][-3:] for s in (1, 2, 1)]
        np.testing.assert_array_equal(goals[0], goals[2])
        assert not np.array_equal(goals[0], goals[1])
    finally:
        env.close()


def test_time_limit_truncates():
    env = make_env("reach", seed=0, goals="random", max_episode_steps=5)
    try:
        env.reset()
        flags = [env.step(env.action_space.sample())[3] for _ in range(5)]
        assert flags == [False] * 4 + [True]
    finally:
        env.close()


def test_mountain_car():
    env = make_env(MOUNTAIN_CAR, seed=5)
    try:
        obs, _ = env.reset()
        again, _ = env.reset(seed=5)
        np.testing.assert_array_equal(obs, again)
        assert obs.shape == (2,) and obs.dtype == np.float32
        assert env.action_space.shape == (1,)
        obs, reward, *_ = env.step(np.array([1.0], dtype=np.float32))
        assert obs.shape == (2,) and np.isfinite(reward)
    finally:
        env.close()
    with pytest.raises(ValueError, match="only implemented for Meta-World"):
        make_env(MOUNTAIN_CAR, pixels=True)
