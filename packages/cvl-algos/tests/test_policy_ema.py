"""Acting with a polyak average of the trained policy (``policy_ema_tau``, every offline learner
and SAC; `LearnerBase.acting_policy`): the average against a naive recursion, training and
sampled actions unchanged, deterministic acting from the average, checkpoints, resumption and
vectorised seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    assert_modules_equal,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import load_learner, make_learner

CVL_TINY = {"latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
LEARNERS = {
    "bc": {},
    "filtered_bc": {},
    "weighted_bc": {},
    "iql": {},
    "fql": {"flow_steps": 3},
    "sac": {},
    "cql": {"policy_eval_start": 2},
    "cql_uds": {"policy_eval_start": 2},
    "cvl": {**CVL_TINY, "policy_extraction": "ddpgbc"},
    "cvl_mc": {**CVL_TINY, "policy_extraction": "flow", "flow_steps": 3},
}
"""Each learner with settings that make a few updates cheap."""


def build(name: str, seed: int = 3, **overrides):
    settings_ = {**LEARNERS[name], **overrides}
    return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, hidden=(32, 32), **settings_)


def batch_for(name: str, i: int):
    return make_contrastive_batch(seed=i) if name.startswith("cvl") else make_transition_batch(i)


@settings(max_examples=8, deadline=None)
@given(
    name=st.sampled_from(sorted(LEARNERS)),
    tau=st.floats(0.01, 1.0),
    updates=st.integers(1, 4),
)
def test_average_matches_naive_recursion(name: str, tau: float, updates: int) -> None:
    learner = build(name, policy_ema_tau=tau)
    average = [p.detach().clone() for p in learner.policy.parameters()]
    for i in range(updates):
        learner.update(batch_for(name, i))
        for avg, p in zip(average, learner.policy.parameters(), strict=True):
            avg.mul_(1.0 - tau).add_(tau * p.detach())
    for avg, ema in zip(average, learner.policy_ema.parameters(), strict=True):
        torch.testing.assert_close(ema, avg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_training_and_sampling_unchanged_acting_from_the_average(name: str) -> None:
    plain, averaged = build(name), build(name, policy_ema_tau=0.2)
    for i in range(4):
        plain_metrics = plain.update(batch_for(name, i))
        averaged_metrics = averaged.update(batch_for(name, i))
        assert plain_metrics.keys() == averaged_metrics.keys()
        for key in plain_metrics:
            assert torch.equal(plain_metrics[key], averaged_metrics[key]), key
    for key, module in plain.state_modules().items():
        assert_modules_equal(module, averaged.state_modules()[key])
    obs = make_contrastive_batch(seed=99).obs_t
    np.testing.assert_array_equal(
        plain.act(obs, deterministic=False), averaged.act(obs, deterministic=False)
    )
    with torch.no_grad():
        expected = averaged.policy_ema.deterministic(obs).numpy()
        trained = averaged.policy.deterministic(obs).numpy()
    np.testing.assert_array_equal(averaged.act(obs), expected)
    np.testing.assert_array_equal(plain.act(obs), trained)
    assert not np.allclose(expected, trained)  # after 4 updates the average lags the policy


def test_tau_one_is_the_trained_policy() -> None:
    learner = build("cvl_mc", policy_ema_tau=1.0)
    for i in range(3):
        learner.update(batch_for("cvl_mc", i))
    assert_modules_equal(learner.policy_ema, learner.policy)


@pytest.mark.parametrize("name", ["bc", "iql", "fql", "cql"])
def test_transition_learners_save_load_act_and_resume(name: str, tmp_path) -> None:
    batches = [make_transition_batch(i) for i in range(6)]
    straight = build(name, policy_ema_tau=0.1)
    for b in batches:
        straight.update(b)
    first = build(name, policy_ema_tau=0.1)
    for b in batches[:3]:
        first.update(b)
    first.save(tmp_path / "ck")
    loaded = load_learner(tmp_path / "ck")
    assert_learners_equal(first, loaded)
    obs = batches[0].obs.numpy()
    np.testing.assert_array_equal(first.act(obs), loaded.act(obs))
    for b in batches[3:]:
        loaded.update(b)
    assert_learners_equal(straight, loaded)
    np.testing.assert_array_equal(straight.act(obs), loaded.act(obs))


@pytest.mark.parametrize("name", ["cvl", "cvl_mc"])
def test_cvl_save_load_act_and_resume(name: str, tmp_path) -> None:
    check_save_load_act_resume(lambda: build(name, seed=4, policy_ema_tau=0.1), tmp_path)


def test_cvl_acting_by_q_scores_the_average() -> None:
    learner = build("cvl_mc", policy_extraction="ddpgbc", act_candidates=3, policy_ema_tau=0.1)
    for i in range(3):
        learner.update(batch_for("cvl_mc", i))
    obs = make_contrastive_batch(seed=99).obs_t
    twin = build("cvl_mc", policy_extraction="ddpgbc", act_candidates=3, policy_ema_tau=0.1)
    for i in range(3):
        twin.update(batch_for("cvl_mc", i))
    twin.policy.load_state_dict(twin.policy_ema.state_dict())  # candidates from the average
    twin.policy_ema = None
    np.testing.assert_array_equal(learner.act(obs), twin.act(obs))


@pytest.mark.parametrize("name", ["cvl", "cvl_mc"])
def test_vectorised_seeds_equal_each_seed_alone(name: str) -> None:
    check_vectorised_equals_alone(lambda seed: build(name, seed=seed, policy_ema_tau=0.1), 20)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_config_refuses_tau_outside_unit_interval(name: str) -> None:
    for tau in (-0.1, 1.5):
        with pytest.raises(ValueError, match="policy_ema_tau must lie in"):
            build(name, policy_ema_tau=tau)
