"""Acting by the critic's choice among the data's own actions at the nearest data states.

A test of where CVL's policy step loses to return filtering. Each extraction measured so far
(the KL form, DDPG+BC, a flow policy, the best of a behaviour model's samples by Q) fits a model
of the data's actions first, so a failure may be the model's: it averages the sources' modes, or
proposes actions the data never took. This acting rule has no model. At an observation ``s`` it
takes the ``k`` data states nearest to ``s`` (Euclidean distance after standardising each
observation dimension over the data), their recorded actions as the candidates, and acts with
the candidate of highest ``Q(s, a)`` (`cvl_algos.cvl.acting.best_by_q`). The candidates are
exactly the data's support near ``s``, with every source's behaviour intact, so what is left to
decide is the critic's ranking. ``k = 1`` without a critic is one-nearest-neighbour cloning of
all the data (the control: what the neighbours' actions give without Q).

Not in the paper; an analysis tool, not a learner (it needs the dataset at acting time).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from einops import rearrange, repeat
from torch import Tensor

from cvl_algos.cvl.acting import best_by_q
from cvl_data.source import step_episode_index

__all__ = ["NeighbourIndex", "neighbour_policy"]

QFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]


class NeighbourIndex:
    """The data's step observations (standardised) and actions, for nearest-state lookups."""

    def __init__(self, observations: np.ndarray, actions: np.ndarray, min_std: float = 1e-3):
        """``observations`` (N, obs_dim) of the states where ``actions`` (N, A) were taken.
        Dimensions with a std below ``min_std`` (constant ones) are scaled by ``min_std``."""
        if observations.ndim != 2 or actions.ndim != 2 or len(observations) != len(actions):
            raise ValueError(
                "NeighbourIndex needs (N, obs_dim) observations and (N, A) actions, got "
                f"{observations.shape} and {actions.shape}"
            )
        obs = torch.as_tensor(np.array(observations, dtype=np.float32))
        self.mean = obs.mean(dim=0)
        self.std = obs.std(dim=0).clamp_min(min_std)
        self.z = (obs - self.mean) / self.std
        self.z_sq = (self.z**2).sum(dim=1)
        self.actions = torch.as_tensor(np.array(actions, dtype=np.float32))

    @classmethod
    def from_dataset(cls, dataset) -> NeighbourIndex:
        """Every step of a `cvl_data.Dataset` (state observations): the observation row of step
        ``t`` is ``t + its episode`` (each episode stores one extra, final observation)."""
        rows = np.arange(dataset.num_steps) + step_episode_index(dataset.episode_offsets)
        return cls(np.asarray(dataset.observations)[rows], np.asarray(dataset.actions))

    def nearest(self, obs: np.ndarray, k: int) -> Tensor:
        """(B, k) indices of each observation's ``k`` nearest data states, nearest first."""
        if not 1 <= k <= len(self.z):
            raise ValueError(f"k must be in [1, {len(self.z)}], got {k}")
        z = (torch.as_tensor(np.array(obs, dtype=np.float32)) - self.mean) / self.std
        # |z - z_j|^2 up to the row constant |z|^2, which does not change the ranking.
        distance = self.z_sq - 2.0 * z @ self.z.T
        return torch.topk(distance, k, dim=1, largest=False, sorted=True).indices

    def candidates(self, obs: np.ndarray, k: int) -> Tensor:
        """(k, B, A): the actions taken at each observation's ``k`` nearest data states."""
        return rearrange(self.actions[self.nearest(obs, k)], "b k a -> k b a")


def neighbour_policy(
    index: NeighbourIndex,
    k: int,
    q: QFunction | None,
    base: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """A batched policy (B, obs_dim) -> (B, A) for `cvl_eval.rollout.evaluate.evaluate_policy`:
    the best of the ``k`` nearest states' data actions by ``q`` (ties to the nearest), or
    without ``q`` the nearest state's action (``k`` must then be 1).

    With ``base`` (a batched policy, e.g. a learner's ``act``), its action is one more
    candidate, placed first, so it wins ties: the search keeps the policy's own action and
    leaves it only for a data action the critic ranks higher."""
    if q is None and k != 1:
        raise ValueError(
            f"without a critic only k=1 (the nearest state's action) is defined, got k={k}"
        )
    if q is None and base is not None:
        raise ValueError("a base policy's action is a candidate only when a critic chooses")

    def act(obs: np.ndarray) -> np.ndarray:
        candidates = index.candidates(obs, k)
        if q is None:
            return candidates[0].numpy()
        if base is not None:
            own = torch.as_tensor(np.asarray(base(obs), dtype=np.float32))
            candidates = torch.cat([rearrange(own, "b a -> 1 b a"), candidates])
        n = len(candidates)
        obs_rep = repeat(np.asarray(obs, dtype=np.float32), "b d -> (n b) d", n=n)
        q_values = q(obs_rep, rearrange(candidates, "n b a -> (n b) a").numpy())
        q_values = rearrange(torch.as_tensor(q_values), "(n b) -> n b", n=n)
        return best_by_q(candidates, q_values).numpy()

    return act
