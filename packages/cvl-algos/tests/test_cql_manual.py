"""CQL with ``manual_gradients=True`` (`cvl_algos.cql_manual`) against autograd's CQL, for both
torsos (the plain MLP and the paper's DenseNet with LayerNorm): the same gradients of each stage at equal parameters and random draws (critic with and
without importance sampling, BC warm start, SAC's actor, temperature, Lagrange), the same
updates, checkpoints and resumption, and the refusals."""

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
from cvl_algos.cql import CQLConfig, CQLLearner, cql_lagrange_loss
from cvl_algos.cql_manual import STATE_CHUNK
from cvl_algos.sac import alpha_loss
from cvl_models.mlp import DenseMLP, PlainMLP

GRAD_TOLERANCE = 1e-5
"""Largest ``||g_manual - g_autograd|| / ||g_autograd||`` of any gradient tensor, ..."""
GRAD_ATOL = 1e-6
"""... plus this absolute slack: terms of order ``cql_alpha / B`` cancel in a sum (each
state's softmax adds ``c / B`` to the output bias's gradient, its data action ``-c / B``), so a
small gradient can carry the float32 rounding of its large terms (seen: 1.2e-7 on 0.004)."""


TORSOS = ("mlp", "densenet")


def _twins(
    action_dim: int = ACTION_DIM,
    seed: int = 0,
    device: str = "cpu",
    state_chunk: int = STATE_CHUNK,
    **overrides,
) -> tuple[CQLLearner, CQLLearner]:
    """``(autograd, manual)`` CQL learners (``torso="mlp"`` unless overridden), the same seed:
    equal parameters and random draws; the manual one's critic passes over ``state_chunk``
    states at a time (below the batch size: several chunks, their gradients summed). The
    DenseNet's LayerNorms get random affine parameters (the same in both), as in
    test_sac_manual.py, so that the tests see them."""
    config = CQLConfig(**{**TINY, "torso": "mlp", "cql_num_samples": 3, **overrides})
    manual = dataclasses.replace(config, manual_gradients=True)
    learners = (
        CQLLearner((OBS_DIM,), action_dim, config, device, seed),
        CQLLearner((OBS_DIM,), action_dim, manual, device, seed),
    )
    learners[1].manual_update.state_chunk = state_chunk
    randomise_layer_norms(learners, seed)
    return learners


def _assert_grads_close(manual: torch.nn.Module, auto: torch.nn.Module) -> None:
    for (name, p_manual), p_auto in zip(manual.named_parameters(), auto.parameters(), strict=True):
        error = (p_manual.grad - p_auto.grad).norm()
        bound = GRAD_TOLERANCE * p_auto.grad.norm() + GRAD_ATOL
        assert error <= bound, (name, error, p_auto.grad.norm())


def _assert_metrics_close(manual: dict, auto: dict) -> None:
    assert list(manual) == list(auto)
    for key, value in auto.items():
        torch.testing.assert_close(manual[key], value, rtol=1e-5, atol=1e-6, msg=key)


@pytest.mark.parametrize("torso", TORSOS)
@settings(max_examples=12, deadline=None)
@given(
    hidden=st.sampled_from([(8,), (16, 16), (12, 20, 16)]),
    batch_size=st.sampled_from([2, 7, 32]),
    action_dim=st.integers(1, 4),
    num_samples=st.integers(1, 5),
    temperature=st.sampled_from([1.0, 0.5, 3.0]),
    importance_sampling=st.booleans(),
    cql_alpha=st.floats(0.1, 5.0),
    init_alpha=st.floats(0.05, 2.0),
    backup_entropy=st.booleans(),
    warm_start=st.booleans(),
    state_chunk=st.sampled_from([STATE_CHUNK, 1, 5]),
    seed=st.integers(0, 100),
)
def test_stage_gradients_equal_autograd(
    torso,
    hidden,
    batch_size,
    action_dim,
    num_samples,
    temperature,
    importance_sampling,
    cql_alpha,
    init_alpha,
    backup_entropy,
    warm_start,
    state_chunk,
    seed,
):
    """At equal parameters, batch and random draws: the critic's (CQL eq. 4 over 3N + 1
    actions), the actor's (the BC warm start or SAC eq. 7) and the temperature's gradients
    within float rounding of autograd's, and their metrics."""
    auto, manual = _twins(
        action_dim,
        seed,
        state_chunk=state_chunk,
        torso=torso,
        hidden=hidden,
        cql_num_samples=num_samples,
        cql_temperature=temperature,
        cql_importance_sampling=importance_sampling,
        cql_alpha=cql_alpha,
        init_alpha=init_alpha,
        backup_entropy=backup_entropy,
        policy_eval_start=1 if warm_start else 0,
    )
    batch = make_transition_batch(seed, batch_size, terminal_every=3, action_dim=action_dim)
    with auto.rng_scope():
        loss, metrics_auto = auto.compute_critic_loss(batch)
        loss.backward()
    with manual.rng_scope():
        metrics_manual = manual.manual_update.critic_grads(batch, manual.alpha)
    _assert_grads_close(manual.critic, auto.critic)
    _assert_metrics_close(metrics_manual, metrics_auto)
    with auto.rng_scope():
        loss, metrics_auto = auto.actor_loss_fn_for_step()(batch)
        loss.backward()
    with manual.rng_scope():
        metrics_manual = manual.manual_update.actor_grads(batch, manual.alpha)
    assert ("nll" in metrics_manual) == warm_start
    _assert_grads_close(manual.policy, auto.policy)
    _assert_metrics_close(metrics_manual, metrics_auto)
    loss, _ = alpha_loss(auto.log_alpha(), metrics_auto["entropy"], auto.target_entropy)
    loss.backward()
    manual.manual_update.alpha_grads(metrics_manual["entropy"])
    _assert_grads_close(manual.log_alpha, auto.log_alpha)


@settings(max_examples=10, deadline=None)
@given(log_alpha=st.floats(-3.0, 3.0), regularizer=st.floats(-50.0, 50.0))
def test_lagrange_gradient_equals_autograd(log_alpha, regularizer):
    auto, manual = _twins(cql_lagrange=True)
    for learner in (auto, manual):
        learner.log_alpha_prime.value.data.fill_(log_alpha)
    reg = torch.tensor(regularizer)
    loss, metrics_auto = cql_lagrange_loss(auto.log_alpha_prime(), reg, 10.0)
    loss.backward()
    metrics_manual = manual.manual_update.lagrange_grads(reg)
    _assert_grads_close(manual.log_alpha_prime, auto.log_alpha_prime)
    _assert_metrics_close(metrics_manual, metrics_auto)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"policy_eval_start": 2},  # warm start, then the switch to SAC's actor loss
        {"cql_importance_sampling": False, "cql_temperature": 2.0},
        {"cql_lagrange": True, "cql_target_action_gap": 0.5},
        {"max_grad_norm": 0.05},  # the clip bites
        {"max_grad_norm": 0.0, "auto_alpha": False, "backup_entropy": True},
        {"policy_ema_tau": 0.1},
    ],
)
@pytest.mark.parametrize("state_chunk", [STATE_CHUNK, 7])
@pytest.mark.parametrize("torso", TORSOS)
def test_updates_equal_autograd(overrides, state_chunk, torso, device):
    """Four updates from the same seed: the same metrics (names, order, values) and
    parameters within float rounding."""
    auto, manual = _twins(seed=3, device=device, state_chunk=state_chunk, torso=torso, **overrides)
    assert auto.manual_update is None and manual.manual_update is not None
    for i in range(4):
        batch = make_transition_batch(i, device=device)
        metrics_auto, metrics_manual = auto.update(batch), manual.update(batch)
        _assert_metrics_close(metrics_manual, metrics_auto)
    if overrides.get("max_grad_norm", 1.0) > 0.0 and "max_grad_norm" in overrides:
        assert float(metrics_auto["critic_grad_norm"]) > overrides["max_grad_norm"]
    for name, module in auto.state_modules().items():
        other = manual.state_modules()[name]
        for a, b in zip(module.parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(b, a, rtol=0.0, atol=1e-5, msg=name)


@pytest.mark.parametrize(("torso", "lagrange"), [("mlp", False), ("mlp", True), ("densenet", True)])
def test_save_load_act_and_resume_bit_equal(torso, lagrange, tmp_path):
    """Stopped and resumed across the warm start's switch, bit for bit."""
    overrides = {
        **TINY,
        "torso": torso,
        "manual_gradients": True,
        "policy_eval_start": 2,
        "cql_lagrange": lagrange,
    }
    check_save_load_act_resume(
        lambda: make_learner("cql", (OBS_DIM,), ACTION_DIM, seed=1, **overrides),
        tmp_path,
        batch_fn=make_transition_batch,
    )
    loaded = load_learner(tmp_path / "ckpt")
    assert loaded.config.manual_gradients and loaded.manual_update is not None


class _OtherWarmStartCQL(CQLLearner):
    """A CQL whose warm-start loss is its own: the hand-written gradients would not be its."""

    def compute_warmstart_actor_loss(self, batch):
        loss, metrics = super().compute_warmstart_actor_loss(batch)
        return 2.0 * loss, metrics


@pytest.mark.parametrize("torso", TORSOS)
def test_refusals(torso):
    """Everything but the torso: both are accepted (the default, the DenseNet, included)."""
    assert CQLConfig(manual_gradients=True).torso == "densenet"
    plain = {**TINY, "manual_gradients": True, "torso": torso}
    net = CQLLearner((OBS_DIM,), ACTION_DIM, CQLConfig(**plain)).critic.q1.mlp
    assert isinstance(net, PlainMLP if torso == "mlp" else DenseMLP)
    assert (
        one_line_error(lambda: CQLConfig(**plain, compile=True))
        == "manual_gradients needs compile=False, got compile=True"
    )
    assert (
        one_line_error(lambda: CQLLearner((8, 8, 3), ACTION_DIM, CQLConfig(**plain)))
        == "manual_gradients needs state observations (a 1-D obs_shape), got (8, 8, 3)"
    )
    assert one_line_error(
        lambda: _OtherWarmStartCQL((OBS_DIM,), ACTION_DIM, CQLConfig(**plain))
    ) == (
        "manual_gradients needs CQL's own losses, got _OtherWarmStartCQL, which overrides "
        "compute_warmstart_actor_loss"
    )
    assert one_line_error(lambda: make_learner("cql_uds", (OBS_DIM,), ACTION_DIM, **plain)) == (
        "manual_gradients needs CQL's own losses, got CQLUDSLearner, which overrides "
        "_pretrain_step"
    )
