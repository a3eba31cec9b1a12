"""Several contrastive critics whose minimum the policy maximises (``num_critics``): the minimum
against a naive reference, the learner's policy loss against DDPG+BC on that minimum, each critic
trained by its own loss, gradient isolation, one critic's learner unchanged, checkpoints,
resumption, vectorised seeds and the config's refusals; with ``action_contrast_critics="first"``
the action-contrast term in critic 0's loss only."""

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
from test_cvl_losses import make_batch, make_nets  # pants: no-infer-dep

from cvl_algos import make_learner
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss
from cvl_algos.cvl.losses import contrastive_critic_loss
from cvl_algos.cvl.q import direct_q_fn, ensemble_q_fn, q_direct_from_latents

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
TWIN = {
    "num_critics": 2,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
    "bc_alpha": 0.3,
}
MIXED = {
    **TWIN,
    "action_contrast_weight": 1.0,
    "action_contrast_negatives": 3,
    "action_contrast_critics": "first",
}


def _learner(seed: int = 0, **overrides):
    return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    count=st.integers(1, 4),
    samples=st.integers(1, 3),
    reduction=st.sampled_from(["min", "mean"]),
)
def test_ensemble_q_fn_matches_naive_reference(
    seed: int, count: int, samples: int, reduction: str
) -> None:
    """Each entry is the smallest (or the average) of the critics' Q at that (sample, state);
    one critic's function is returned unchanged."""
    batch = make_batch(5, seed=seed)
    fns = []
    for k in range(count):
        critic = make_nets(seed + k)[0]
        with torch.no_grad():
            psi = critic.psi(batch.obs_future)
        fns.append(direct_q_fn(critic, psi, batch.reward_future, 0.99, True))
    actions = torch.rand(samples, 5, ACTION_DIM, generator=torch.Generator().manual_seed(seed))
    got = ensemble_q_fn(fns, reduction)(batch.obs_t, actions)
    each = [fn(batch.obs_t, actions) for fn in fns]
    for n in range(samples):
        for b in range(5):
            values = [float(q[n, b]) for q in each]
            naive = min(values) if reduction == "min" else sum(values) / len(values)
            assert abs(float(got[n, b]) - naive) <= 1e-5 * max(1.0, abs(naive))
    assert ensemble_q_fn(fns[:1], reduction) is fns[0]
    with pytest.raises(ValueError, match="reduction"):
        ensemble_q_fn(fns, "max")


def test_one_critic_draws_what_it_always_drew() -> None:
    """The other critics are drawn after the policy: a two-critic learner's first critic and
    policy start where a one-critic learner's do, and its second critic elsewhere."""
    one, two = _learner(3, **{**TWIN, "num_critics": 1}), _learner(3, **TWIN)
    for name in ("critic", "policy"):
        for a, b in zip(
            one.state_modules()[name].parameters(),
            two.state_modules()[name].parameters(),
            strict=True,
        ):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    first, second = (two.state_modules()[n] for n in ("critic", "critic_1"))
    assert any(
        not torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters(), strict=True)
    )
    assert set(two.state_optimizers()) == {"critic", "critic_1", "policy"}


def test_each_critic_trains_and_logs() -> None:
    learner = _learner(0, **TWIN)
    before = [
        [p.detach().clone() for p in learner.state_modules()[n].parameters()]
        for n in ("critic", "critic_1", "psi_target_1")
    ]
    metrics = learner.update(make_contrastive_batch(0))
    for key in ("critic_loss", "critic_loss_1", "critic_grad_norm", "critic_1_grad_norm"):
        assert torch.isfinite(torch.as_tensor(metrics[key])), key
    assert float(metrics["critic_loss"]) != float(metrics["critic_loss_1"])
    for name, old in zip(("critic", "critic_1", "psi_target_1"), before, strict=True):
        new = list(learner.state_modules()[name].parameters())
        assert any(not torch.equal(a, b) for a, b in zip(old, new, strict=True)), name


@pytest.mark.parametrize("reduction", ["min", "mean"])
def test_policy_loss_is_ddpg_bc_on_the_minimum(reduction: str) -> None:
    """The learner's policy loss equals DDPG+BC's on the naive minimum (or mean,
    ``critic_reduction``) of the two critics' eq. 11 estimates, each over its own psi_target's
    latents; Q read-outs are that minimum (or mean)."""
    learner = _learner(1, **TWIN, critic_reduction=reduction)
    combine = torch.minimum if reduction == "min" else lambda a, b: (a + b) / 2
    for i in range(3):
        learner.update(make_contrastive_batch(i))
    batch = make_contrastive_batch(7)
    carry, _ = learner._after_critic(batch, {})
    loss, _ = learner._policy_loss_of(batch, carry)
    critics = [learner.state_modules()[n] for n in ("critic", "critic_1")]
    targets = [learner.state_modules()[n] for n in ("psi_target", "psi_target_1")]
    fns = [
        direct_q_fn(c, t(batch.obs_future), batch.reward_future, 0.99, True)
        for c, t in zip(critics, targets, strict=True)
    ]

    def naive_min(obs, actions):
        return combine(fns[0](obs, actions), fns[1](obs, actions))

    expected, _ = ddpg_bc_policy_loss(learner.policy, naive_min, batch, alpha=0.3)
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)
    with torch.no_grad():
        each = [
            q_direct_from_latents(
                c.phi(batch.obs_t, batch.action_t),
                t(batch.obs_future),
                batch.reward_future,
                0.99,
                0.1,
                True,
            )  # fmt: skip
            for c, t in zip(critics, targets, strict=True)
        ]
    got = learner.q_values(batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future)
    torch.testing.assert_close(got, combine(*each))


def test_policy_step_leaves_every_critic_alone() -> None:
    learner = _learner(2, **TWIN)
    batch = make_contrastive_batch(1)
    carry, _ = learner._after_critic(batch, {})
    loss, _ = learner._policy_loss_of(batch, carry)
    loss.backward()
    for name in ("critic", "critic_1"):
        assert all(p.grad is None for p in learner.state_modules()[name].parameters()), name
    assert all(p.grad is not None for p in learner.policy.parameters())


@pytest.mark.parametrize("which", ["all", "first"])
def test_action_contrast_term_in_the_chosen_critics_losses(which: str) -> None:
    """Each critic's loss on a batch equals `contrastive_critic_loss` of that critic with the
    term's weight (1) for critic 0, and for critic 1 only with "all" (0 with "first")."""
    learner = _learner(5, **{**MIXED, "action_contrast_critics": which})
    for i in range(2):
        learner.update(make_contrastive_batch(i))
    batch = make_contrastive_batch(9)
    for index, name in enumerate(("critic", "critic_1")):
        got, metrics = learner._critic_loss_of(batch, {}, index=index)
        weight = 1.0 if which == "all" or index == 0 else 0.0
        expected, _ = contrastive_critic_loss(
            learner.state_modules()[name],
            batch,
            learner.config.lambda_partition,
            "infonce",
            weight,
            3,
        )
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        suffix = f"_{index}" if index else ""
        assert (f"action_contrast_loss{suffix}" in metrics) == (weight > 0.0), (which, index)


MEAN = {**TWIN, "num_critics": 3, "critic_reduction": "mean"}


@pytest.mark.parametrize("config", [TWIN, MIXED, MEAN], ids=["twin", "term_in_first", "mean"])
def test_save_load_act_and_resume_identical(tmp_path, config: dict) -> None:
    check_save_load_act_resume(lambda: _learner(4, **config), tmp_path)


@pytest.mark.parametrize("config", [TWIN, MIXED, MEAN], ids=["twin", "term_in_first", "mean"])
def test_vectorised_seeds_equal_each_seed_alone(config: dict) -> None:
    check_vectorised_equals_alone(lambda seed: _learner(seed, **config), updates=30)


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("cvl_mc", {"num_critics": 0}),
        ("cvl_mc", {"num_critics": True}),
        ("cvl", {"num_critics": 2}),
        ("cvl_mc", {"num_critics": 2, "critic_objective": "td_infonce"}),
        ("cvl_mc", {**TWIN, "action_contrast_weight": 1.0, "bc_density_weight": 0.1}),
        ("cvl_mc", {"num_critics": 2, "act_candidates": 4}),
    ],
)
def test_config_refusals(name: str, overrides: dict) -> None:
    with pytest.raises(ValueError, match="num_critics"):
        make_learner(name, (OBS_DIM,), ACTION_DIM, **overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        {**MIXED, "action_contrast_critics": "last"},
        {**MIXED, "num_critics": 1},
        {**MIXED, "action_contrast_weight": 0.0},
        {**MIXED, "action_contrast_bias": True},
    ],
)
def test_action_contrast_critics_refusals(overrides: dict) -> None:
    with pytest.raises(ValueError, match="action_contrast_critics"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **overrides)


def test_critic_reduction_refusals() -> None:
    for overrides in ({**TWIN, "critic_reduction": "max"}, {"critic_reduction": "mean"}):
        with pytest.raises(ValueError, match="critic_reduction"):
            make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **overrides)
