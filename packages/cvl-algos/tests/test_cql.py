"""CQL(H): the regulariser, its wrapping of SAC's critic loss, the BC warm start, the learner."""

import math

import numpy as np
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    metrics_by_seed,  # pants: no-infer-dep
    tiny_learner,  # pants: no-infer-dep
    tiny_nets,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from cvl_algos import sac
from cvl_algos.cql import (
    CQLConfig,
    CQLLearner,
    bc_warmstart_actor_loss,
    cql_critic_loss,
    cql_lagrange_loss,
    cql_regularizer,
)


class ConstantQ(nn.Module):
    """Both heads return ``value`` everywhere (plus 0 * a parameter, so it has gradients)."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value
        self.w = nn.Parameter(torch.zeros(()))

    def forward(self, obs, action):
        q = torch.full(obs.shape[:1], self.value) + 0 * self.w
        return q, q


def test_defaults():
    cfg = CQLConfig()
    assert (cfg.lr, cfg.batch_size, cfg.discount, cfg.max_grad_norm) == (3e-4, 512, 0.99, 100.0)
    assert (cfg.cql_alpha, cfg.cql_num_samples, cfg.policy_eval_start) == (1.0, 10, 40_000)
    assert cfg.auto_alpha and cfg.hidden == (256, 256)


def test_regularizer_touches_only_critic_and_keeps_batch(batch):
    policy, critic, _ = tiny_nets()
    before = clone_batch(batch)
    reg, metrics = cql_regularizer(batch, critic, policy)
    reg.backward()
    assert_batch_equal(batch, before)
    assert all(p.grad is not None for p in critic.parameters())
    assert all(p.grad is None for p in policy.parameters())
    assert {"q_uniform", "q_pi_samples", "cql_gap"} <= set(metrics)


@settings(max_examples=10, deadline=None)
@given(value=st.floats(-50, 50), n=st.integers(1, 12), temperature=st.floats(0.1, 5.0))
def test_constant_q_without_importance_weights(value, n, temperature):
    """Q = c: each head gives T log(3N) + c - c, so the regulariser is 2 T log(3N)."""
    batch = make_transition_batch(0, batch_size=8)
    policy, _, _ = tiny_nets()
    reg, _ = cql_regularizer(batch, ConstantQ(value), policy, n, temperature, False)
    # float32: c/T up to 500 in the log-sum-exp, then c subtracted again
    expected = torch.tensor(2 * temperature * math.log(3 * n))
    torch.testing.assert_close(reg, expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=10, deadline=None)
@given(
    n=st.integers(1, 6),
    temperature=st.floats(0.2, 3.0),
    importance_sampling=st.booleans(),
    seed=st.integers(0, 100),
)
def test_regularizer_matches_naive_loops(n, temperature, importance_sampling, seed):
    """Vectorised CQL(H) against a per-state, per-sample loop with the same random draws."""
    batch = make_transition_batch(seed % 4, batch_size=6)
    policy, critic, _ = tiny_nets(seed % 2)
    torch.manual_seed(seed)
    reg, _ = cql_regularizer(batch, critic, policy, n, temperature, importance_sampling)
    torch.manual_seed(seed)
    with torch.no_grad():
        a_unif = torch.rand(n, 6, ACTION_DIM) * 2 - 1
        a_pi, logp_pi = policy.sample(batch.obs, n)
        a_next, logp_next = policy.sample(batch.obs_next, n)
        total = 0.0
        for head in (0, 1):
            lse = []
            for i in range(6):
                scores = []
                s = batch.obs[i : i + 1]
                for actions, log_mu in (
                    (a_unif, torch.full((n, 6), -ACTION_DIM * math.log(2))),
                    (a_pi, logp_pi),
                    (a_next, logp_next),
                ):
                    for j in range(n):
                        q = critic(s, actions[j, i : i + 1])[head][0]
                        scores.append(q - log_mu[j, i] if importance_sampling else q)
                lse.append(temperature * torch.logsumexp(torch.stack(scores) / temperature, 0))
            q_data = critic(batch.obs, batch.action)[head]
            total = total + torch.stack(lse).mean() - q_data.mean()
    torch.testing.assert_close(reg, total, rtol=1e-5, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(cql_alpha=st.floats(0.0, 5.0), seed=st.integers(0, 100))
def test_critic_loss_wraps_sac(cql_alpha, seed):
    """L_CQL = L_SAC + cql_alpha * R, drawing from the same RNG stream in the same order."""
    batch = make_transition_batch(seed % 3)
    policy, critic, target = tiny_nets()
    alpha = torch.tensor(0.2)
    torch.manual_seed(seed)
    loss, metrics = cql_critic_loss(batch, critic, target, policy, alpha, 0.99, True, cql_alpha)
    torch.manual_seed(seed)
    td, _ = sac.critic_loss(batch, critic, target, policy, alpha, 0.99, True)
    reg, _ = cql_regularizer(batch, critic, policy)
    torch.testing.assert_close(loss, td + cql_alpha * reg)
    torch.testing.assert_close(metrics["td_loss"], td.detach())


def test_warmstart_actor_loss(batch):
    policy, critic, _ = tiny_nets()
    before = clone_batch(batch)
    torch.manual_seed(0)
    loss, metrics = bc_warmstart_actor_loss(batch, policy, torch.tensor(0.5))
    loss.backward()
    assert_batch_equal(batch, before)
    assert all(p.grad is None for p in critic.parameters())
    torch.manual_seed(0)
    with torch.no_grad():
        _, logp = policy.sample(batch.obs)
        expected = (0.5 * logp - policy.log_prob(batch.obs, batch.action)).mean()
    torch.testing.assert_close(loss.detach(), expected)
    assert "nll" in metrics and "entropy" in metrics


def test_actor_switches_from_bc_to_sac_at_policy_eval_start(batch):
    learner = tiny_learner("cql", policy_eval_start=2)
    kinds = ["nll" in learner.update(batch) for _ in range(4)]
    assert kinds == [True, True, False, False]


def _gap(critic, batch, num=64):
    """mean Q(s, a_data) - mean Q(s, a ~ U[-1, 1]) with a fixed set of random actions."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        q_data = torch.minimum(*critic(batch.obs, batch.action)).mean()
        q_rand = []
        for _ in range(num):
            a = torch.rand(batch.action.shape, generator=gen) * 2 - 1
            q_rand.append(torch.minimum(*critic(batch.obs, a)).mean())
    return (q_data - torch.stack(q_rand).mean()).item()


def test_regularizer_widens_gap_between_data_and_random_actions():
    """Same data, seed and TD target: CQL pushes Q on random actions below Q on data actions,
    plain SAC critic training does not (measured gap ~2.7-4.5 vs ~0.05-0.12 over seeds)."""
    batch = make_transition_batch(1, batch_size=64)
    cql = tiny_learner("cql", lr=3e-3, policy_eval_start=0)
    plain = tiny_learner("sac", lr=3e-3, backup_entropy=False)
    for _ in range(100):
        cql.update(batch)
        plain.update(batch)
    gap_cql, gap_plain = _gap(cql.critic, batch), _gap(plain.critic, batch)
    assert gap_cql > gap_plain + 1.0, (gap_cql, gap_plain)
    assert gap_cql > 5 * abs(gap_plain), (gap_cql, gap_plain)


def test_update_lowers_critic_loss_on_fixed_batch(batch):
    learner = tiny_learner("cql", lr=3e-3, policy_eval_start=20)
    losses = [learner.update(batch)["critic_loss"] for _ in range(60)]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0


def test_same_seed_same_metrics(batch):
    runs = metrics_by_seed("cql", batch, (2, 2, 3), updates=2)
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_stop_and_resume_across_warm_start_switch(tmp_path):
    batches = [make_transition_batch(i) for i in range(6)]
    kwargs = dict(seed=4, policy_eval_start=4)
    straight = tiny_learner("cql", **kwargs)
    for b in batches:
        straight.update(b)
    first = tiny_learner("cql", **kwargs)
    for b in batches[:3]:
        first.update(b)
    first.save(tmp_path / "ck")
    resumed = CQLLearner.load(tmp_path / "ck")
    assert resumed.config.policy_eval_start == 4
    for b in batches[3:]:
        resumed.update(b)
    assert_learners_equal(straight, resumed)
    obs = batches[0].obs.numpy()
    np.testing.assert_array_equal(straight.act(obs), resumed.act(obs))


@settings(max_examples=20, deadline=None)
@given(
    log_alpha=st.floats(-3, 3),
    regularizer=st.floats(-50, 50),
    gap=st.floats(0, 20),
)
def test_lagrange_multiplier_rises_while_the_gap_is_exceeded(log_alpha, regularizer, gap):
    """d loss / d log alpha' = -alpha' (R/2 - tau): gradient descent raises alpha' iff R/2 > tau."""
    param = torch.tensor(log_alpha, requires_grad=True)
    loss, metrics = cql_lagrange_loss(param, torch.tensor(regularizer), gap)
    loss.backward()
    expected = -math.exp(log_alpha) * (0.5 * regularizer - gap)
    torch.testing.assert_close(param.grad, torch.tensor(expected), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(metrics["cql_alpha_prime"], torch.tensor(math.exp(log_alpha)))


def test_lagrange_learner_tunes_its_weight_and_resumes(tmp_path):
    batches = [make_transition_batch(i) for i in range(6)]
    kwargs = dict(seed=5, policy_eval_start=2, cql_lagrange=True, cql_target_action_gap=1e3)
    straight = tiny_learner("cql", **kwargs)
    weights = [straight.update(b)["cql_alpha_prime"] for b in batches]
    assert weights[-1] < weights[0]  # a generous gap is never exceeded: the weight shrinks
    first = tiny_learner("cql", **kwargs)
    for b in batches[:3]:
        first.update(b)
    first.save(tmp_path / "ck")
    resumed = CQLLearner.load(tmp_path / "ck")
    assert "log_alpha_prime" in resumed.state_modules()
    for b in batches[3:]:
        resumed.update(b)
    assert_learners_equal(straight, resumed)
    assert "log_alpha_prime" not in tiny_learner("cql").state_modules()
