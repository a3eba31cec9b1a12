"""CVL with the ``"lse"`` critic kernel (``critic_kernel``) and its exact features
(``rff_kind="exact"``): eq. 11 and eq. 12 agree exactly, both against a naive reference in
float64; the action-contrast term's scores through the kernel; the policy loss leaves the critic
alone; save, load, act and resume identical; vectorised seeds; the config's one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    double_batch,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    one_line_error,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss
from cvl_algos.cvl.losses import action_contrastive_loss
from cvl_algos.cvl.q import (
    direct_q_fn,
    q_direct_from_latents,
    q_rff,
    xi_zeta_estimate,
)
from cvl_models import ContrastiveCritic, ExactExpFeatures, l2_normalize

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
LSE = {"critic_kernel": "lse", "temperature": 0.1, "self_normalized": True}
EXACT = {**LSE, "rff_kind": "exact", "num_rff_features": 8}


def _naive_self_normalised_q(phi, psi, reward, temperature, discount) -> torch.Tensor:
    """Per anchor: sum_j w_j r_j / sum_j w_j / (1 - g), w_j = mean_k exp((phi_k + psi_jk) / tau)."""
    out = []
    for i in range(phi.shape[0]):
        weights = [
            sum(
                math.exp((float(phi[i, k]) + float(psi[j, k])) / temperature)
                for k in range(phi.shape[1])
            )
            / phi.shape[1]
            for j in range(psi.shape[0])
        ]
        total = sum(w * float(r) for w, r in zip(weights, reward, strict=True))
        out.append(total / sum(weights) / (1.0 - discount))
    return torch.tensor(out, dtype=torch.float64)


@settings(max_examples=15, deadline=None)
@given(
    anchors=st.integers(1, 6),
    futures=st.integers(1, 8),
    temperature=st.sampled_from([0.05, 0.1, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_direct_and_exact_feature_q_match_a_naive_reference(anchors, futures, temperature, seed):
    """Eq. 11 with the "lse" kernel and eq. 12 with its exact features are one number (the
    self-normalised and the plain forms)."""
    gen = torch.Generator().manual_seed(seed)
    phi = l2_normalize(torch.randn(anchors, 6, generator=gen, dtype=torch.float64))
    psi = l2_normalize(torch.randn(futures, 6, generator=gen, dtype=torch.float64))
    reward = torch.rand(futures, generator=gen, dtype=torch.float64) * 10
    naive = _naive_self_normalised_q(phi, psi, reward, temperature, 0.99)
    direct = q_direct_from_latents(phi, psi, reward, 0.99, temperature, True, kernel="lse")
    torch.testing.assert_close(direct, naive, rtol=1e-9, atol=1e-9)
    features = ExactExpFeatures(6, temperature)
    xi, zeta = xi_zeta_estimate(features, psi, reward)
    torch.testing.assert_close(q_rff(features, phi, xi, 0.99, zeta, eps=0.0), naive)
    plain = q_direct_from_latents(phi, psi, reward, 0.99, temperature, kernel="lse")
    torch.testing.assert_close(q_rff(features, phi, xi, 0.99), plain, rtol=1e-9, atol=0.0)


def test_action_contrast_scores_candidates_through_the_kernel() -> None:
    torch.manual_seed(0)
    critic = ContrastiveCritic(
        (OBS_DIM,), ACTION_DIM, latent_dim=8, hidden=(16,), temperature=0.1, kernel="lse"
    ).double()
    batch = double_batch(make_contrastive_batch(3, size=6))
    logits, psi_future = critic.logits_and_psi(batch.obs_t, batch.action_t, batch.obs_future)
    loss, _ = action_contrastive_loss(
        critic, torch.diagonal(logits), batch.obs_t, batch.action_t, psi_future, 2
    )
    total = 0.0
    with torch.no_grad():
        for i in range(6):
            scores = [
                float(
                    critic.logits(
                        batch.obs_t[i : i + 1],
                        batch.action_t[(i + k) % 6 : (i + k) % 6 + 1],
                        batch.obs_future[i : i + 1],
                    )[0, 0]
                )
                for k in range(3)
            ]
            total -= scores[0] - math.log(sum(math.exp(x) for x in scores))
    assert abs(loss.item() - total / 6) < 1e-9


def test_policy_loss_reaches_the_policy_only() -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **LSE)
    batch = make_contrastive_batch(0)
    with torch.no_grad():
        psi_future = learner.critic.psi(batch.obs_future)
    q_fn = direct_q_fn(learner.critic, psi_future, batch.reward_future, 0.99, True)
    loss, _ = ddpg_bc_policy_loss(learner.policy, q_fn, batch, alpha=0.3)
    loss.backward()
    assert all(p.grad is None for p in learner.critic.parameters())
    assert sum(float(p.grad.abs().sum()) for p in learner.policy.parameters()) > 0


@pytest.mark.parametrize(("name", "overrides"), [("cvl_mc", LSE), ("cvl", EXACT)])
def test_save_load_act_resume_and_vectorised_seeds(name, overrides, tmp_path) -> None:
    def build(seed: int = 4):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)

    learner = check_save_load_act_resume(build, tmp_path)
    assert learner.critic.kernel == "lse"
    metrics = learner.update(make_contrastive_batch(9))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    check_vectorised_equals_alone(build, updates=20)


@pytest.mark.parametrize(
    ("name", "overrides", "needle"),
    [
        ("cvl_mc", {**LSE, "normalize": False}, "critic_kernel='lse' needs normalize=True"),
        ("cvl_mc", {**LSE, "temperature": 0.02}, "temperature >= 0.05"),
        ("cvl_mc", {**LSE, "learn_temperature": True}, "learn_temperature=False"),
        ("cvl", {**LSE, "rff_kind": "positive"}, "rff_kind='exact' goes with critic_kernel='lse'"),
        ("cvl", {"rff_kind": "exact", "num_rff_features": 8}, "goes with critic_kernel='lse'"),
        ("cvl", {**EXACT, "num_rff_features": 16}, "num_rff_features must be 8"),
        ("cvl", {**EXACT, "rff_orthogonal": True}, "rff_orthogonal False"),
        ("cvl_mc", {"critic_kernel": "cosine"}, "critic_kernel must be 'dot' or 'lse'"),
    ],
)
def test_config_refusals(name, overrides, needle) -> None:
    message = one_line_error(
        lambda: make_learner(name, (OBS_DIM,), ACTION_DIM, **{**TINY, **overrides})
    )
    assert needle in message
