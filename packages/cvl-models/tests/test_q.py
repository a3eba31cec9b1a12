"""TwinQ: shapes, independence of the two heads, gradients, batch isolation."""

from __future__ import annotations

import pytest
import torch
from einops import rearrange, repeat

from cvl_models import TwinQ

HIDDEN = (16, 16)


@pytest.mark.parametrize("batch", [(1,), (6,), (3, 2)])
@pytest.mark.parametrize("obs_shape", [(4,), (32, 32, 3)])
def test_shapes(device, batch, obs_shape):
    q = TwinQ(obs_shape, 2, hidden=HIDDEN).to(device)
    if len(obs_shape) == 3:
        obs = torch.randint(0, 256, (*batch, *obs_shape), dtype=torch.uint8, device=device)
    else:
        obs = torch.randn(*batch, *obs_shape, device=device)
    q1, q2 = q(obs, torch.rand(*batch, 2, device=device))
    assert q1.shape == q2.shape == batch
    assert not torch.equal(q1, q2)  # independently initialised


def test_networks_share_nothing_and_param_count():
    q = TwinQ((39,), 4)
    ids1 = {id(p) for p in q.q1.parameters()}
    assert ids1.isdisjoint(id(p) for p in q.q2.parameters())
    assert sum(p.numel() for p in q.parameters()) == 178_776
    assert sum(p.numel() for p in TwinQ((2,), 1).parameters()) == 137_736


def test_gradients_reach_every_parameter(device):
    q = TwinQ((32, 32, 3), 2, hidden=HIDDEN).to(device)
    obs = torch.randint(0, 256, (5, 32, 32, 3), dtype=torch.uint8, device=device)
    q1, q2 = q(obs, torch.rand(5, 2, device=device))
    ((q1 - 1.0).square().mean() + (q2 + 1.0).square().mean()).backward()
    for name, p in q.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_action_matters_and_no_leakage():
    q = TwinQ((4,), 2, hidden=HIDDEN)
    obs, action = torch.randn(6, 4), torch.rand(6, 2)
    q1, _ = q(obs, action)
    q1_other, _ = q(obs, -action)
    assert not torch.allclose(q1, q1_other)
    obs2, action2 = torch.randn(6, 4), torch.rand(6, 2)
    obs2[3], action2[3] = obs[3], action[3]
    torch.testing.assert_close(q(obs, action)[0][3], q(obs2, action2)[0][3])
    torch.testing.assert_close(q(obs, action)[1][3], q(obs2, action2)[1][3])


def test_rejects_bad_inputs():
    q = TwinQ((4,), 2, hidden=HIDDEN)
    with pytest.raises(ValueError):
        q(torch.randn(3, 4), torch.rand(2, 2))
    with pytest.raises(ValueError):
        q(torch.randn(3, 5), torch.rand(3, 2))


@pytest.mark.parametrize("obs_shape", [(5,), (32, 32, 3)])
def test_many_equals_forward_on_repeated_states(device, obs_shape):
    torch.manual_seed(0)
    q = TwinQ(obs_shape, 3, hidden=HIDDEN).to(device)
    batch, num = 4, 6
    if len(obs_shape) == 3:
        obs = torch.randint(0, 256, (batch, *obs_shape), dtype=torch.uint8, device=device)
    else:
        obs = torch.randn(batch, *obs_shape, device=device)
    actions = torch.rand(num, batch, 3, device=device) * 2 - 1
    many = q.many(obs, actions)
    repeated = q(repeat(obs, "b ... -> (n b) ...", n=num), rearrange(actions, "n b a -> (n b) a"))
    for got, want in zip(many, repeated):
        assert got.shape == (num, batch)
        torch.testing.assert_close(
            got, rearrange(want, "(n b) -> n b", n=num), rtol=1e-5, atol=1e-5
        )
    # the same gradients reach the encoder as with the repeated states
    grads_many = torch.autograd.grad(sum(x.sum() for x in many), list(q.parameters()))
    grads_rep = torch.autograd.grad(sum(x.sum() for x in repeated), list(q.parameters()))
    for a, b in zip(grads_many, grads_rep):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_many_rejects_mismatched_shapes():
    q = TwinQ((5,), 3, hidden=HIDDEN)
    with pytest.raises(ValueError, match=r"actions must be \(N, 4, 3\)"):
        q.many(torch.zeros(4, 5), torch.zeros(2, 3, 3))
    with pytest.raises(ValueError, match="obs must be"):
        q.many(torch.zeros(2, 4, 5), torch.zeros(2, 4, 3))
