"""Batch containers: frozen dataclasses of tensors, all on the sampler's device."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


def _check_leading(batch: object) -> None:
    """Every tensor field shares the batch dimension (shape check at construction)."""
    sizes = {
        f.name: value.shape[0]
        for f in fields(batch)
        if isinstance(value := getattr(batch, f.name), torch.Tensor)
    }
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{type(batch).__name__}: batch sizes differ: {sizes}")


@dataclass(frozen=True)
class ContrastiveBatch:
    """Anchors ``(s_t, a_t)`` with a future state ``s_{t+k}``, ``k ~ TruncGeom`` (paper eq. 9).

    Shapes (``B`` anchors): ``obs_t``, ``obs_next`` (= ``s_{t+1}``), ``obs_future``
    (= ``s_{t+k}``, same episode): ``(B, *obs_shape)`` in the stored dtype (uint8 pixels);
    ``action_t``: ``(B, *action_shape)`` float32; ``reward_t`` (= ``r_t``) and ``reward_future``
    (= ``r_{t+k-1}``, the arrival reward of ``s_{t+k}``, for eq. 11-12): ``(B,)`` float32, None
    for reward-free data; ``done``: ``(B,)`` float32, ``terminated`` of step ``t``; ``offset``:
    ``(B,)`` int64, ``k >= 1``; ``task_id``: ``(B,)`` int64, None for a single dataset.
    """

    obs_t: torch.Tensor
    action_t: torch.Tensor
    reward_t: torch.Tensor | None
    obs_next: torch.Tensor
    done: torch.Tensor
    obs_future: torch.Tensor
    reward_future: torch.Tensor | None
    offset: torch.Tensor
    task_id: torch.Tensor | None

    def __post_init__(self) -> None:
        _check_leading(self)

    @property
    def batch_size(self) -> int:
        return self.obs_t.shape[0]


@dataclass(frozen=True)
class TransitionBatch:
    """Transitions ``(s_t, a_t, r_t, s_{t+1}, terminated_t)`` for BC, CQL and SAC.

    Shapes: ``obs``, ``obs_next``: ``(B, *obs_shape)``; ``action``: ``(B, *action_shape)``
    float32; ``reward``: ``(B,)`` float32 or None (reward-free); ``terminated``: ``(B,)``
    float32; ``task_id``: ``(B,)`` int64 or None (single dataset).
    """

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor | None
    obs_next: torch.Tensor
    terminated: torch.Tensor
    task_id: torch.Tensor | None = None

    def __post_init__(self) -> None:
        _check_leading(self)

    @property
    def batch_size(self) -> int:
        return self.obs.shape[0]
