"""Whole-episode subsets of a source, e.g. the top episodes by return (filtered BC).

`select_episodes(source, episodes)` is a view of some episodes of any `EpisodeSource`, kept
whole and in their original order; `top_episodes(source, fraction)` selects the
``ceil(fraction * E)`` episodes with the highest undiscounted return. Nothing is written; the
selected rows are gathered chunk by chunk when a sampler copies the view to its device.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.source import EpisodeSource
from cvl_data.spec import DatasetSpec


def episode_returns(source: EpisodeSource) -> np.ndarray:
    """``(E,)`` float64: the undiscounted return of every episode of a reward-labelled source."""
    if not source.spec.has_rewards:
        raise DatasetError(f"episode_returns: {source.spec.task!r} has no rewards")
    rewards = np.concatenate([np.asarray(c, np.float64) for c in source.chunks("rewards")])
    offsets = np.asarray(source.episode_offsets, np.int64)
    totals = np.concatenate([[0.0], np.cumsum(rewards)])
    return totals[offsets[1:]] - totals[offsets[:-1]]


def _rows_of(offsets: np.ndarray, episodes: np.ndarray, with_final: bool) -> np.ndarray:
    """Row indices of the chosen episodes' steps (or observations, ``with_final``), in order."""
    extra = 1 if with_final else 0
    starts = offsets[episodes] + (episodes if with_final else 0)
    lengths = offsets[episodes + 1] - offsets[episodes] + extra
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + within


@dataclass(frozen=True, eq=False)
class EpisodeSubset:
    """Some whole episodes of ``source`` (sorted episode indices), seen as a source of its own."""

    source: EpisodeSource
    episodes: np.ndarray
    note: str = ""
    spec: DatasetSpec = field(init=False)
    episode_offsets: np.ndarray = field(init=False)
    _step_rows: np.ndarray = field(init=False, repr=False)
    _obs_rows: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        episodes = np.asarray(self.episodes, dtype=np.int64)
        total = self.source.num_episodes
        if episodes.ndim != 1 or len(episodes) == 0:
            raise DatasetError("select_episodes: give at least one episode index")
        if np.any(np.diff(episodes) <= 0) or episodes[0] < 0 or episodes[-1] >= total:
            raise DatasetError(
                f"select_episodes: episode indices must be increasing and in [0, {total}), "
                f"got {episodes[:8].tolist()}..."
            )
        offsets = np.asarray(self.source.episode_offsets, np.int64)
        lengths = offsets[episodes + 1] - offsets[episodes]
        base = self.source.spec
        provenance = {
            **base.provenance,
            "episode_subset": {"episodes": len(episodes), "of": total, "note": self.note},
        }
        set_ = object.__setattr__
        set_(self, "episodes", episodes)
        set_(self, "spec", dataclasses.replace(base, provenance=provenance))
        set_(self, "episode_offsets", np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        set_(self, "_step_rows", _rows_of(offsets, episodes, with_final=False))
        set_(self, "_obs_rows", _rows_of(offsets, episodes, with_final=True))

    @property
    def meta(self) -> dict[str, Any]:
        return {**self.source.meta, "episode_subset": self.episodes.tolist()}

    @property
    def num_episodes(self) -> int:
        return len(self.episodes)

    @property
    def num_steps(self) -> int:
        return int(self.episode_offsets[-1])

    @property
    def task_ids(self) -> np.ndarray | None:
        ids = self.source.task_ids
        return None if ids is None else np.asarray(ids)[self._step_rows]

    @property
    def task_names(self) -> tuple[str, ...]:
        return self.source.task_names

    def chunks(self, name: str) -> Iterator[np.ndarray]:
        """The selected rows of ``name``, gathered block by block from the source's chunks."""
        rows = self._obs_rows if name == "observations" else self._step_rows
        start = 0
        for chunk in self.source.chunks(name):
            stop = start + len(chunk)
            lo, hi = np.searchsorted(rows, [start, stop])
            if hi > lo:
                yield np.asarray(chunk)[rows[lo:hi] - start]
            start = stop

    def _joined(self, name: str) -> np.ndarray:
        return np.concatenate(list(self.chunks(name)))

    observations = property(lambda self: self._joined("observations"))
    actions = property(lambda self: self._joined("actions"))
    terminated = property(lambda self: self._joined("terminated"))
    truncated = property(lambda self: self._joined("truncated"))

    @property
    def rewards(self) -> np.ndarray | None:
        return self._joined("rewards") if self.spec.has_rewards else None


def select_episodes(
    source: EpisodeSource, episodes: Sequence[int] | np.ndarray, note: str = ""
) -> EpisodeSubset:
    """A view of the given episodes of ``source`` (indices increasing, each in range)."""
    return EpisodeSubset(source, np.asarray(episodes, dtype=np.int64), note)


def top_episodes(source: EpisodeSource, fraction: float) -> EpisodeSubset:
    """The ``ceil(fraction * E)`` episodes of highest return (ties: the earlier episode first).

    Filtered BC's data ("BC on the top x% episodes by return"). ``fraction`` in (0, 1].
    """
    chosen = top_episode_indices(source, fraction)
    return select_episodes(source, chosen, note=f"top {fraction:.0%} by return")


def top_episode_indices(source: EpisodeSource, fraction: float) -> np.ndarray:
    """``(K,)`` int64, increasing: the indices of `top_episodes`' episodes, ``K = ceil(fraction
    * E)`` (at least 1) of highest return, ties to the earlier episode."""
    if not 0.0 < fraction <= 1.0:
        raise DatasetError(f"top_episodes: fraction must lie in (0, 1], got {fraction}")
    returns = episode_returns(source)
    keep = max(1, math.ceil(fraction * len(returns)))
    order = np.lexsort((np.arange(len(returns)), -returns))[:keep]
    return np.sort(order).astype(np.int64)
