"""A learned InfoNCE temperature (``learn_temperature``): the critic's logits and the loss's
gradient in ``log tau`` against a naive reference, the floor, gradient isolation in the policy
step, the logged value, checkpoints, resumption, vectorised seeds and the config's refusals."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    double_batch,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)

from cvl_algos import make_learner
from cvl_algos.cvl import contrastive_critic_loss, direct_q_fn
from cvl_models import ContrastiveCritic

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
LEARNED = {
    "learn_temperature": True,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
}


def _critic(temperature: float = 0.3) -> ContrastiveCritic:
    torch.manual_seed(0)
    return ContrastiveCritic(
        (OBS_DIM,),
        ACTION_DIM,
        latent_dim=8,
        hidden=(16,),
        temperature=temperature,
        learn_temperature=True,
    ).double()


def _naive_infonce(phi, psi, tau: float, lambda_partition: float) -> float:
    """eq. 9-10 written out per row, in float64."""
    batch = phi.shape[0]
    nce, partition = 0.0, 0.0
    for i in range(batch):
        row = [float(phi[i] @ psi[j]) / tau for j in range(batch)]
        lse = math.log(sum(math.exp(x) for x in row))
        nce += lse - row[i]
        partition += lse**2
    return nce / batch + lambda_partition * partition / batch


def test_learned_temperature_starts_at_the_given_value_and_scales_the_logits() -> None:
    critic = _critic(0.3)
    batch = make_contrastive_batch(0)
    obs, act, fut = (x.double() for x in (batch.obs_t, batch.action_t, batch.obs_future))
    assert isinstance(critic.temperature, torch.Tensor)
    torch.testing.assert_close(critic.temperature, torch.tensor(0.3, dtype=torch.float64))
    with torch.no_grad():
        critic.log_temperature.fill_(math.log(0.7))
        expected = critic.phi(obs, act) @ critic.psi(fut).T / 0.7
    torch.testing.assert_close(critic.logits(obs, act, fut), expected)


def test_loss_gradient_in_log_tau_matches_finite_differences_of_a_naive_loss() -> None:
    critic = _critic(0.3)
    batch = make_contrastive_batch(1)
    double = double_batch(batch)
    loss, metrics = contrastive_critic_loss(critic, double, 1e-2)
    loss.backward()
    with torch.no_grad():
        phi = critic.phi(double.obs_t, double.action_t)
        psi = critic.psi(double.obs_future)
    log_tau, eps = float(critic.log_temperature.detach()), 1e-6  # log(0.3) rounded to float32
    naive = _naive_infonce(phi, psi, math.exp(log_tau), 1e-2)
    assert abs(float(loss.detach()) - naive) < 1e-9
    slope = (
        _naive_infonce(phi, psi, math.exp(log_tau + eps), 1e-2)
        - _naive_infonce(phi, psi, math.exp(log_tau - eps), 1e-2)
    ) / (2 * eps)
    assert abs(float(critic.log_temperature.grad) - slope) < 1e-6 * max(1.0, abs(slope))


def test_the_floor_holds_and_stops_the_gradient() -> None:
    critic = _critic(0.3)
    with torch.no_grad():
        critic.log_temperature.fill_(math.log(1e-4))
    assert float(critic.temperature.detach()) == pytest.approx(0.01)
    batch = make_contrastive_batch(2)
    double = double_batch(batch)
    contrastive_critic_loss(critic, double, 1e-3)[0].backward()
    assert float(critic.log_temperature.grad) == 0.0


def test_policy_step_leaves_the_temperature_alone() -> None:
    """The direct Q the policy maximises reads a detached temperature: no gradient reaches
    ``log tau`` through the policy's loss."""
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **LEARNED)
    batch = make_contrastive_batch(3)
    psi_future = learner.psi_target(batch.obs_future)
    q_fn = direct_q_fn(learner.critic, psi_future, batch.reward_future, 0.99, True)
    actions = learner.policy.deterministic(batch.obs_t).unsqueeze(0)
    q_fn(batch.obs_t, actions).sum().backward()
    assert learner.critic.log_temperature.grad is None
    assert all(p.grad is None for p in learner.critic.parameters())


def test_learner_trains_and_logs_the_temperature() -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=1, **TINY, **LEARNED)
    start = float(learner.critic.temperature.detach())
    for i in range(5):  # the metric is the temperature of the update's loss, before its step
        before = float(learner.critic.temperature.detach())
        assert float(learner.update(make_contrastive_batch(i))["temperature"]) == before
    assert start == pytest.approx(0.1) and float(learner.critic.temperature.detach()) != start
    fixed = make_learner(
        "cvl_mc", (OBS_DIM,), ACTION_DIM, seed=1, **TINY, **{**LEARNED, "learn_temperature": False}
    )
    assert fixed.critic.temperature == 0.1 and "temperature" not in fixed.update(
        make_contrastive_batch(0)
    )
    assert not any("temperature" in name for name, _ in fixed.critic.named_parameters())


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **LEARNED)

    learner = check_save_load_act_resume(build, tmp_path)
    assert float(learner.critic.temperature.detach()) != pytest.approx(0.1, abs=1e-7)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **LEARNED)

    check_vectorised_equals_alone(build, updates=30)


def test_config_refuses_a_learned_temperature_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="learn_temperature=True needs q_estimator='mc'"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, learn_temperature=True)
    with pytest.raises(ValueError, match="temperature >= 0.01"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, learn_temperature=True, temperature=1e-3)
