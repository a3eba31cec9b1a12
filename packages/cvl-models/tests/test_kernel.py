"""The critic's ``"lse"`` kernel and its exact features (`kernel_logits`,
`paired_kernel_logits`, `ExactExpFeatures`): against a naive per-pair reference in float64,
the exact-feature identity ``F(x) . F(y) = exp(f)``, the ``"dot"`` kernel unchanged, the range
with unit latents down to temperature 0.05, and the refusals."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_models import (
    ContrastiveCritic,
    ExactExpFeatures,
    kernel_logits,
    l2_normalize,
    paired_kernel_logits,
)
from cvl_models.rff import make_random_features


def _unit(rows: int, dim: int, gen: torch.Generator) -> torch.Tensor:
    return l2_normalize(torch.randn(rows, dim, generator=gen, dtype=torch.float64))


def _naive_lse(phi: torch.Tensor, psi: torch.Tensor, temperature: float) -> torch.Tensor:
    """``log mean_k exp((phi_ik + psi_jk) / tau)`` one pair and one coordinate at a time."""
    out = torch.empty(phi.shape[0], psi.shape[0], dtype=torch.float64)
    for i in range(phi.shape[0]):
        for j in range(psi.shape[0]):
            terms = [
                math.exp((float(phi[i, k]) + float(psi[j, k])) / temperature)
                for k in range(phi.shape[1])
            ]
            out[i, j] = math.log(sum(terms) / len(terms))
    return out


@settings(max_examples=20, deadline=None)
@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 6),
    dim=st.integers(1, 9),
    temperature=st.sampled_from([0.05, 0.1, 0.3, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_lse_kernel_matches_a_naive_reference(rows, cols, dim, temperature, seed):
    gen = torch.Generator().manual_seed(seed)
    phi, psi = _unit(rows, dim, gen), _unit(cols, dim, gen)
    logits = kernel_logits(phi, psi, temperature, "lse")
    torch.testing.assert_close(logits, _naive_lse(phi, psi, temperature), rtol=1e-9, atol=1e-9)
    paired = paired_kernel_logits(
        phi[: min(rows, cols)], psi[: min(rows, cols)], temperature, "lse"
    )
    torch.testing.assert_close(paired, torch.diagonal(logits)[: min(rows, cols)])
    features = ExactExpFeatures(dim, temperature)
    product = features(phi) @ features(psi).T
    torch.testing.assert_close(product, torch.exp(logits), rtol=1e-9, atol=0.0)


def test_dot_kernel_is_the_papers_bit_for_bit():
    gen = torch.Generator().manual_seed(1)
    phi, psi = _unit(5, 8, gen).float(), _unit(7, 8, gen).float()
    assert torch.equal(kernel_logits(phi, psi, 0.1), (phi @ psi.T) / 0.1)
    torch.testing.assert_close(
        paired_kernel_logits(phi[:5], psi[:5], 0.1), torch.diagonal(kernel_logits(phi, psi, 0.1))
    )


def test_lse_range_with_unit_latents_in_float32():
    """Aligned one-hot latents reach ``2 / tau - log d``, opposite ones stay finite, at the
    smallest temperature the learner allows."""
    dim, temperature = 64, 0.05
    one_hot = torch.zeros(1, dim)
    one_hot[0, 3] = 1.0
    aligned = kernel_logits(one_hot, one_hot, temperature, "lse")
    torch.testing.assert_close(aligned, torch.tensor([[2 / temperature - math.log(dim)]]))
    opposite = kernel_logits(one_hot, -one_hot, temperature, "lse")
    assert torch.isfinite(opposite).all()
    naive = torch.logsumexp((one_hot - one_hot) / temperature, dim=-1) - math.log(dim)
    torch.testing.assert_close(opposite[0], naive, rtol=1e-5, atol=1e-4)


def test_critic_with_the_lse_kernel_and_its_refusals():
    torch.manual_seed(0)
    critic = ContrastiveCritic((6,), 2, latent_dim=8, hidden=(16,), temperature=0.1, kernel="lse")
    obs, action, future = torch.randn(4, 6), torch.rand(4, 2), torch.randn(5, 6)
    expected = kernel_logits(critic.phi(obs, action), critic.psi(future), 0.1, "lse")
    torch.testing.assert_close(critic.logits(obs, action, future), expected)
    assert "kernel='lse'" in repr(critic)
    with pytest.raises(ValueError, match="kernel must be one of"):
        ContrastiveCritic((6,), 2, kernel="cosine")
    with pytest.raises(ValueError, match="kernel must be one of"):
        kernel_logits(torch.ones(1, 2), torch.ones(1, 2), 1.0, "cosine")
    with pytest.raises(ValueError, match="num_features must be 8"):
        make_random_features("exact", 8, 16, temperature=0.1)
    assert isinstance(make_random_features("exact", 8, 8, temperature=0.1), ExactExpFeatures)
