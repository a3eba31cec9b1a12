"""The lean update path against the reference path it replaced, within float tolerance.

Lean path: fused Adam (`make_adam`), BC's likelihood and entropy from one policy pass, CQL's
policy run once at s and s' and its critic once over the proposals and the dataset action,
metrics returned as detached tensors, gradient clipping by `clip_grad_norm` on parameter lists
collected once per module (`LearnerBase.module_tensors`). Reference path: the previous code,
rebuilt here from the public pieces it was made of (``policy.log_prob`` + ``policy.entropy``,
``sac.critic_loss`` + ``cql_regularizer``, ``clip_grad_norm_`` and `polyak_update` on the
modules at every step) with the default per-tensor Adam.
"""

import hypothesis.strategies as st
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    TINY,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    tiny_nets,  # pants: no-infer-dep
    tiny_policy,  # pants: no-infer-dep
)
from hypothesis import given, settings

from cvl_algos import sac
from cvl_algos.bc import BCLearner, bc_loss
from cvl_algos.common import (
    clip_grad_norm,
    make_adam,
    metrics_to_floats,
    optimizer_step,
    polyak_update,
)
from cvl_algos.cql import CQLLearner, cql_critic_loss, cql_regularizer
from cvl_algos.stages import PolyakStage, submodule


def _grads(module):
    return [p.grad.clone() for p in module.parameters()]


def test_bc_loss_equals_two_pass_reference():
    batch = make_transition_batch(0)
    policy = tiny_policy(0)
    torch.manual_seed(3)
    loss, metrics = bc_loss(batch.obs, batch.action, policy, 0.1, 10)
    loss.backward()
    lean = _grads(policy)
    policy.zero_grad()
    torch.manual_seed(3)
    nll = -policy.log_prob(batch.obs, batch.action).mean()
    entropy = policy.entropy(batch.obs, num_samples=10).mean()
    reference = nll - 0.1 * entropy
    reference.backward()
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(metrics["entropy"], entropy.detach())
    for a, b in zip(lean, _grads(policy), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_cql_critic_gradients_equal_reference():
    batch = make_transition_batch(1)
    policy, critic, target = tiny_nets(0)
    alpha = torch.tensor(0.3)
    torch.manual_seed(5)
    loss, _ = cql_critic_loss(batch, critic, target, policy, alpha, 0.99, False, 1.0)
    loss.backward()
    lean = _grads(critic)
    critic.zero_grad()
    torch.manual_seed(5)
    td, _ = sac.critic_loss(batch, critic, target, policy, alpha, 0.99, False)
    reg, _ = cql_regularizer(batch, critic, policy)
    (td + reg).backward()
    torch.testing.assert_close(loss, td + reg)
    for a, b in zip(lean, _grads(critic), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_fused_adam_equals_per_tensor_adam():
    policy_a, policy_b = tiny_policy(0), tiny_policy(0)
    fused = make_adam(policy_a.parameters(), 1e-2)
    plain = torch.optim.Adam(policy_b.parameters(), lr=1e-2, foreach=False, fused=False)
    gen = torch.Generator().manual_seed(0)
    for _ in range(10):
        for a, b in zip(policy_a.parameters(), policy_b.parameters(), strict=True):
            a.grad = torch.randn(a.shape, generator=gen)
            b.grad = a.grad.clone()
        fused.step()
        plain.step()
    for a, b in zip(policy_a.parameters(), policy_b.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


class _ReferenceBC(BCLearner):
    """BC as before the lean path: two policy passes, per-tensor Adam."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.optimizer = _plain_adam(self.policy, self.config.lr)

    def compute_loss(self, batch):
        cfg = self.config
        nll = -self.policy.log_prob(batch.obs, batch.action).mean()
        entropy = self.policy.entropy(batch.obs, num_samples=cfg.entropy_samples).mean()
        loss = nll - cfg.entropy_coef * entropy
        return loss, {"bc_loss": loss.detach(), "nll": nll.detach(), "entropy": entropy.detach()}


class _ReferenceCQL(CQLLearner):
    """CQL as before the lean path: SAC's loss plus the separately computed regulariser,
    per-tensor Adam."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.critic_opt = _plain_adam(self.critic, self.config.lr)
        self.actor_opt = _plain_adam(self.policy, self.config.lr)
        self.alpha_opt = _plain_adam(self.log_alpha, self.config.lr)

    def compute_critic_loss(self, batch):
        cfg = self.config
        td, metrics = sac.critic_loss(
            batch, self.critic, self.critic_target, self.policy, self.alpha, cfg.discount, False
        )
        reg, reg_metrics = cql_regularizer(batch, self.critic, self.policy, cfg.cql_num_samples)
        metrics.update(reg_metrics)
        loss = td + self.cql_weight * reg
        metrics["critic_loss"] = loss.detach()
        return loss, metrics


def _plain_adam(module, lr):
    return torch.optim.Adam(module.parameters(), lr=lr, foreach=False, fused=False)


def _assert_same_after_updates(lean, reference, updates=5):
    for i in range(updates):
        batch = make_transition_batch(i)
        lean_metrics = lean.update(batch)
        reference_metrics = reference.update(batch)
    for name, module in lean.state_modules().items():
        other = reference.state_modules()[name]
        for a, b in zip(module.parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    return lean_metrics, reference_metrics


def test_bc_updates_equal_reference_path():
    lean = BCLearner((OBS_DIM,), ACTION_DIM, BCLearner.config_cls(**TINY), seed=1)
    reference = _ReferenceBC((OBS_DIM,), ACTION_DIM, BCLearner.config_cls(**TINY), seed=1)
    lean_metrics, reference_metrics = _assert_same_after_updates(lean, reference)
    torch.testing.assert_close(lean_metrics["bc_loss"], reference_metrics["bc_loss"])


def test_cql_updates_equal_reference_path():
    config = CQLLearner.config_cls(**TINY, policy_eval_start=2)  # warm start, then SAC actor
    lean = CQLLearner((OBS_DIM,), ACTION_DIM, config, seed=2)
    reference = _ReferenceCQL((OBS_DIM,), ACTION_DIM, config, seed=2)
    lean_metrics, reference_metrics = _assert_same_after_updates(lean, reference)
    for key in ("critic_loss", "cql_regularizer", "actor_loss"):
        torch.testing.assert_close(lean_metrics[key], reference_metrics[key], rtol=1e-4, atol=1e-5)


def test_update_returns_detached_scalar_tensors_read_once():
    learner = BCLearner((OBS_DIM,), ACTION_DIM, BCLearner.config_cls(**TINY), seed=0)
    metrics = learner.update(make_transition_batch(0))
    assert all(
        isinstance(v, torch.Tensor) and v.shape == () and not v.requires_grad
        for v in metrics.values()
    )
    floats = metrics_to_floats(metrics)
    assert floats == {k: float(v) for k, v in metrics.items()}


@settings(max_examples=30, deadline=None)
@given(
    shapes=st.lists(st.lists(st.integers(1, 6), min_size=0, max_size=3), min_size=1, max_size=6),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    max_norm=st.sampled_from([0.5, 1.0, 100.0]),
    missing=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_clip_grad_norm_equals_torch_bit_for_bit(shapes, scale, max_norm, missing, seed):
    gen = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.zeros(shape)) for shape in shapes]
    for i, p in enumerate(params):
        if i != missing:  # one parameter (if in range) without a gradient
            p.grad = scale * torch.randn(p.shape, generator=gen)
    twins = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for p, twin in zip(params, twins, strict=True):
        twin.grad = None if p.grad is None else p.grad.clone()
    ours = clip_grad_norm(params, max_norm)
    reference = torch.nn.utils.clip_grad_norm_(twins, max_norm)
    assert torch.equal(ours, reference)
    for p, twin in zip(params, twins, strict=True):
        assert (p.grad is None) == (twin.grad is None)
        if p.grad is not None:
            assert torch.equal(p.grad, twin.grad)


def test_clip_grad_norm_mixed_dtypes_falls_back_to_torch():
    def params():
        ps = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2).double())]
        ps[0].grad = torch.full((3,), 10.0)
        ps[1].grad = torch.full((2,), 10.0, dtype=torch.float64)
        return ps

    ours, reference = params(), params()
    assert torch.equal(clip_grad_norm(ours, 1.0), torch.nn.utils.clip_grad_norm_(reference, 1.0))
    for a, b in zip(ours, reference, strict=True):
        assert torch.equal(a.grad, b.grad)


class _ReferenceStepsSAC(sac.SACLearner):
    """SAC with the optimiser steps and polyak averages as before the cached parameter lists:
    ``clip_grad_norm_`` over ``module.parameters()`` and `polyak_update` on the modules."""

    def clip_and_step(self, optimizer, loss, module):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(module.parameters(), self.config.max_grad_norm)
        optimizer.step()
        return norm.detach()

    def run_stages(self, stages, batch):
        polyaks = [s for s in stages if isinstance(s, PolyakStage)]
        metrics = super().run_stages([s for s in stages if not isinstance(s, PolyakStage)], batch)
        modules = self.state_modules()
        for stage in polyaks:
            polyak_update(modules[stage.target], submodule(modules, stage.source), stage.tau)
        return metrics


def test_sac_updates_equal_per_step_parameter_walks_bit_for_bit():
    # SAC's polyak stage is its last, so running it after the others is the same order.
    config = sac.SACConfig(**TINY, max_grad_norm=0.5)  # small: the clip bites
    lean = sac.SACLearner((OBS_DIM,), ACTION_DIM, config, seed=3)
    reference = _ReferenceStepsSAC((OBS_DIM,), ACTION_DIM, config, seed=3)
    for i in range(5):
        batch = make_transition_batch(i)
        lean_metrics = lean.update(batch)
        reference_metrics = reference.update(batch)
        for key, value in lean_metrics.items():
            assert torch.equal(value, reference_metrics[key]), key
    assert float(lean_metrics["critic_grad_norm"]) > 0.5
    for name, module in lean.state_modules().items():
        other = reference.state_modules()[name]
        for a, b in zip(module.state_dict().values(), other.state_dict().values(), strict=True):
            assert torch.equal(a, b), name


def test_module_tensors_are_collected_again_for_a_new_module_object():
    learner = sac.SACLearner((OBS_DIM,), ACTION_DIM, sac.SACConfig(**TINY), seed=0)
    first = learner.module_tensors(learner.critic)[0]
    assert learner.module_tensors(learner.critic)[0] is first
    assert [id(p) for p in first] == [id(p) for p in learner.critic.parameters()]
    replacement = tiny_nets(1)[1]
    params = learner.module_tensors(replacement)[0]
    assert [id(p) for p in params] == [id(p) for p in replacement.parameters()]


def test_optimizer_step_takes_a_generator_or_a_list():
    policy_a, policy_b = tiny_policy(0), tiny_policy(0)
    opt_a, opt_b = make_adam(policy_a.parameters(), 1e-2), make_adam(policy_b.parameters(), 1e-2)
    batch = make_transition_batch(0)
    norm_a = optimizer_step(opt_a, policy_a(batch.obs)[0].sum(), policy_a.parameters(), 0.1)
    norm_b = optimizer_step(opt_b, policy_b(batch.obs)[0].sum(), list(policy_b.parameters()), 0.1)
    assert torch.equal(norm_a, norm_b)
    for a, b in zip(policy_a.parameters(), policy_b.parameters(), strict=True):
        assert torch.equal(a, b)
