"""The action-contrast term's policy negatives drawn from the policy's polyak average
(``action_contrast_policy="average"``): the draws are the average's mode, samples of its
tanh-Gaussian and uniform actions, not the trained policy's; "trained" draws as the default;
the config's refusals; save, load, act and resume; vectorised seeds."""

from __future__ import annotations

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)

from cvl_algos import make_learner

AVERAGE = {
    "hidden": (32, 32),
    "latent_dim": 8,
    "num_action_samples": 3,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 4,
    "action_contrast_source": "policy_uniform",
    "policy_ema_tau": 0.05,
    "action_contrast_policy": "average",
}


def _updated(seed: int = 0, updates: int = 20, **extra):
    """A learner of ``AVERAGE`` with ``extra`` (a None value drops that field: its default)
    after ``updates`` updates on one batch, and the batch."""
    config = {key: value for key, value in {**AVERAGE, **extra}.items() if value is not None}
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **config)
    batch = make_contrastive_batch(0)
    for _ in range(updates):
        learner.update(batch)
    return learner, batch


def test_average_negatives_are_the_average_mode_and_samples_then_uniform_draws() -> None:
    learner, batch = _updated()
    with torch.no_grad():
        mean, log_std = learner.policy_ema(batch.obs_t)
        trained_mean, _ = learner.policy(batch.obs_t)
    # 20 updates at tau 0.05 leave the average well apart from the trained policy
    assert float((torch.tanh(mean) - torch.tanh(trained_mean)).abs().max()) > 1e-3
    draws = torch.stack([learner._negative_actions(batch, 0) for _ in range(400)])  # (N, 4, B, A)
    assert draws.shape[1:] == (4, *batch.action_t.shape) and not draws.requires_grad
    assert torch.equal(draws[:, 0], torch.tanh(mean).expand_as(draws[:, 0]))
    # K // 2 = 2 of the policy's: its mode and one sample, mean + std * eps with eps ~ N(0, 1)
    eps = (torch.atanh(draws[:, 1].clamp(-0.999999, 0.999999)) - mean) / log_std.exp()
    assert abs(float(eps.mean())) < 0.05 and abs(float(eps.std()) - 1.0) < 0.05
    uniform = draws[:, 2:]
    assert abs(float(uniform.mean())) < 0.03 and abs(float(uniform.var()) - 1 / 3) < 0.03


def test_trained_draws_from_the_trained_policy_as_the_default_does() -> None:
    explicit, batch = _updated(action_contrast_policy="trained")
    implicit, _ = _updated(action_contrast_policy=None)
    drawn = []
    for learner in (explicit, implicit):
        torch.manual_seed(7)
        drawn.append(learner._negative_actions(batch, 0))
    assert torch.equal(*drawn)
    with torch.no_grad():
        mean, _ = explicit.policy(batch.obs_t)
    assert torch.equal(drawn[0][0], torch.tanh(mean))


def test_the_two_sources_train_apart_once_the_average_lags() -> None:
    average, _ = _updated(updates=5)
    trained, _ = _updated(updates=5, action_contrast_policy="trained")
    parted = [
        not torch.equal(a, b)
        for a, b in zip(average.critic.parameters(), trained.critic.parameters())
    ]
    assert any(parted)


@pytest.mark.parametrize(
    "extra",
    [
        {"action_contrast_policy": "ema"},
        {"policy_ema_tau": 0.0},
        {"action_contrast_source": "uniform"},
    ],
)
def test_refusals(extra) -> None:
    with pytest.raises(ValueError, match=r"action_contrast_policy must be 'trained' or 'average'"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **{**AVERAGE, **extra})


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **AVERAGE)

    check_save_load_act_resume(build, tmp_path)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **AVERAGE)

    check_vectorised_equals_alone(build, updates=10)
