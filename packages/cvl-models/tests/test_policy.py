"""Tanh-Gaussian policy (eq. 13-15): log-probs vs torch.distributions, bounds, shapes, grads."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import distributions as D

from cvl_models import TanhGaussianPolicy
from cvl_models.policy import action_log_prob, sample_tanh_gaussian, tanh_log_det_jacobian

HIDDEN = (16, 16)


def _reference(mean: torch.Tensor, log_std: torch.Tensor) -> D.Distribution:
    base = D.Independent(D.Normal(mean, log_std.exp()), 1)
    return D.TransformedDistribution(base, [D.TanhTransform()])


def _policy(obs_dim=5, action_dim=3, seed=0, **kw):
    torch.manual_seed(seed)
    return TanhGaussianPolicy((obs_dim,), action_dim, hidden=HIDDEN, **kw)


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 8),
    action_dim=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    bound=st.floats(0.1, 0.99),
)
def test_log_prob_matches_torch_distributions(batch, action_dim, seed, bound):
    policy = _policy(action_dim=action_dim, seed=seed).double()
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, 5, generator=gen, dtype=torch.float64)
    action = (torch.rand(batch, action_dim, generator=gen, dtype=torch.float64) * 2 - 1) * bound
    mean, log_std = policy(obs)
    expected = _reference(mean, log_std).log_prob(action)
    torch.testing.assert_close(policy.log_prob(obs, action), expected, rtol=1e-9, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(num_samples=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_sample_log_prob_matches_reference_and_log_prob(num_samples, seed):
    policy = _policy(seed=seed).double()
    obs = torch.randn(4, 5, dtype=torch.float64)
    action, log_prob = policy.sample(obs, num_samples=num_samples)
    assert action.shape == (num_samples, 4, 3) and log_prob.shape == (num_samples, 4)
    mean, log_std = policy(obs)
    inside = (action.abs() < 0.999).all(-1)  # away from the boundary
    expected = _reference(mean, log_std).log_prob(action)
    torch.testing.assert_close(log_prob[inside], expected[inside], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(
        log_prob[inside], policy.log_prob(obs, action)[inside], rtol=1e-6, atol=1e-6
    )


def test_stable_tanh_correction():
    u = torch.linspace(-5, 5, 101, dtype=torch.float64)
    torch.testing.assert_close(tanh_log_det_jacobian(u), torch.log1p(-(torch.tanh(u) ** 2)))
    big = torch.tensor([-100.0, 100.0])  # naive log(1 - tanh^2) is -inf here
    expected = torch.full((2,), 2 * math.log(2.0) - 200.0)  # log(4 e^(-2|u|)) for large |u|
    torch.testing.assert_close(tanh_log_det_jacobian(big), expected)


def test_samples_inside_open_interval(device):
    policy = _policy(log_std_max=2.0).to(device)
    with torch.no_grad():  # push the mean far out so tanh saturates in float32
        policy.net.out.bias.fill_(30.0)
    obs = torch.randn(64, 5, device=device)
    action, log_prob = policy.sample(obs, num_samples=16)
    assert (action.abs() < 1).all()
    assert torch.isfinite(log_prob).all()


def test_log_prob_of_boundary_actions_is_finite(device):
    policy = _policy().to(device)
    obs = torch.randn(4, 5, device=device)
    action = torch.tensor([[1.0, -1.0, 0.0], [1.0, 1.0, 1.0], [-1.0, -1.0, -1.0], [0.5, 1, 0]])
    action = action.to(device)
    log_prob = policy.log_prob(obs, action)
    assert log_prob.shape == (4,) and torch.isfinite(log_prob).all()
    obs.requires_grad_(False)
    log_prob.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters())


def test_log_std_bounded():
    policy = _policy(log_std_min=-3.0, log_std_max=1.0)
    with torch.no_grad():
        policy.net.out.weight.mul_(1000.0)
    _, log_std = policy(torch.randn(256, 5))
    assert log_std.min() >= -3.0 and log_std.max() <= 1.0
    assert log_std.min() < -2.9 and log_std.max() > 0.9  # both ends reachable


@pytest.mark.parametrize("batch", [(1,), (7,), (2, 3)])
@pytest.mark.parametrize("obs_shape", [(5,), (32, 32, 3)])
def test_shapes(device, batch, obs_shape):
    policy = TanhGaussianPolicy(obs_shape, 2, hidden=HIDDEN).to(device)
    if len(obs_shape) == 3:
        obs = torch.randint(0, 256, (*batch, *obs_shape), dtype=torch.uint8, device=device)
    else:
        obs = torch.randn(*batch, *obs_shape, device=device)
    mean, log_std = policy(obs)
    assert mean.shape == log_std.shape == (*batch, 2)
    action, log_prob = policy.sample(obs)
    assert action.shape == (*batch, 2) and log_prob.shape == batch
    action, log_prob = policy.sample(obs, num_samples=3)
    assert action.shape == (3, *batch, 2) and log_prob.shape == (3, *batch)
    assert policy.log_prob(obs, action[0]).shape == batch
    assert policy.log_prob(obs, action).shape == (3, *batch)
    assert policy.entropy(obs).shape == batch
    det = policy.deterministic(obs)
    assert det.shape == (*batch, 2)
    torch.testing.assert_close(det, torch.tanh(mean))


def test_entropy_estimate():
    policy = _policy(action_dim=2)
    obs = torch.randn(3, 5)
    torch.manual_seed(0)
    ent = policy.entropy(obs, num_samples=20000)
    with torch.no_grad():
        mean, log_std = policy(obs)
    base = D.Normal(mean, log_std.exp())
    torch.manual_seed(1)
    u = base.sample((20000,))
    # H = -E[log pi(tanh u)] = H(base) + E[sum log(1 - tanh(u)^2)], computed independently
    reference = base.entropy().sum(-1) + tanh_log_det_jacobian(u).sum(-1).mean(0)
    torch.testing.assert_close(ent, reference, rtol=0.05, atol=0.05)
    # differentiable (reparameterised)
    policy.entropy(obs).sum().backward()
    assert policy.net.out.weight.grad is not None


def test_gradients_reach_every_parameter(device):
    policy = TanhGaussianPolicy((32, 32, 3), 2, hidden=HIDDEN).to(device)
    obs = torch.randint(0, 256, (4, 32, 32, 3), dtype=torch.uint8, device=device)
    action, log_prob = policy.sample(obs, num_samples=2)
    loss = (action * torch.randn_like(action)).sum() + log_prob.sum()
    loss = loss + policy.log_prob(obs, torch.rand(4, 2, device=device) * 1.8 - 0.9).sum()
    loss.backward()
    for name, p in policy.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@settings(max_examples=15, deadline=None)
@given(batch=st.integers(2, 8), index=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_no_leakage_across_batch(batch, index, seed):
    index %= batch
    policy = _policy(seed=seed)
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, 5, generator=gen)
    other = torch.randn(batch, 5, generator=gen) * 5
    other[index] = obs[index]
    action = torch.rand(batch, 3, generator=gen) * 2 - 1
    for a, b in zip(policy(obs), policy(other), strict=True):
        torch.testing.assert_close(a[index], b[index])
    torch.testing.assert_close(
        policy.log_prob(obs, action)[index], policy.log_prob(other, action)[index]
    )
    torch.testing.assert_close(policy.deterministic(obs)[index], policy.deterministic(other)[index])


def test_param_count_and_errors():
    n = sum(p.numel() for p in TanhGaussianPolicy((39,), 4).parameters())
    assert n == 89_408
    assert sum(p.numel() for p in TanhGaussianPolicy((2,), 1).parameters()) == 68_614
    with pytest.raises(ValueError):
        TanhGaussianPolicy((5,), 0)
    with pytest.raises(ValueError):
        _policy().log_prob(torch.randn(4, 5), torch.zeros(3, 3))
    with pytest.raises(ValueError):
        _policy().sample(torch.randn(4, 6))
    with torch.no_grad():
        assert math.isfinite(float(_policy().log_prob(torch.randn(1, 5), torch.ones(1, 3))))


def test_functional_helpers_share_one_network_pass():
    policy = _policy().double()
    obs = torch.randn(4, 5, dtype=torch.float64)
    action = torch.rand(4, 3, dtype=torch.float64) * 2 - 1
    mean, log_std = policy(obs)
    torch.testing.assert_close(action_log_prob(mean, log_std, action), policy.log_prob(obs, action))
    torch.manual_seed(5)
    a1, lp1 = sample_tanh_gaussian(mean, log_std, 2)
    torch.manual_seed(5)
    a2, lp2 = policy.sample(obs, 2)
    torch.testing.assert_close(a1, a2)
    torch.testing.assert_close(lp1, lp2)
