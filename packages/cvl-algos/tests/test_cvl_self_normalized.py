"""Self-normalised Q_NCE (``self_normalized=True``, not in the paper): direct and RFF forms."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl import q_direct_from_latents, q_rff, xi_estimate
from cvl_models import RandomFourierFeatures

SETTINGS = settings(max_examples=20, deadline=None)


def _unit(gen: torch.Generator, n: int, d: int) -> torch.Tensor:
    return torch.nn.functional.normalize(
        torch.randn(n, d, generator=gen, dtype=torch.float64), dim=1
    )


@SETTINGS
@given(seed=st.integers(0, 2**16), temperature=st.sampled_from([0.1, 0.5, 1.0]))
def test_self_normalized_q_matches_naive_loops(seed: int, temperature: float) -> None:
    """Q_i (1 - g) = sum_j exp(f_ij) r_j / sum_j exp(f_ij), f_ij = phi_i . psi_j / tau."""
    gen = torch.Generator().manual_seed(seed)
    phi, psi = _unit(gen, 4, 6), _unit(gen, 7, 6)
    reward = torch.rand(7, generator=gen, dtype=torch.float64) * 4 - 1
    q = q_direct_from_latents(phi, psi, reward, 0.9, temperature, self_normalized=True)
    for i in range(4):
        weights = [math.exp(float(phi[i] @ psi[j]) / temperature) for j in range(7)]
        expected = sum(w * float(r) for w, r in zip(weights, reward, strict=True)) / sum(weights)
        assert math.isclose(float(q[i]) * (1 - 0.9), expected, rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(seed=st.integers(0, 2**16), reward=st.floats(-5, 5), shift=st.floats(-3, 3))
def test_self_normalized_q_cancels_the_per_anchor_constant(seed, reward, shift) -> None:
    """A constant reward r gives exactly r / (1 - g); adding a constant to an anchor's logits
    (the freedom InfoNCE leaves, which scales eq. 11's Q by e^c) leaves the ratio unchanged."""
    gen = torch.Generator().manual_seed(seed)
    phi, psi = _unit(gen, 3, 5), _unit(gen, 8, 5)
    constant = torch.full((8,), reward, dtype=torch.float64)
    q = q_direct_from_latents(phi, psi, constant, 0.99, 0.5, self_normalized=True)
    torch.testing.assert_close(q, torch.full((3,), reward / 0.01, dtype=torch.float64))
    # adding a constant c to anchor i's logits: eq. 11 scales by e^c, the ratio is unchanged
    rewards = torch.rand(8, generator=gen, dtype=torch.float64)
    logits = phi @ psi.T / 0.5
    shifted = torch.softmax(logits + shift, dim=1) @ rewards
    torch.testing.assert_close(torch.softmax(logits, dim=1) @ rewards, shifted)


@SETTINGS
@given(d=st.integers(2, 12), seed=st.integers(0, 2**16))
def test_rff_self_normalized_approximates_direct(d: int, seed: int) -> None:
    """F(phi) . xi / F(phi) . zeta ~= the direct self-normalised Q (tau = 1, D = 2^15)."""
    gen = torch.Generator().manual_seed(seed)
    phi, psi = _unit(gen, 5, d), _unit(gen, 9, d)
    reward = torch.rand(9, generator=gen, dtype=torch.float64)
    rff = RandomFourierFeatures(d, 2**15, temperature=1.0, seed=seed).double()
    xi, zeta = xi_estimate(rff, psi, reward), xi_estimate(rff, psi, torch.ones_like(reward))
    approx = q_rff(rff, phi, xi, 0.9, zeta)
    exact = q_direct_from_latents(phi, psi, reward, 0.9, 1.0, self_normalized=True)
    assert torch.max(torch.abs(approx - exact)).item() * (1 - 0.9) < 0.1


def test_learner_keeps_zeta_only_when_self_normalized() -> None:
    batch = make_batch(8)
    plain = make_learner("cvl", (5,), 2, hidden=(16, 16), latent_dim=8, num_rff_features=32)
    normed = make_learner(
        "cvl", (5,), 2, hidden=(16, 16), latent_dim=8, num_rff_features=32, self_normalized=True
    )
    assert "zeta" not in plain.xi_state.state_dict()
    normed.update(batch)
    assert normed.xi_state.zeta.abs().sum() > 0
    q = normed.q_values(batch.obs_t, batch.action_t)
    assert torch.isfinite(q).all()
