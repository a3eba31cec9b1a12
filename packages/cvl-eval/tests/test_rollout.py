"""Vectorised policy evaluation on real environments."""

import json

import numpy as np
import pytest

from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.rollout.evaluate import EvalResult, evaluate_policy, evaluation_seeds, random_policy


def test_scripted_expert_succeeds_on_reach_and_random_policy_does_not():
    expert = evaluate_policy("reach", ScriptedExpert("reach"), 3, seed=0, max_steps=100)
    random = evaluate_policy("reach-v3", random_policy(4, seed=0), 3, seed=0, max_steps=100)
    assert expert.success_rate == 1.0
    assert random.success_rate <= 1 / 3
    assert expert.mean_return > 3 * random.mean_return
    assert expert.lengths == (100, 100, 100)
    assert expert.episode_seeds == random.episode_seeds == evaluation_seeds(0, 3)


def test_results_do_not_depend_on_how_many_envs_run_together():
    def policy(obs: np.ndarray) -> np.ndarray:
        assert obs.ndim == 2 and obs.shape[1] == 39 and obs.dtype == np.float32
        return ScriptedExpert("push")(obs)

    together = evaluate_policy("push", policy, 3, seed=1, max_steps=20, num_envs=3)
    one_by_one = evaluate_policy("push", policy, 3, seed=1, max_steps=20, num_envs=1)
    assert together.returns == one_by_one.returns
    assert together.successes == one_by_one.successes


def test_the_policy_is_called_once_per_step_on_the_running_episodes():
    batch_sizes = []

    def policy(obs: np.ndarray) -> np.ndarray:
        batch_sizes.append(len(obs))
        return np.zeros((len(obs), 4), dtype=np.float32)

    evaluate_policy("reach", policy, 5, seed=0, max_steps=4, num_envs=2)
    # 5 episodes of 4 steps on 2 envs: 2 rounds of 2 episodes, then 1 episode alone.
    assert batch_sizes == [2] * 8 + [1] * 4


def test_evaluation_seeds_are_fixed_and_prefix_stable():
    assert evaluation_seeds(0, 5) == evaluation_seeds(0, 5)
    assert evaluation_seeds(0, 8)[:5] == evaluation_seeds(0, 5)
    assert len(set(evaluation_seeds(0, 5)) & set(evaluation_seeds(1, 5))) == 0


def test_eval_result_is_json_serialisable_and_round_trips(tmp_path):
    result = evaluate_policy("reach", random_policy(4), 2, seed=3, max_steps=5)
    text = result.to_json(tmp_path / "eval.json")
    data = json.loads(text)
    assert data["returns"] == list(result.returns)
    assert data["summary"]["mean_return"] == pytest.approx(result.mean_return)
    assert 0 < data["summary"]["mean_normalized_return"] < 1
    assert EvalResult.from_dict(json.loads((tmp_path / "eval.json").read_text())) == result


def test_mountain_car_evaluation():
    result = evaluate_policy("MountainCarContinuous-v0", random_policy(1), 2, seed=0, max_steps=30)
    assert result.lengths == (30, 30)
    assert result.successes == (False, False)
    assert result.normalized_returns() is None


def test_wrong_action_shape_is_reported():
    with pytest.raises(ValueError, match=r"expected \(2, 4\)"):
        evaluate_policy("reach", lambda obs: np.zeros((len(obs), 3)), 2, max_steps=3)


def test_pixel_evaluation_feeds_frames_to_the_policy():
    shapes = []

    def policy(obs: np.ndarray) -> np.ndarray:
        shapes.append((obs.shape, obs.dtype))
        return np.zeros((len(obs), 4), dtype=np.float32)

    result = evaluate_policy("reach", policy, 2, pixels=True, image_size=32, max_steps=3)
    assert result.pixels and result.lengths == (3, 3)
    assert shapes == [((2, 32, 32, 3), np.uint8)] * 3
