"""CVL's acting policy as a polyak average of the trained one (`CVLConfig.policy_ema_tau`): the
average against a naive recursion, training left unchanged, acting from the average,
checkpoints, resumption and vectorised seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,
    OBS_DIM,
    assert_modules_equal,
    check_save_load_act_resume,
    check_vectorised_equals_alone,
    make_contrastive_batch,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
VARIANTS = [
    ("cvl_mc", {"policy_extraction": "ddpgbc", "self_normalized": True, "policy_ema_tau": 0.1}),
    ("cvl", {"policy_extraction": "flow", "flow_steps": 3, "policy_ema_tau": 0.1}),
    ("cvl", {"policy_ema_tau": 0.1}),
    ("cvl_mc", {"act_candidates": 3, "policy_ema_tau": 0.1}),
]


def build(name: str = "cvl_mc", seed: int = 3, **overrides):
    return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)


@settings(max_examples=6, deadline=None)
@given(tau=st.floats(0.01, 1.0), updates=st.integers(1, 6))
def test_average_matches_naive_recursion(tau: float, updates: int) -> None:
    learner = build(policy_extraction="ddpgbc", policy_ema_tau=tau)
    average = [p.detach().clone() for p in learner.policy.parameters()]
    for i in range(updates):
        learner.update(make_contrastive_batch(seed=i))
        for avg, p in zip(average, learner.policy.parameters()):
            avg.mul_(1.0 - tau).add_(tau * p.detach())
    for avg, ema in zip(average, learner.policy_ema.parameters()):
        torch.testing.assert_close(ema, avg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("extraction", ["ddpgbc", "flow"])
def test_training_is_unchanged_and_acting_uses_the_average(extraction: str) -> None:
    plain = build(policy_extraction=extraction, flow_steps=3)
    averaged = build(policy_extraction=extraction, flow_steps=3, policy_ema_tau=0.2)
    for i in range(5):
        plain_metrics = plain.update(make_contrastive_batch(seed=i))
        averaged_metrics = averaged.update(make_contrastive_batch(seed=i))
        assert plain_metrics.keys() == averaged_metrics.keys()
        for key in plain_metrics:
            torch.testing.assert_close(plain_metrics[key], averaged_metrics[key], rtol=0, atol=0)
    assert_modules_equal(plain.policy, averaged.policy)
    assert_modules_equal(plain.critic, averaged.critic)
    obs = make_contrastive_batch(seed=99).obs_t
    with torch.no_grad():
        expected = averaged.policy_ema.deterministic(obs).numpy()
        trained = averaged.policy.deterministic(obs).numpy()
    np.testing.assert_array_equal(averaged.act(obs), expected)
    np.testing.assert_array_equal(plain.act(obs), trained)
    assert not np.allclose(expected, trained)  # after 5 steps the average lags the policy


def test_tau_one_acts_as_the_trained_policy() -> None:
    learner = build(policy_extraction="ddpgbc", policy_ema_tau=1.0)
    for i in range(3):
        learner.update(make_contrastive_batch(seed=i))
    assert_modules_equal(learner.policy_ema, learner.policy)


@pytest.mark.parametrize(("name", "overrides"), VARIANTS)
def test_save_load_act_and_resume_identical(name: str, overrides: dict, tmp_path) -> None:
    check_save_load_act_resume(lambda: build(name, seed=4, **overrides), tmp_path)


@pytest.mark.parametrize(("name", "overrides"), VARIANTS[:2])
def test_vectorised_seeds_equal_each_seed_alone(name: str, overrides: dict) -> None:
    check_vectorised_equals_alone(lambda seed: build(name, seed=seed, **overrides), updates=20)


def test_config_refuses_tau_outside_unit_interval() -> None:
    for tau in (-0.1, 1.5):
        with pytest.raises(ValueError, match="policy_ema_tau must lie in"):
            build(policy_ema_tau=tau)
