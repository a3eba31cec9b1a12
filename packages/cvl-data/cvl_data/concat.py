"""Multi-task concatenation with a per-step task id (paper sec. 5.2, multi-task pretraining)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.source import EpisodeSource, step_task_index
from cvl_data.spec import DatasetSpec


def _describe(source: EpisodeSource) -> str:
    path = getattr(source, "path", None)
    return f"{source.spec.task!r}" + (f" ({path})" if path is not None else "")


def _combined_spec(parts: Sequence[EpisodeSource], task_names: tuple[str, ...]) -> DatasetSpec:
    first = parts[0].spec
    for part in parts[1:]:
        spec = part.spec
        for name in ("obs_kind", "obs_shape", "obs_dtype", "action_shape", "has_rewards"):
            if getattr(spec, name) != getattr(first, name):
                raise DatasetError(
                    f"concat_datasets: field '{name}' of {_describe(part)} is "
                    f"{getattr(spec, name)!r}, but {_describe(parts[0])} has "
                    f"{getattr(first, name)!r}"
                    + (
                        "; relabel first with reward_free() or zero_reward()"
                        if name == "has_rewards"
                        else ""
                    )
                )
    bounds = [p.spec.action_bounds() for p in parts]
    low = np.min([b[0] for b in bounds], axis=0)
    high = np.max([b[1] for b in bounds], axis=0)
    env_ids = list(dict.fromkeys(p.spec.env_id for p in parts))
    return dataclasses.replace(
        first,
        env_id="+".join(env_ids),
        task="+".join(task_names),
        action_low=low.reshape(-1).tolist(),
        action_high=high.reshape(-1).tolist(),
        provenance={"concatenation_of": [p.spec.to_json() for p in parts]},
    )


@dataclass(frozen=True, eq=False)
class ConcatDataset:
    """Several sources back to back, episodes kept whole, with a per-step task id.

    ``task_ids[i]`` indexes ``task_names`` (unique task names in order of first appearance, so
    two datasets of one task share an id). The parts are not copied: samplers read them through
    `chunks`. The array attributes (``observations`` ...) concatenate in RAM on each access;
    they are for inspection, not training.
    """

    parts: tuple[EpisodeSource, ...]
    spec: DatasetSpec
    task_names: tuple[str, ...]
    task_ids: np.ndarray  # (num_steps,) int64
    episode_offsets: np.ndarray  # (num_episodes + 1,) int64

    @property
    def meta(self) -> dict[str, Any]:
        return {"concatenation_of": [p.meta for p in self.parts]}

    @property
    def num_episodes(self) -> int:
        return len(self.episode_offsets) - 1

    @property
    def num_steps(self) -> int:
        return int(self.episode_offsets[-1])

    def chunks(self, field: str) -> Iterator[np.ndarray]:
        for part in self.parts:
            yield from part.chunks(field)

    def _joined(self, field: str) -> np.ndarray:
        return np.concatenate(list(self.chunks(field)))

    @property
    def observations(self) -> np.ndarray:
        return self._joined("observations")

    @property
    def actions(self) -> np.ndarray:
        return self._joined("actions")

    @property
    def rewards(self) -> np.ndarray | None:
        return self._joined("rewards") if self.spec.has_rewards else None

    @property
    def terminated(self) -> np.ndarray:
        return self._joined("terminated")

    @property
    def truncated(self) -> np.ndarray:
        return self._joined("truncated")


def concat_datasets(sources: Sequence[EpisodeSource]) -> ConcatDataset:
    """Concatenate datasets (or views, or concatenations) of one observation/action space.

    All sources must agree on observation kind/shape/dtype, action shape and whether rewards are
    present (relabel with `reward_free` or `zero_reward` first); action bounds are united.
    """
    parts = tuple(sources)
    if not parts:
        raise DatasetError("concat_datasets: no datasets given")
    task_names: tuple[str, ...] = tuple(
        dict.fromkeys(name for part in parts for name in part.task_names)
    )
    spec = _combined_spec(parts, task_names)
    lookup = {name: i for i, name in enumerate(task_names)}
    ids, offsets, start = [], [np.zeros(1, np.int64)], 0
    for part in parts:
        to_global = np.array([lookup[name] for name in part.task_names], dtype=np.int64)
        ids.append(to_global[step_task_index(part)])
        offsets.append(np.asarray(part.episode_offsets[1:], dtype=np.int64) + start)
        start += part.num_steps
    return ConcatDataset(
        parts=parts,
        spec=spec,
        task_names=task_names,
        task_ids=np.concatenate(ids),
        episode_offsets=np.concatenate(offsets),
    )
