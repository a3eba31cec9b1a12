"""Batch samplers that keep the data on the training device and sample there.

`ContrastiveSampler` draws the anchors and future states of the critic loss (paper eq. 9-10,
``Delta t ~ TruncGeom(1 - gamma, t, H)``); `TransitionSampler` draws one-step transitions for
BC, CQL and SAC. Both copy the source into device tensors once (see `cvl_data.device_data`:
the dataset must fit in device memory) and draw every batch with a few vectorised gathers from
a seeded `torch.Generator` on that device: no Python loop per sample.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from cvl_data.batches import ContrastiveBatch, TransitionBatch
from cvl_data.device_data import DeviceData
from cvl_data.geometric import check_discount, sample_truncated_geometric
from cvl_data.source import EpisodeSource

Mode = Literal["uniform", "episode"]


def _check_batch_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    return int(batch_size)


_NUMPY_GATHER_BYTES = 1 << 20


def _rows(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[index]`` along dim 0 as a new tensor (never a view of the data).

    On CPU, large results (pixel batches) are gathered by numpy: its allocator asks for huge
    pages, which makes fresh multi-MiB batches several times cheaper than torch's allocation.
    """
    out_bytes = index.numel() * values[:1].nbytes
    if values.device.type == "cpu" and out_bytes >= _NUMPY_GATHER_BYTES:
        return torch.from_numpy(np.take(values.numpy(), index.numpy(), axis=0))
    return values.index_select(0, index)


def _gather(values: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor | None:
    return None if values is None else _rows(values, index)


class _DeviceSampler:
    """Shared set-up: the data on ``device`` and a generator seeded with ``seed``."""

    def __init__(self, dataset: EpisodeSource, batch_size: int, device: str, seed: int):
        self.spec = dataset.spec
        self.batch_size = _check_batch_size(batch_size)
        self.device = torch.device(device)
        self.data = DeviceData.load(dataset, self.device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))

    @property
    def num_steps(self) -> int:
        return self.data.num_steps

    @property
    def num_episodes(self) -> int:
        return self.data.num_episodes

    def _uniform_steps(self) -> torch.Tensor:
        """``(B,)`` int64 step indices, uniform over all transitions of all episodes."""
        return torch.randint(
            0, self.num_steps, (self.batch_size,), generator=self.generator, device=self.device
        )


class ContrastiveSampler(_DeviceSampler):
    """Anchors ``(s_t, a_t)`` with future states ``s_{t+k}``, ``k ~ TruncGeom`` (paper eq. 9).

    Args:
        dataset: any `EpisodeSource` (a `Dataset`, a relabelled view, a concatenation).
        batch_size: anchors per batch (``uniform``), or the most steps per batch (``episode``).
        discount: ``g`` of the truncated geometric.
        device: where the data lives and batches are drawn.
        mode: ``"uniform"``: anchors uniform over all transitions of all episodes.
            ``"episode"``: one episode drawn uniformly, its steps in time order as the batch
            (the paper's "batch size H"); an episode longer than ``batch_size`` gives a
            uniformly placed window of ``batch_size`` consecutive steps, so a batch never
            exceeds ``batch_size`` and always comes from exactly one episode.
        seed: seed of the sampler's generator.
    """

    def __init__(
        self,
        dataset: EpisodeSource,
        batch_size: int,
        discount: float = 0.99,
        device: str = "cpu",
        mode: Mode = "uniform",
        seed: int = 0,
    ):
        if mode not in ("uniform", "episode"):
            raise ValueError(f"mode must be 'uniform' or 'episode', got {mode!r}")
        self.discount = check_discount(discount)
        self.mode = mode
        super().__init__(dataset, batch_size, device, seed)

    def _episode_steps(self) -> torch.Tensor:
        """Consecutive step indices of one uniformly drawn episode (or a window of it)."""
        offsets = self.data.episode_offsets
        e = int(
            torch.randint(
                0, self.num_episodes, (1,), generator=self.generator, device=self.device
            ).item()
        )
        start, length = int(offsets[e]), int(offsets[e + 1] - offsets[e])
        steps = torch.arange(start, start + min(length, self.batch_size), device=self.device)
        if length > self.batch_size:
            shift = torch.randint(
                0, length - self.batch_size + 1, (1,), generator=self.generator, device=self.device
            )
            steps = steps + shift
        return steps

    def sample(self) -> ContrastiveBatch:
        """One batch; see `ContrastiveBatch` for fields and shapes."""
        step_t = self._uniform_steps() if self.mode == "uniform" else self._episode_steps()
        return self.batch_at(step_t)

    def batch_at(self, step_t: torch.Tensor) -> ContrastiveBatch:
        """The batch for given anchor steps ``(B,)`` (global step indices); offsets are drawn."""
        assert step_t.ndim == 1 and step_t.dtype == torch.int64, (step_t.shape, step_t.dtype)
        data = self.data
        offset = sample_truncated_geometric(
            data.steps_left.index_select(0, step_t), self.discount, self.generator
        )
        row_t = data.obs_row.index_select(0, step_t)
        reward_t = reward_future = None
        if data.rewards is not None:
            reward_t = data.rewards.index_select(0, step_t)
            reward_future = data.rewards.index_select(0, step_t + offset - 1)  # r_{t+k-1}
        return ContrastiveBatch(
            obs_t=_rows(data.observations, row_t),
            action_t=data.actions.index_select(0, step_t),
            reward_t=reward_t,
            obs_next=_rows(data.observations, row_t + 1),
            done=data.terminated.index_select(0, step_t),
            obs_future=_rows(data.observations, row_t + offset),
            reward_future=reward_future,
            offset=offset,
            task_id=_gather(data.task_ids, step_t),
        )


class TransitionSampler(_DeviceSampler):
    """Uniform one-step transitions ``(s_t, a_t, r_t, s_{t+1}, terminated_t)``.

    Args:
        dataset: any `EpisodeSource`.
        batch_size: transitions per batch.
        device: where the data lives and batches are drawn.
        seed: seed of the sampler's generator.
    """

    def __init__(self, dataset: EpisodeSource, batch_size: int, device: str = "cpu", seed: int = 0):
        super().__init__(dataset, batch_size, device, seed)

    def sample(self) -> TransitionBatch:
        """One batch; see `TransitionBatch` for fields and shapes."""
        return self.batch_at(self._uniform_steps())

    def batch_at(self, step_t: torch.Tensor) -> TransitionBatch:
        """The transitions at given global step indices ``(B,)``."""
        assert step_t.ndim == 1 and step_t.dtype == torch.int64, (step_t.shape, step_t.dtype)
        data = self.data
        row_t = data.obs_row.index_select(0, step_t)
        return TransitionBatch(
            obs=_rows(data.observations, row_t),
            action=data.actions.index_select(0, step_t),
            reward=_gather(data.rewards, step_t),
            obs_next=_rows(data.observations, row_t + 1),
            terminated=data.terminated.index_select(0, step_t),
            task_id=_gather(data.task_ids, step_t),
        )
