"""DDPG+BC's cap at the best Q the data reached near each anchor (`bc_q_cap_neighbours`,
`cvl_algos.cvl.extraction.neighbourhood_cap`): a naive reference, its identities with the plain
cap, gradient isolation, the learner's checkpoints, resumption, vectorised seeds and its
refusals; the sampler's side is `cvl-data`'s ``test_neighbours.py``."""

from __future__ import annotations

import dataclasses

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
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss, neighbourhood_cap
from cvl_data import ContrastiveBatch

SETTINGS = settings(max_examples=15, deadline=None)
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
CAP = {"policy_extraction": "ddpgbc", "bc_q_cap": True, "bc_q_cap_neighbours": 3}


def state_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """A hand-made Q, (N, B, A) -> (N, B): positive, depending on state and action."""
    return 3.0 + actions @ torch.tensor([0.7, -1.3]) + obs[:, 0].abs() + 0.5 * obs[:, 1]


def with_neighbours(batch: ContrastiveBatch, k: int, seed: int = 0) -> ContrastiveBatch:
    """``batch`` with k random neighbour states and actions per anchor."""
    gen = torch.Generator().manual_seed(seed)
    size = batch.batch_size
    return dataclasses.replace(
        batch,
        neighbour_obs_t=torch.randn(size, k, OBS_DIM, generator=gen).to(batch.obs_t.device),
        neighbour_action_t=(torch.rand(size, k, ACTION_DIM, generator=gen) * 2 - 1).to(
            batch.obs_t.device
        ),
    )


@SETTINGS
@given(seed=st.integers(0, 2**16), k=st.integers(1, 4), alpha=st.sampled_from([0.0, 0.3]))
def test_neighbourhood_cap_matches_naive_reference(seed: int, k: int, alpha: float) -> None:
    """One anchor at a time: cap_b = max(Q(s_b, a_b), max_j Q(s'_bj, a'_bj)); the loss is
    -mean_b min(Q(s_b, mode_b), cap_b) / mean_b |Q(s_b, mode_b)| + alpha * the behaviour term."""
    _, policy, _ = make_nets(seed % 5)
    batch = with_neighbours(make_batch(6, seed=seed), k, seed)
    loss, metrics = ddpg_bc_policy_loss(policy, state_q, batch, alpha=alpha, q_cap=True)
    q, caps, q_data = [], [], []
    for b in range(6):
        obs = batch.obs_t[b : b + 1]
        q.append(state_q(obs, policy.deterministic(obs)[None])[0, 0])
        own = state_q(obs, batch.action_t[b : b + 1][None])[0, 0]
        near = [
            state_q(batch.neighbour_obs_t[b, j : j + 1], batch.neighbour_action_t[b, j][None, None])
            for j in range(k)
        ]
        q_data.append(own)
        caps.append(max([own, *[float(v) for v in near]]))
    q, q_data = torch.stack(q), torch.stack(q_data)
    caps = torch.tensor(caps)
    capped = torch.minimum(q, caps)
    expected = -capped.mean() / q.abs().mean() + alpha * metrics["policy_bc"]
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(
        metrics["policy_cap_over_data"], (caps - q_data).mean() / q.abs().mean()
    )


def test_neighbourhood_cap_is_the_plain_cap_when_no_neighbour_beats_the_data() -> None:
    """Neighbours the critic values below every anchor's own data action leave the cap, and so
    the loss, exactly the plain ``bc_q_cap``'s; neighbours valued above it raise the cap to theirs.
    """
    _, policy, _ = make_nets(2)
    batch = make_batch(6, seed=3)
    plain, _ = ddpg_bc_policy_loss(policy, state_q, batch, alpha=0.3, q_cap=True)
    low = dataclasses.replace(
        with_neighbours(batch, 2), neighbour_obs_t=torch.full((6, 2, OBS_DIM), 0.0)
    )

    def q_fn(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        is_neighbour = (obs == 0.0).all(dim=-1)
        return state_q(obs, actions) - 100.0 * is_neighbour

    lowered, _ = ddpg_bc_policy_loss(policy, q_fn, low, alpha=0.3, q_cap=True)
    torch.testing.assert_close(lowered, plain)
    q_data = state_q(batch.obs_t, batch.action_t[None])[0]

    def raised_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return state_q(obs, actions) + 100.0 * (obs == 0.0).all(dim=-1)

    near = torch.stack(
        [
            raised_q(low.neighbour_obs_t[:, j], low.neighbour_action_t[None, :, j])[0]
            for j in range(2)
        ]
    )
    torch.testing.assert_close(neighbourhood_cap(raised_q, q_data, low), near.amax(dim=0))


def test_neighbourhood_cap_moves_only_the_policy() -> None:
    """The cap is detached: the loss's gradients reach the policy only, never the critic, and
    the batch is left as it was."""
    critic, policy, _ = make_nets(1)
    from cvl_algos.cvl.q import direct_q_fn

    batch = with_neighbours(make_batch(8, seed=1), 3)
    before = {
        f: getattr(batch, f).clone() for f in ("obs_t", "neighbour_obs_t", "neighbour_action_t")
    }
    psi = critic.psi(batch.obs_future)
    q_fn = direct_q_fn(critic, psi, batch.reward_future, 0.99, self_normalized=True)
    loss, _ = ddpg_bc_policy_loss(policy, q_fn, batch, alpha=0.3, q_cap=True)
    loss.backward()
    assert all(p.grad is None for p in critic.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())
    for field, value in before.items():
        assert torch.equal(getattr(batch, field), value), field


def neighbour_batch(i: int) -> ContrastiveBatch:
    return with_neighbours(make_contrastive_batch(i), 3, seed=i)


@pytest.mark.parametrize("name", ["cvl", "cvl_mc"])
def test_neighbourhood_cap_saves_loads_resumes_and_vectorises(name: str, tmp_path) -> None:
    def build(seed: int = 4):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **CAP)

    check_save_load_act_resume(build, tmp_path, batch_fn=neighbour_batch)
    check_vectorised_equals_alone(build, updates=20, batch_fn=neighbour_batch)


def test_learner_asks_its_sampler_for_the_neighbours() -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **TINY, **CAP)
    assert learner.sampler_options["cap_neighbours"] == 3
    plain = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **TINY, policy_extraction="ddpgbc")
    assert "cap_neighbours" not in plain.sampler_options


def test_config_refuses_neighbours_without_the_cap() -> None:
    build = lambda **kw: make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **kw)  # noqa: E731
    with pytest.raises(ValueError, match="bc_q_cap_neighbours must be an int >= 0, got -1"):
        build(policy_extraction="ddpgbc", bc_q_cap=True, bc_q_cap_neighbours=-1)
    with pytest.raises(ValueError, match="bc_q_cap_neighbours=4 needs bc_q_cap=True"):
        build(policy_extraction="ddpgbc", bc_q_cap_neighbours=4)
    with pytest.raises(ValueError, match="action_chunk=1"):
        build(policy_extraction="ddpgbc", bc_q_cap=True, bc_q_cap_neighbours=4, action_chunk=2)
