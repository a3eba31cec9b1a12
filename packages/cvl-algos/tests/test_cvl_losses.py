"""Pure CVL losses and Q estimators against naive references, identities and isolation checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import assert_batch_equal, clone_batch  # pants: no-infer-dep
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos.cvl import (
    contrastive_critic_loss,
    detached_phi,
    direct_q_fn,
    infonce_partition_loss,
    normalize_q_per_batch,
    policy_loss,
    q_direct,
    q_direct_from_latents,
    q_rff,
    rff_q_fn,
    xi_ema,
    xi_estimate,
    xi_zeta_estimate,
)
from cvl_data import ContrastiveBatch
from cvl_models import ContrastiveCritic, RandomFourierFeatures, TanhGaussianPolicy
from cvl_models.rff import make_random_features

OBS_DIM, ACTION_DIM, LATENT = 5, 2, 8
HIDDEN = (16, 16)
SETTINGS = settings(max_examples=20, deadline=None)


def make_batch(batch_size: int, seed: int = 0, rewards: bool = True) -> ContrastiveBatch:
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch_size, OBS_DIM, generator=gen)
    reward = torch.rand(batch_size, generator=gen) if rewards else None
    return ContrastiveBatch(
        obs_t=obs,
        action_t=torch.rand(batch_size, ACTION_DIM, generator=gen) * 2 - 1,
        reward_t=reward,
        obs_next=torch.randn(batch_size, OBS_DIM, generator=gen),
        done=torch.zeros(batch_size),
        obs_future=torch.randn(batch_size, OBS_DIM, generator=gen),
        reward_future=None if reward is None else torch.rand(batch_size, generator=gen),
        offset=torch.ones(batch_size, dtype=torch.int64),
        task_id=None,
    )


def make_nets(seed: int = 0) -> tuple[ContrastiveCritic, TanhGaussianPolicy, RandomFourierFeatures]:
    torch.manual_seed(seed)
    critic = ContrastiveCritic((OBS_DIM,), ACTION_DIM, latent_dim=LATENT, hidden=HIDDEN)
    policy = TanhGaussianPolicy((OBS_DIM,), ACTION_DIM, hidden=HIDDEN)
    rff = RandomFourierFeatures(LATENT, 64, seed=seed)
    return critic, policy, rff


# ------------------------------------------------------------------------- critic loss (eq. 9-10)


def naive_infonce(logits: np.ndarray, lam: float) -> float:
    """Explicit loops over i, j: mean_i [-f_ii + log sum_j e^f_ij] + lam mean_i (lse_i)^2."""
    n = logits.shape[0]
    total_nce, total_partition = 0.0, 0.0
    for i in range(n):
        row_sum = 0.0
        for j in range(n):
            row_sum += math.exp(logits[i, j])
        lse = math.log(row_sum)
        total_nce += -logits[i, i] + lse
        total_partition += lse**2
    return total_nce / n + lam * total_partition / n


@SETTINGS
@given(
    n=st.integers(1, 7),
    seed=st.integers(0, 2**16),
    scale=st.floats(0.1, 5.0),
    lam=st.sampled_from([0.0, 1e-3, 0.5]),
)
def test_infonce_partition_matches_naive_loops(n: int, seed: int, scale: float, lam: float) -> None:
    logits = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    logits = logits * scale
    loss, metrics = infonce_partition_loss(logits, lam)
    assert loss.item() == pytest.approx(naive_infonce(logits.numpy(), lam), rel=1e-9, abs=1e-9)
    argmax = logits.argmax(dim=1).numpy()
    assert metrics["critic_accuracy"].item() == pytest.approx(np.mean(argmax == np.arange(n)))
    assert metrics["logits_mean"].item() == pytest.approx(logits.mean().item())


def test_infonce_hand_computed() -> None:
    """2x2 fixture: rows [0, log 3] and [0, 1]: lse = log 4 and log(1 + e)."""
    logits = torch.tensor([[0.0, math.log(3.0)], [0.0, 1.0]], dtype=torch.float64)
    loss, metrics = infonce_partition_loss(logits, lambda_partition=1.0)
    lse = [math.log(4.0), math.log(1.0 + math.e)]
    expected = (lse[0] - 0.0 + lse[1] - 1.0) / 2 + (lse[0] ** 2 + lse[1] ** 2) / 2
    assert loss.item() == pytest.approx(expected)
    assert metrics["critic_accuracy"].item() == pytest.approx(0.5)  # row 0 picks column 1


def test_contrastive_critic_loss_uses_critic_logits() -> None:
    critic, _, _ = make_nets()
    batch = make_batch(6)
    loss, _ = contrastive_critic_loss(critic, batch, 1e-3)
    expected, _ = infonce_partition_loss(
        critic.logits(batch.obs_t, batch.action_t, batch.obs_future), 1e-3
    )
    torch.testing.assert_close(loss, expected)


def test_critic_loss_leaves_policy_untouched_and_works_without_rewards() -> None:
    critic, policy, _ = make_nets()
    batch = make_batch(8, rewards=False)
    before = clone_batch(batch)
    loss, _ = contrastive_critic_loss(critic, batch, 1e-3)
    loss.backward()
    assert all(p.grad is None for p in policy.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in critic.parameters())
    assert_batch_equal(batch, before)


# ----------------------------------------------------------------------------- Q estimators


@SETTINGS
@given(
    b=st.integers(1, 5),
    m=st.integers(1, 6),
    d=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    temperature=st.floats(0.3, 3.0),
    discount=st.floats(0.0, 0.995),
)
def test_q_direct_matches_naive_loop(
    b: int, m: int, d: int, seed: int, temperature: float, discount: float
) -> None:
    gen = torch.Generator().manual_seed(seed)
    phi = torch.randn(b, d, generator=gen, dtype=torch.float64)
    psi = torch.randn(m, d, generator=gen, dtype=torch.float64)
    reward = torch.randn(m, generator=gen, dtype=torch.float64)
    q = q_direct_from_latents(phi, psi, reward, discount, temperature)
    for i in range(b):
        acc = 0.0
        for j in range(m):
            f_ij = sum(phi[i, k].item() * psi[j, k].item() for k in range(d)) / temperature
            acc += reward[j].item() * math.exp(f_ij)
        assert q[i].item() == pytest.approx(acc / m / (1.0 - discount), rel=1e-9, abs=1e-12)


def test_q_direct_module_form_matches_latent_form() -> None:
    critic, _, _ = make_nets()
    batch = make_batch(7)
    q = q_direct(
        critic,
        critic.psi_net,
        batch.obs_t,
        batch.action_t,
        batch.obs_future,
        batch.reward_future,
        discount=0.9,
    )
    phi, psi = critic.phi(batch.obs_t, batch.action_t), critic.psi(batch.obs_future)
    torch.testing.assert_close(q, q_direct_from_latents(phi, psi, batch.reward_future, 0.9, 1.0))


@SETTINGS
@given(
    d=st.integers(2, 16),
    seed=st.integers(0, 2**16),
    temperature=st.sampled_from([0.5, 1.0, 2.0]),
)
def test_rff_q_approximates_direct_q_for_unit_latents(
    d: int, seed: int, temperature: float
) -> None:
    """Lemma 1 / eq. 12: F(phi) . mean_j F(psi_j) r_j ~= mean_j r_j exp(phi.psi_j / tau).

    With D = 2^15 features the error of one kernel value has standard deviation about
    e^(1/tau) / sqrt(D) <= e^2 / 181 ~= 0.04; we allow 0.1 e^(1/tau) on Q (1 - g) with |r| <= 1.
    """
    gen = torch.Generator().manual_seed(seed)
    phi = torch.nn.functional.normalize(
        torch.randn(6, d, generator=gen, dtype=torch.float64), dim=1
    )
    psi = torch.nn.functional.normalize(
        torch.randn(9, d, generator=gen, dtype=torch.float64), dim=1
    )
    reward = torch.rand(9, generator=gen, dtype=torch.float64) * 2 - 1
    rff = RandomFourierFeatures(d, 2**15, temperature=temperature, seed=seed).double()
    xi = xi_estimate(rff, psi, reward)
    approx = q_rff(rff, phi, xi, discount=0.9)
    exact = q_direct_from_latents(phi, psi, reward, discount=0.9, temperature=temperature)
    tol = 0.1 * math.exp(1.0 / temperature) / (1.0 - 0.9)
    assert torch.max(torch.abs(approx - exact)).item() < tol


def test_xi_estimate_and_ema_against_naive() -> None:
    gen = torch.Generator().manual_seed(3)
    rff = RandomFourierFeatures(4, 10, seed=1).double()
    psi = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    reward = torch.randn(5, generator=gen, dtype=torch.float64)
    naive = sum(rff(psi[j]) * reward[j] for j in range(5)) / 5
    estimate = xi_estimate(rff, psi, reward)
    torch.testing.assert_close(estimate, naive)
    xi = torch.randn(10, generator=gen, dtype=torch.float64)
    xi_before = xi.clone()
    torch.testing.assert_close(xi_ema(xi, estimate, 0.0), estimate)
    torch.testing.assert_close(xi_ema(xi, estimate, 0.75), 0.75 * xi + 0.25 * estimate)
    torch.testing.assert_close(xi, xi_before, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["trig", "positive", "oprf"])
def test_xi_zeta_estimate_is_bit_equal_to_two_xi_estimates(kind: str) -> None:
    """One evaluation of the features gives what two did: xi with the rewards, zeta with ones
    (the learner's self-normalised xi step)."""
    gen = torch.Generator().manual_seed(4)
    rff = make_random_features(kind, 6, 64, temperature=0.1, seed=2)
    psi = torch.nn.functional.normalize(torch.randn(17, 6, generator=gen), dim=1)
    reward = torch.randn(17, generator=gen)
    xi, zeta = xi_zeta_estimate(rff, psi, reward)
    assert torch.equal(xi, xi_estimate(rff, psi, reward))
    assert torch.equal(zeta, xi_estimate(rff, psi, torch.ones_like(reward)))


# ----------------------------------------------------------------------- policy loss (eq. 13-15)


def q_fns(critic, rff, batch):
    with torch.no_grad():
        xi = xi_estimate(rff, critic.psi(batch.obs_future), batch.reward_future)
        psi_future = critic.psi(batch.obs_future)
    return {
        "rff": rff_q_fn(critic, rff, xi, 0.99),
        "mc": direct_q_fn(critic, psi_future, batch.reward_future, 0.99),
    }


@pytest.mark.parametrize("estimator", ["rff", "mc"])
@pytest.mark.parametrize("normalize_q", [False, True])
def test_policy_loss_gradient_isolation_and_no_mutation(estimator: str, normalize_q: bool) -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    before = clone_batch(batch)
    q_fn = q_fns(critic, rff, batch)[estimator]
    loss, metrics = policy_loss(policy, q_fn, batch, num_action_samples=4, normalize_q=normalize_q)
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert all(p.grad is not None for p in policy.parameters())
    assert sum(p.grad.abs().sum() for p in policy.parameters()) > 0
    assert np.isfinite(loss.item()) and metrics["q_abs_mean"].item() > 0
    assert_batch_equal(batch, before)


def test_policy_loss_matches_naive_reference() -> None:
    """Loop over the N_a samples: mean_n mean_b [alpha logp - Q] + lam (-mean logp_data - tau H)."""
    _, policy, _ = make_nets()
    batch = make_batch(5)
    weights = torch.tensor([0.7, -1.3])

    def q_fn(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return actions @ weights + obs[:, 0]

    n, alpha, lam, tau = 3, 0.2, 0.5, 0.3
    torch.manual_seed(11)
    loss, _ = policy_loss(
        policy, q_fn, batch, num_action_samples=n, alpha=alpha, lambda_bc=lam, tau_bc=tau
    )
    torch.manual_seed(11)
    actions, log_prob = policy.sample(batch.obs_t, num_samples=n)
    kl = 0.0
    for k in range(n):
        q_k = actions[k] @ weights + batch.obs_t[:, 0]
        kl = kl + (alpha * log_prob[k] - q_k).mean() / n
    log_prob_data = policy.log_prob(batch.obs_t, batch.action_t).mean()
    entropy = policy.entropy(batch.obs_t).mean()
    expected = kl + lam * (-log_prob_data - tau * entropy)
    torch.testing.assert_close(loss, expected)


@SETTINGS
@given(scale=st.floats(1e-3, 1e3), seed=st.integers(0, 2**16))
def test_normalized_q_loss_is_invariant_to_q_scale(scale: float, seed: int) -> None:
    """Q_NCE is Q up to a positive factor; with normalize_q the policy loss cannot tell."""
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    q_fn = q_fns(critic, rff, batch)["rff"]
    losses = []
    for factor in (1.0, scale):
        torch.manual_seed(seed)
        loss, _ = policy_loss(
            policy,
            lambda o, a, f=factor: f * q_fn(o, a),
            batch,
            num_action_samples=3,
            normalize_q=True,
        )
        losses.append(loss)
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-5, atol=1e-5)


def test_normalize_q_per_batch_detaches_the_scale() -> None:
    q = torch.tensor([1.0, -3.0, 2.0], requires_grad=True)
    out = normalize_q_per_batch(q)
    torch.testing.assert_close(out, q.detach() / 2.0)
    out.sum().backward()
    torch.testing.assert_close(q.grad, torch.full((3,), 0.5))


class _CatPhi(torch.nn.Module):
    """A phi network that is not cvl_models' StateActionEmbedding (exercises the generic path)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(OBS_DIM + ACTION_DIM, LATENT)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([obs, action], dim=-1))


class _CatCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.phi_net = _CatPhi()

    def phi(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.phi_net(obs, action)


@pytest.mark.parametrize("kind", ["state", "pixels", "generic"])
def test_detached_phi_of_action_samples_equals_phi(kind: str) -> None:
    """phi of N samples per state (each state encoded once) == critic.phi on repeated states;
    gradients reach the actions, not the critic."""
    torch.manual_seed(0)
    n, b = 3, 4
    if kind == "pixels":
        shape = (12, 12, 3)
        critic = ContrastiveCritic(shape, ACTION_DIM, latent_dim=LATENT, hidden=(8,))
        obs = torch.randint(0, 256, (b, *shape)).to(torch.uint8)
    else:
        critic = (
            _CatCritic()
            if kind == "generic"
            else ContrastiveCritic((OBS_DIM,), ACTION_DIM, latent_dim=LATENT, hidden=HIDDEN)
        )
        obs = torch.randn(b, OBS_DIM)
    actions = (torch.rand(n, b, ACTION_DIM) * 2 - 1).requires_grad_(True)
    fast = detached_phi(critic)(obs, actions)
    assert fast.shape == (n, b, LATENT)
    for k in range(n):
        torch.testing.assert_close(fast[k], critic.phi(obs, actions[k]))
    fast.square().sum().backward()
    assert actions.grad is not None and actions.grad.abs().sum() > 0
    assert all(p.grad is None for p in critic.parameters())
