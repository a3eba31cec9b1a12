"""`EpisodeSource`: the read interface shared by datasets, relabelled views and concatenations.

Samplers accept any `EpisodeSource`. Arrays follow the `Dataset` layout (observations have one
extra row per episode, the final next-observation); ``chunks(field)`` yields a field as
consecutive blocks so it can be copied to a device without first concatenating in RAM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cvl_data.spec import DatasetSpec

FIELDS = ("observations", "actions", "rewards", "terminated", "truncated")


@runtime_checkable
class EpisodeSource(Protocol):
    """What samplers, views and `concat_datasets` read."""

    @property
    def spec(self) -> DatasetSpec: ...

    @property
    def meta(self) -> dict[str, Any]: ...

    @property
    def episode_offsets(self) -> np.ndarray: ...

    @property
    def num_episodes(self) -> int: ...

    @property
    def num_steps(self) -> int: ...

    @property
    def task_ids(self) -> np.ndarray | None: ...

    @property
    def task_names(self) -> tuple[str, ...]: ...

    @property
    def observations(self) -> np.ndarray: ...

    @property
    def actions(self) -> np.ndarray: ...

    @property
    def rewards(self) -> np.ndarray | None: ...

    @property
    def terminated(self) -> np.ndarray: ...

    @property
    def truncated(self) -> np.ndarray: ...

    def chunks(self, field: str) -> Iterator[np.ndarray]: ...


def step_episode_index(episode_offsets: np.ndarray) -> np.ndarray:
    """``(num_steps,)`` int64: the episode of each step."""
    lengths = np.diff(episode_offsets)
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)


def step_task_index(source: EpisodeSource) -> np.ndarray:
    """``(num_steps,)`` int64 index into ``source.task_names`` (zeros for a single task)."""
    if source.task_ids is None:
        return np.zeros(source.num_steps, dtype=np.int64)
    return np.asarray(source.task_ids, dtype=np.int64)
