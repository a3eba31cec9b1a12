"""A source's arrays copied once into torch tensors on the training device.

The on-disk format stays memory-mapped, but samplers keep their data resident on ``device``
(so sampling is a few gathers with no host round trip): the dataset must fit in that device's
memory (host RAM for ``"cpu"``). Copies go in slabs of at most 64 MiB, so a dataset is never
duplicated in host RAM on the way to a GPU. Pixels stay uint8.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from cvl_data.source import EpisodeSource, step_episode_index
from cvl_data.validate import CHUNK_BYTES


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def _copy_in(
    chunks: Iterable[np.ndarray],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """Fill a new ``(rows, ...)`` tensor on ``device`` from consecutive numpy blocks."""
    out = torch.empty(shape, dtype=dtype, device=device)
    row = 0
    for chunk in chunks:
        step = max(1, CHUNK_BYTES // max(1, chunk[:1].nbytes))
        for start in range(0, len(chunk), step):
            block = np.array(chunk[start : start + step])  # a writable, contiguous host copy
            out[row : row + len(block)].copy_(torch.from_numpy(block))
            row += len(block)
    if row != shape[0]:
        raise ValueError(f"source yielded {row} rows, expected {shape[0]}")
    return out


@dataclass(frozen=True, eq=False)
class DeviceData:
    """Tensors on one device; ``N`` steps, ``E`` episodes.

    Attributes:
        observations: ``(N + E, *obs_shape)`` in the stored dtype (uint8 for pixels).
        actions: ``(N, *action_shape)`` float32.
        rewards: ``(N,)`` float32, or None for reward-free data.
        terminated: ``(N,)`` float32 (0/1).
        obs_row: ``(N,)`` int64: the observation row of ``s_t`` for step ``t`` (``t + e``).
        steps_left: ``(N,)`` int64: ``K = T - t``, the number of future states of step ``t``.
        episode_offsets: ``(E + 1,)`` int64 on the host (numpy), for whole-episode batches.
        task_ids: ``(N,)`` int64, or None for a single dataset.
    """

    observations: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor | None
    terminated: torch.Tensor
    obs_row: torch.Tensor
    steps_left: torch.Tensor
    episode_offsets: np.ndarray
    task_ids: torch.Tensor | None

    @property
    def num_steps(self) -> int:
        return int(self.episode_offsets[-1])

    @property
    def num_episodes(self) -> int:
        return len(self.episode_offsets) - 1

    @classmethod
    def load(cls, source: EpisodeSource, device: str | torch.device) -> DeviceData:
        device = torch.device(device)
        spec = source.spec
        offsets = np.asarray(source.episode_offsets, dtype=np.int64).copy()
        N, E = int(offsets[-1]), len(offsets) - 1
        episode = step_episode_index(offsets)
        steps = np.arange(N, dtype=np.int64)
        obs = _copy_in(
            source.chunks("observations"),
            (N + E, *spec.obs_shape),
            _torch_dtype(np.dtype(spec.obs_dtype)),
            device,
        )
        actions = _copy_in(source.chunks("actions"), (N, *spec.action_shape), torch.float32, device)
        rewards = (
            _copy_in(source.chunks("rewards"), (N,), torch.float32, device)
            if spec.has_rewards
            else None
        )
        terminated = _copy_in(source.chunks("terminated"), (N,), torch.float32, device)
        task_ids = None
        if source.task_ids is not None:
            task_ids = torch.as_tensor(np.asarray(source.task_ids, np.int64), device=device)
        return cls(
            observations=obs,
            actions=actions,
            rewards=rewards,
            terminated=terminated,
            obs_row=torch.as_tensor(steps + episode, device=device),
            steps_left=torch.as_tensor(offsets[1:][episode] - steps, device=device),
            episode_offsets=offsets,
            task_ids=task_ids,
        )
