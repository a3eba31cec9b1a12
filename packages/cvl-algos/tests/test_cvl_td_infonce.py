"""CVL's TD InfoNCE critic (`critic_objective="td_infonce"`): the loss against a naive loop and
its identities, its fixed point on an exactly solvable MDP (Q of the evaluated policy), the
learner's plumbing against a hand-built reference, gradient isolation, checkpoints, resumption,
vectorised seeds and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_modules_equal,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl import (
    infonce_partition_loss,
    q_direct_from_latents,
    td_contrastive_critic_loss,
    td_infonce_partition_loss,
)

SETTINGS = settings(max_examples=15, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
TD = {"critic_objective": "td_infonce"}
VARIANTS = [
    ("cvl_mc", {**TD, "policy_extraction": "ddpgbc", "self_normalized": True}),
    ("cvl", {**TD, "policy_extraction": "ddpgbc", "rff_kind": "positive", "temperature": 0.5}),
    ("cvl_mc", {**TD, "policy_extraction": "flow", "flow_steps": 3}),
    ("cvl", {**TD}),
    ("cvl_mc", {**TD, "policy_extraction": "ddpgbc", "td_warmup_steps": 3}),
]


def naive_td_infonce(logits, target_logits, done, discount, lam) -> float:
    """Row by row in float64: labels (1-g) e_i + g softmax(target_i) (e_i when done), the
    cross-entropy with log softmax(logits_i), plus lam (lse_i)^2."""
    logits, target_logits = logits.double().numpy(), target_logits.double().numpy()
    n = logits.shape[0]
    total = 0.0
    for i in range(n):
        target = np.exp(target_logits[i] - target_logits[i].max())
        target /= target.sum()
        if done[i]:
            target = np.eye(n)[i]
        labels = (1 - discount) * np.eye(n)[i] + discount * target
        lse = math.log(np.exp(logits[i] - logits[i].max()).sum()) + logits[i].max()
        total += -(labels * (logits[i] - lse)).sum() + lam * lse**2
    return total / n


@SETTINGS
@given(
    n=st.integers(2, 7),
    seed=st.integers(0, 2**16),
    scale=st.floats(0.1, 10.0),
    discount=st.floats(0.0, 0.99),
    lam=st.sampled_from([0.0, 1e-3, 0.1]),
)
def test_td_infonce_matches_naive_loop(n, seed, scale, discount, lam) -> None:
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, n, generator=gen, dtype=torch.float64) * scale
    target = torch.randn(n, n, generator=gen, dtype=torch.float64) * scale
    done = (torch.rand(n, generator=gen) < 0.3).double()
    loss, metrics = td_infonce_partition_loss(logits, target, done, discount, lam)
    expected = naive_td_infonce(logits, target, done.numpy(), discount, lam)
    assert loss.item() == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert set(metrics) >= {"critic_loss", "critic_nce", "critic_partition", "td_label_next"}


@SETTINGS
@given(n=st.integers(2, 7), seed=st.integers(0, 2**16), lam=st.sampled_from([0.0, 1e-3]))
def test_td_infonce_at_discount_zero_or_all_done_is_infonce(n, seed, lam) -> None:
    """Without a bootstrap (g = 0, or every step terminated and the mass kept on the next
    state) the labels are the identity: eq. 9-10's InfoNCE over the next states."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, n, generator=gen, dtype=torch.float64) * 3
    target = torch.randn(n, n, generator=gen, dtype=torch.float64) * 3
    infonce, _ = infonce_partition_loss(logits, lam)
    at_zero, _ = td_infonce_partition_loss(logits, target, torch.zeros(n), 0.0, lam)
    all_done, _ = td_infonce_partition_loss(logits, target, torch.ones(n), 0.9, lam)
    torch.testing.assert_close(at_zero, infonce)
    torch.testing.assert_close(all_done, infonce)


def test_td_infonce_gradient_vanishes_at_its_labels_and_not_through_the_target() -> None:
    """d CE / d logits = softmax(logits) - labels: zero when logits = log(labels) (+ a row
    constant); the target receives no gradient."""
    gen = torch.Generator().manual_seed(0)
    n, discount = 5, 0.8
    target = torch.randn(n, n, generator=gen, dtype=torch.float64, requires_grad=True)
    labels = (1 - discount) * torch.eye(n, dtype=torch.float64)
    labels = labels + discount * torch.softmax(target.detach(), dim=1)
    logits = labels.log() + torch.randn(n, 1, generator=gen, dtype=torch.float64)
    logits.requires_grad_(True)
    loss, _ = td_infonce_partition_loss(logits, target, torch.zeros(n), discount, 0.0)
    loss.backward()
    torch.testing.assert_close(logits.grad, torch.zeros_like(logits), atol=1e-12, rtol=0)
    assert target.grad is None


def test_td_infonce_fixed_point_is_the_q_of_the_evaluated_policy() -> None:
    """Tabular logits on a deterministic ring (6 cells, moves -1/0/+1; every (s, a) is a row
    and each cell is the next state of 3 rows, a uniform candidate marginal): minimising the
    loss with the target recomputed from the current logits makes the self-normalised Q of
    eq. 11 over the candidates' arrival rewards the exact Q of the bootstrap policy pi, which
    differs from the data's (uniform) behaviour policy's."""
    cells, moves, discount = 6, (-1, 0, 1), 0.8
    reward = torch.tensor([1.0, 0.0, 0.0, 0.3, 0.0, 0.0], dtype=torch.float64)
    pi = [2, 2, 1, 0, 2, 0]  # the evaluated policy's move index per cell
    rows = [(s, a) for s in range(cells) for a in range(3)]
    next_cell = torch.tensor([(s + moves[a]) % cells for s, a in rows])
    row_of = {pair: i for i, pair in enumerate(rows)}
    bootstrap_row = torch.tensor([row_of[(int(c), pi[int(c)])] for c in next_cell])
    table = torch.zeros(len(rows), cells, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([table], lr=0.05)
    done = torch.zeros(len(rows))
    for _ in range(4000):
        logits = table[:, next_cell]  # logits[i, j] = f(s_i, a_i, s'_j)
        target = table.detach()[bootstrap_row][:, next_cell]  # f(s'_i, pi(s'_i), s'_j)
        loss, _ = td_infonce_partition_loss(logits, target, done, discount, 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = torch.softmax(table.detach()[:, next_cell], dim=1)
    q_td = weights @ reward[next_cell] / (1 - discount)
    # Exact Q^pi(s, a) = R(s') + g Q^pi(s', pi(s')), a linear system over the 18 rows.
    transition = torch.zeros(len(rows), len(rows), dtype=torch.float64)
    transition[torch.arange(len(rows)), bootstrap_row] = 1.0
    q_exact = torch.linalg.solve(
        torch.eye(len(rows), dtype=torch.float64) - discount * transition, reward[next_cell]
    )
    torch.testing.assert_close(q_td, q_exact, atol=2e-3, rtol=2e-3)
    # The data's uniform behaviour policy has another Q: the fixed point is pi's, not its.
    behaviour = torch.zeros(len(rows), len(rows), dtype=torch.float64)
    for i, c in enumerate(next_cell.tolist()):
        for a in range(3):
            behaviour[i, row_of[(c, a)]] = 1.0 / 3
    q_behaviour = torch.linalg.solve(
        torch.eye(len(rows), dtype=torch.float64) - discount * behaviour, reward[next_cell]
    )
    assert (q_exact - q_behaviour).abs().max() > 0.3


def test_learner_critic_loss_is_the_td_loss_of_its_targets_and_policy() -> None:
    """The learner's critic stage = the pure loss with logits over the batch's next states and
    the target from phi_target, psi_target and the policy's mode at the next states."""
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=1, **TINY, **TD)
    for i in range(3):  # the targets drift away from the critic
        learner.update(make_contrastive_batch(i))
    batch = make_contrastive_batch(7)
    batch.done[2] = 1.0
    loss, _ = learner._critic_loss_of(batch, {})
    critic = learner.critic
    with torch.no_grad():
        logits = critic.logits(batch.obs_t, batch.action_t, batch.obs_next)
        mode = learner.policy.deterministic(batch.obs_next)
        phi_next = learner.phi_target(batch.obs_next, mode)
        psi_next = learner.psi_target(batch.obs_next)
        target = phi_next @ psi_next.T / critic.temperature
    cfg = learner.config
    expected = naive_td_infonce(logits, target, batch.done.numpy(), cfg.discount, 1e-3)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    pairs = zip(learner.phi_target.parameters(), critic.phi_net.parameters(), strict=True)
    assert any(not torch.equal(a, b) for a, b in pairs)  # a polyak copy, not the critic's phi


def test_td_critic_loss_isolates_gradients_and_leaves_the_batch() -> None:
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, seed=2, **TINY, **TD)
    batch = make_contrastive_batch(3)
    before = clone_batch(batch)
    loss, _ = td_contrastive_critic_loss(
        learner.critic,
        learner.phi_target,
        learner.psi_target,
        learner.policy,
        batch,
        0.99,
        1e-3,
    )
    loss.backward()
    assert_batch_equal(batch, before)
    assert all(p.grad is not None for p in learner.critic.parameters())
    for module in (learner.policy, learner.phi_target, learner.psi_target):
        assert all(p.grad is None for p in module.parameters())


def test_q_weighs_the_next_states_by_their_arrival_rewards() -> None:
    """With TD InfoNCE the policy step's Q scores the batch's next states with r_t (the
    states its critic ranks), not the geometric futures with r_{t+k-1}."""
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=3, **TINY, **TD)
    batch = make_contrastive_batch(5)
    batch.reward_t.copy_(torch.linspace(-1, 1, batch.batch_size))
    carry, _ = learner._after_critic(batch, {})
    torch.testing.assert_close(carry["psi_future"], learner.psi_target(batch.obs_next))
    torch.testing.assert_close(carry["reward_future"], batch.reward_t)
    phi = learner.critic.phi(batch.obs_t, batch.action_t)
    q = q_direct_from_latents(phi, carry["psi_future"], batch.reward_t, 0.99, 1.0)
    q_fn = learner._q_fn([carry["psi_future"]], carry["reward_future"])
    torch.testing.assert_close(q_fn(batch.obs_t, batch.action_t[None])[0], q)


def test_warm_up_is_the_monte_carlo_learner_until_it_ends() -> None:
    """With ``td_warmup_steps`` W the first W updates are eq. 9-10's critic and Q over the
    future states: every shared module equals the InfoNCE learner's; update W + 1 bootstraps."""
    warmup = 4
    batches = [make_contrastive_batch(20 + i) for i in range(warmup + 1)]
    common = {"seed": 5, "policy_extraction": "ddpgbc", "self_normalized": True, **TINY}
    td = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **common, **TD, td_warmup_steps=warmup)
    mc = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **common)
    for batch in batches[:warmup]:
        td_metrics, _ = td.update(batch), mc.update(batch)
        assert "td_label_next" not in td_metrics
    for name, module in mc.state_modules().items():
        assert_modules_equal(module, td.state_modules()[name])
    assert "td_label_next" in td.update(batches[-1])
    mc.update(batches[-1])
    pairs = zip(td.critic.parameters(), mc.critic.parameters(), strict=True)
    assert any(not torch.equal(a, b) for a, b in pairs)


@pytest.mark.parametrize(("name", "overrides"), VARIANTS)
def test_save_load_act_and_resume_identical(name: str, overrides: dict, tmp_path) -> None:
    def build():
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **overrides)

    learner = check_save_load_act_resume(build, tmp_path)
    assert "phi_target" in learner.state_modules()


@pytest.mark.parametrize(("name", "overrides"), VARIANTS[:3] + VARIANTS[4:])
def test_vectorised_seeds_equal_each_seed_alone(name: str, overrides: dict) -> None:
    def build(seed):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)

    check_vectorised_equals_alone(build, updates=30)


def test_refusals() -> None:
    with pytest.raises(ValueError, match="critic_objective must be one of"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, critic_objective="td")
    with pytest.raises(ValueError, match="td_warmup_steps must be >= 0"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, td_warmup_steps=10)
    with pytest.raises(ValueError, match="td_warmup_steps must be >= 0"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, td_warmup_steps=-1, **TD)
    with pytest.raises(ValueError, match="flow_select' trains no policy"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, policy_extraction="flow_select", **TD)
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **TINY, **TD)
    with pytest.raises(ValueError, match="cannot pretrain reward-free"):
        learner.pretrain_update(make_contrastive_batch(0, rewards=False))
    with pytest.raises(ValueError, match="reward-labelled"):
        learner.update(make_contrastive_batch(0, rewards=False))
