"""Contrastive critic (eq. 9-12): normalisation, bounded logits, shapes, grads, batch isolation."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_models import ContrastiveCritic, FlatEncoder, ImpalaEncoder

HIDDEN = (16, 16)


def _obs(batch, obs_shape, gen=None, device="cpu"):
    if len(obs_shape) == 3:
        return torch.randint(0, 256, (*batch, *obs_shape), generator=gen, dtype=torch.uint8).to(
            device
        )
    return torch.randn(*batch, *obs_shape, generator=gen).to(device)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 12),
    latent=st.integers(1, 16),
    temperature=st.floats(0.05, 5.0),
    scale=st.floats(0.01, 100.0),
    seed=st.integers(0, 2**16),
)
def test_normalized_embeddings_and_bounded_logits(batch, latent, temperature, scale, seed):
    torch.manual_seed(seed)
    critic = ContrastiveCritic((6,), 2, latent_dim=latent, hidden=HIDDEN, temperature=temperature)
    obs, action, future = torch.randn(batch, 6) * scale, torch.rand(batch, 2), torch.randn(batch, 6)
    phi, psi = critic.phi(obs, action), critic.psi(future)
    torch.testing.assert_close(phi.norm(dim=-1), torch.ones(batch))
    torch.testing.assert_close(psi.norm(dim=-1), torch.ones(batch))
    logits = critic.logits(obs, action, future)
    assert logits.shape == (batch, batch)
    assert logits.abs().max() <= 1.0 / temperature * (1 + 1e-5)
    torch.testing.assert_close(logits, phi @ psi.T / temperature)


def test_unnormalized_option():
    critic = ContrastiveCritic((6,), 2, latent_dim=8, hidden=HIDDEN, normalize=False)
    assert critic.normalize is False and critic.psi_net.normalize is False
    norms = critic.psi(torch.randn(32, 6) * 10).norm(dim=-1)
    assert not torch.allclose(norms, torch.ones(32))


def test_attributes_and_separate_networks():
    critic = ContrastiveCritic((39,), 4)
    assert (critic.latent_dim, critic.normalize, critic.temperature) == (64, True, 1.0)
    assert isinstance(critic.phi_net.encoder, FlatEncoder)
    assert critic.phi_net.mlp.in_dim == 43 and critic.psi_net.mlp.in_dim == 39
    assert sum(p.numel() for p in critic.parameters()) == 214_272
    pixel = ContrastiveCritic((32, 32, 3), 4, hidden=HIDDEN)
    assert isinstance(pixel.phi_net.encoder, ImpalaEncoder)
    assert pixel.phi_net.encoder is not pixel.psi_net.encoder
    phi_ids = {id(p) for p in pixel.phi_net.parameters()}
    assert phi_ids.isdisjoint(id(p) for p in pixel.psi_net.parameters())


def test_psi_net_copy_is_a_target_network():
    critic = ContrastiveCritic((6,), 2, hidden=HIDDEN)
    target = copy.deepcopy(critic.psi_net).requires_grad_(False)
    future = torch.randn(5, 6)
    torch.testing.assert_close(target(future), critic.psi(future))


@pytest.mark.parametrize("batch", [1, 4, 9])
@pytest.mark.parametrize("obs_shape", [(3,), (32, 36, 3)])
def test_shapes(device, batch, obs_shape):
    critic = ContrastiveCritic(obs_shape, 2, latent_dim=5, hidden=HIDDEN).to(device)
    obs, future = _obs((batch,), obs_shape, device=device), _obs((batch,), obs_shape, device=device)
    action = torch.rand(batch, 2, device=device)
    assert critic.phi(obs, action).shape == (batch, 5)
    assert critic.psi(future).shape == (batch, 5)
    logits = critic.logits(obs, action, future)
    assert logits.shape == (batch, batch) and logits.device.type == device.type
    # more futures than anchors (extra negatives) also works
    many = _obs((batch + 2,), obs_shape, device=device)
    assert critic.logits(obs, action, many).shape == (batch, batch + 2)
    # extra leading dims for phi / psi
    assert critic.psi(_obs((2, batch), obs_shape, device=device)).shape == (2, batch, 5)


@pytest.mark.parametrize("obs_shape", [(4,), (32, 32, 3)])
def test_gradients_reach_every_parameter(device, obs_shape):
    critic = ContrastiveCritic(obs_shape, 2, latent_dim=6, hidden=HIDDEN).to(device)
    obs, future = _obs((6,), obs_shape, device=device), _obs((6,), obs_shape, device=device)
    logits = critic.logits(obs, torch.rand(6, 2, device=device), future)
    loss = (torch.logsumexp(logits, 1) - logits.diagonal()).mean()  # InfoNCE (eq. 9)
    loss.backward()
    for name, p in critic.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@settings(max_examples=15, deadline=None)
@given(batch=st.integers(2, 8), index=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_no_leakage_across_batch(batch, index, seed):
    index %= batch
    torch.manual_seed(seed)
    critic = ContrastiveCritic((5,), 3, latent_dim=4, hidden=HIDDEN)
    obs, action, future = torch.randn(batch, 5), torch.rand(batch, 3), torch.randn(batch, 5)
    obs2, action2, future2 = torch.randn(batch, 5), torch.rand(batch, 3), torch.randn(batch, 5)
    obs2[index], action2[index], future2[index] = obs[index], action[index], future[index]
    torch.testing.assert_close(critic.phi(obs, action)[index], critic.phi(obs2, action2)[index])
    torch.testing.assert_close(critic.psi(future)[index], critic.psi(future2)[index])
    # logit (i, j) depends on anchor i and future j only
    l1, l2 = critic.logits(obs, action, future), critic.logits(obs2, action2, future2)
    torch.testing.assert_close(l1[index, index], l2[index, index])


@pytest.mark.parametrize("obs_shape", [(5,), (32, 32, 3)])
def test_phi_of_actions_is_phi_of_each_pair(obs_shape):
    """K actions at each state, the encoder run once per state: the same as phi of each
    (state, action) pair one at a time, and gradients reach the encoder."""
    torch.manual_seed(0)
    critic = ContrastiveCritic(obs_shape, 3, latent_dim=4, hidden=HIDDEN)
    obs, actions = _obs((5,), obs_shape), torch.rand(2, 5, 3) * 2 - 1
    got = critic.phi_of_actions(obs, actions)
    assert got.shape == (2, 5, 4)
    for k in range(2):
        for b in range(5):
            want = critic.phi(obs[b : b + 1], actions[k, b : b + 1])[0]
            torch.testing.assert_close(got[k, b], want, rtol=1e-5, atol=1e-6)
    got.sum().backward()
    assert all(p.grad is not None for p in critic.phi_net.encoder.parameters())
    with pytest.raises(ValueError, match="phi actions: expected"):
        critic.phi_of_actions(obs, actions[:, :4])


def test_rejects_bad_inputs():
    critic = ContrastiveCritic((5,), 3, hidden=HIDDEN)
    with pytest.raises(ValueError):
        critic.phi(torch.randn(4, 5), torch.rand(3, 3))
    with pytest.raises(ValueError):
        critic.phi(torch.randn(4, 5), torch.rand(4, 2))
    with pytest.raises(ValueError):
        critic.logits(torch.randn(2, 4, 5), torch.rand(2, 4, 3), torch.randn(2, 4, 5))
    with pytest.raises(ValueError):
        ContrastiveCritic((5,), 3, temperature=0.0)
