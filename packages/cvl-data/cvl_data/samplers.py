"""Batch samplers that keep the data on the training device and sample there.

`ContrastiveSampler` draws the anchors and future states of the critic loss (paper eq. 9-10,
``Delta t ~ TruncGeom(1 - gamma, t, H)``); `TransitionSampler` draws one-step transitions for
BC, CQL and SAC. Both copy the source into device tensors once (see `cvl_data.device_data`:
the dataset must fit in device memory) and draw every batch with a few vectorised gathers from
a seeded `torch.Generator` on that device: no Python loop per sample.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, get_args

import numpy as np
import torch
from einops import rearrange

from cvl_data.batches import ContrastiveBatch, TransitionBatch
from cvl_data.device_data import DeviceData
from cvl_data.geometric import check_discount, sample_truncated_geometric
from cvl_data.neighbours import nearest_other_episode_steps
from cvl_data.source import EpisodeSource, step_episode_index
from cvl_data.subset import top_episode_indices
from cvl_data.weighting import (
    check_return_weight_baseline,
    check_return_weight_scope,
    check_return_weight_temperature,
    draw_weighted_steps,
    return_weighted_step_cdf,
)

Mode = Literal["uniform", "episode", "shared_start"]
MODES: tuple[str, ...] = get_args(Mode)
"""The values of `ContrastiveSampler`'s ``mode``."""


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
    """Shared set-up: the data on ``device``, a generator seeded with ``seed``, and with
    ``return_weight_temperature`` T the steps' return weights (`cvl_data.weighting`; with
    ``return_weight_baseline="start_state"`` of the returns' advantage over the start)."""

    def __init__(
        self,
        dataset: EpisodeSource,
        batch_size: int,
        device: str,
        seed: int,
        return_weight_temperature: float | None = None,
        return_weight_baseline: str = "none",
    ):
        self.spec = dataset.spec
        self.batch_size = _check_batch_size(batch_size)
        temperature = check_return_weight_temperature(return_weight_temperature)
        check_return_weight_baseline(return_weight_baseline, temperature)
        self.device = torch.device(device)
        self._step_cdf: torch.Tensor | None = None
        if temperature is not None:
            self._step_cdf = return_weighted_step_cdf(
                dataset, temperature, self.device, return_weight_baseline
            )
        self.data = DeviceData.load(dataset, self.device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))

    @property
    def num_steps(self) -> int:
        return self.data.num_steps

    @property
    def num_episodes(self) -> int:
        return self.data.num_episodes

    def _uniform_steps(self, weighted: bool = True) -> torch.Tensor:
        """``(B,)`` int64 step indices, uniform over all transitions of all episodes, or with
        ``return_weight_temperature`` (and ``weighted``) each in proportion to its episode's
        return weight."""
        if weighted and self._step_cdf is not None:
            return draw_weighted_steps(self._step_cdf, self.batch_size, self.generator)
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
            ``"shared_start"``: ``start_groups`` blocks of ``batch_size / start_groups``
            anchors; a block's first anchor is uniform over all transitions, the rest uniform
            over the transitions of the episodes that start from the same state as its episode
            (identical first observation, as scripted mixtures whose sources share reset seeds
            have). Every anchor is still uniform over all transitions, so the critic's
            negatives keep the uniform marginal, and each anchor's negatives include futures
            of other behaviours from its own start (`start_groups`: how many starts a batch
            draws; an episode whose start no other shares forms its own group).
        seed: seed of the sampler's generator.
        start_groups: blocks per batch in ``"shared_start"`` mode (must divide ``batch_size``).
        behaviour_top_fraction: if given, each batch carries ``behaviour_weight``: 1 for anchors
            of the ``ceil(fraction * E)`` episodes of highest return (`top_episode_indices`,
            filtered BC's selection), 0 for the others; the anchors themselves are drawn as
            without it. Needs rewards.
        action_chunk: ``h``: ``action_t`` holds the ``h`` actions ``a_t .. a_{t+h-1}`` of the
            anchor's episode, concatenated in time order, ``(B, h * A)`` (`chunk_steps`; the
            episode's last action repeats where fewer than ``h`` are left). 1: ``a_t`` alone.
        return_weight_temperature: None: anchors as ``mode`` says. T > 0 (``"uniform"`` mode
            only): each anchor drawn with probability proportional to its episode's return
            weight ``exp(G~ / T)`` (`cvl_data.weighting`; needs rewards), so the critic's
            positives and negatives and the policy's data all come from the return-weighted
            mixture.
        return_weight_baseline: ``"none"``: the weights' return is the episode's return;
            ``"start_state"``: its advantage over a linear fit on the first observation
            (`cvl_data.weighting.start_state_advantages`; state observations only).
        return_weight_scope: whose anchors the return weights draw. ``"all"``: every anchor
            (the batch as above). ``"critic"``: the critic's anchors; the batch also carries
            the policy step's own anchors (``policy_obs_t``, ``policy_action_t``,
            ``policy_behaviour_weight``), drawn uniformly. ``"policy"``: the critic's anchors
            uniform, the policy step's own anchors by the weights. Not "all" only with
            ``return_weight_temperature``.
        cap_neighbours: ``k`` > 0: each batch carries ``neighbour_obs_t`` and
            ``neighbour_action_t``, the observations and actions of the ``k`` steps of other
            episodes nearest to each anchor's state (`cvl_data.neighbours`, computed once here;
            flat state observations, ``action_chunk`` 1, ``return_weight_scope`` "all"). 0: none.
        search_progress: passed to that search, which calls it after each chunk of queries with
            the number of steps searched (for a progress bar); None: silent.
    """

    def __init__(
        self,
        dataset: EpisodeSource,
        batch_size: int,
        discount: float = 0.99,
        device: str = "cpu",
        mode: Mode = "uniform",
        seed: int = 0,
        start_groups: int = 8,
        behaviour_top_fraction: float | None = None,
        action_chunk: int = 1,
        return_weight_temperature: float | None = None,
        return_weight_baseline: str = "none",
        return_weight_scope: str = "all",
        cap_neighbours: int = 0,
        search_progress: Callable[[int], None] | None = None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        check_return_weight_scope(return_weight_scope, return_weight_temperature)
        self.return_weight_scope = return_weight_scope
        if return_weight_temperature is not None and mode != "uniform":
            raise ValueError(
                f"return_weight_temperature weighs uniform anchors; mode {mode!r} draws its own, "
                f"got {return_weight_temperature!r}"
            )
        self.discount = check_discount(discount)
        self.mode = mode
        if isinstance(action_chunk, bool) or int(action_chunk) != action_chunk or action_chunk < 1:
            raise ValueError(f"action_chunk must be a positive int, got {action_chunk!r}")
        self.action_chunk = int(action_chunk)
        super().__init__(
            dataset, batch_size, device, seed, return_weight_temperature, return_weight_baseline
        )
        self.start_groups = start_groups
        if mode == "shared_start":
            if not 1 <= start_groups <= self.batch_size or self.batch_size % start_groups:
                raise ValueError(
                    f"start_groups must divide batch_size {self.batch_size}, got {start_groups!r}"
                )
            self._groups = StartGroups.of(self.data)
        self.behaviour_weight: torch.Tensor | None = None
        if behaviour_top_fraction is not None:
            self.behaviour_weight = _top_episode_steps(dataset, behaviour_top_fraction, self.device)
        self.neighbour_steps = self._neighbour_steps(
            cap_neighbours, return_weight_scope, search_progress
        )

    def _neighbour_steps(
        self, k: int, return_weight_scope: str, progress: Callable[[int], None] | None
    ) -> torch.Tensor | None:
        """``(N, k)`` nearest steps of other episodes (`cap_neighbours`), or None for k = 0."""
        if isinstance(k, bool) or int(k) != k or k < 0:
            raise ValueError(f"cap_neighbours must be an int >= 0, got {k!r}")
        if k == 0:
            return None
        if self.action_chunk != 1 or return_weight_scope != "all":
            raise ValueError(
                "cap_neighbours gathers single actions for the batch's own anchors: it needs "
                f"action_chunk=1 and return_weight_scope='all', got {self.action_chunk} and "
                f"{return_weight_scope!r}"
            )
        data = self.data
        observations = data.observations.index_select(0, data.obs_row)
        return nearest_other_episode_steps(observations, data.episode_offsets, int(k), progress)

    def _shared_start_steps(self) -> torch.Tensor:
        """``start_groups`` blocks: a uniform step, then steps uniform within its start group."""
        groups, per_block = self._groups, self.batch_size // self.start_groups
        first = torch.randint(
            0, self.num_steps, (self.start_groups, 1), generator=self.generator, device=self.device
        )
        group = groups.group_of_step[first]  # (G, 1)
        u = torch.rand(
            (self.start_groups, per_block - 1), generator=self.generator, device=self.device
        )
        size = groups.size[group]
        within = torch.minimum((u * size).long(), size - 1)  # guards u * size rounding up to size
        rest = groups.steps[groups.start[group] + within]
        return torch.cat([first, rest], dim=1).reshape(-1)

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
        if self.mode == "uniform":
            if self.return_weight_scope == "all":
                return self.batch_at(self._uniform_steps())
            batch = self.batch_at(self._uniform_steps(self.return_weight_scope == "critic"))
            policy_steps = self._uniform_steps(self.return_weight_scope == "policy")
            return replace(batch, **self._policy_anchors_at(policy_steps))
        if self.mode == "episode":
            return self.batch_at(self._episode_steps())
        return self.batch_at(self._shared_start_steps())

    def batch_at(self, step_t: torch.Tensor) -> ContrastiveBatch:
        """The batch for given anchor steps ``(B,)`` (global step indices); offsets are drawn."""
        assert step_t.ndim == 1 and step_t.dtype == torch.int64, (step_t.shape, step_t.dtype)
        data = self.data
        steps_left = data.steps_left.index_select(0, step_t)
        offset = sample_truncated_geometric(steps_left, self.discount, self.generator)
        row_t = data.obs_row.index_select(0, step_t)
        reward_t = reward_future = None
        if data.rewards is not None:
            reward_t = data.rewards.index_select(0, step_t)
            reward_future = data.rewards.index_select(0, step_t + offset - 1)  # r_{t+k-1}
        return ContrastiveBatch(
            obs_t=_rows(data.observations, row_t),
            action_t=self._actions_at(step_t, steps_left),
            reward_t=reward_t,
            obs_next=_rows(data.observations, row_t + 1),
            done=data.terminated.index_select(0, step_t),
            obs_future=_rows(data.observations, row_t + offset),
            reward_future=reward_future,
            offset=offset,
            task_id=_gather(data.task_ids, step_t),
            behaviour_weight=_gather(self.behaviour_weight, step_t),
            **self._neighbours_at(step_t),
        )

    def _neighbours_at(self, step_t: torch.Tensor) -> dict[str, torch.Tensor]:
        """``neighbour_obs_t`` ``(B, k, D)`` and ``neighbour_action_t`` ``(B, k, A)`` of the
        anchors' nearest steps in other episodes; nothing without ``cap_neighbours``."""
        if self.neighbour_steps is None:
            return {}
        data = self.data
        steps = self.neighbour_steps.index_select(0, step_t)  # (B, k)
        flat = steps.reshape(-1)
        k = steps.shape[1]
        obs = _rows(data.observations, data.obs_row.index_select(0, flat))
        return {
            "neighbour_obs_t": rearrange(obs, "(b k) d -> b k d", k=k),
            "neighbour_action_t": rearrange(
                data.actions.index_select(0, flat), "(b k) a -> b k a", k=k
            ),
        }

    def _policy_anchors_at(self, step_t: torch.Tensor) -> dict[str, torch.Tensor | None]:
        """The policy step's own anchors at steps ``(B,)``: ``policy_obs_t``,
        ``policy_action_t`` and ``policy_behaviour_weight`` (`ContrastiveBatch`)."""
        data = self.data
        steps_left = data.steps_left.index_select(0, step_t)
        return {
            "policy_obs_t": _rows(data.observations, data.obs_row.index_select(0, step_t)),
            "policy_action_t": self._actions_at(step_t, steps_left),
            "policy_behaviour_weight": _gather(self.behaviour_weight, step_t),
        }

    def _actions_at(self, step_t: torch.Tensor, steps_left: torch.Tensor) -> torch.Tensor:
        """``a_t`` ``(B, A)``, or with ``action_chunk`` h > 1 the chunk ``(B, h * A)``
        (``steps_left``: the anchors' ``K``, gathered once by `batch_at`)."""
        actions = self.data.actions
        if self.action_chunk == 1:
            return actions.index_select(0, step_t)
        steps = chunk_steps(step_t, steps_left, self.action_chunk)
        chunk = actions.index_select(0, steps.reshape(-1))
        return rearrange(chunk, "(b h) a -> b (h a)", h=self.action_chunk)


def chunk_steps(step_t: torch.Tensor, steps_left: torch.Tensor, h: int) -> torch.Tensor:
    """``(B, h)`` global step indices ``t, t+1, .., t+h-1`` of each anchor's action chunk, held at
    the episode's last step ``t + K - 1`` (``K`` = ``steps_left``, the actions from ``t`` on)."""
    ahead = torch.arange(h, device=step_t.device)
    return step_t[:, None] + torch.minimum(ahead[None, :], steps_left[:, None] - 1)


def _top_episode_steps(dataset: EpisodeSource, fraction: float, device: torch.device):
    """``(num_steps,)`` float32 on ``device``: 1 at the steps of `top_episode_indices`, else 0."""
    if not dataset.spec.has_rewards:
        raise ValueError(
            f"behaviour_top_fraction ranks episodes by return; {dataset.spec.task!r} has no rewards"
        )
    top = np.zeros(dataset.num_episodes, dtype=np.float32)
    top[top_episode_indices(dataset, fraction)] = 1.0
    steps = top[step_episode_index(np.asarray(dataset.episode_offsets, np.int64))]
    return torch.as_tensor(steps, device=device)


@dataclass(frozen=True)
class StartGroups:
    """The data's episodes grouped by their first observation (equal bytes), as step tables:
    ``steps`` (N,) every step ordered by group, group ``g``'s at ``start[g] .. start[g] +
    size[g] - 1``, and ``group_of_step`` (N,); all int64 on the data's device."""

    steps: torch.Tensor
    start: torch.Tensor
    size: torch.Tensor
    group_of_step: torch.Tensor

    @classmethod
    def of(cls, data: DeviceData) -> StartGroups:
        offsets = data.episode_offsets
        first_rows = torch.as_tensor(offsets[:-1] + np.arange(data.num_episodes))
        first = data.observations[first_rows.to(data.observations.device)].cpu().numpy()
        keys = np.ascontiguousarray(first.reshape(data.num_episodes, -1))
        keys = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
        _, episode_group = np.unique(keys, return_inverse=True)
        step_group = episode_group.reshape(-1)[step_episode_index(offsets)]
        order = np.argsort(step_group, kind="stable")
        size = np.bincount(step_group, minlength=int(episode_group.max()) + 1)
        start = np.concatenate([[0], np.cumsum(size)[:-1]])
        device = data.observations.device
        return cls(
            steps=torch.as_tensor(order, dtype=torch.int64, device=device),
            start=torch.as_tensor(start, dtype=torch.int64, device=device),
            size=torch.as_tensor(size, dtype=torch.int64, device=device),
            group_of_step=torch.as_tensor(step_group, dtype=torch.int64, device=device),
        )


class TransitionSampler(_DeviceSampler):
    """Uniform one-step transitions ``(s_t, a_t, r_t, s_{t+1}, terminated_t)``.

    Args:
        dataset: any `EpisodeSource`.
        batch_size: transitions per batch.
        device: where the data lives and batches are drawn.
        seed: seed of the sampler's generator.
        return_weight_temperature: None: uniform transitions; T > 0: each in proportion to its
            episode's return weight (`cvl_data.weighting`; needs rewards).
        return_weight_baseline: as `ContrastiveSampler`'s.
    """

    def __init__(
        self,
        dataset: EpisodeSource,
        batch_size: int,
        device: str = "cpu",
        seed: int = 0,
        return_weight_temperature: float | None = None,
        return_weight_baseline: str = "none",
    ):
        super().__init__(
            dataset, batch_size, device, seed, return_weight_temperature, return_weight_baseline
        )

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
