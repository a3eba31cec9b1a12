"""The action-contrast term with negatives drawn from a behaviour model at the anchor's own
state (``action_contrast_source`` "behaviour", a tanh-Gaussian, and "behaviour_flow", a flow),
uniform on the action box ("uniform"), near misses of the data's action ("perturbed") and half
other anchors' actions, half uniform ("batch_uniform") and half the policy's own, half uniform
("policy_uniform"): the loss against a naive per-anchor reference in float64, the default
negatives as a special case, each behaviour model's fit, the learner's draws, checkpoints,
resumption, vectorised seeds and the config's refusals."""

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
from einops import rearrange
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl.losses import action_contrastive_loss, contrastive_critic_loss
from cvl_models import ContrastiveCritic

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
BEHAVIOUR = {
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 3,
    "action_contrast_source": "behaviour",
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
}


def _critic() -> ContrastiveCritic:
    torch.manual_seed(0)
    critic = ContrastiveCritic((OBS_DIM,), ACTION_DIM, latent_dim=8, hidden=(16,), temperature=0.1)
    return critic.double()


def _naive(critic, obs, action, future, negative_actions) -> float:
    """Per anchor i: candidates a_i, then negative_actions[k, i] for each k, each scored by
    phi(s_i, a) . psi(s+_i) / tau one pair at a time; minus the log-softmax of the first."""
    total, batch = 0.0, obs.shape[0]
    with torch.no_grad():
        for i in range(batch):
            psi = critic.psi(future[i : i + 1])[0]
            candidates = [action[i]] + [
                negative_actions[k, i] for k in range(len(negative_actions))
            ]
            scores = [
                float(critic.phi(obs[i : i + 1], a[None])[0] @ psi) / critic.temperature
                for a in candidates
            ]
            top = max(scores)
            total -= scores[0] - top - math.log(sum(math.exp(x - top) for x in scores))
    return total / batch


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), size=st.integers(1, 10), negatives=st.integers(1, 6))
def test_the_loss_with_given_negatives_matches_a_naive_reference(seed, size, negatives):
    critic = _critic()
    batch = double_batch(make_contrastive_batch(seed, size=size))
    generator = torch.Generator().manual_seed(seed)
    shape = (negatives, size, ACTION_DIM)
    drawn = torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1
    logits, psi_future = critic.logits_and_psi(batch.obs_t, batch.action_t, batch.obs_future)
    # num_negatives is unused with given negatives (a batch of one anchor has no other anchor)
    loss, _ = action_contrastive_loss(
        critic, torch.diagonal(logits), batch.obs_t, batch.action_t, psi_future, 0, 1e-3, drawn
    )
    want = _naive(critic, batch.obs_t, batch.action_t, batch.obs_future, drawn)
    assert float(loss.detach()) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_other_anchors_actions_given_as_negatives_equal_the_default_term():
    critic = _critic()
    batch = double_batch(make_contrastive_batch(2, size=7))
    shifted = torch.stack([torch.roll(batch.action_t, -k, dims=0) for k in range(1, 4)])
    default, _ = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 1.0, 3)
    given_, _ = contrastive_critic_loss(critic, batch, 1e-3, "infonce", 1.0, 3, shifted)
    assert float(given_.detach()) == pytest.approx(float(default.detach()), rel=1e-12)


SOURCES = ("behaviour", "behaviour_flow")
FIT_METRIC = {"behaviour": ("behaviour_nll", 1.0), "behaviour_flow": ("behaviour_flow_loss", 0.3)}
"""Each model's fit metric and by how much 100 updates on one batch must lower it."""


DRAWING = ("uniform", "perturbed", "batch_uniform", "policy_uniform")
"""The sources that draw their negatives without a behaviour model."""


@pytest.mark.parametrize("source", SOURCES)
def test_the_behaviour_model_fits_the_data_and_draws_the_negatives_at_each_state(source):
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source}
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, lr=3e-3, **config)
    batch = make_contrastive_batch(0)
    first = learner.update(batch)
    for _ in range(100):
        last = learner.update(batch)
    metric, drop = FIT_METRIC[source]
    assert float(last[metric]) < float(first[metric]) - drop
    assert "action_contrast_loss" in last
    negatives = learner._negative_actions(batch, 0)
    assert negatives.shape == (3, *batch.action_t.shape)
    # fitted to one batch, its draws sit nearer each state's own action than other states'
    own = (negatives - batch.action_t).norm(dim=-1).mean()
    other = (negatives - torch.roll(batch.action_t, 1, dims=0)).norm(dim=-1).mean()
    assert float(own) < 0.6 * float(other)
    assert not negatives.requires_grad


def _drawn_negatives(source: str, draws: int, **extra) -> tuple:
    """A learner with the term's negatives from ``source`` after one update: checks what every
    drawing source shares (no behaviour model, fresh draws on the action box, no gradient) and
    returns the batch and ``draws`` concatenated draws of its negatives."""
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source, **extra}
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **config)
    assert learner.behaviour is None and "behaviour" not in learner.state_modules()
    batch = make_contrastive_batch(0)
    metrics = learner.update(batch)
    assert "action_contrast_loss" in metrics and "behaviour_nll" not in metrics
    first, second = learner._negative_actions(batch, 0), learner._negative_actions(batch, 0)
    assert first.shape == (3, *batch.action_t.shape)
    assert float(first.min()) >= -1.0 and float(first.max()) <= 1.0
    assert not torch.equal(first, second) and not first.requires_grad
    return batch, torch.cat([learner._negative_actions(batch, 0) for _ in range(draws)])


def test_uniform_negatives_are_fresh_draws_on_the_action_box():
    _, many = _drawn_negatives("uniform", 200)
    # about uniform: each coordinate's mean near 0 and variance near 1/3 over many draws
    assert abs(float(many.mean())) < 0.02 and abs(float(many.var()) - 1 / 3) < 0.02


def test_perturbed_negatives_are_the_data_action_plus_clipped_noise():
    batch, many = _drawn_negatives("perturbed", 400, action_contrast_noise=0.1)
    # away from the box's faces the offsets are N(0, 0.1^2) per coordinate
    inside = (batch.action_t.abs() < 0.6).expand_as(many)
    offsets = (many - batch.action_t)[inside]
    assert abs(float(offsets.mean())) < 0.01 and abs(float(offsets.std()) - 0.1) < 0.01
    # at a face the clip holds them on the box: batch.action_t[0] is exactly 1
    assert float(many[:, 0].max()) == 1.0 and bool((many[:, 0] < 1.0).any())


def test_batch_uniform_negatives_are_other_anchors_actions_then_uniform_draws():
    # K = 3: two other anchors' actions (shifts 1 and 2), then one uniform draw per anchor
    batch, many = _drawn_negatives("batch_uniform", 300)
    many = rearrange(many, "(n k) b a -> n k b a", k=3)
    for k in (1, 2):
        shifted = torch.roll(batch.action_t, -k, dims=0).expand_as(many[:, k - 1])
        assert torch.equal(many[:, k - 1], shifted)
    drawn = many[:, 2]
    assert abs(float(drawn.mean())) < 0.02 and abs(float(drawn.var()) - 1 / 3) < 0.02


@pytest.mark.parametrize("source", ["batch_uniform", "policy_uniform"])
def test_mixed_sources_loss_matches_the_naive_reference_on_their_draws(source):
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source}
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **config)
    critic = learner.critic.double()
    learner.policy.double()  # "policy_uniform" draws from it
    batch = double_batch(make_contrastive_batch(1, size=6))
    negatives = learner._negative_actions(batch, 0)
    assert negatives.shape == (3, *batch.action_t.shape) and negatives.dtype == torch.float64
    psi_future = critic.psi(batch.obs_future)
    positive = (critic.phi(batch.obs_t, batch.action_t) * psi_future).sum(-1) / critic.temperature
    loss, _ = action_contrastive_loss(
        critic, positive, batch.obs_t, batch.action_t, psi_future, 3, negative_actions=negatives
    )
    want = _naive(critic, batch.obs_t, batch.action_t, batch.obs_future, negatives)
    assert float(loss.detach()) == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("own", [None, 1, 3])
def test_policy_uniform_negatives_are_the_policy_mode_and_samples_then_uniform_draws(own):
    _drawn_negatives("policy_uniform", 1)  # K = 3: the mode, then two uniform draws
    # K = 4 with n of them the policy's (None: K // 2 = 2): its mode, n - 1 samples of its
    # tanh-Gaussian, then 4 - n uniform draws
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": "policy_uniform"}
    config.update(action_contrast_negatives=4, action_contrast_policy_negatives=own)
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **config)
    own = 2 if own is None else own
    batch = make_contrastive_batch(0)
    learner.update(batch)
    with torch.no_grad():
        mean, log_std = learner.policy(batch.obs_t)
    draws = torch.stack([learner._negative_actions(batch, 0) for _ in range(400)])  # (N, 4, B, A)
    assert draws.shape[1:] == (4, *batch.action_t.shape) and not draws.requires_grad
    assert torch.equal(draws[:, 0], torch.tanh(mean).expand_as(draws[:, 0]))
    # the samples: atanh of each is mean + std * eps, eps standard normal
    samples = torch.atanh(draws[:, 1:own].clamp(-0.999999, 0.999999))
    eps = (samples - mean) / log_std.exp()
    if own > 1:
        assert abs(float(eps.mean())) < 0.05 and abs(float(eps.std()) - 1.0) < 0.05
    uniform = draws[:, own:]
    assert abs(float(uniform.mean())) < 0.02 and abs(float(uniform.var()) - 1 / 3) < 0.02
    # a uniform draw's atanh is not standard normal around the mode: the split is where told
    stray = (torch.atanh(uniform.clamp(-0.999999, 0.999999)) - mean) / log_std.exp()
    assert float(stray.std()) > 1.5


def test_policy_share_none_is_half_and_the_default_draws_are_unchanged() -> None:
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": "policy_uniform"}
    config["action_contrast_negatives"] = 8
    implicit = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=2, **config)
    explicit = make_learner(
        "cvl_mc", (OBS_DIM,), ACTION_DIM, seed=2, action_contrast_policy_negatives=4, **config
    )
    assert implicit.config.policy_negatives() == 4
    batch, drawn = make_contrastive_batch(0), []
    for learner in (implicit, explicit):
        torch.manual_seed(5)
        drawn.append(learner._negative_actions(batch, 0))
    assert torch.equal(*drawn)


@pytest.mark.parametrize(
    "extra",
    [
        {"action_contrast_policy_negatives": 0},
        {"action_contrast_policy_negatives": 3},
        {"action_contrast_policy_negatives": True},
        {"action_contrast_policy_negatives": 1.0},
        {"action_contrast_policy_negatives": 1, "action_contrast_source": "uniform"},
    ],
)
def test_policy_share_refusals(extra) -> None:
    config = {**BEHAVIOUR, "action_contrast_source": "policy_uniform", **extra}
    with pytest.raises(ValueError, match=r"action_contrast_policy_negatives must be None or an"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **config)


def test_policy_share_of_one_vectorised_seeds_equal_each_seed_alone() -> None:
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": "policy_uniform"}
    config.update(action_contrast_negatives=4, action_contrast_policy_negatives=1)

    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **config)

    check_vectorised_equals_alone(build, updates=10)


def test_policy_uniform_needs_the_mode_and_a_uniform_draw_and_a_tanh_gaussian() -> None:
    config = {**BEHAVIOUR, "action_contrast_source": "policy_uniform"}
    with pytest.raises(ValueError, match=r"action_contrast_negatives must be >= 2"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **{**config, "action_contrast_negatives": 1})
    flow = {**config, "policy_extraction": "flow"}
    with pytest.raises(ValueError, match="'policy_uniform' draws from a tanh-Gaussian policy"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **flow)


def test_perturbed_noise_is_checked_and_read_by_that_source_alone():
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": "perturbed"}
    for bad in (0.0, -0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="action_contrast_noise must be a finite std > 0"):
            make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, action_contrast_noise=bad, **config)
    uniform = {**config, "action_contrast_source": "uniform"}
    with pytest.raises(ValueError, match="read only with action_contrast_source='perturbed'"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, action_contrast_noise=0.5, **uniform)


@pytest.mark.parametrize("source", SOURCES + DRAWING)
def test_the_other_modules_start_as_without_the_behaviour_model(source):
    plain = {**BEHAVIOUR, "action_contrast_source": "batch"}
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source}
    with_model = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=3, **config)
    without = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=3, **TINY, **plain)
    assert without.behaviour is None and "behaviour" not in without.state_modules()
    for name in ("critic", "policy"):
        a = with_model.state_modules()[name].state_dict()
        b = without.state_modules()[name].state_dict()
        assert all(torch.equal(a[k], b[k]) for k in b)


@pytest.mark.parametrize("source", SOURCES + DRAWING)
def test_save_load_act_and_resume_identical(tmp_path, source) -> None:
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source}

    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **config)

    check_save_load_act_resume(build, tmp_path)


@pytest.mark.parametrize("source", SOURCES + DRAWING)
def test_vectorised_seeds_equal_each_seed_alone(source) -> None:
    config = {**TINY, **BEHAVIOUR, "action_contrast_source": source}

    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **config)

    # 10 updates: the two paths agree to 3e-8 through update 11; at update 12 seed 0's phi
    # layers part by 4e-5 in one step (float rounding amplified, measured; the behaviour
    # models stay equal), and a wrong draw order would part them at update 0.
    check_vectorised_equals_alone(build, updates=10)


@pytest.mark.parametrize(
    "overrides",
    [
        {"action_contrast_weight": 0.0},
        {"action_contrast_bias": True},
        {"action_contrast_source": "data"},
        {"action_contrast_source": "behaviour_flow", "action_contrast_weight": 0.0},
        {"action_contrast_source": "behaviour_flow", "action_contrast_bias": True},
        {"action_contrast_source": "uniform", "action_contrast_weight": 0.0},
        {"action_contrast_source": "perturbed", "action_contrast_weight": 0.0},
        {"action_contrast_source": "batch_uniform", "action_contrast_weight": 0.0},
        {"action_contrast_source": "policy_uniform", "action_contrast_weight": 0.0},
    ],
)
def test_config_refusals(overrides) -> None:
    with pytest.raises(
        ValueError, match="action_contrast_source must be 'batch', 'behaviour', 'behaviour_flow',"
    ):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **{**BEHAVIOUR, **overrides})


@pytest.mark.parametrize("negatives", [1, 2 * 256 - 1])
def test_batch_uniform_needs_one_of_each_kind_and_batch_room(negatives) -> None:
    config = {**BEHAVIOUR, "action_contrast_source": "batch_uniform", "batch_size": 256}
    config["action_contrast_negatives"] = negatives
    with pytest.raises(ValueError, match=r"action_contrast_negatives must be in \[2, 510\]"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **config)
