"""CVL's advantage-weighted policy extraction (policy_extraction="awr", not in the paper)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_batch_equal, clone_batch  # pants: no-infer-dep
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch, make_nets, q_fns  # pants: no-infer-dep

from cvl_algos.cvl import CVLConfig
from cvl_algos.cvl.losses import awr_policy_loss, standardized_advantage

SETTINGS = settings(max_examples=20, deadline=None)


def test_standardized_advantage_against_naive_reference() -> None:
    gen = torch.Generator().manual_seed(0)
    q_pi = torch.rand(4, 6, generator=gen) + 0.5
    q_data = torch.rand(6, generator=gen) + 0.5
    z = standardized_advantage(q_data, q_pi)
    rel = [(q_data[b] - q_pi[:, b].mean()) / q_pi[:, b].mean().abs() for b in range(6)]
    rel = torch.stack(rel)
    torch.testing.assert_close(z, (rel - rel.mean()) / rel.std(correction=0))
    torch.testing.assert_close(z.mean(), torch.tensor(0.0), atol=1e-6, rtol=0)


@SETTINGS
@given(scale=st.floats(1e-3, 1e3), seed=st.integers(0, 2**16))
def test_awr_loss_is_invariant_to_q_scale(scale: float, seed: int) -> None:
    """Q_NCE is Q up to a positive factor; the AWR weights cannot tell."""
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    q_fn = q_fns(critic, rff, batch)["rff"]
    losses = []
    for factor in (1.0, scale):
        torch.manual_seed(seed)
        loss, _ = awr_policy_loss(
            policy, lambda o, a, f=factor: f * q_fn(o, a), batch, num_action_samples=3
        )
        losses.append(loss)
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-4, atol=1e-5)


def test_awr_with_zero_beta_is_behaviour_cloning() -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(7)
    q_fn = q_fns(critic, rff, batch)["mc"]
    loss, _ = awr_policy_loss(policy, q_fn, batch, num_action_samples=3, beta=0.0)
    torch.testing.assert_close(loss, -policy.log_prob(batch.obs_t, batch.action_t).mean())


def test_awr_loss_matches_naive_reference() -> None:
    """Loop form: V(s_b) = mean_n Q(s_b, a_nb), w_b = min(exp(beta z_b), max_w),
    L = -sum_b w_b log pi(a_b|s_b) / sum_b w_b, with Q = 2 + a[0] + s[0]."""
    _, policy, _ = make_nets()
    batch = make_batch(9)

    def q_fn(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return 2.0 + actions[..., 0] + obs[:, 0].abs()

    n, beta, max_w = 5, 1.5, 3.0
    torch.manual_seed(3)
    loss, _ = awr_policy_loss(policy, q_fn, batch, num_action_samples=n, beta=beta, max_weight=max_w)
    torch.manual_seed(3)
    with torch.no_grad():
        samples, _ = policy.sample(batch.obs_t, num_samples=n)
    rel = []
    for b in range(9):
        v = sum(2.0 + samples[k, b, 0] + batch.obs_t[b, 0].abs() for k in range(n)) / n
        q = 2.0 + batch.action_t[b, 0] + batch.obs_t[b, 0].abs()
        rel.append((q - v) / v.abs())
    rel = torch.stack(rel)
    z = (rel - rel.mean()) / rel.std(correction=0)
    w = torch.clamp(torch.exp(beta * z), max=max_w)
    log_prob = policy.log_prob(batch.obs_t, batch.action_t)
    torch.testing.assert_close(loss, -(w * log_prob).sum() / w.sum())


@pytest.mark.parametrize("estimator", ["rff", "mc"])
def test_awr_gradient_isolation_and_no_mutation(estimator: str) -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    before = clone_batch(batch)
    loss, metrics = awr_policy_loss(policy, q_fns(critic, rff, batch)[estimator], batch)
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert all(p.grad is not None for p in policy.parameters())
    assert np.isfinite(loss.item()) and 0 < metrics["awr_weight_max_share"].item() <= 1
    assert_batch_equal(batch, before)


def test_config_rejects_unknown_extraction() -> None:
    with pytest.raises(ValueError, match="policy_extraction"):
        CVLConfig(policy_extraction="nope")
