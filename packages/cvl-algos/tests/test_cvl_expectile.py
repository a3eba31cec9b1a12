"""Expectile aggregation of the critic's futures (``q_expectile``, `weighted_expectile`): the
closed form against a bisection on the expectile's defining equation, its identities (mean at
0.5, bounds, monotone in tau, translation and scale), its gradient, the learner's Q with it, and
the learner's checkpoints, resumption and vectorised seeds."""

from __future__ import annotations

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl import q_direct_from_latents, weighted_expectile

SETTINGS = settings(max_examples=25, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
EXPECTILE = {"self_normalized": True, "q_expectile": 0.9, "policy_extraction": "ddpgbc"}


def _distribution(seed: int, rows: int, size: int, ties: bool):
    gen = torch.Generator().manual_seed(seed)
    values = torch.randn(size, generator=gen, dtype=torch.float64) * 3
    if ties:  # repeated values, as rewards of identical future states give
        values = torch.round(values)
    logits = torch.randn(rows, size, generator=gen, dtype=torch.float64) * 3
    return values, torch.softmax(logits, dim=1)


def _bisection(values, weights, tau: float, iters: int = 200) -> float:
    """The root of g(q) = tau E(v - q)_+ - (1 - tau) E(q - v)_+ by bisection, one row."""
    lo, hi = float(values.min()), float(values.max())
    for _ in range(iters):
        q = 0.5 * (lo + hi)
        g = tau * float((weights * (values - q).clamp(min=0)).sum()) - (1 - tau) * float(
            (weights * (q - values).clamp(min=0)).sum()
        )
        lo, hi = (q, hi) if g > 0 else (lo, q)
    return 0.5 * (lo + hi)


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    tau=st.floats(0.01, 0.99),
    size=st.integers(1, 12),
    ties=st.booleans(),
)
def test_expectile_matches_bisection(seed: int, tau: float, size: int, ties: bool) -> None:
    values, weights = _distribution(seed, 4, size, ties)
    q = weighted_expectile(values, weights, tau)
    for row in range(4):
        assert abs(float(q[row]) - _bisection(values, weights[row], tau)) < 1e-9


@SETTINGS
@given(seed=st.integers(0, 2**16), ties=st.booleans(), shift=st.floats(-5, 5))
def test_expectile_identities(seed: int, ties: bool, shift: float) -> None:
    """tau = 0.5 is the weighted mean; every expectile lies within the row's support, rises with
    tau towards the support's maximum, and moves with shifts and positive scales of the values."""
    values, weights = _distribution(seed, 5, 9, ties)
    torch.testing.assert_close(weighted_expectile(values, weights, 0.5), weights @ values)
    taus = (0.1, 0.3, 0.5, 0.7, 0.9, 0.999)
    qs = torch.stack([weighted_expectile(values, weights, t) for t in taus])
    support = weights > 1e-12
    low = torch.where(support, values, torch.inf).amin(1)
    high = torch.where(support, values, -torch.inf).amax(1)
    assert (qs >= low - 1e-9).all() and (qs <= high + 1e-9).all()
    assert (qs[1:] >= qs[:-1] - 1e-12).all()
    moved = weighted_expectile(2.5 * values + shift, weights, 0.8)
    torch.testing.assert_close(moved, 2.5 * weighted_expectile(values, weights, 0.8) + shift)


def test_expectile_of_a_point_mass_and_of_two_points() -> None:
    """All weight on one value gives that value; two points {0, 1} with weights (1 - p, p) have
    the tau-expectile tau p / (tau p + (1 - tau)(1 - p)), solved by hand."""
    values = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    point = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(
        weighted_expectile(values, point, 0.9), torch.tensor([4.0, 1.0]).double()
    )
    p, tau = 0.2, 0.9
    two = torch.tensor([[1 - p, p, 0.0]], dtype=torch.float64)
    expected = tau * p / (tau * p + (1 - tau) * (1 - p))
    torch.testing.assert_close(
        weighted_expectile(values, two, tau), torch.tensor([expected]).double()
    )


def test_expectile_gradient_matches_finite_differences() -> None:
    """The closed form's gradient through the softmax weights (the path the policy's action
    takes) against finite differences, away from ties."""
    gen = torch.Generator().manual_seed(3)
    values = torch.randn(7, generator=gen, dtype=torch.float64)
    logits = torch.randn(3, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    for tau in (0.2, 0.5, 0.9):
        assert torch.autograd.gradcheck(
            lambda x, t=tau: weighted_expectile(values, torch.softmax(x, 1), t), (logits,)
        )


def test_q_direct_takes_the_expectile_of_the_self_normalised_weights() -> None:
    gen = torch.Generator().manual_seed(0)
    phi = torch.nn.functional.normalize(
        torch.randn(4, 6, generator=gen, dtype=torch.float64), dim=1
    )
    psi = torch.nn.functional.normalize(
        torch.randn(9, 6, generator=gen, dtype=torch.float64), dim=1
    )
    reward = torch.rand(9, generator=gen, dtype=torch.float64)
    weights = torch.softmax(phi @ psi.T / 0.1, dim=1)
    for tau in (0.5, 0.9):
        q = q_direct_from_latents(phi, psi, reward, 0.99, 0.1, True, tau)
        torch.testing.assert_close(q, weighted_expectile(reward, weights, tau) / 0.01)
    mean = q_direct_from_latents(phi, psi, reward, 0.99, 0.1, True)
    assert (q_direct_from_latents(phi, psi, reward, 0.99, 0.1, True, 0.9) >= mean).all()


def _critic_weights(learner, batch) -> torch.Tensor:
    """The learner's self-normalised weights of the batch's futures for its data pairs."""
    with torch.no_grad():
        phi = learner.critic.phi(batch.obs_t, batch.action_t)
        psi = learner.psi_target(batch.obs_future)
    return torch.softmax(phi @ psi.T / learner.critic.temperature, dim=1)


def test_learner_q_values_use_the_expectile() -> None:
    """The learner's Q at tau = 0.9 is the expectile over the given futures under its critic's
    softmax."""
    batch = make_contrastive_batch(0)
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=1, **TINY, **EXPECTILE)
    learner.update(batch)
    weights = _critic_weights(learner, batch)
    q = learner.q_values(batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future)
    expected = weighted_expectile(batch.reward_future, weights, 0.9) / (1 - learner.config.discount)
    torch.testing.assert_close(q, expected)


def test_default_is_the_mean_and_the_expectile_changes_training() -> None:
    """At the default 0.5 the learner's Q is eq. 11's self-normalised mean; the same seed and
    batches with 0.9 train another policy (the switch reaches the policy's loss)."""
    batches = [make_contrastive_batch(i) for i in range(4)]
    common = dict(seed=2, **TINY, self_normalized=True, policy_extraction="ddpgbc")
    default = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **common)
    shifted = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, q_expectile=0.9, **common)
    for batch in batches:
        default.update(batch)
        shifted.update(batch)
    batch = batches[0]
    weights = _critic_weights(default, batch)
    q = default.q_values(batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future)
    torch.testing.assert_close(q, weights @ batch.reward_future / (1 - default.config.discount))
    assert any(
        not torch.equal(a, c)
        for a, c in zip(default.policy.parameters(), shifted.policy.parameters(), strict=True)
    )


@pytest.mark.parametrize("extraction", ["ddpgbc", "flow"])
def test_save_load_act_and_resume_identical(extraction: str, tmp_path) -> None:
    def build():
        overrides = {**EXPECTILE, "policy_extraction": extraction, "flow_steps": 3}
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **overrides)

    check_save_load_act_resume(build, tmp_path)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    def build(seed):
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **EXPECTILE)

    check_vectorised_equals_alone(build, updates=30)


def test_config_refuses_an_expectile_it_cannot_apply() -> None:
    with pytest.raises(ValueError, match="q_expectile must lie in"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, self_normalized=True, q_expectile=1.0)
    with pytest.raises(ValueError, match="q_expectile .* self_normalized=False"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, q_expectile=0.9)
    with pytest.raises(ValueError, match="q_expectile .* 'rff'"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, self_normalized=True, q_expectile=0.9)
