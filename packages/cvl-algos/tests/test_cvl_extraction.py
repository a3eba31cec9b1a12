"""CVL's policy extractions beyond the paper's KL form: DDPG+BC, FQL's flow policy and selection
among behaviour-flow samples (`cvl_algos.cvl.extraction`): naive references, scale invariance,
gradient isolation, the learner's checkpoints, resumption and vectorised seeds."""

from __future__ import annotations

import dataclasses

import numpy as np
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
from test_cvl_losses import make_batch, make_nets, q_fns  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl.acting import select_flow_action_by_q
from cvl_algos.cvl.extraction import (
    ddpg_bc_policy_loss,
    flow_matching_loss,
    fql_policy_loss,
    q_weights,
)
from cvl_data import ContrastiveBatch
from cvl_models.flow import FlowPolicy, euler_integrate

SETTINGS = settings(max_examples=15, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
VARIANTS = [
    ("cvl", {"policy_extraction": "ddpgbc"}),
    ("cvl_mc", {"policy_extraction": "ddpgbc", "self_normalized": True}),
    ("cvl", {"policy_extraction": "flow", "flow_steps": 3}),
    ("cvl_mc", {"policy_extraction": "flow", "flow_steps": 3}),
    ("cvl", {"policy_extraction": "flow_select", "flow_steps": 3, "flow_select_samples": 4}),
    ("cvl_mc", {"policy_extraction": "flow_select", "flow_steps": 3, "flow_select_samples": 4}),
    ("cvl_mc", {"policy_extraction": "ddpgbc", "bc_fixed_std": 0.5}),
    ("cvl", {"policy_extraction": "ddpgbc", "bc_q_weight_beta": 2.0}),
    ("cvl_mc", {"policy_extraction": "ddpgbc", "bc_q_weight_beta": 2.0, "self_normalized": True}),
    (
        "cvl_mc",
        {"policy_extraction": "ddpgbc", "bc_q_weight_beta": 1.0, "bc_q_weight_baseline": "mode"},
    ),
    ("cvl", {"policy_extraction": "ddpgbc", "bc_q_cap": True}),
    ("cvl_mc", {"policy_extraction": "ddpgbc", "bc_q_cap": True, "bc_q_weight_beta": 1.0}),
]
TOP = {"policy_extraction": "ddpgbc", "bc_top_fraction": 0.2, "sampler_mode": "uniform"}
"""DDPG+BC cloning the top episodes only; its batches carry the sampler's flags."""


def linear_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """A hand-made Q: (N, B, A) -> (N, B), positive, depending on state and action."""
    return 3.0 + actions @ torch.tensor([0.7, -1.3]) + obs[:, 0].abs()


def flow_policy(seed: int = 0) -> FlowPolicy:
    torch.manual_seed(seed)
    return FlowPolicy((5,), 2, hidden=(16, 16))


# --------------------------------------------------------------------------------- DDPG+BC


def naive_ddpg_parts(policy, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One anchor at a time: Q at the policy's mode, Q at the data's action and the data
    action's log-likelihood, each (B,), under `linear_q`."""
    qs, q_data, log_probs = [], [], []
    for b in range(batch.batch_size):
        obs = batch.obs_t[b : b + 1]
        qs.append(linear_q(obs, policy.deterministic(obs)[None])[0, 0])
        q_data.append(linear_q(obs, batch.action_t[b : b + 1][None])[0, 0])
        log_probs.append(policy.log_prob(obs, batch.action_t[b : b + 1])[0])
    return torch.stack(qs), torch.stack(q_data), torch.stack(log_probs)


def test_ddpg_bc_matches_naive_reference() -> None:
    """Loop over the batch: -mean_b Q(s_b, tanh(mu_b)) / mean_b |Q| - alpha mean_b log pi(a_b|s_b)."""
    _, policy, _ = make_nets()
    batch = make_batch(6)
    alpha = 0.3
    loss, metrics = ddpg_bc_policy_loss(policy, linear_q, batch, alpha=alpha)
    q, _, log_probs = naive_ddpg_parts(policy, batch)
    expected = -q.mean() / q.abs().mean() - alpha * log_probs.mean()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metrics["q_abs_mean"], q.abs().mean())


@SETTINGS
@given(sigma=st.floats(0.1, 3.0), seed=st.integers(0, 2**16))
def test_ddpg_bc_fixed_std_matches_naive_reference(sigma: float, seed: int) -> None:
    """With ``fixed_std`` sigma the behaviour term is -log N(a; tanh(mu), sigma^2 I) without its
    constant, computed per sample from the density's formula; the learned log-std gets no
    gradient from it (its output units' weights stay at zero gradient)."""
    _, policy, _ = make_nets(seed % 7)
    batch = make_batch(5, seed=seed)
    alpha = 0.7
    loss, metrics = ddpg_bc_policy_loss(policy, linear_q, batch, alpha=alpha, fixed_std=sigma)
    qs, nlls = [], []
    for b in range(5):
        obs = batch.obs_t[b : b + 1]
        mode = policy.deterministic(obs)
        qs.append(linear_q(obs, mode[None])[0, 0])
        density = torch.distributions.Normal(mode[0], sigma).log_prob(batch.action_t[b]).sum()
        constant = ACTION_DIM * (np.log(sigma) + 0.5 * np.log(2 * np.pi))
        nlls.append(-(density + constant))
    q = torch.stack(qs)
    expected = -q.mean() / q.abs().mean() + alpha * torch.stack(nlls).mean()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metrics["policy_bc"], torch.stack(nlls).mean())
    policy.zero_grad()
    loss.backward()
    last = [m for m in policy.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert last.out_features == 2 * ACTION_DIM
    assert not last.weight.grad[ACTION_DIM:].any() and not last.bias.grad[ACTION_DIM:].any()
    assert last.weight.grad[:ACTION_DIM].abs().sum() > 0


@SETTINGS
@given(
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 2**16),
    fixed_std=st.sampled_from([None, 1.0]),
)
def test_ddpg_bc_is_invariant_to_q_scale(scale: float, seed: int, fixed_std) -> None:
    """InfoNCE leaves a positive factor of Q free (lemma 2): the loss and its gradients ignore it."""
    _, policy, _ = make_nets(seed % 7)
    batch = make_batch(5, seed=seed)
    grads = []
    for factor in (1.0, scale):
        policy.zero_grad()
        loss, _ = ddpg_bc_policy_loss(
            policy,
            lambda o, a, f=factor: f * linear_q(o, a),
            batch,
            alpha=0.5,
            fixed_std=fixed_std,
        )
        loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in policy.parameters()]))
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6)


@SETTINGS
@given(
    q=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=9),
    beta=st.floats(0.0, 5.0),
    scale=st.floats(1e-2, 1e2),
    offset=st.floats(-1e3, 1e3),
)
def test_q_weights_match_naive_reference(q: list, beta: float, scale: float, offset: float) -> None:
    """Per element: w_b = B exp(beta z_b) / sum_c exp(beta z_c), z the population-standardised
    Q; the weights average 1, are 1 each at beta 0, and ignore Q's positive factor and offset
    (InfoNCE leaves the first free, lemma 2; rewards fix neither)."""
    q_t = torch.tensor(q, dtype=torch.float64)
    mean = sum(q) / len(q)
    std = max((sum((x - mean) ** 2 for x in q) / len(q)) ** 0.5, 1e-6)
    exps = [np.exp(beta * (x - mean) / std) for x in q]
    expected = torch.tensor([len(q) * e / sum(exps) for e in exps], dtype=torch.float64)
    weights = q_weights(q_t, beta)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(weights.mean(), torch.tensor(1.0, dtype=torch.float64))
    if std > 1e-3:
        torch.testing.assert_close(q_weights(scale * q_t + offset, beta), weights)
    torch.testing.assert_close(q_weights(q_t, 0.0), torch.ones_like(q_t))


@pytest.mark.parametrize("baseline", ["none", "mode"])
def test_ddpg_bc_q_weighted_matches_naive_reference(baseline: str) -> None:
    """With ``q_weight_beta`` the behaviour term is -mean_b w_b log pi(a_b|s_b), w from Q at the
    data's own actions (`q_weights`), minus Q at the policy's mode with the "mode" baseline; the
    Q term is unchanged."""
    _, policy, _ = make_nets(3)
    batch = make_batch(6, seed=5)
    alpha, beta = 0.3, 2.0
    loss, metrics = ddpg_bc_policy_loss(
        policy, linear_q, batch, alpha=alpha, q_weight_beta=beta, q_weight_baseline=baseline
    )
    q, q_data, log_probs = naive_ddpg_parts(policy, batch)
    weights = q_weights(q_data - q if baseline == "mode" else q_data, beta)
    bc = -(weights * log_probs).mean()
    torch.testing.assert_close(loss, -q.mean() / q.abs().mean() + alpha * bc)
    torch.testing.assert_close(metrics["policy_bc"], bc)
    assert weights.max() > 1.2  # the data pairs are weighed unequally


@SETTINGS
@given(seed=st.integers(0, 2**16), beta=st.sampled_from([0.0, 1.0]))
def test_ddpg_bc_q_cap_matches_naive_reference(seed: int, beta: float) -> None:
    """With ``q_cap`` the Q term is -mean_b min(Q(s_b, mode_b), Q(s_b, a_b)) / mean_b |Q(s_b,
    mode_b)|, one anchor at a time; the behaviour term is the uncapped loss's."""
    _, policy, _ = make_nets(seed % 5)
    batch = make_batch(6, seed=seed)
    alpha = 0.3
    kwargs = {"alpha": alpha, "q_weight_beta": beta}
    loss, metrics = ddpg_bc_policy_loss(policy, linear_q, batch, q_cap=True, **kwargs)
    q, q_data, _ = naive_ddpg_parts(policy, batch)
    capped = torch.stack([min(q[b], q_data[b]) for b in range(6)])
    uncapped = ddpg_bc_policy_loss(policy, linear_q, batch, **kwargs)[1]
    expected = -capped.mean() / q.abs().mean() + alpha * uncapped["policy_bc"]
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metrics["policy_bc"], uncapped["policy_bc"])
    torch.testing.assert_close(metrics["policy_mode_above_data"], (q > q_data).float().mean())


def test_ddpg_bc_q_cap_stops_the_climb_above_the_data() -> None:
    """Where the mode's Q is above the data action's at every anchor, the capped Q term gives the
    policy no gradient (alpha 0): the loss is constant in the policy; below it, it climbs."""
    _, policy, _ = make_nets(3)
    batch = make_batch(6, seed=5)
    for offset, moves in ((-100.0, False), (100.0, True)):
        shifted = dataclasses.replace(batch, action_t=torch.full_like(batch.action_t, 0.0))

        def q_fn(obs: torch.Tensor, actions: torch.Tensor, offset=offset) -> torch.Tensor:
            is_data = (actions == 0.0).all(dim=-1)  # the data's (zero) actions get the offset
            return linear_q(obs, actions) + offset * is_data

        policy.zero_grad()
        loss, _ = ddpg_bc_policy_loss(policy, q_fn, shifted, alpha=0.0, q_cap=True)
        loss.backward()
        grads = [p.grad for p in policy.parameters() if p.grad is not None]
        assert any(g.abs().sum() > 0 for g in grads) == moves, offset


def test_ddpg_bc_mode_baseline_ignores_the_states_value() -> None:
    """Adding any function of the state alone to Q leaves the "mode" baseline's weights, hence
    its behaviour term, unchanged; the unbaselined weights change (they favour the state)."""
    _, policy, _ = make_nets(3)
    batch = make_batch(6, seed=5)

    def shifted_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return linear_q(obs, actions) + 5.0 * obs[:, 1].square() + 2.0 * obs[:, 2]

    bcs = {
        (name, baseline): ddpg_bc_policy_loss(
            policy, q_fn, batch, q_weight_beta=2.0, q_weight_baseline=baseline
        )[1]["policy_bc"]
        for name, q_fn in (("linear", linear_q), ("shifted", shifted_q))
        for baseline in ("none", "mode")
    }
    torch.testing.assert_close(bcs["linear", "mode"], bcs["shifted", "mode"])
    assert not torch.allclose(bcs["linear", "none"], bcs["shifted", "none"])


def with_top_flags(batch: ContrastiveBatch) -> ContrastiveBatch:
    """``batch`` with ``behaviour_weight`` flagging every third anchor, the first among them."""
    flags = (torch.arange(batch.batch_size) % 3 == 0).float().to(batch.obs_t.device)
    return dataclasses.replace(batch, behaviour_weight=flags)


@pytest.mark.parametrize("q_weight_beta", [0.0, 2.0])
@pytest.mark.parametrize("other_weight", [0.0, 0.25])
def test_ddpg_bc_top_episodes_weigh_the_flagged_anchors(
    q_weight_beta: float, other_weight: float
) -> None:
    """With the sampler's ``behaviour_weight`` flags the behaviour term weighs a flagged anchor 1
    and any other ``other_weight`` (times their Q weights, if any), while the Q term keeps every
    anchor alike; at ``other_weight`` 0 the term is the flagged sub-batch's alone."""
    _, policy, _ = make_nets(3)
    batch = with_top_flags(make_batch(7, seed=2))
    alpha = 0.3
    loss, metrics = ddpg_bc_policy_loss(
        policy,
        linear_q,
        batch,
        alpha=alpha,
        q_weight_beta=q_weight_beta,
        other_weight=other_weight,
    )
    q, q_data, log_probs = naive_ddpg_parts(policy, batch)
    kept = torch.tensor([1.0 if b in (0, 3, 6) else other_weight for b in range(7)])
    weights = q_weights(q_data, q_weight_beta) * kept
    bc = -(weights * log_probs).sum() / weights.sum()
    torch.testing.assert_close(loss, -q.mean() / q.abs().mean() + alpha * bc)
    torch.testing.assert_close(metrics["policy_bc"], bc)
    if other_weight == 0.0:  # the flagged sub-batch alone
        sub = -(weights[[0, 3, 6]] * log_probs[[0, 3, 6]]).sum()
        torch.testing.assert_close(bc, sub / weights[[0, 3, 6]].sum())
    everyone = ddpg_bc_policy_loss(policy, linear_q, make_batch(7, seed=2), alpha=alpha)[1]
    torch.testing.assert_close(metrics["policy_q_term"], everyone["policy_q_term"])
    assert not torch.allclose(metrics["policy_bc"], everyone["policy_bc"])


@pytest.mark.parametrize(
    "q_weight_beta, baseline, q_cap",
    [(0.0, "none", False), (2.0, "none", False), (2.0, "mode", False), (0.0, "none", True)],
)
@pytest.mark.parametrize("estimator", ["rff", "mc"])
def test_ddpg_bc_gradient_isolation_and_no_mutation(
    estimator: str, q_weight_beta: float, baseline: str, q_cap: bool
) -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    before = clone_batch(batch)
    loss, _ = ddpg_bc_policy_loss(
        policy,
        q_fns(critic, rff, batch)[estimator],
        batch,
        q_weight_beta=q_weight_beta,
        q_weight_baseline=baseline,
        q_cap=q_cap,
    )
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert all(p.grad is not None for p in policy.parameters())
    assert np.isfinite(loss.item())
    assert_batch_equal(batch, before)


# ------------------------------------------------------------------------------- flows (FQL)


def test_flow_matching_loss_matches_naive_reference() -> None:
    policy = flow_policy()
    batch = make_batch(6)
    torch.manual_seed(4)
    loss, _ = flow_matching_loss(policy.velocity, batch.obs_t, batch.action_t)
    torch.manual_seed(4)
    x_0 = torch.randn(6, 2)
    t = torch.rand(6, 1)
    total = 0.0
    for b in range(6):
        a = batch.action_t[b]
        x_t = (1 - t[b]) * x_0[b] + t[b] * a
        v = policy.velocity(batch.obs_t[b : b + 1], x_t[None], t[b][None])[0]
        total = total + ((v - (a - x_0[b])) ** 2).sum()
    torch.testing.assert_close(loss, total / (6 * 2))


def test_fql_loss_matches_its_parts_and_isolates_gradients() -> None:
    """L = L_flow + alpha * distill - Q / mean|Q|: the velocity field gets exactly L_flow's
    gradient, the one-step policy exactly the other two terms', the critic none."""
    critic, _, rff = make_nets()
    policy = flow_policy()
    batch = make_batch(6)
    before = clone_batch(batch)
    q_fn = q_fns(critic, rff, batch)["mc"]
    alpha, steps = 0.7, 4
    torch.manual_seed(9)
    loss, metrics = fql_policy_loss(
        policy, q_fn, batch.obs_t, batch.action_t, alpha=alpha, flow_steps=steps
    )
    loss.backward()
    fql_grads = {n: p.grad.clone() for n, p in policy.named_parameters()}
    assert all(p.grad is None for p in critic.parameters())
    assert_batch_equal(batch, before)

    policy.zero_grad()
    torch.manual_seed(9)
    flow_loss, _ = flow_matching_loss(policy.velocity, batch.obs_t, batch.action_t)
    noise = torch.randn(6, 2)
    target = euler_integrate(policy.velocity, batch.obs_t, noise, steps).detach()
    actions = policy.onestep(batch.obs_t, noise)
    distill = ((actions - target) ** 2).mean()
    q = q_fn(batch.obs_t, actions.clamp(-1, 1)[None])[0]
    reference = flow_loss + alpha * distill - q.mean() / q.detach().abs().mean()
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(metrics["policy_distill"], distill.detach())
    flow_loss.backward()
    for name, p in policy.velocity.named_parameters():
        torch.testing.assert_close(fql_grads[f"velocity.{name}"], p.grad)
    policy.zero_grad()
    (alpha * distill - q.mean() / q.detach().abs().mean()).backward()
    for name, p in policy.onestep.named_parameters():
        torch.testing.assert_close(fql_grads[f"onestep.{name}"], p.grad)


def bimodal_batch(seed: int, size: int = 64) -> ContrastiveBatch:
    """Every state's data action is (+0.7, 0) or (-0.7, 0) by a coin flip: two modes whose
    mean, (0, 0), is an action the data never takes."""
    batch = make_contrastive_batch(seed, size)
    gen = torch.Generator().manual_seed(seed)
    sign = torch.randint(0, 2, (size,), generator=gen).float() * 2 - 1
    action = torch.zeros(size, ACTION_DIM)
    action[:, 0] = 0.7 * sign
    return ContrastiveBatch(**{**batch.__dict__, "action_t": action})


def test_behaviour_flow_holds_both_modes_and_selection_picks_by_q() -> None:
    learner = make_learner(
        "cvl_mc", (OBS_DIM,), ACTION_DIM, lr=3e-3, policy_extraction="flow_select", **TINY
    )
    for i in range(400):
        learner.update(bimodal_batch(i))
    obs = make_contrastive_batch(10_000, 32).obs_t
    with torch.no_grad():
        samples = learner.policy.behaviour_samples(obs, 16, steps=10)[..., 0]
    near_plus = ((samples - 0.7).abs() < 0.25).float().mean().item()
    near_minus = ((samples + 0.7).abs() < 0.25).float().mean().item()
    assert near_plus > 0.3 and near_minus > 0.3, (near_plus, near_minus)
    assert ((samples.abs() < 0.3).float().mean().item()) < 0.1  # not the mean between them

    def prefers_minus(obs_t: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return -actions[..., 0]

    with torch.no_grad():
        chosen = select_flow_action_by_q(learner.policy, prefers_minus, obs, 16, 10)
    assert (chosen[:, 0] < -0.4).all()


# --------------------------------------------------------------------------- the learner


@pytest.mark.parametrize(("name", "overrides"), VARIANTS)
def test_save_load_act_and_resume_identical(name: str, overrides: dict, tmp_path) -> None:
    def build():
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=4, **TINY, **overrides)

    check_save_load_act_resume(build, tmp_path)


@pytest.mark.parametrize(("name", "overrides"), VARIANTS[::2] + VARIANTS[3:4])
def test_vectorised_seeds_equal_each_seed_alone(name: str, overrides: dict) -> None:
    def build(seed):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)

    check_vectorised_equals_alone(build, updates=40)


@pytest.mark.parametrize(("name", "other_weight"), [("cvl", 0.0), ("cvl_mc", 0.2)])
def test_top_episode_cloning_saves_loads_resumes_and_vectorises(
    name: str, other_weight: float, tmp_path
) -> None:
    """``bc_top_fraction``: the learner's checkpoints, resumption and vectorised seeds, on
    batches whose ``behaviour_weight`` flags some anchors."""

    def batch_fn(i: int) -> ContrastiveBatch:
        return with_top_flags(make_contrastive_batch(i))

    def build(seed: int = 4):
        return make_learner(
            name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **TOP, bc_other_weight=other_weight
        )

    check_save_load_act_resume(build, tmp_path, batch_fn=batch_fn)
    check_vectorised_equals_alone(build, updates=20, batch_fn=batch_fn)


def test_config_refuses_what_does_not_fit() -> None:
    with pytest.raises(ValueError, match="act_candidates"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, policy_extraction="flow", act_candidates=4)
    with pytest.raises(ValueError, match="bc_alpha"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, policy_extraction="ddpgbc", bc_alpha=-1.0)
    with pytest.raises(ValueError, match="policy_extraction"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, policy_extraction="diffusion")
    with pytest.raises(ValueError, match="bc_fixed_std must be None or > 0"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, policy_extraction="ddpgbc", bc_fixed_std=0.0)
    with pytest.raises(ValueError, match="bc_fixed_std .* with 'kl'"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, bc_fixed_std=1.0)
    with pytest.raises(ValueError, match="bc_q_weight_beta must be >= 0 with"):
        make_learner("cvl", (OBS_DIM,), ACTION_DIM, policy_extraction="ddpgbc", bc_q_weight_beta=-1)
    with pytest.raises(ValueError, match="bc_q_weight_beta .* with 'flow'"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, policy_extraction="flow", bc_q_weight_beta=1)
    with pytest.raises(ValueError, match="bc_q_weight_baseline must be 'none' or 'mode'"):
        make_learner(
            "cvl_mc", (OBS_DIM,), ACTION_DIM, policy_extraction="ddpgbc", bc_q_weight_baseline="v"
        )
    with pytest.raises(
        ValueError, match="bc_q_cap=True takes policy_extraction='ddpgbc', got 'kl'"
    ):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, bc_q_cap=True)
    for fraction, extraction, mode in [
        (0.0, "ddpgbc", "uniform"),
        (1.5, "ddpgbc", "uniform"),
        (0.2, "flow", "uniform"),
        (0.2, "ddpgbc", "episode"),
    ]:
        with pytest.raises(ValueError, match="bc_top_fraction must lie in"):
            make_learner(
                "cvl_mc",
                (OBS_DIM,),
                ACTION_DIM,
                policy_extraction=extraction,
                bc_top_fraction=fraction,
                sampler_mode=mode,
            )
    for other, fraction in [(-0.1, 0.2), (1.0, 0.2), (0.2, 1.0)]:
        with pytest.raises(ValueError, match="bc_other_weight must lie in"):
            make_learner(
                "cvl_mc",
                (OBS_DIM,),
                ACTION_DIM,
                policy_extraction="ddpgbc",
                sampler_mode="uniform",
                bc_top_fraction=fraction,
                bc_other_weight=other,
            )
    with pytest.raises(ValueError, match="'mode' with bc_q_weight_beta > 0"):
        make_learner(
            "cvl_mc",
            (OBS_DIM,),
            ACTION_DIM,
            policy_extraction="ddpgbc",
            bc_q_weight_baseline="mode",
        )
