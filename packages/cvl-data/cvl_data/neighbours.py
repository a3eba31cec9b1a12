"""Each step's nearest data states in other episodes (for the policy step's neighbourhood cap).

`nearest_other_episode_steps` finds, for every step ``t`` of a dataset, the ``k`` steps of
*other* episodes whose observations are closest to ``s_t`` (Euclidean distance after
standardising each observation dimension over the dataset's steps). The sampler gathers their
observations and actions into each batch (``ContrastiveBatch.neighbour_obs_t``,
``neighbour_action_t``), so the DDPG+BC step can cap the policy's Q at the best Q the data
reached near the anchor's state (`CVLConfig.bc_q_cap_neighbours`). The search is exact and
brute force, in chunks of queries: O(N^2 D) once per sampler, on the sampler's device. Measured
on 2 threads of an AMD EPYC CPU (39-dimensional observations, k = 8): 2.2 s at 25k steps, 8.7 s
at 50k, so about 15 min at the full budgets' 500k steps; datasets above `MAX_NEIGHBOUR_STEPS`
steps are refused rather than left to run for hours.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

MAX_NEIGHBOUR_STEPS = 1_000_000
"""The most steps `nearest_other_episode_steps` searches (N^2 distances: about an hour on 2 CPU
threads at this size)."""

_CHUNK_ELEMENTS = 1 << 24
"""Distances held at once: queries per chunk x N (64 MiB of float32)."""


def standardised(observations: torch.Tensor) -> torch.Tensor:
    """``(x - mean) / std`` per dimension over the rows (float32); a dimension constant over the
    rows (std <= 1e-6) is left centred (all zeros), never divided by zero."""
    x = observations.float()
    mean = x.mean(dim=0, keepdim=True)
    std = x.std(dim=0, unbiased=False, keepdim=True)
    return (x - mean) / torch.where(std > 1e-6, std, torch.ones_like(std))


def nearest_other_episode_steps(
    observations: torch.Tensor,
    episode_offsets: np.ndarray,
    k: int,
    progress: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """``(N, k)`` int64: for each step, the ``k`` steps of other episodes nearest to it.

    Args:
        observations: ``(N, D)`` state observations ``s_t``, one row per step, episodes
            contiguous in order.
        episode_offsets: ``(E + 1,)`` int: episode ``e`` holds steps
            ``[episode_offsets[e], episode_offsets[e + 1])``.
        k: neighbours per step, at most the steps outside the longest episode.
        progress: called after each chunk of queries with the number of steps it searched
            (the calls sum to N), for a progress bar.
    Returns:
        Step indices ordered from nearest to farthest (among equally near steps, such as the
        shared starts of scripted mixtures, any; the same on every call on one machine).
    """
    if observations.ndim != 2:
        raise ValueError(
            "bc_q_cap_neighbours needs flat state observations (N, D), got shape "
            f"{tuple(observations.shape)}"
        )
    num_steps = observations.shape[0]
    if num_steps > MAX_NEIGHBOUR_STEPS:
        raise ValueError(
            f"bc_q_cap_neighbours searches all {num_steps} steps exactly (N^2 distances); "
            f"at most {MAX_NEIGHBOUR_STEPS} steps are supported"
        )
    offsets = np.asarray(episode_offsets, dtype=np.int64)
    assert offsets[0] == 0 and offsets[-1] == num_steps, (offsets[[0, -1]], num_steps)
    others = num_steps - int(np.diff(offsets).max())
    if isinstance(k, bool) or int(k) != k or not 1 <= k <= others:
        raise ValueError(
            f"bc_q_cap_neighbours must be an int in [1, {others}] (the steps outside the "
            f"longest episode), got {k!r}"
        )
    x = standardised(observations)
    # ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b; |a|^2 is the same for a query's every key, so the
    # ranking needs only |b|^2 - 2 a.b: one addmm per chunk of queries
    key_norms = x.square().sum(dim=1)[None, :]
    chunk = max(1, _CHUNK_ELEMENTS // num_steps)
    out = torch.empty((num_steps, int(k)), dtype=torch.int64, device=observations.device)
    for start in range(0, num_steps, chunk):
        stop = min(start + chunk, num_steps)
        score = torch.addmm(key_norms, x[start:stop], x.T, alpha=-2.0)
        _mask_own_episodes(score, start, stop, offsets)
        out[start:stop] = torch.topk(score, int(k), dim=1, largest=False, sorted=True).indices
        if progress is not None:
            progress(stop - start)
    return out


def _mask_own_episodes(score: torch.Tensor, start: int, stop: int, offsets: np.ndarray) -> None:
    """Set each query row's own episode's columns to +inf, in place: one block per episode
    that the chunk of steps ``[start, stop)`` touches."""
    first = int(np.searchsorted(offsets, start, side="right")) - 1
    last = int(np.searchsorted(offsets, stop - 1, side="right")) - 1
    for e in range(first, last + 1):
        lo, hi = int(offsets[e]), int(offsets[e + 1])
        score[max(lo, start) - start : min(hi, stop) - start, lo:hi] = float("inf")
