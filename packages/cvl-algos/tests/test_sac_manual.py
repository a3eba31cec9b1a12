"""SAC with ``manual_gradients=True`` (`cvl_algos.sac_manual`) against autograd's SAC, for both
torsos (the plain MLP and the paper's DenseNet with LayerNorm): the same gradients at equal
parameters, the same update, checkpoints, and the refusals."""

import dataclasses

import pytest
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    TINY,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    one_line_error,  # pants: no-infer-dep
    randomise_layer_norms,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import load_learner, make_learner
from cvl_algos.sac import SACConfig, SACLearner, alpha_loss
from cvl_algos.vectorised import VectorisedLearner

GRAD_TOLERANCE = 1e-5
"""Largest ``||g_manual - g_autograd|| / ||g_autograd||`` of any gradient tensor."""

TORSOS = ("mlp", "densenet")


def _twins(
    action_dim: int = ACTION_DIM, seed: int = 0, device: str = "cpu", **overrides
) -> tuple[SACLearner, SACLearner]:
    """``(autograd, manual)`` SAC learners (``torso="mlp"`` unless overridden), the same seed:
    equal parameters and random draws. The DenseNet's LayerNorms get random affine parameters
    (the same in both), not their initial ``gamma = 1``, ``beta = 0``, so that the tests see
    them."""
    config = SACConfig(**{**TINY, "torso": "mlp", **overrides})
    manual = dataclasses.replace(config, manual_gradients=True)
    learners = (
        SACLearner((OBS_DIM,), action_dim, config, device, seed),
        SACLearner((OBS_DIM,), action_dim, manual, device, seed),
    )
    randomise_layer_norms(learners, seed)
    return learners


def _assert_grads_close(manual: torch.nn.Module, auto: torch.nn.Module) -> None:
    for (name, p_manual), p_auto in zip(manual.named_parameters(), auto.parameters(), strict=True):
        error = (p_manual.grad - p_auto.grad).norm()
        assert error <= GRAD_TOLERANCE * p_auto.grad.norm(), (name, error, p_auto.grad.norm())


@pytest.mark.parametrize("torso", TORSOS)
@settings(max_examples=10, deadline=None)
@given(
    hidden=st.sampled_from([(8,), (16, 16), (32, 24), (12, 20, 16)]),
    batch_size=st.sampled_from([2, 7, 32, 64]),
    action_dim=st.integers(1, 4),
    init_alpha=st.floats(0.05, 2.0),
    backup_entropy=st.booleans(),
    tied_heads=st.booleans(),
    seed=st.integers(0, 100),
)
def test_stage_gradients_equal_autograd(
    torso, hidden, batch_size, action_dim, init_alpha, backup_entropy, tied_heads, seed
):
    """At equal parameters, batch and random draws: critic (SAC eq. 5), actor (eq. 7) and
    temperature (eq. 18) gradients within float rounding of autograd's; the actor stage leaves
    the critic's gradients as they are. ``tied_heads``: Q_2 a copy of Q_1, so that every
    ``min(Q_1, Q_2)`` is a tie (autograd splits its gradient in halves; with equal heads only
    the shares' sum, one, shows)."""
    auto, manual = _twins(
        action_dim,
        seed,
        torso=torso,
        hidden=hidden,
        init_alpha=init_alpha,
        backup_entropy=backup_entropy,
    )
    if tied_heads:
        for learner in (auto, manual):
            learner.critic.q2.load_state_dict(learner.critic.q1.state_dict())
    batch = make_transition_batch(seed, batch_size, terminal_every=3, action_dim=action_dim)
    with auto.rng_scope():
        loss, metrics_auto = auto.compute_critic_loss(batch)
        loss.backward()
    with manual.rng_scope():
        metrics_manual = manual.manual_update.critic_grads(batch, manual.alpha)
    _assert_grads_close(manual.critic, auto.critic)
    critic_grads = [p.grad.clone() for p in manual.critic.parameters()]
    with auto.rng_scope():
        loss, actor_metrics = auto.compute_actor_loss(batch)
        loss.backward()
    metrics_auto.update(actor_metrics)
    with manual.rng_scope():
        metrics_manual.update(manual.manual_update.actor_grads(batch, manual.alpha))
    _assert_grads_close(manual.policy, auto.policy)
    assert all(torch.equal(a, p.grad) for a, p in zip(critic_grads, manual.critic.parameters()))
    loss, alpha_metrics = alpha_loss(auto.log_alpha(), metrics_auto["entropy"], auto.target_entropy)
    loss.backward()
    metrics_manual.update(manual.manual_update.alpha_grads(metrics_manual["entropy"]))
    _assert_grads_close(manual.log_alpha, auto.log_alpha)
    for key, value in metrics_manual.items():
        torch.testing.assert_close(value, metrics_auto.get(key, alpha_metrics.get(key)))


@pytest.mark.parametrize("torso", TORSOS)
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"max_grad_norm": 0.05},  # the clip bites
        {"max_grad_norm": 0.0},  # no clip
        {"auto_alpha": False, "backup_entropy": False},
        {"policy_ema_tau": 0.1},
    ],
)
def test_one_update_equals_autograd(torso, overrides, device):
    auto, manual = _twins(seed=3, device=device, torso=torso, **overrides)
    assert auto.manual_update is None and manual.manual_update is not None
    batch = make_transition_batch(1, device=device)
    metrics_auto, metrics_manual = auto.update(batch), manual.update(batch)
    assert list(metrics_manual) == list(metrics_auto)
    for key, value in metrics_auto.items():
        torch.testing.assert_close(metrics_manual[key], value, rtol=1e-5, atol=1e-6)
    if "max_grad_norm" in overrides and overrides["max_grad_norm"] > 0:
        assert float(metrics_auto["critic_grad_norm"]) > overrides["max_grad_norm"]
    for name, module in auto.state_modules().items():
        other = manual.state_modules()[name]
        for a, b in zip(module.parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(b, a, rtol=0.0, atol=1e-5)


@pytest.mark.parametrize("torso", TORSOS)
def test_save_load_act_and_resume_bit_equal(torso, tmp_path):
    overrides = {**TINY, "torso": torso, "manual_gradients": True}
    check_save_load_act_resume(
        lambda: make_learner("sac", (OBS_DIM,), ACTION_DIM, seed=1, **overrides),
        tmp_path,
        batch_fn=make_transition_batch,
    )
    loaded = load_learner(tmp_path / "ckpt")
    assert loaded.config.manual_gradients and loaded.manual_update is not None


class _OtherCriticLossSAC(SACLearner):
    """A SAC whose critic loss is its own: the hand-written gradients would not be its."""

    def compute_critic_loss(self, batch):
        loss, metrics = super().compute_critic_loss(batch)
        return 2.0 * loss, metrics


@pytest.mark.parametrize("torso", TORSOS)
def test_refusals(torso):
    """Everything but the torso: both are accepted (the default, the DenseNet, included). CQL's
    refusals are test_cql_manual.py's."""
    assert SACConfig(manual_gradients=True).torso == "densenet"
    manual = {"torso": torso, "manual_gradients": True}
    assert (
        one_line_error(lambda: SACConfig(**manual, compile=True))
        == "manual_gradients needs compile=False, got compile=True"
    )
    assert (
        one_line_error(lambda: SACLearner((8, 8, 3), ACTION_DIM, SACConfig(**TINY, **manual)))
        == "manual_gradients needs state observations (a 1-D obs_shape), got (8, 8, 3)"
    )
    assert one_line_error(
        lambda: _OtherCriticLossSAC((OBS_DIM,), ACTION_DIM, SACConfig(**TINY, **manual))
    ) == (
        "manual_gradients needs SAC's own losses, got _OtherCriticLossSAC, which overrides "
        "compute_critic_loss"
    )
    seeds = [make_learner("sac", (OBS_DIM,), ACTION_DIM, seed=s, **TINY, **manual) for s in (0, 1)]
    assert one_line_error(lambda: VectorisedLearner(seeds)) == (
        "VectorisedLearner: config.manual_gradients is not supported with vectorised seeds "
        "(vmap needs autograd's stages); set manual_gradients=False"
    )
