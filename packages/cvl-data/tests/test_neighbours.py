"""Nearest steps of other episodes (`cvl_data.neighbours`) against a per-step loop, and the
sampler's neighbour fields against the dataset's arrays."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_samplers import anchor_steps  # pants: no-infer-dep

from cvl_data import ContrastiveSampler
from cvl_data.neighbours import (
    MAX_NEIGHBOUR_STEPS,
    nearest_other_episode_steps,
    standardised,
)

SETTINGS = settings(max_examples=20, deadline=None, database=None)


def naive_neighbours(observations: np.ndarray, offsets: np.ndarray, k: int) -> np.ndarray:
    """Per step: standardise every dimension by hand, then sort all other episodes' steps by
    squared distance; ``(N, k)`` squared distances of the k nearest."""
    x = observations.astype(np.float64)
    std = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(std > 1e-6, std, 1.0)
    episode = np.searchsorted(offsets, np.arange(len(x)), side="right") - 1
    out = []
    for t in range(len(x)):
        others = [j for j in range(len(x)) if episode[j] != episode[t]]
        dists = sorted(float(np.sum((x[t] - x[j]) ** 2)) for j in others)
        out.append(dists[:k])
    return np.asarray(out)


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 12), min_size=2, max_size=6),
    dim=st.integers(1, 5),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_neighbours_match_a_per_step_loop(lengths, dim, k, seed) -> None:
    """The k steps returned lie in other episodes, in order of distance, at the k smallest
    distances a loop over all steps finds (distances compared: equally near steps may swap)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    k = min(k, int(offsets[-1] - max(lengths)))
    observations = np.random.default_rng(seed).normal(size=(offsets[-1], dim))
    observations[:, 0] *= 10.0  # unequal scales: standardising matters
    found = nearest_other_episode_steps(torch.as_tensor(observations), offsets, k).numpy()
    episode = np.searchsorted(offsets, np.arange(offsets[-1]), side="right") - 1
    assert (episode[found] != episode[:, None]).all()
    x = standardised(torch.as_tensor(observations)).double().numpy()
    found_dists = ((x[:, None, :] - x[found]) ** 2).sum(-1)
    np.testing.assert_allclose(found_dists, naive_neighbours(observations, offsets, k), atol=1e-4)
    assert (np.diff(found_dists, axis=1) >= -1e-4).all()


@pytest.mark.parametrize("chunk_elements", [1, 37, 1 << 24])
def test_chunks_agree_and_report_every_step(monkeypatch, chunk_elements) -> None:
    """Any chunk of queries (one step, 37 // 30 = 1, all 30) gives the same neighbours, and the
    progress calls count each step once."""
    import cvl_data.neighbours

    offsets = np.array([0, 7, 8, 19, 30])
    observations = torch.as_tensor(np.random.default_rng(3).normal(size=(30, 4)))
    whole = nearest_other_episode_steps(observations, offsets, 3)
    monkeypatch.setattr(cvl_data.neighbours, "_CHUNK_ELEMENTS", chunk_elements)
    calls: list[int] = []
    chunked = nearest_other_episode_steps(observations, offsets, 3, calls.append)
    assert torch.equal(chunked, whole)
    assert sum(calls) == 30 and min(calls) >= 1
    assert len(calls) == (30 if chunk_elements < 60 else 1)


def test_constant_dimensions_give_finite_distances() -> None:
    observations = torch.zeros(6, 3)
    observations[:, 1] = torch.arange(6.0)
    found = nearest_other_episode_steps(observations, np.array([0, 3, 6]), 2)
    assert found.tolist() == [[3, 4], [3, 4], [3, 4], [2, 1], [2, 1], [2, 1]]


def test_neighbours_refuse_what_they_cannot_search() -> None:
    offsets = np.array([0, 3, 5])
    with pytest.raises(ValueError, match=r"bc_q_cap_neighbours must be an int in \[1, 2\]"):
        nearest_other_episode_steps(torch.zeros(5, 2), offsets, 3)
    with pytest.raises(ValueError, match="needs flat state observations"):
        nearest_other_episode_steps(torch.zeros(5, 3, 8, 8), offsets, 1)
    big = MAX_NEIGHBOUR_STEPS + 1
    with pytest.raises(ValueError, match=f"at most {MAX_NEIGHBOUR_STEPS} steps"):
        nearest_other_episode_steps(torch.zeros(big, 1), np.array([0, 1, big]), 1)


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 30), min_size=2, max_size=6),
    k=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_sampler_gathers_each_anchors_neighbours(write_encoded, lengths, k, seed) -> None:
    """``cap_neighbours`` k: ``neighbour_obs_t[b, j]`` and ``neighbour_action_t[b, j]`` are the
    observation and action of the j-th nearest step of another episode to anchor b's step (from
    the dataset's arrays); the anchors, futures and offsets are those of a sampler without it."""
    dataset = write_encoded(lengths, seed=seed % 7)
    offsets = dataset.episode_offsets
    k = min(k, int(offsets[-1] - max(lengths)))
    with_neighbours = ContrastiveSampler(dataset, 16, seed=seed, cap_neighbours=k)
    plain = ContrastiveSampler(dataset, 16, seed=seed)
    rows = np.arange(offsets[-1]) + np.searchsorted(offsets, np.arange(offsets[-1]), "right") - 1
    table = nearest_other_episode_steps(
        torch.as_tensor(np.asarray(dataset.observations)[rows]), offsets, k
    ).numpy()
    for _ in range(3):
        batch, reference = with_neighbours.sample(), plain.sample()
        assert torch.equal(batch.obs_t, reference.obs_t)
        assert torch.equal(batch.offset, reference.offset)
        assert reference.neighbour_obs_t is None and reference.neighbour_action_t is None
        steps = table[anchor_steps(dataset, batch)]  # (B, k)
        np.testing.assert_array_equal(
            batch.neighbour_obs_t.numpy(), np.asarray(dataset.observations)[rows[steps]]
        )
        np.testing.assert_array_equal(
            batch.neighbour_action_t.numpy(), np.asarray(dataset.actions)[steps]
        )


def test_sampler_refuses_neighbours_it_cannot_gather(write_encoded) -> None:
    dataset = write_encoded([5, 6])
    with pytest.raises(ValueError, match="cap_neighbours must be an int >= 0"):
        ContrastiveSampler(dataset, 8, cap_neighbours=-1)
    with pytest.raises(ValueError, match="needs action_chunk=1"):
        ContrastiveSampler(dataset, 8, cap_neighbours=2, action_chunk=2)
