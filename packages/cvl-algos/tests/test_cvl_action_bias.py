"""The action-contrast term's bias head (``action_contrast_bias``): the loss against a naive
per-anchor reference in float64, the identity with a zero head, eq. 9 untouched by the head,
gradient isolation, the learner's metrics, checkpoints, resumption, vectorised seeds and the
config's refusals."""

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
BIASED = {
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 3,
    "action_contrast_bias": True,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
}


def _critic(temperature: float, action_bias: bool = True) -> ContrastiveCritic:
    torch.manual_seed(0)
    critic = ContrastiveCritic(
        (OBS_DIM,),
        ACTION_DIM,
        latent_dim=8,
        hidden=(16,),
        temperature=temperature,
        action_bias=action_bias,
    )
    return critic.double()


def _naive(critic, obs, action, future, negatives: int, lambda_bias: float) -> float:
    """Per anchor i: candidates a_i, a_{i+1}, ..., a_{i+K} (indices mod B), each scored one
    pair at a time by phi(s_i, a) . psi(s+_i) / tau + b(s_i, a), b the head on [s_i, a]; plus
    lambda_bias times the mean over anchors of the squared mean of their b."""
    batch, total, pin = obs.shape[0], 0.0, 0.0
    with torch.no_grad():
        for i in range(batch):
            psi = critic.psi(future[i : i + 1])[0]
            scores, biases = [], []
            for k in range(negatives + 1):
                a = action[(i + k) % batch : (i + k) % batch + 1]
                f = float(critic.phi(obs[i : i + 1], a)[0] @ psi) / critic.temperature
                biases.append(float(critic.bias_net(torch.cat([obs[i : i + 1], a], dim=1))[0, 0]))
                scores.append(f + biases[-1])
            top = max(scores)
            total -= scores[0] - top - math.log(sum(math.exp(x - top) for x in scores))
            pin += (sum(biases) / len(biases)) ** 2
    return total / batch + lambda_bias * pin / batch


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
    loss, metrics = action_contrastive_loss(
        critic, torch.diagonal(logits), batch.obs_t, batch.action_t, psi_future, negatives, 0.1
    )
    want = _naive(critic, batch.obs_t, batch.action_t, batch.obs_future, negatives, 0.1)
    assert float(loss.detach()) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert float(metrics["action_bias_spread"]) >= 0.0


def test_a_zero_head_gives_the_unbiased_term_and_the_head_never_enters_eq_9():
    biased, plain = _critic(0.1), _critic(0.1, action_bias=False)
    # same seed: phi and psi draw the same weights with or without the head (drawn last)
    for name, value in plain.state_dict().items():
        assert torch.equal(value, biased.state_dict()[name]), name
    batch = double_batch(make_contrastive_batch(5, size=9))
    assert torch.equal(
        biased.logits(batch.obs_t, batch.action_t, batch.obs_future),
        plain.logits(batch.obs_t, batch.action_t, batch.obs_future),
    )
    last = [m for m in biased.bias_net.modules() if isinstance(m, torch.nn.Linear)][-1]
    want = contrastive_critic_loss(plain, batch, 1e-3, "infonce", 1.0, 4)[0].detach()
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
        zero, _ = contrastive_critic_loss(biased, batch, 1e-3, "infonce", 1.0, 4)
        assert float(zero) == pytest.approx(float(want), rel=1e-12)
        last.bias.fill_(3.0)  # a constant head cancels in the softmax; only the pin sees it
        three, metrics = contrastive_critic_loss(biased, batch, 1e-3, "infonce", 1.0, 4)
    assert float(metrics["action_contrast_loss"]) == pytest.approx(
        float(want) - float(contrastive_critic_loss(plain, batch, 1e-3)[0].detach()), rel=1e-9
    )
    assert float(three) == pytest.approx(float(want) + 1e-3 * 9.0, rel=1e-12)


def test_gradients_the_head_gets_the_terms_only():
    critic = _critic(0.1)
    batch = double_batch(make_contrastive_batch(2, size=8))
    eq9, _ = contrastive_critic_loss(critic, batch, 1e-3)
    eq9.backward()
    assert all(p.grad is None for p in critic.bias_net.parameters())
    critic.zero_grad(set_to_none=True)
    both, _ = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 1.0, 4)
    both.backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in critic.parameters())


def test_the_head_refuses_a_critic_without_it_and_bad_shapes():
    plain, biased = _critic(0.1, action_bias=False), _critic(0.1)
    obs = torch.zeros(3, OBS_DIM, dtype=torch.float64)
    actions = torch.zeros(2, 3, ACTION_DIM, dtype=torch.float64)
    with pytest.raises(ValueError, match="built without action_bias=True"):
        plain.action_bias(obs, actions)
    assert biased.action_bias(obs, actions).shape == (2, 3)
    with pytest.raises(ValueError, match="bias actions: expected"):
        biased.action_bias(obs, actions[:, :2])


def test_learner_trains_and_logs_the_head():
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **BIASED)
    assert learner.critic.bias_net is not None
    first = learner.update(make_contrastive_batch(0))
    for i in range(1, 30):
        last = learner.update(make_contrastive_batch(i % 3))
    assert float(last["action_contrast_loss"]) < float(first["action_contrast_loss"])
    assert float(last["action_bias_spread"]) > 0.0


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **BIASED)

    check_save_load_act_resume(build, tmp_path)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **BIASED)

    check_vectorised_equals_alone(build, updates=30)


def test_config_refusals() -> None:
    with pytest.raises(ValueError, match="action_contrast_bias=True needs"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, action_contrast_bias=True)
    with pytest.raises(ValueError, match="action_contrast_bias=True needs"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **{**BIASED, "bc_density_weight": 0.1})
