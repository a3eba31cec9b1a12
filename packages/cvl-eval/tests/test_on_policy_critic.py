"""On-policy critic check: real rollouts of a tiny real learner in Meta-World, scored
by Q functions whose answers are known, and through `diagnose` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cvl_algos import make_learner
from cvl_eval.analysis.critic_diagnostics import diagnose, format_diagnostics
from cvl_eval.analysis.on_policy_critic import on_policy_ranking, rollout_states
from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.rollout.evaluate import evaluate_policy

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}


@pytest.fixture(scope="module")
def learner():
    return make_learner("cvl_mc", (39,), 4, seed=0, **TINY)


def test_rollouts_are_the_evaluations_episodes(learner):
    """Same seeds, same policy: the states visited are those of `evaluate_policy`'s episodes."""
    visited = rollout_states(learner, "reach", episodes=2, seed=100, max_steps=15)
    assert visited["obs"].shape == (30, 39) and visited["action"].shape == (30, 4)
    np.testing.assert_array_equal(visited["t"], np.tile(np.arange(15), 2))
    np.testing.assert_array_equal(visited["episode"], np.repeat([0, 1], 15))
    result = evaluate_policy("reach", learner.act, 2, seed=100, max_steps=15, num_envs=1)
    assert list(visited["success"]) == list(result.successes)
    np.testing.assert_allclose(learner.act(visited["obs"]), visited["action"], atol=1e-5)


def test_a_q_that_prefers_the_expert_says_so_at_the_policys_states(learner):
    """Q = -|a - a_expert(s)|: the expert is best at every state, an untrained policy never
    matches it, and no uniform action beats the expert's own (Q = 0)."""
    expert = ScriptedExpert("reach")

    def q(obs, action):
        target = np.clip(expert(obs), -1, 1)
        return -np.linalg.norm(action - target, axis=1).astype(np.float64)

    result = on_policy_ranking(q, learner, "reach", episodes=2, num_uniform=8, max_steps=30)
    json.dumps(result, allow_nan=False)
    assert [row["steps"] for row in result["phases"]] == [[0, 25], [25, 50]]
    assert [row["states"] for row in result["phases"]] == [50, 10]
    for row in result["phases"]:
        assert row["p_expert_better"] == 1.0 and row["p_uniform_max_above_expert"] == 0.0
        assert row["mean_q_expert"] == 0.0 and row["mean_q_policy"] < 0.0
        assert row["mean_q_uniform"] <= row["mean_q_uniform_max"] <= 0.0


def test_a_log_density_that_peaks_at_the_expert_says_so(learner):
    """D = -|a - a_expert(s)|: the expert's action is where the data acts at every state, the
    untrained policy's is not; Q's columns do not change."""
    expert = ScriptedExpert("reach")

    def d(obs, action):
        return -np.abs(action - np.clip(expert(obs), -1, 1)).sum(axis=1).astype(np.float64)

    def q(obs, action):
        return np.zeros(len(obs))

    with_d = on_policy_ranking(
        q, learner, "reach", episodes=1, num_uniform=4, max_steps=30, log_density=d
    )
    without = on_policy_ranking(q, learner, "reach", episodes=1, num_uniform=4, max_steps=30)
    for row, plain in zip(with_d["phases"], without["phases"], strict=True):
        assert row["p_expert_density_above"] == 1.0 and row["mean_d_expert"] == 0.0
        assert row["mean_d_policy"] < 0.0 and row["mean_d_uniform"] < 0.0
        assert {k: v for k, v in row.items() if "_d_" not in k and "density" not in k} == plain


def test_a_q_that_prefers_the_policy_says_the_opposite(learner):
    def q(obs, action):
        return -np.linalg.norm(action - learner.act(obs), axis=1).astype(np.float64)

    result = on_policy_ranking(q, learner, "reach", episodes=1, num_uniform=4, max_steps=10)
    (row,) = result["phases"]
    assert row["p_expert_better"] == 0.0 and row["mean_q_policy"] == pytest.approx(0.0, abs=1e-5)


def test_diagnose_with_rollouts(tmp_path):
    from cvl_eval.datagen.behaviours import BehaviourDataConfig, generate_behaviour_dataset
    from cvl_eval.datagen.mixed_suite import mixture_sources

    data = tmp_path / "reach-v3"
    config = BehaviourDataConfig(
        "reach", num_episodes=4, sources=mixture_sources("reach"), max_steps=60
    )
    generate_behaviour_dataset(data, config, progress=False, durable=False)
    make_learner("cvl_mc", (39,), 4, seed=0, **TINY).save(tmp_path / "run" / "final")
    result = diagnose(
        tmp_path / "run", data, num_samples=50, num_states=20, num_futures=32, rollouts=1
    )
    json.dumps(result, allow_nan=False)
    on_policy = result["on_policy"]
    assert on_policy["task"] == "reach-v3" and on_policy["episodes"] == 1
    assert sum(row["states"] for row in on_policy["phases"]) == 500
    assert "On the policy's own states" in format_diagnostics(result)
    assert all("p_expert_density_above" in row for row in on_policy["phases"])
    assert "log density ratio D(s, a)" in format_diagnostics(result)
