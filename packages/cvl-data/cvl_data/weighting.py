"""Return-weighted sampling of transitions ("RW" of Hong et al. 2023, "Harnessing Mixed Offline
Reinforcement Learning Datasets via Trajectory Weighting", ICLR).

Every step of episode ``e`` is drawn with probability proportional to
``exp(G~_e / T)``, where ``G~_e = (G_e - min G) / (max G - min G)`` is the episode's
undiscounted return min-max normalised over the data and ``T`` the temperature. As ``T`` grows
the draw tends to uniform over all steps (the samplers' default); as it shrinks, to the steps of
the best episodes (filtered BC's selection). A learner trained on such batches learns about the
return-weighted mixture of the data's behaviours instead of the plain mixture.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from cvl_data.source import EpisodeSource, step_episode_index
from cvl_data.subset import episode_returns


def check_return_weight_temperature(temperature: float | None) -> float | None:
    """``temperature`` as a float, or None (uniform steps); refuses anything not finite > 0."""
    if temperature is None:
        return None
    if isinstance(temperature, bool) or not (
        isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0
    ):
        raise ValueError(
            f"return_weight_temperature must be None or a finite number > 0, got {temperature!r}"
        )
    return float(temperature)


def return_weights(returns: np.ndarray, temperature: float) -> np.ndarray:
    """``(E,)`` float64 episode weights ``exp((G~_e - 1) / T)`` in (0, 1], the best episode's 1
    (the module's formula shifted by its maximum; the draw only needs them up to a factor).
    Equal returns give every episode weight 1."""
    returns = np.asarray(returns, dtype=np.float64)
    span = float(returns.max() - returns.min())
    if span == 0.0:
        return np.ones_like(returns)
    normalised = (returns - returns.min()) / span
    return np.exp((normalised - 1.0) / temperature)


def return_weighted_step_cdf(
    source: EpisodeSource, temperature: float, device: torch.device
) -> torch.Tensor:
    """``(N,)`` float64 on ``device``: the running sum over steps of their episodes' weights
    (`return_weights`), which `draw_weighted_steps` inverts. Needs rewards."""
    if not source.spec.has_rewards:
        raise ValueError(
            f"return_weight_temperature weighs episodes by return; {source.spec.task!r} has no "
            f"rewards"
        )
    weights = return_weights(episode_returns(source), temperature)
    offsets = np.asarray(source.episode_offsets, np.int64)
    step_weights = weights[step_episode_index(offsets)]
    return torch.as_tensor(np.cumsum(step_weights), dtype=torch.float64, device=device)


def draw_weighted_steps(cdf: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """``(n,)`` int64 step indices drawn with probability proportional to each step's weight,
    by inverting ``cdf`` (`return_weighted_step_cdf`) at ``n`` uniform points."""
    u = torch.rand((n,), generator=generator, device=cdf.device, dtype=torch.float64)
    steps = torch.searchsorted(cdf, u * cdf[-1], right=True)
    return steps.clamp_(max=cdf.numel() - 1)
