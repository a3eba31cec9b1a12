"""Resumption pieces of the SAC generator: its replay buffer, reading back the episodes a dataset
writer committed, and the generation's checkpoints (learner + ``state.json`` counters).

`ReplayBuffer` holds every transition collected so far as preallocated torch tensors on the
training device (capacity = the generation's frame budget: nothing is ever evicted, so the buffer
*is* the dataset). `committed_episodes` reads the episodes committed to a dataset folder, finished
or still ``<path>.partial/`` (an interrupted writer's), so that a resumed generation can reload
its buffer from disk instead of keeping a second copy of it.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cvl_data import DatasetError, DatasetSpec, TransitionBatch, open_dataset
from cvl_data.layout import HEADER_BYTES, PROGRESS_FILE, field_layouts, partial_path

STATE_FILE = "state.json"
"""The generation's counters in its checkpoint folder."""
STATE_FORMAT = "cvl-sac-generation"


class ReplayBuffer:
    """Transitions ``(s, a, r, s', terminated)`` in tensors on ``device``, never evicted.

    Args:
        capacity: the most transitions it will hold (a generation's frame budget).
        obs_shape: shape of one state observation.
        action_dim: size of one action.
        device: where the tensors live and batches are drawn.
    """

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], action_dim: int, device: str = "cpu"
    ):
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.obs_shape = tuple(obs_shape)
        self.action_dim = int(action_dim)
        self.device = torch.device(device)
        kw = {"dtype": torch.float32, "device": self.device}
        self.obs = torch.zeros((self.capacity, *self.obs_shape), **kw)
        self.obs_next = torch.zeros((self.capacity, *self.obs_shape), **kw)
        self.action = torch.zeros((self.capacity, self.action_dim), **kw)
        self.reward = torch.zeros((self.capacity,), **kw)
        self.terminated = torch.zeros((self.capacity,), **kw)
        self.size = 0

    def add(
        self, obs: np.ndarray, action: np.ndarray, reward: float, obs_next: np.ndarray, term: bool
    ) -> None:
        """Append one transition (``obs``/``obs_next`` of ``obs_shape``, ``action`` of (A,))."""
        self.add_many(obs[None], action[None], np.float32([reward]), obs_next[None], [term])

    def add_many(self, obs, action, reward, obs_next, terminated) -> None:
        """Append ``n`` transitions: ``obs``/``obs_next`` (n, *obs_shape), ``action`` (n, A),
        ``reward``/``terminated`` (n,)."""
        n = len(action)
        assert np.shape(obs) == np.shape(obs_next) == (n, *self.obs_shape), np.shape(obs)
        assert np.shape(action) == (n, self.action_dim), np.shape(action)
        assert np.shape(reward) == np.shape(terminated) == (n,), np.shape(reward)
        if self.size + n > self.capacity:
            raise ValueError(f"replay buffer full: {self.size} + {n} > {self.capacity}")
        rows = slice(self.size, self.size + n)

        def put(target: torch.Tensor, values) -> None:
            target[rows] = torch.from_numpy(np.array(values, dtype=np.float32)).to(self.device)

        put(self.obs, obs)
        put(self.obs_next, obs_next)
        put(self.action, action)
        put(self.reward, reward)
        put(self.terminated, terminated)
        self.size += n

    def add_episode(self, episode: dict[str, np.ndarray]) -> None:
        """Append the T transitions of an episode as stored on disk (T + 1 observations)."""
        obs = np.asarray(episode["observations"])
        self.add_many(
            obs[:-1], episode["actions"], episode["rewards"], obs[1:], episode["terminated"]
        )

    def generator(self, seed: int) -> torch.Generator:
        """A generator on the buffer's device for `sample`, seeded with ``seed``."""
        return torch.Generator(self.device).manual_seed(int(seed))

    def sample(self, batch_size: int, generator: torch.Generator) -> TransitionBatch:
        """``batch_size`` transitions drawn uniformly with replacement (on the buffer's device)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = torch.randint(0, self.size, (batch_size,), generator=generator, device=self.device)
        return TransitionBatch(
            obs=self.obs[idx],
            action=self.action[idx],
            reward=self.reward[idx],
            obs_next=self.obs_next[idx],
            terminated=self.terminated[idx],
        )


@dataclass(frozen=True)
class CommittedEpisodes:
    """The committed episodes of a (finished or partial) dataset, arrays read-only.

    Same layout as `cvl_data.Dataset`: ``observations`` (num_steps + num_episodes, ...),
    per-step ``actions``, ``rewards``, ``terminated``, ``truncated``, and ``episode_offsets``.
    """

    spec: DatasetSpec
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray | None
    terminated: np.ndarray
    truncated: np.ndarray
    episode_offsets: np.ndarray

    @property
    def num_episodes(self) -> int:
        return len(self.episode_offsets) - 1

    @property
    def num_steps(self) -> int:
        return int(self.episode_offsets[-1])

    def episode(self, e: int) -> dict[str, np.ndarray | None]:
        """Episode ``e``: observations (T + 1, ...), the other fields (T, ...)."""
        if not 0 <= e < self.num_episodes:
            raise IndexError(f"episode {e} of {self.num_episodes}")
        start, stop = int(self.episode_offsets[e]), int(self.episode_offsets[e + 1])
        return {
            "observations": self.observations[start + e : stop + e + 1],
            "actions": self.actions[start:stop],
            "rewards": None if self.rewards is None else self.rewards[start:stop],
            "terminated": self.terminated[start:stop],
            "truncated": self.truncated[start:stop],
        }


def committed_episodes(path: str | Path) -> CommittedEpisodes | None:
    """Committed episodes at dataset folder ``path``: finished, or its ``.partial`` twin.

    Reads an unfinished dataset through cvl-data's on-disk layout (`cvl_data.layout`): field files
    with a fixed `HEADER_BYTES` header, and ``progress.json`` naming the committed counts (bytes
    past them are ignored; a resuming writer truncates them). Returns None when nothing is
    committed yet or there is no dataset at all.
    """
    path = Path(path)
    if path.exists():
        data = open_dataset(path, verify=False)
        return CommittedEpisodes(
            data.spec,
            data.observations,
            data.actions,
            data.rewards,
            data.terminated,
            data.truncated,
            data.episode_offsets,
        )
    partial = partial_path(path)
    progress_file = partial / PROGRESS_FILE
    if not progress_file.exists():
        return None
    progress = json.loads(progress_file.read_text(encoding="utf-8"))
    spec = DatasetSpec.from_json(progress["spec"], where=str(progress_file))
    steps, episodes = int(progress["num_steps"]), int(progress["num_episodes"])
    if episodes == 0:
        return None
    arrays: dict[str, np.ndarray | None] = {"rewards": None}
    for name, layout in field_layouts(spec).items():
        file = partial / layout.file
        shape = layout.shape(steps, episodes)
        need = HEADER_BYTES + int(np.prod(shape, dtype=np.int64)) * layout.dtype.itemsize
        if file.stat().st_size < need:
            raise DatasetError(f"{file}: shorter than its {episodes} committed episodes")
        arrays[name] = np.memmap(file, layout.dtype, mode="r", offset=HEADER_BYTES, shape=shape)
    return CommittedEpisodes(
        spec,
        arrays["observations"],
        arrays["actions"],
        arrays["rewards"],
        arrays["terminated"],
        arrays["truncated"],
        arrays["episode_offsets"],
    )


def default_checkpoint_dir(path: str | Path) -> Path:
    """Where `generate_sac` keeps its checkpoints by default: ``<path>.sac/`` beside the data."""
    path = Path(path)
    return path.with_name(path.name + ".sac")


def final_sac_dir(checkpoint_dir: str | Path) -> Path:
    """The learner checkpoint named by a generation's ``state.json`` (the last one saved)."""
    state = read_state(Path(checkpoint_dir))
    if state is None:
        raise FileNotFoundError(f"{checkpoint_dir}: no {STATE_FILE}; not a SAC generation")
    return Path(checkpoint_dir) / state["learner"]


def read_state(checkpoint_dir: Path) -> dict[str, Any] | None:
    """A generation's counters (``state.json``), or None before its first checkpoint."""
    file = checkpoint_dir / STATE_FILE
    return json.loads(file.read_text(encoding="utf-8")) if file.exists() else None


def write_state(checkpoint_dir: Path, state: dict[str, Any]) -> None:
    """Replace ``state.json`` atomically (write a temporary file, then rename it)."""
    tmp = checkpoint_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, checkpoint_dir / STATE_FILE)


def save_checkpoint(checkpoint_dir: Path, learner, counters: dict[str, Any]) -> str:
    """Save the learner under a fresh name, then name it in ``state.json``, then prune."""
    name = f"learner-{counters['episodes']:07d}"
    learner.save(checkpoint_dir / name)
    write_state(checkpoint_dir, {**counters, "learner": name})
    for old in checkpoint_dir.glob("learner-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return name
