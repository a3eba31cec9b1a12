"""CVL's advantage-filtered extraction (policy_extraction="crr": CRR's binary weights, not in
the paper)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_batch_equal, clone_batch  # pants: no-infer-dep
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch, make_nets, q_fns  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl.losses import crr_binary_policy_loss

SETTINGS = settings(max_examples=20, deadline=None)


def _q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return 2.0 + actions[..., 0] + obs[:, 0].abs()


def test_crr_loss_matches_naive_reference() -> None:
    """Loop form: V(s_b) = mean_n Q(s_b, a_nb), w_b = 1[Q(s_b, a_b) > V(s_b)],
    L = -sum_b w_b log pi(a_b|s_b) / sum_b w_b."""
    _, policy, _ = make_nets()
    batch = make_batch(9)
    n = 5
    torch.manual_seed(3)
    loss, metrics = crr_binary_policy_loss(policy, _q, batch, num_action_samples=n)
    torch.manual_seed(3)
    with torch.no_grad():
        samples, _ = policy.sample(batch.obs_t, num_samples=n)
    weights = []
    for b in range(9):
        v = sum(_q(batch.obs_t[b : b + 1], samples[k, b : b + 1])[0] for k in range(n)) / n
        q = _q(batch.obs_t[b : b + 1], batch.action_t[b : b + 1])[0]
        weights.append(1.0 if q > v else 0.0)
    w = torch.tensor(weights)
    assert 0 < w.sum() < 9  # the example filters some actions and keeps some
    log_prob = policy.log_prob(batch.obs_t, batch.action_t)
    torch.testing.assert_close(loss, -(w * log_prob).sum() / w.sum())
    torch.testing.assert_close(metrics["crr_kept_fraction"], w.mean())


@SETTINGS
@given(scale=st.floats(1e-3, 1e3), shift=st.floats(-10, 10), seed=st.integers(0, 2**16))
def test_crr_loss_is_invariant_to_positive_affine_q(scale: float, shift: float, seed: int) -> None:
    """The indicator compares actions at the same state: a positive scale and a shift of Q
    (InfoNCE leaves both free per state) change nothing."""
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    q_fn = q_fns(critic, rff, batch)["mc"]
    losses = []
    for a, b in ((1.0, 0.0), (scale, shift)):
        torch.manual_seed(seed)
        loss, _ = crr_binary_policy_loss(
            policy, lambda o, x, a=a, b=b: a * q_fn(o, x) + b, batch, num_action_samples=3
        )
        losses.append(loss)
    torch.testing.assert_close(losses[0], losses[1])


@pytest.mark.parametrize("estimator", ["rff", "mc"])
def test_crr_gradient_isolation_and_no_mutation(estimator: str) -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    before = clone_batch(batch)
    loss, _ = crr_binary_policy_loss(policy, q_fns(critic, rff, batch)[estimator], batch)
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert np.isfinite(loss.item())
    assert_batch_equal(batch, before)


def test_crr_learner_policy_loss_goes_down() -> None:
    learner = make_learner(
        "cvl_mc", (5,), 2, policy_extraction="crr", hidden=(32, 32), lr=3e-3, batch_size=32
    )
    batch = make_batch(32)
    losses = [learner.update(batch)["policy_loss"] for _ in range(60)]
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
