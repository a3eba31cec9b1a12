"""Batch containers: frozen dataclasses of tensors, all on the sampler's device."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _check_leading(name: str, size: int, tensors: tuple[torch.Tensor | None, ...]) -> None:
    """Every tensor shares the batch dimension (a cheap shape check at construction)."""
    for tensor in tensors:
        if tensor is not None and tensor.shape[0] != size:
            raise ValueError(f"{name}: batch sizes differ ({tensor.shape[0]} vs {size})")


@dataclass(frozen=True)
class ContrastiveBatch:
    """Anchors ``(s_t, a_t)`` with a future state ``s_{t+k}``, ``k ~ TruncGeom`` (paper eq. 9).

    Shapes (``B`` anchors): ``obs_t``, ``obs_next`` (= ``s_{t+1}``), ``obs_future``
    (= ``s_{t+k}``, same episode): ``(B, *obs_shape)`` in the stored dtype (uint8 pixels);
    ``action_t``: ``(B, *action_shape)`` float32; ``reward_t`` (= ``r_t``) and ``reward_future``
    (= ``r_{t+k-1}``, the arrival reward of ``s_{t+k}``, for eq. 11-12): ``(B,)`` float32, None
    for reward-free data; ``done``: ``(B,)`` float32, ``terminated`` of step ``t``; ``offset``:
    ``(B,)`` int64, ``k >= 1``; ``task_id``: ``(B,)`` int64, None for a single dataset;
    ``behaviour_weight``: ``(B,)`` float32, 1 where the anchor's episode is among the top
    episodes by return and 0 elsewhere (`ContrastiveSampler`'s ``behaviour_top_fraction``, for
    the policy's behaviour term), None when every anchor counts. ``policy_obs_t``,
    ``policy_action_t`` and ``policy_behaviour_weight``: the policy step's own anchors, shaped as
    ``obs_t``, ``action_t`` and ``behaviour_weight``, when the sampler draws them apart from the
    critic's (``return_weight_scope`` "critic" or "policy"); None when the policy trains on the
    critic's anchors. `for_policy` gives the policy step's view. ``neighbour_obs_t``
    ``(B, k, *obs_shape)`` and ``neighbour_action_t`` ``(B, k, *action_shape)``: the states and
    actions of the ``k`` steps of other episodes nearest to each anchor's state
    (`ContrastiveSampler`'s ``cap_neighbours``), None without it.
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
    behaviour_weight: torch.Tensor | None = None
    policy_obs_t: torch.Tensor | None = None
    policy_action_t: torch.Tensor | None = None
    policy_behaviour_weight: torch.Tensor | None = None
    neighbour_obs_t: torch.Tensor | None = None
    neighbour_action_t: torch.Tensor | None = None

    def __post_init__(self) -> None:
        tensors = (self.action_t, self.reward_t, self.obs_next, self.done, self.obs_future)
        tensors += (self.reward_future, self.offset, self.task_id, self.behaviour_weight)
        tensors += (self.policy_obs_t, self.policy_action_t, self.policy_behaviour_weight)
        tensors += (self.neighbour_obs_t, self.neighbour_action_t)
        _check_leading("ContrastiveBatch", self.obs_t.shape[0], tensors)
        if (self.policy_obs_t is None) != (self.policy_action_t is None):
            raise ValueError("ContrastiveBatch: policy_obs_t and policy_action_t come together")
        if (self.neighbour_obs_t is None) != (self.neighbour_action_t is None):
            raise ValueError(
                "ContrastiveBatch: neighbour_obs_t and neighbour_action_t come together"
            )

    @property
    def batch_size(self) -> int:
        return self.obs_t.shape[0]

    def for_policy(self) -> ContrastiveBatch | PolicyAnchors:
        """The anchors the policy step trains on: this batch, or its own `PolicyAnchors`."""
        if self.policy_obs_t is None:
            return self
        return PolicyAnchors(self.policy_obs_t, self.policy_action_t, self.policy_behaviour_weight)


@dataclass(frozen=True)
class PolicyAnchors:
    """The policy step's anchors when drawn apart from the critic's: ``obs_t`` ``(B, *obs_shape)``,
    ``action_t`` ``(B, *action_shape)``, ``behaviour_weight`` ``(B,)`` or None (as in
    `ContrastiveBatch`). They carry no futures: extractions that read the anchors' futures (the
    paper's KL form) train on the critic's anchors."""

    obs_t: torch.Tensor
    action_t: torch.Tensor
    behaviour_weight: torch.Tensor | None = None


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
        tensors = (self.action, self.reward, self.obs_next, self.terminated, self.task_id)
        _check_leading("TransitionBatch", self.obs.shape[0], tensors)

    @property
    def batch_size(self) -> int:
        return self.obs.shape[0]
