"""The policy step's Q gated by the data's action (``q_support_gate``, `gated_q_from_latents`):
the estimator against a naive float64 reference, its identities with the self-normalised Q and
the log partition, its bounds, the q_fn's gradient isolation, the learner's policy step,
checkpoints, resumption, vectorised seeds and the config's refusals."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)
from einops import rearrange
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch, make_nets  # pants: no-infer-dep
from test_cvl_neighbourhood_cap import with_neighbours  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss
from cvl_algos.cvl.q import (
    direct_q_fn,
    ensemble_q_fn,
    gated_data_q_fn,
    gated_q_from_latents,
    log_density_ratio_from_latents,
    q_direct_from_latents,
)
from cvl_models import kernel_logits

SETTINGS = settings(max_examples=15, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
GATED = {
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 4,
    "action_contrast_source": "policy_uniform",
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
    "bc_alpha": 0.3,
    "q_support_gate": True,
}


def _latents(seed: int, batch: int, futures: int, dim: int):
    gen = torch.Generator().manual_seed(seed)
    phi = torch.nn.functional.normalize(torch.randn(batch, dim, generator=gen, dtype=torch.float64))
    phi_data = torch.nn.functional.normalize(
        torch.randn(batch, dim, generator=gen, dtype=torch.float64)
    )
    psi = torch.nn.functional.normalize(
        torch.randn(futures, dim, generator=gen, dtype=torch.float64)
    )
    reward = 10.0 * torch.rand(futures, generator=gen, dtype=torch.float64)
    return phi, phi_data, psi, reward


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    batch=st.integers(1, 4),
    futures=st.integers(1, 6),
    temperature=st.floats(0.05, 2.0),
    kernel=st.sampled_from(["dot", "lse"]),
)
def test_gated_q_matches_naive_reference(
    seed: int, batch: int, futures: int, temperature: float, kernel: str
) -> None:
    """Q_i = sum_j r_j e^{f_ij} / (sum_j e^{f_ij} + sum_j e^{g_ij}) / (1 - g), summed one future
    at a time in Python floats."""
    phi, phi_data, psi, reward = _latents(seed, batch, futures, 4)
    got = gated_q_from_latents(phi, phi_data, psi, reward, 0.9, temperature, kernel)
    f = kernel_logits(phi, psi, temperature, kernel)
    g = kernel_logits(phi_data, psi, temperature, kernel)
    for i in range(batch):
        numerator = sum(float(reward[j]) * math.exp(float(f[i, j])) for j in range(futures))
        denominator = sum(
            math.exp(float(f[i, j])) + math.exp(float(g[i, j])) for j in range(futures)
        )
        expected = numerator / denominator / (1.0 - 0.9)
        assert math.isclose(float(got[i]), expected, rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(seed=st.integers(0, 2**16), temperature=st.floats(0.05, 2.0))
def test_gate_is_a_sigmoid_of_the_log_partitions(seed: int, temperature: float) -> None:
    """Q_gated = Q_sn(s, a) sigmoid(D(s, a) - D(s, a_data)); at the data's own action, half of
    Q_sn; between 0 and Q_sn for non-negative rewards; repeating every future changes nothing."""
    phi, phi_data, psi, reward = _latents(seed, 5, 7, 3)
    gated = gated_q_from_latents(phi, phi_data, psi, reward, 0.99, temperature)
    q_sn = q_direct_from_latents(phi, psi, reward, 0.99, temperature, self_normalized=True)
    gap = log_density_ratio_from_latents(phi, psi, temperature) - log_density_ratio_from_latents(
        phi_data, psi, temperature
    )
    torch.testing.assert_close(gated, q_sn * torch.sigmoid(gap))
    torch.testing.assert_close(
        gated_q_from_latents(phi, phi, psi, reward, 0.99, temperature), q_sn / 2
    )
    assert bool(((gated >= 0) & (gated <= q_sn)).all())
    twice = gated_q_from_latents(
        phi, phi_data, torch.cat([psi, psi]), torch.cat([reward, reward]), 0.99, temperature
    )
    torch.testing.assert_close(twice, gated)


def test_q_fn_gates_each_sample_by_its_states_data_action() -> None:
    """direct_q_fn with gate_actions: each of the N samples at state b against the data's action
    at b; gradients reach the sampled actions only, never the critic or the data's actions."""
    critic, _, _ = make_nets()
    batch = make_batch(5, seed=2)
    with torch.no_grad():
        psi_future = critic.psi(batch.obs_future)
    data_actions = batch.action_t.clone().requires_grad_(True)
    q_fn = direct_q_fn(critic, psi_future, batch.reward_future, 0.99, True, 0.5, data_actions)
    actions = torch.rand(3, 5, batch.action_t.shape[1], requires_grad=True) * 2 - 1
    actions.retain_grad()
    q = q_fn(batch.obs_t, actions)
    with torch.no_grad():
        phi = critic.phi(batch.obs_t.repeat(3, 1), rearrange(actions, "n b a -> (n b) a"))
        phi_data = critic.phi(batch.obs_t, batch.action_t).repeat(3, 1)
        expected = gated_q_from_latents(
            phi, phi_data, psi_future, batch.reward_future, 0.99, critic.temperature, critic.kernel
        )
    torch.testing.assert_close(q, rearrange(expected, "(n b) -> n b", n=3))
    q.sum().backward()
    assert actions.grad is not None and bool(torch.isfinite(actions.grad).all())
    assert data_actions.grad is None
    assert all(p.grad is None for p in critic.parameters())


def test_gated_q_of_the_datas_own_pairs_is_half_the_ungated() -> None:
    """At the data's own actions the gate is sigmoid(0): the gated q_fn of the anchors equals
    `gated_data_q_fn` of the ungated one, for one critic and for the minimum over two."""
    critics = [make_nets(seed)[0] for seed in (0, 1)]
    batch = make_batch(6, seed=4)
    with torch.no_grad():
        psis = [critic.psi(batch.obs_future) for critic in critics]
    data = rearrange(batch.action_t, "b a -> 1 b a")
    for count in (1, 2):
        pairs = list(zip(critics[:count], psis[:count]))
        args = (batch.reward_future, 0.99, True, 0.5)
        gated = ensemble_q_fn([direct_q_fn(c, p, *args, batch.action_t) for c, p in pairs])
        plain = ensemble_q_fn([direct_q_fn(c, p, *args) for c, p in pairs])
        torch.testing.assert_close(
            gated(batch.obs_t, data), gated_data_q_fn(plain)(batch.obs_t, data)
        )
        torch.testing.assert_close(
            gated_data_q_fn(plain)(batch.obs_t, data), 0.5 * plain(batch.obs_t, data)
        )


def test_learners_policy_step_reads_the_gated_q() -> None:
    """Two learners that differ only in the gate train their critics alike and their policies
    apart: the gate changes the policy step's Q and nothing before it."""
    learners = [
        make_learner(
            "cvl_mc", (OBS_DIM,), ACTION_DIM, seed=1, **TINY, **{**GATED, "q_support_gate": g}
        )
        for g in (False, True)
    ]
    batch = make_contrastive_batch(0)
    reward = batch.reward_future.abs()  # non-negative, as Meta-World's
    batch = dataclasses.replace(batch, reward_t=reward, reward_future=reward)
    metrics = [learner.update(batch) for learner in learners]
    torch.testing.assert_close(
        torch.as_tensor(metrics[0]["critic_loss"]), torch.as_tensor(metrics[1]["critic_loss"])
    )
    # the same critic and the same policy's mode: the gate only lowers Q (sigmoid < 1)
    plain, gated = (float(m["q_abs_mean"]) for m in metrics)
    assert math.isfinite(gated) and 0.0 < gated < plain
    policies = [dict(learner.policy.named_parameters()) for learner in learners]
    assert any(not torch.equal(policies[0][k], policies[1][k]) for k in policies[0])


CAP = {"bc_q_cap": True, "bc_q_cap_neighbours": 3}


def neighbour_batch(i: int):
    return with_neighbours(make_contrastive_batch(i), 3, seed=i)


@pytest.mark.parametrize("cap", [False, True])
def test_save_load_act_and_resume_identical(cap: bool, tmp_path) -> None:
    """With and without DDPG+BC's neighbourhood cap (the presets' setting), whose neighbours'
    pairs take the gated Q of the data's own pairs."""

    def build():
        extra = CAP if cap else {}
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **GATED, **extra)

    batch_fn = neighbour_batch if cap else make_contrastive_batch
    check_save_load_act_resume(build, tmp_path, batch_fn=batch_fn)


@pytest.mark.parametrize("cap", [False, True])
def test_vectorised_seeds_equal_each_seed_alone(cap: bool) -> None:
    def build(seed):
        extra = CAP if cap else {}
        return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **GATED, **extra)

    batch_fn = neighbour_batch if cap else make_contrastive_batch
    check_vectorised_equals_alone(build, updates=20, batch_fn=batch_fn)


def test_ddpg_bc_cap_reads_data_q_fn() -> None:
    """With ``data_q_fn`` the cap (anchors' data pairs and neighbours' pairs) comes from it and the
    mode's Q from ``q_fn``: alpha 0 leaves -mean_b min(Q(s_b, mode_b), cap_b) / mean_b |Q(s_b,
    mode_b)|, cap_b = max(h(s_b, a_b), max_j h(s'_bj, a'_bj)), computed one anchor at a time."""
    _, policy, _ = make_nets(3)
    batch = with_neighbours(make_batch(5, seed=7), 2, seed=7)

    def q_fn(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return 3.0 + actions @ torch.tensor([0.7, -1.3]) + obs[:, 0].abs()

    def half(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return 0.5 * q_fn(obs, actions)

    loss, _ = ddpg_bc_policy_loss(policy, q_fn, batch, alpha=0.0, q_cap=True, data_q_fn=half)
    with torch.no_grad():
        mode = torch.tanh(policy(batch.obs_t)[0])
        q_mode = q_fn(batch.obs_t, mode[None])[0]
        caps = []
        for b in range(5):
            pairs = [half(batch.obs_t[b : b + 1], batch.action_t[b][None, None])[0, 0]]
            for j in range(2):
                obs_near = batch.neighbour_obs_t[b, j : j + 1]
                pairs.append(half(obs_near, batch.neighbour_action_t[b, j][None, None])[0, 0])
            caps.append(max(float(p) for p in pairs))
        expected = -torch.minimum(q_mode, torch.tensor(caps)).mean() / q_mode.abs().mean()
    torch.testing.assert_close(loss.detach(), expected)


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("cvl", GATED),
        ("cvl_mc", {**GATED, "self_normalized": False}),
        ("cvl_mc", {**GATED, "q_expectile": 0.7}),
        ("cvl_mc", {**GATED, "act_candidates": 4}),
        (
            "cvl_mc",
            {**GATED, "policy_extraction": "flow_select", "action_contrast_source": "uniform"},
        ),
    ],
)
def test_config_refusals(name: str, overrides: dict) -> None:
    with pytest.raises(ValueError, match="q_support_gate needs q_estimator='mc'"):
        make_learner(name, (OBS_DIM,), ACTION_DIM, **overrides)
