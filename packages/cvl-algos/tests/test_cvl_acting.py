"""CVL's critic-guided acting (``act_candidates``; `cvl_algos.cvl.acting`, not in the paper)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import ACTION_DIM, OBS_DIM, TINY  # pants: no-infer-dep
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cvl_losses import make_batch, make_nets, q_fns  # pants: no-infer-dep

from cvl_algos import load_learner, make_learner
from cvl_algos.cvl.acting import FutureBank, best_by_q, candidate_actions, select_action_by_q
from cvl_models.flow import euler_integrate
from cvl_models.noise import observation_seed

SETTINGS = settings(max_examples=20, deadline=None)


@SETTINGS
@given(n=st.integers(1, 6), b=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_best_by_q_against_naive_loop(n: int, b: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    candidates = torch.rand(n, b, ACTION_DIM, generator=gen)
    q = torch.randint(0, 3, (n, b), generator=gen).float()  # ties on purpose
    expected = []
    for j in range(b):
        best = 0
        for i in range(n):
            if q[i, j] > q[best, j]:
                best = i
        expected.append(candidates[best, j])
    torch.testing.assert_close(best_by_q(candidates, q), torch.stack(expected))


def test_selection_maximises_q_over_the_mode_and_samples() -> None:
    """With a known Q (closeness to a target action) the chosen action is the candidate closest
    to the target, at least as good as the mode, and exactly the mode with no samples."""
    _, policy, _ = make_nets()
    obs = torch.randn(7, OBS_DIM, generator=torch.Generator().manual_seed(1))
    target = torch.full((ACTION_DIM,), 0.5)

    def q_fn(obs_t, actions):
        return -((actions - target) ** 2).sum(-1)

    torch.manual_seed(3)
    chosen = select_action_by_q(policy, q_fn, obs, num_samples=16)
    torch.manual_seed(3)
    candidates = candidate_actions(policy, obs, 16)
    assert candidates.shape == (17, 7, ACTION_DIM)
    torch.testing.assert_close(candidates[0], policy.deterministic(obs))
    distance = ((candidates - target) ** 2).sum(-1)
    torch.testing.assert_close(chosen, candidates[distance.argmin(0), torch.arange(7)])
    assert (q_fn(obs, chosen[None])[0] >= q_fn(obs, candidates[:1])[0]).all()
    mode_only = select_action_by_q(policy, q_fn, obs, num_samples=0)
    torch.testing.assert_close(mode_only, policy.deterministic(obs))


@pytest.mark.parametrize("estimator", ["rff", "mc"])
def test_selection_with_the_critics_q_does_not_touch_the_networks(estimator: str) -> None:
    critic, policy, rff = make_nets()
    batch = make_batch(6)
    before = {k: v.clone() for k, v in {**critic.state_dict(), **policy.state_dict()}.items()}
    chosen = select_action_by_q(policy, q_fns(critic, rff, batch)[estimator], batch.obs_t, 8)
    assert chosen.shape == (6, ACTION_DIM) and not chosen.requires_grad
    assert chosen.abs().max() <= 1.0
    after = {**critic.state_dict(), **policy.state_dict()}
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_future_bank_keeps_the_latest_batch() -> None:
    bank = FutureBank(capacity=4, latent_dim=3)
    assert bank.valid()[0].shape == (0, 3)
    psi, reward = torch.randn(6, 3), torch.randn(6)
    bank.store(psi, reward)
    torch.testing.assert_close(bank.valid()[0], psi[:4])
    torch.testing.assert_close(bank.valid()[1], reward[:4])
    bank.store(psi[:2] + 1, reward[:2] + 1)
    torch.testing.assert_close(bank.valid()[0], psi[:2] + 1)


@pytest.mark.parametrize("name", ["cvl", "cvl_mc"])
def test_learner_acts_by_q_and_a_loaded_copy_acts_identically(name: str, tmp_path) -> None:
    learner = make_learner(
        name, (OBS_DIM,), ACTION_DIM, act_candidates=8, batch_size=6, lr=3e-3, **TINY
    )
    obs = np.random.default_rng(0).standard_normal((5, OBS_DIM)).astype(np.float32)
    mode = learner.policy.deterministic(torch.as_tensor(obs)).detach().numpy()
    if name == "cvl_mc":  # no future states before the first labelled update: the mode
        np.testing.assert_allclose(learner.act(obs), mode)
    for seed in range(3):
        learner.update(make_batch(6, seed=seed))
    acted = learner.act(obs)
    assert acted.shape == (5, ACTION_DIM) and np.abs(acted).max() <= 1.0
    q_fn = learner.acting_q_fn()
    with torch.no_grad():
        q = q_fn(torch.as_tensor(obs), torch.as_tensor(np.stack([acted, mode])))
    assert (q[0] >= q[1]).all() and not np.array_equal(acted, mode)
    learner.save(tmp_path / "ckpt")
    loaded = load_learner(tmp_path / "ckpt")
    np.testing.assert_array_equal(loaded.act(obs), learner.act(obs))
    np.testing.assert_array_equal(loaded.act(obs), acted)  # deterministic: same obs, same act
    state = learner._cpu_gen.get_state()
    learner.act(obs)
    assert torch.equal(learner._cpu_gen.get_state(), state)  # training RNG untouched


@pytest.mark.parametrize(
    "overrides, before, after",
    [
        ({"policy_extraction": "ddpgbc"}, False, False),  # no bank: the learner acts by its mode
        ({"policy_extraction": "flow_select"}, False, True),  # a bank, empty before an update
        ({"act_candidates": 4}, False, True),
    ],
)
def test_acting_q_fn_exists_only_where_the_direct_estimator_keeps_futures(
    overrides: dict, before: bool, after: bool
) -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, batch_size=6, **overrides, **TINY)
    assert (learner.acting_q_fn() is not None) == before
    learner.update(make_batch(6))
    q_fn = learner.acting_q_fn()
    assert (q_fn is not None) == after
    if q_fn is not None:
        psi, reward = learner.future_bank.valid()
        obs, actions = torch.randn(5, OBS_DIM), torch.rand(3, 5, ACTION_DIM) * 2 - 1
        expected = learner._q_fn([psi], reward)(obs, actions)  # eq. 11 over the stored batch
        with torch.no_grad():
            torch.testing.assert_close(q_fn(obs, actions), expected)


def test_acting_q_fn_of_the_random_feature_estimator_needs_no_bank() -> None:
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, batch_size=6, **TINY)
    assert learner.future_bank is None and learner.acting_q_fn() is not None


@pytest.mark.parametrize(
    ("noise", "scale"), [("held", 1.0), ("fresh", 1.0), ("fresh", 0.5), ("held", 0.0)]
)
def test_flow_select_acts_as_a_naive_reference_with_held_or_fresh_noises(
    noise: str, scale: float, tmp_path
) -> None:
    """The best of K behaviour-flow samples by Q, the K noises drawn from the learner's seed
    ("held": the same at every state) or from the observations' ("fresh"), times the scale."""
    k = 5
    learner = make_learner(
        "cvl_mc",
        (OBS_DIM,),
        ACTION_DIM,
        batch_size=6,
        policy_extraction="flow_select",
        flow_select_samples=k,
        flow_select_noise=noise,
        flow_select_noise_scale=scale,
        **TINY,
    )
    for seed in range(2):
        learner.update(make_batch(6, seed=seed))
    rng = np.random.default_rng(1)
    obs_a, obs_b = (rng.standard_normal((4, OBS_DIM)).astype(np.float32) for _ in range(2))
    q_fn = learner.acting_q_fn()

    def reference(obs: np.ndarray) -> np.ndarray:
        obs_t = torch.as_tensor(obs)
        seed = observation_seed(obs_t, learner.seed) if noise == "fresh" else learner.seed
        noises = torch.randn(k, 4, ACTION_DIM, generator=torch.Generator().manual_seed(seed))
        noises = noises * scale
        with torch.no_grad():
            candidates = euler_integrate(
                learner.policy.velocity, obs_t, noises, learner.config.flow_steps
            )
            return best_by_q(candidates, q_fn(obs_t, candidates)).numpy(), noises

    state = learner._cpu_gen.get_state()
    for obs in (obs_a, obs_b):
        np.testing.assert_allclose(learner.act(obs), reference(obs)[0], rtol=1e-6, atol=1e-6)
    assert torch.equal(learner._cpu_gen.get_state(), state)  # training RNG untouched
    same_noises = torch.equal(reference(obs_a)[1], reference(obs_b)[1])
    assert same_noises == (noise == "held" or scale == 0.0)
    if scale == 0.0:  # every candidate is the flow's deterministic action
        with torch.no_grad():
            zero = torch.zeros(4, ACTION_DIM)
            deterministic = euler_integrate(
                learner.policy.velocity, torch.as_tensor(obs_a), zero, learner.config.flow_steps
            )
        np.testing.assert_allclose(learner.act(obs_a), deterministic.numpy(), atol=1e-6)
    learner.save(tmp_path / "ckpt")
    np.testing.assert_array_equal(load_learner(tmp_path / "ckpt").act(obs_a), learner.act(obs_a))


def test_fresh_flow_noise_needs_flow_select() -> None:
    with pytest.raises(ValueError, match="flow_select_noise"):
        make_learner(
            "cvl_mc", (OBS_DIM,), ACTION_DIM, policy_extraction="flow", flow_select_noise="fresh"
        )


@pytest.mark.parametrize(
    "settings",
    [
        {"policy_extraction": "flow", "flow_select_noise_scale": 0.5},
        {"policy_extraction": "flow_select", "flow_select_noise_scale": -0.1},
        {"policy_extraction": "flow_select", "flow_select_noise_scale": float("nan")},
    ],
)
def test_flow_noise_scale_is_checked(settings: dict) -> None:
    with pytest.raises(ValueError, match="flow_select_noise_scale"):
        make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **settings)
