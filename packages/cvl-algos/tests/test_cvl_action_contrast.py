"""The action-contrastive critic term (``action_contrast_weight``): the loss against a naive
per-anchor reference in float64, its gradient only in the critic, the default path unchanged,
the learner's metrics, checkpoints, resumption, vectorised seeds and the config's refusals."""

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
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl import contrastive_critic_loss
from cvl_algos.cvl.losses import action_contrastive_loss
from cvl_models import ContrastiveCritic

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
CONTRAST = {
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 3,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
}


def _critic(temperature: float) -> ContrastiveCritic:
    torch.manual_seed(0)
    critic = ContrastiveCritic(
        (OBS_DIM,), ACTION_DIM, latent_dim=8, hidden=(16,), temperature=temperature
    )
    return critic.double()


def _naive(critic, obs, action, future, negatives: int) -> float:
    """Per anchor i: candidates a_i, a_{i+1}, ..., a_{i+K} (indices mod B), each scored by
    phi(s_i, a) . psi(s+_i) / tau one pair at a time; minus the log-softmax of the first."""
    with torch.no_grad():
        return _naive_rows(critic, obs, action, future, negatives)


def _naive_rows(critic, obs, action, future, negatives: int) -> float:
    batch, total = obs.shape[0], 0.0
    for i in range(batch):
        psi = critic.psi(future[i : i + 1])[0]
        scores = []
        for k in range(negatives + 1):
            a = action[(i + k) % batch : (i + k) % batch + 1]
            scores.append(float(critic.phi(obs[i : i + 1], a)[0] @ psi) / critic.temperature)
        top = max(scores)
        total -= scores[0] - top - math.log(sum(math.exp(x - top) for x in scores))
    return total / batch


@settings(max_examples=10)
@given(
    seed=st.integers(0, 1000),
    size=st.integers(2, 12),
    negatives=st.integers(1, 11),
    temperature=st.sampled_from([0.05, 0.1, 1.0]),
)
def test_the_loss_matches_a_naive_per_anchor_reference(seed, size, negatives, temperature):
    negatives = min(negatives, size - 1)
    critic = _critic(temperature)
    batch = double_batch(make_contrastive_batch(seed, size=size))
    logits, psi_future = critic.logits_and_psi(batch.obs_t, batch.action_t, batch.obs_future)
    assert torch.equal(logits, critic.logits(batch.obs_t, batch.action_t, batch.obs_future))
    loss, metrics = action_contrastive_loss(
        critic, torch.diagonal(logits), batch.obs_t, batch.action_t, psi_future, negatives
    )
    want = _naive(critic, batch.obs_t, batch.action_t, batch.obs_future, negatives)
    assert float(loss.detach()) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert 0.0 <= float(metrics["action_contrast_accuracy"]) <= 1.0


def test_the_critic_loss_adds_the_term_with_its_weight_and_leaves_the_default_alone():
    critic = _critic(0.1)
    batch = double_batch(make_contrastive_batch(3))
    base, base_metrics = contrastive_critic_loss(critic, batch, 1e-3)
    off, off_metrics = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 0.0, 5)
    assert torch.equal(base, off) and set(off_metrics) == set(base_metrics)
    on, on_metrics = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 0.5, 5)
    term = on_metrics["action_contrast_loss"]
    assert float(on) == pytest.approx(float(base) + 0.5 * float(term), rel=1e-12)
    assert {"action_contrast_loss", "action_contrast_accuracy"} <= set(on_metrics)


def test_a_critic_that_cannot_tell_the_actions_apart_scores_log_k_plus_one():
    """With every action the same the candidates tie: the loss is log(K + 1). With distinct
    actions its gradient reaches every parameter of both encoders."""
    critic = _critic(0.1)
    batch = double_batch(make_contrastive_batch(1, size=6))
    same = batch.action_t[:1].expand_as(batch.action_t).clone()
    logits, psi_future = critic.logits_and_psi(batch.obs_t, same, batch.obs_future)
    positive = torch.diagonal(logits)
    loss, _ = action_contrastive_loss(critic, positive, batch.obs_t, same, psi_future, 4)
    assert float(loss) == pytest.approx(math.log(5), rel=1e-12)
    loss, _ = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 1.0, 4)
    loss.backward()  # the term trains both encoders: phi through the actions, psi the futures
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in critic.parameters())
    with pytest.raises(ValueError, match="action_negatives must be in"):
        action_contrastive_loss(critic, positive, batch.obs_t, same, psi_future, 6)


def test_learner_trains_and_logs_the_term():
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **CONTRAST)
    first = learner.update(make_contrastive_batch(0))
    for i in range(1, 30):
        last = learner.update(make_contrastive_batch(i % 3))
    assert float(last["action_contrast_loss"]) < float(first["action_contrast_loss"])
    plain = make_learner(
        "cvl_mc",
        (OBS_DIM,),
        ACTION_DIM,
        seed=0,
        **TINY,
        **{**CONTRAST, "action_contrast_weight": 0.0},
    )
    assert "action_contrast_loss" not in plain.update(make_contrastive_batch(0))


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **CONTRAST)

    check_save_load_act_resume(build, tmp_path)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **CONTRAST)

    check_vectorised_equals_alone(build, updates=30)


def test_config_refusals() -> None:
    with pytest.raises(ValueError, match="action_contrast_weight must be >= 0"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, action_contrast_weight=-1.0)
    with pytest.raises(ValueError, match="critic_objective='td_infonce'"):
        make_learner(
            "cvl_mc",
            (OBS_DIM,),
            ACTION_DIM,
            action_contrast_weight=1.0,
            critic_objective="td_infonce",
            policy_extraction="ddpgbc",
        )
    with pytest.raises(ValueError, match="action_contrast_negatives must be in"):
        make_learner(
            "cvl_mc",
            (OBS_DIM,),
            ACTION_DIM,
            batch_size=8,
            action_contrast_weight=1.0,
            action_contrast_negatives=8,
        )
    with pytest.raises(ValueError, match="must be >= 1 with action_contrast_source 'uniform'"):
        make_learner(
            "cvl_mc",
            (OBS_DIM,),
            ACTION_DIM,
            action_contrast_weight=1.0,
            action_contrast_negatives=0,
            action_contrast_source="uniform",
        )
    # uniform negatives are drawn, not taken from the batch: more of them than anchors is fine
    make_learner(
        "cvl_mc",
        (OBS_DIM,),
        ACTION_DIM,
        batch_size=4,
        action_contrast_weight=1.0,
        action_contrast_negatives=8,
        action_contrast_source="uniform",
    )
