"""Return-weighted sampling of transitions ("RW" of Hong et al. 2023, "Harnessing Mixed Offline
Reinforcement Learning Datasets via Trajectory Weighting", ICLR).

Every step of episode ``e`` is drawn with probability proportional to
``exp(G~_e / T)``, where ``G~_e = (G_e - min G) / (max G - min G)`` is the episode's
undiscounted return min-max normalised over the data and ``T`` the temperature. As ``T`` grows
the draw tends to uniform over all steps (the samplers' default); as it shrinks, to the steps of
the best episodes (filtered BC's selection). A learner trained on such batches learns about the
return-weighted mixture of the data's behaviours instead of the plain mixture.

With ``baseline="start_state"`` (their "AW"), ``G_e`` is replaced by the advantage of the
episode over its start, ``G_e - V(s_0^e)``, with ``V`` the least-squares linear fit of the returns
on the episodes' first observations (and a constant): episodes that start where returns are
high anyway (e.g. next to the object) weigh no more for it than episodes from harder starts.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from cvl_data.source import EpisodeSource, step_episode_index
from cvl_data.subset import episode_returns

BASELINES: tuple[str, ...] = ("none", "start_state")
"""The values of ``return_weight_baseline``: the plain return, or its advantage over the start."""

WEIGHT_SCOPES: tuple[str, ...] = ("all", "critic", "policy")
"""The values of `cvl_data.ContrastiveSampler`'s ``return_weight_scope``: whose anchors the return
weights draw."""


def _check_weight_option(name: str, value: str, choices: tuple[str, ...], temperature) -> str:
    """``value`` if it is one of ``choices``, the first of which (the default) is the only one
    allowed without a temperature; else a one-line error naming ``name``."""
    if value not in choices or (value != choices[0] and temperature is None):
        others = " or ".join(repr(choice) for choice in choices[1:])
        raise ValueError(
            f"{name} must be one of {choices} ({others} only with return_weight_temperature), "
            f"got {value!r} with temperature {temperature!r}"
        )
    return value


def check_return_weight_scope(scope: str, temperature: float | None) -> str:
    """``scope`` if it is one of `WEIGHT_SCOPES` (not "all" only with a temperature)."""
    return _check_weight_option("return_weight_scope", scope, WEIGHT_SCOPES, temperature)


def check_return_weight_baseline(baseline: str, temperature: float | None) -> str:
    """``baseline`` if it is one of `BASELINES` ("start_state" only with a temperature)."""
    return _check_weight_option("return_weight_baseline", baseline, BASELINES, temperature)


def start_state_advantages(source: EpisodeSource, returns: np.ndarray) -> np.ndarray:
    """``(E,)`` float64: ``G_e - V(s_0^e)``, V the least-squares affine fit of ``returns`` on the
    episodes' flattened first observations (state observations only)."""
    if source.spec.obs_kind != "state":
        raise ValueError(
            f"return_weight_baseline='start_state' fits the return on state observations; "
            f"{source.spec.task!r} has {source.spec.obs_kind!r} observations"
        )
    offsets = np.asarray(source.episode_offsets, np.int64)
    first_rows = offsets[:-1] + np.arange(len(offsets) - 1)  # each episode keeps its final obs
    starts = np.asarray(source.observations[first_rows], np.float64).reshape(len(first_rows), -1)
    design = np.concatenate([starts, np.ones((len(starts), 1))], axis=1)
    coef, *_ = np.linalg.lstsq(design, returns, rcond=None)
    return returns - design @ coef


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
    Returns equal to within 1e-9 of their scale (rounding, as in exactly fitted advantages) give
    every episode weight 1."""
    returns = np.asarray(returns, dtype=np.float64)
    span = float(returns.max() - returns.min())
    if span <= 1e-9 * max(1.0, float(np.abs(returns).max())):
        return np.ones_like(returns)
    normalised = (returns - returns.min()) / span
    return np.exp((normalised - 1.0) / temperature)


def return_weighted_step_cdf(
    source: EpisodeSource, temperature: float, device: torch.device, baseline: str = "none"
) -> torch.Tensor:
    """``(N,)`` float64 on ``device``: the running sum over steps of their episodes' weights
    (`return_weights` of the returns, or with ``baseline="start_state"`` of
    `start_state_advantages`), which `draw_weighted_steps` inverts. Needs rewards."""
    check_return_weight_baseline(baseline, temperature)
    if not source.spec.has_rewards:
        raise ValueError(
            f"return_weight_temperature weighs episodes by return; {source.spec.task!r} has no "
            f"rewards"
        )
    returns = episode_returns(source)
    if baseline == "start_state":
        returns = start_state_advantages(source, returns)
    weights = return_weights(returns, temperature)
    offsets = np.asarray(source.episode_offsets, np.int64)
    step_weights = weights[step_episode_index(offsets)]
    return torch.as_tensor(np.cumsum(step_weights), dtype=torch.float64, device=device)


def draw_weighted_steps(cdf: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """``(n,)`` int64 step indices drawn with probability proportional to each step's weight,
    by inverting ``cdf`` (`return_weighted_step_cdf`) at ``n`` uniform points."""
    u = torch.rand((n,), generator=generator, device=cdf.device, dtype=torch.float64)
    steps = torch.searchsorted(cdf, u * cdf[-1], right=True)
    return steps.clamp_(max=cdf.numel() - 1)
