"""Relabelled views: same arrays, different rewards; nothing on disk is copied or changed.

Used for reward-free pretraining (paper sec. 5.2) and for UDS (Yu et al. 2022): the shared
data's rewards set to 0 and united with the labelled target data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from cvl_data.concat import ConcatDataset, concat_datasets
from cvl_data.errors import DatasetError
from cvl_data.source import EpisodeSource
from cvl_data.spec import DatasetSpec

Relabel = Literal["reward_free", "zero_reward"]


@dataclass(frozen=True, eq=False)
class RelabelledView:
    """A source seen with its rewards hidden (``reward_free``) or set to 0 (``zero_reward``).

    Every other array is the source's own object (a read-only memmap for a `Dataset`); the
    zero rewards are a read-only broadcast scalar, so the view costs no memory.
    """

    source: EpisodeSource
    relabel: Relabel
    spec: DatasetSpec = field(init=False)

    def __post_init__(self) -> None:
        if self.relabel not in ("reward_free", "zero_reward"):
            raise DatasetError(f"RelabelledView: unknown relabel {self.relabel!r}")
        base = self.source.spec
        spec = dataclasses.replace(
            base,
            has_rewards=self.relabel == "zero_reward",
            provenance={**base.provenance, "relabel": self.relabel},
        )
        object.__setattr__(self, "spec", spec)

    @property
    def meta(self) -> dict[str, Any]:
        return {**self.source.meta, "relabel": self.relabel}

    @property
    def rewards(self) -> np.ndarray | None:
        if self.relabel == "reward_free":
            return None
        return np.broadcast_to(np.float32(0.0), (self.num_steps,))

    def chunks(self, field: str) -> Iterator[np.ndarray]:
        if field != "rewards":
            yield from self.source.chunks(field)
        elif self.relabel == "reward_free":
            raise DatasetError(f"reward_free view of {self.source.spec.task!r}: no rewards")
        else:
            yield self.rewards

    episode_offsets = property(lambda self: self.source.episode_offsets)
    num_episodes = property(lambda self: self.source.num_episodes)
    num_steps = property(lambda self: self.source.num_steps)
    task_ids = property(lambda self: self.source.task_ids)
    task_names = property(lambda self: self.source.task_names)
    observations = property(lambda self: self.source.observations)
    actions = property(lambda self: self.source.actions)
    terminated = property(lambda self: self.source.terminated)
    truncated = property(lambda self: self.source.truncated)


def reward_free(source: EpisodeSource) -> RelabelledView:
    """The source with rewards hidden (``spec.has_rewards`` False; batches carry no rewards)."""
    return RelabelledView(source, "reward_free")


def zero_reward(source: EpisodeSource) -> RelabelledView:
    """The source with every reward 0 (UDS's relabelling of shared data; reward-free data too)."""
    return RelabelledView(source, "zero_reward")


def union_with_shared(
    target: EpisodeSource, shared: EpisodeSource | Sequence[EpisodeSource]
) -> ConcatDataset:
    """UDS data: the labelled target dataset followed by the shared data relabelled to reward 0.

    The result has a per-step task id; the target's task is id 0.
    """
    if not target.spec.has_rewards:
        raise DatasetError(f"union_with_shared: target {target.spec.task!r} has no rewards")
    shared_list = [shared] if hasattr(shared, "spec") else list(shared)
    return concat_datasets([target, *(zero_reward(s) for s in shared_list)])
