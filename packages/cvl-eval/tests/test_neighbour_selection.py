"""Acting by Q among the nearest data states' actions: the lookup against a brute-force loop,
the choice against a critic whose answer is known, the observation rows of a real dataset on
disk, and a tiny real CVL learner acting through `evaluate_policy` in Meta-World."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_data import open_dataset
from cvl_eval.analysis.critic_diagnostics import q_function
from cvl_eval.analysis.neighbour_selection import NeighbourIndex, neighbour_policy
from cvl_eval.rollout.evaluate import evaluate_policy


def naive_distances(data_obs: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """(B, N) Euclidean distances after standardising with the data's mean and std (floored at
    1e-3), one observation at a time, in float64."""
    mean, std = data_obs.mean(0), np.maximum(data_obs.std(0, ddof=1), 1e-3)
    z_data = (data_obs - mean) / std
    return np.stack([np.sqrt((((o - mean) / std - z_data) ** 2).sum(1)) for o in obs])


@settings(max_examples=40)
@given(
    n=st.integers(3, 40),
    dim=st.integers(1, 5),
    batch=st.integers(1, 4),
    k=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_nearest_matches_the_brute_force_loop(n, dim, batch, k, seed):
    rng = np.random.default_rng(seed)
    data_obs = rng.normal(size=(n, dim)) * rng.uniform(0.1, 10, dim)
    obs = rng.normal(size=(batch, dim)).astype(np.float32)
    data_obs[:, 0] = obs[:, 0] = 5.0  # a constant dimension: scaled by the floor, not 1 / 0
    index = NeighbourIndex(data_obs.astype(np.float32), rng.uniform(-1, 1, (n, 2)))
    got = index.nearest(obs, k).numpy()
    distance = naive_distances(
        data_obs.astype(np.float32).astype(np.float64), obs.astype(np.float64)
    )
    # The same k nearest, nearest first (compared by distance: float32 may swap exact ties).
    got_distance = np.take_along_axis(distance, got, axis=1)
    np.testing.assert_allclose(got_distance, np.sort(distance, axis=1)[:, :k], rtol=1e-4, atol=1e-4)


def test_the_policy_takes_the_neighbours_action_of_highest_q():
    """Data on a line; at each query the 3 nearest states' actions are the candidates, and a Q
    that prefers actions near a target picks the one a loop over the candidates picks."""
    data_obs = np.arange(10, dtype=np.float32).reshape(10, 1)
    actions = np.linspace(-1, 1, 20, dtype=np.float32).reshape(10, 2)
    index = NeighbourIndex(data_obs, actions)
    target = np.array([0.3, -0.2], dtype=np.float32)

    def q(obs, action):
        assert obs.shape == (len(action), 1)
        return -np.abs(action - target).sum(1)

    obs = np.array([[2.2], [7.9], [-4.0]], dtype=np.float32)
    got = neighbour_policy(index, 3, q)(obs)
    for row, o in zip(got, obs[:, 0]):
        near = np.argsort(np.abs(data_obs[:, 0] - o), kind="stable")[:3]
        best = max(near, key=lambda j: (-np.abs(actions[j] - target).sum(), -list(near).index(j)))
        np.testing.assert_array_equal(row, actions[best])
    nearest = neighbour_policy(index, 1, None)(obs)
    np.testing.assert_array_equal(nearest, actions[[2, 8, 0]])


def test_the_policys_own_action_is_a_candidate_that_wins_ties():
    """With a base policy, its action joins the neighbours' actions: chosen where Q ranks it
    above them or level with the best of them, a neighbour's action where one is higher."""
    data_obs = np.arange(6, dtype=np.float32).reshape(6, 1)
    # Q reads only the first dimension; the second tells the own action from a data action.
    actions = np.array([[0.0, 0], [0.1, 0], [0.2, 0], [0.3, 0], [0.4, 0], [0.5, 0]], np.float32)
    index = NeighbourIndex(data_obs, actions)
    own = np.array([[0.25, 7], [0.9, 7], [0.3, 7]], dtype=np.float32)

    def q(obs, action):  # prefers a first dimension near 0.3 at every state
        return -np.abs(action[:, 0] - 0.3)

    obs = np.array([[0.1], [5.0], [3.0]], dtype=np.float32)
    got = neighbour_policy(index, 2, q, base=lambda o: own)(obs)
    # state 0.1: neighbours 0.0, 0.1; own 0.25 is closer to 0.3 -> own.
    # state 5.0: neighbours 0.5, 0.4; own 0.9 is worse -> 0.4.
    # state 3.0: neighbours 0.3, 0.2 (or 0.4); own 0.3 ties with 0.3 -> own (first).
    np.testing.assert_array_equal(got, np.stack([own[0], actions[4], own[2]]))
    without = neighbour_policy(index, 2, q)(obs)
    np.testing.assert_array_equal(without[:2], actions[[1, 4]])


def test_refusals():
    index = NeighbourIndex(np.zeros((4, 2), np.float32), np.zeros((4, 1), np.float32))
    with pytest.raises(ValueError, match="k must be in"):
        index.nearest(np.zeros((1, 2)), 5)
    with pytest.raises(ValueError, match="only k=1"):
        neighbour_policy(index, 2, None)
    with pytest.raises(ValueError, match="only when a critic"):
        neighbour_policy(index, 1, None, base=lambda o: o)
    with pytest.raises(ValueError, match="observations and"):
        NeighbourIndex(np.zeros((4, 2)), np.zeros((3, 1)))


@pytest.fixture(scope="module")
def reach_data(tmp_path_factory):
    """A real scripted reach dataset of 3 episodes x 12 steps on disk."""
    from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted

    path = tmp_path_factory.mktemp("data") / "reach-v3"
    generate_scripted(
        path,
        ScriptedConfig("reach", num_episodes=3, noise_sigma=0.3, max_steps=12),
        progress=False,
        durable=False,
    )
    return open_dataset(path)


def test_from_dataset_skips_each_episodes_final_observation(reach_data):
    ds = reach_data
    index = NeighbourIndex.from_dataset(ds)
    assert index.z.shape == (ds.num_steps, 39) and index.actions.shape == (ds.num_steps, 4)
    for e in range(ds.num_episodes):
        lo, hi = ds.episode_offsets[e], ds.episode_offsets[e + 1]
        step_obs = np.asarray(ds.observations[lo + e : hi + e])
        got = index.nearest(step_obs, 1).numpy()[:, 0]
        np.testing.assert_array_equal(got, np.arange(lo, hi))  # each step is its own nearest


def test_a_tiny_cvl_learner_acts_through_evaluate_policy(reach_data):
    learner = make_learner(
        "cvl_mc", (39,), 4, seed=0, hidden=(32, 32), latent_dim=8, num_action_samples=3
    )
    index = NeighbourIndex.from_dataset(reach_data)
    q = q_function(learner, reach_data, num_futures=16, seed=0)
    act = neighbour_policy(index, 4, q)
    result = evaluate_policy("reach", act, 2, seed=100, max_steps=8, num_envs=2)
    assert result.num_episodes == 2 and all(length == 8 for length in result.lengths)
    obs = np.asarray(reach_data.observations[:5])
    chosen = act(obs)
    candidates = index.candidates(obs, 4).numpy()
    scores = q(np.tile(obs, (4, 1)), candidates.reshape(-1, 4)).reshape(4, 5)
    np.testing.assert_array_equal(chosen, candidates[scores.argmax(0), np.arange(5)])
