"""The critic's log density ratio D(s, a) and DDPG+BC's support term (``bc_density_weight``):
D against a naive reference in float64 and its identities with eq. 11, the loss against a
per-anchor reference, gradient isolation, the mode's pull to where D is high, the learner's
metrics, checkpoints, resumption, vectorised seeds and the config's refusals."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch, make_nets  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss
from cvl_algos.cvl.q import (
    direct_log_density_fn,
    direct_q_fn,
    log_density_ratio_from_latents,
    q_direct_from_latents,
)

SETTINGS = settings(max_examples=15, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
DENSITY = {
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 3,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
    "bc_alpha": 0.3,
    "bc_density_weight": 0.5,
}


def _latents(seed: int, batch: int, futures: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    phi = torch.randn(batch, dim, generator=gen, dtype=torch.float64)
    psi = torch.randn(futures, dim, generator=gen, dtype=torch.float64)
    return phi, psi


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    batch=st.integers(1, 5),
    futures=st.integers(1, 7),
    temperature=st.floats(0.05, 2.0),
)
def test_log_density_ratio_matches_naive_reference(
    seed: int, batch: int, futures: int, temperature: float
) -> None:
    """D_i = log (1/M sum_j exp(phi_i . psi_j / tau)), one anchor and one future at a time."""
    phi, psi = _latents(seed, batch, futures, 4)
    got = log_density_ratio_from_latents(phi, psi, temperature)
    for i in range(batch):
        total = 0.0
        for j in range(futures):
            total += math.exp(float(phi[i] @ psi[j]) / temperature)
        assert math.isclose(float(got[i]), math.log(total / futures), rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(seed=st.integers(0, 2**16), temperature=st.floats(0.05, 2.0))
def test_log_density_ratio_identities(seed: int, temperature: float) -> None:
    """D is eq. 11's log normaliser: exp(D) times the self-normalised Q is the plain Q; repeating
    every future leaves D unchanged; one future state gives D = f(s, a, s+)."""
    phi, psi = _latents(seed, 4, 6, 3)
    reward = torch.rand(6, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    d = log_density_ratio_from_latents(phi, psi, temperature)
    plain = q_direct_from_latents(phi, psi, reward, 0.9, temperature)
    normalised = q_direct_from_latents(phi, psi, reward, 0.9, temperature, self_normalized=True)
    torch.testing.assert_close(plain, torch.exp(d) * normalised)
    twice = log_density_ratio_from_latents(phi, torch.cat([psi, psi]), temperature)
    torch.testing.assert_close(twice, d)
    one = log_density_ratio_from_latents(phi, psi[:1], temperature)
    torch.testing.assert_close(one, (phi @ psi[0]) / temperature)


def linear_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    return 3.0 + actions @ torch.tensor([0.7, -1.3]) + obs[:, 0].abs()


def peaked_density(target: torch.Tensor):
    """A hand-made D: (N, B, A) -> (N, B), highest at ``target``."""

    def d_fn(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return -(actions - target).square().sum(-1) + 0.1 * obs[:, 1]

    return d_fn


@pytest.mark.parametrize("q_cap", [False, True])
def test_ddpg_bc_density_term_matches_naive_reference(q_cap: bool) -> None:
    """The loss with the term is the loss without it minus w mean_b D(s_b, mode(s_b)), D taken
    one anchor at a time; its metric is that mean."""
    _, policy, _ = make_nets(2)
    batch = make_batch(6, seed=3)
    d_fn, weight = peaked_density(torch.tensor([0.2, -0.5])), 0.7
    base, _ = ddpg_bc_policy_loss(policy, linear_q, batch, alpha=0.3, q_cap=q_cap)
    loss, metrics = ddpg_bc_policy_loss(
        policy, linear_q, batch, alpha=0.3, q_cap=q_cap, density_fn=d_fn, density_weight=weight
    )
    per_anchor = torch.stack(
        [
            d_fn(batch.obs_t[b : b + 1], policy.deterministic(batch.obs_t[b : b + 1])[None])[0, 0]
            for b in range(6)
        ]
    )
    torch.testing.assert_close(loss, base - weight * per_anchor.mean())
    torch.testing.assert_close(metrics["policy_log_density"], per_anchor.mean())
    unweighted = ddpg_bc_policy_loss(policy, linear_q, batch, alpha=0.3, q_cap=q_cap)[1]
    assert "policy_log_density" not in unweighted


def test_density_term_pulls_the_mode_to_the_peak() -> None:
    """With a flat Q and no behaviour term (alpha 0), the term alone moves the mode to D's peak."""
    _, policy, _ = make_nets(1)
    batch = make_batch(16, seed=0)
    target = torch.tensor([0.6, -0.4])

    def flat_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return torch.ones(actions.shape[:2]) + 0.0 * actions.sum(-1)

    optimiser = torch.optim.Adam(policy.parameters(), lr=1e-2)
    for _ in range(300):
        optimiser.zero_grad()
        loss, _ = ddpg_bc_policy_loss(
            policy, flat_q, batch, alpha=0.0, density_fn=peaked_density(target), density_weight=1.0
        )
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        mode = policy.deterministic(batch.obs_t)
    assert float((mode - target).abs().max()) < 0.05, mode


def test_density_fn_isolates_the_critic_and_leaves_the_batch() -> None:
    """The critic's D and Q reach the policy only: no critic gradient, the batch unchanged."""
    critic, policy, _ = make_nets()
    batch = make_batch(6)
    before = clone_batch(batch)
    with torch.no_grad():
        psi_future = critic.psi(batch.obs_future)
    loss, metrics = ddpg_bc_policy_loss(
        policy,
        direct_q_fn(critic, psi_future, batch.reward_future, 0.99, True),
        batch,
        alpha=0.3,
        density_fn=direct_log_density_fn(critic, psi_future),
        density_weight=1.0,
    )
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert all(p.grad is not None for p in policy.parameters())
    assert torch.isfinite(loss) and torch.isfinite(metrics["policy_log_density"])
    assert_batch_equal(batch, before)


def test_learner_logs_the_term() -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **DENSITY)
    metrics = learner.update(make_contrastive_batch(0))
    assert torch.isfinite(torch.as_tensor(metrics["policy_log_density"]))
    plain = make_learner(
        "cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY, **{**DENSITY, "bc_density_weight": 0.0}
    )
    assert "policy_log_density" not in plain.update(make_contrastive_batch(0))


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    def build():
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **DENSITY)

    check_save_load_act_resume(build, tmp_path)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **DENSITY)

    check_vectorised_equals_alone(build, updates=30)


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("cvl_mc", {**DENSITY, "bc_density_weight": -1.0}),
        ("cvl_mc", {**DENSITY, "action_contrast_weight": 0.0}),
        ("cvl_mc", {**DENSITY, "policy_extraction": "awr"}),
        ("cvl", DENSITY),
    ],
)
def test_config_refusals(name: str, overrides: dict) -> None:
    with pytest.raises(ValueError, match="bc_density_weight must be >= 0, and > 0 only with"):
        make_learner(name, (OBS_DIM,), ACTION_DIM, **overrides)


def test_learners_log_density_ratio_is_eq_11s_normaliser() -> None:
    """`CVLLearner.log_density_ratio` is the D that links the two eq. 11 estimators of two
    learners that differ only in ``self_normalized``: Q_plain = exp(D) Q_self-normalised."""
    batch = make_contrastive_batch(3)
    learners = [
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=2, **TINY, self_normalized=flag)
        for flag in (False, True)
    ]
    for learner in learners:
        for i in range(5):  # away from the initial weights, identically in both
            learner.update(make_contrastive_batch(i))
    plain, normalised = (
        learner.q_values(batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future)
        for learner in learners
    )
    d, d_other = (
        learner.log_density_ratio(batch.obs_t, batch.action_t, batch.obs_future)
        for learner in learners
    )
    torch.testing.assert_close(d, d_other)  # the critics train alike
    torch.testing.assert_close(plain, torch.exp(d) * normalised, rtol=1e-4, atol=1e-4)
