"""Q between the policy's action and the expert's, at the policy's own states.

`on_policy_critic` finds runs whose critic prefers the expert's action at every state the
policy visits while the policy acts far from it. Two explanations predict different shapes of
Q over actions:

- **another basin**: the policy's action is a local maximum of Q, and the way to the expert's
  action goes through lower Q (a valley): gradient ascent on Q, as DDPG+BC's Q term does, cannot
  leave it;
- **a pull elsewhere**: Q rises along the way from the policy's action to the expert's, so the Q
  term pushes towards the expert and something else (the behaviour term) holds the policy back.

At each visited state this evaluates Q on ``points`` evenly spaced actions of the segment
``a(l) = (1 - l) a_pi + l a_expert``, ``l`` in [0, 1], and on the ``2 A`` coordinate neighbours
``a_pi +- h e_i`` (clipped to the action box), and reports per episode phase:

- ``p_first_step_down``: moving the first step from ``a_pi`` towards ``a_expert`` lowers Q;
- ``p_valley``: the segment's minimum lies below both ends by more than ``tol`` times the
  state's Q scale (``|Q(a_pi)| + |Q(a_expert)|``) / 2: a valley between two basins;
- ``p_local_max``: every coordinate neighbour inside the action box has lower Q than ``a_pi``
  (a probe that the box clips back onto ``a_pi`` does not count): a local maximum at scale
  ``h`` within the box;
- ``p_at_bound``: some coordinate of ``a_pi`` lies at the box's bound (within ``h / 10``), where
  tanh saturates;
- ``mean_valley_depth``: ``min(Q ends) - min(segment)``, floored at 0, in Q units.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from einops import rearrange, repeat

__all__ = ["format_landscape", "q_landscape", "segment_actions", "segment_shape"]


def segment_actions(action_from: np.ndarray, action_to: np.ndarray, points: int) -> np.ndarray:
    """``(N, points, A)``: ``(1 - l) a_from + l a_to`` at ``l = linspace(0, 1, points)``."""
    if points < 3:
        raise ValueError(f"points must be at least 3 (the ends and one between), got {points}")
    lam = rearrange(np.linspace(0.0, 1.0, points), "p -> 1 p 1")
    return (1.0 - lam) * action_from[:, None, :] + lam * action_to[:, None, :]


def segment_shape(values: np.ndarray, tol: float) -> dict[str, np.ndarray]:
    """Per row of ``values`` (N, points), Q along a segment from its first to its last point:
    ``first_step_down`` (bool), ``valley`` (bool), ``valley_depth`` (>= 0), as in the module
    docstring."""
    start, end = values[:, 0], values[:, -1]
    low_end = np.minimum(start, end)
    depth = np.maximum(low_end - values.min(axis=1), 0.0)
    scale = 0.5 * (np.abs(start) + np.abs(end))
    return {
        "first_step_down": values[:, 1] < start,
        "valley": depth > tol * scale,
        "valley_depth": depth,
    }


def _local_max(
    q: Callable[[np.ndarray, np.ndarray], np.ndarray],
    obs: np.ndarray,
    action: np.ndarray,
    q_action: np.ndarray,
    h: float,
) -> np.ndarray:
    """Whether every ``action +- h e_i`` clipped to [-1, 1] has Q below ``q_action``; a probe
    the clip puts back onto ``action`` (a coordinate at its bound) is left out."""
    n, a = action.shape
    steps = np.concatenate([np.eye(a), -np.eye(a)]) * h
    probes = np.clip(action[:, None, :] + steps[None], -1.0, 1.0)
    moved = np.abs(probes - action[:, None, :]).max(axis=2) > 0.0
    q_probes = q(
        repeat(obs, "n d -> (n k) d", k=2 * a), rearrange(probes, "n k a -> (n k) a")
    ).reshape(n, 2 * a)
    return ((q_probes < q_action[:, None]) | ~moved).all(axis=1)


def q_landscape(
    q: Callable[[np.ndarray, np.ndarray], np.ndarray],
    visited: dict[str, np.ndarray],
    expert_action: np.ndarray,
    phases: tuple[tuple[int, int], ...],
    points: int = 21,
    h: float = 0.05,
    tol: float = 0.01,
) -> dict[str, Any]:
    """The module docstring's measures on `rollout_states`' ``visited`` states, per phase.

    ``q`` maps (obs (N, D), action (N, A)) to (N,); ``expert_action`` is (N, A), in [-1, 1]."""
    obs, action, t = visited["obs"], visited["action"], visited["t"]
    segment = segment_actions(action, expert_action, points)
    values = q(
        repeat(obs, "n d -> (n p) d", p=points), rearrange(segment, "n p a -> (n p) a")
    ).reshape(len(obs), points)
    shape = segment_shape(values, tol)
    local_max = _local_max(q, obs, action, values[:, 0], h)
    at_bound = (np.abs(action) >= 1.0 - h / 10).any(axis=1)
    rows = []
    for lo, hi in phases:
        mask = (t >= lo) & (t < hi)
        if not mask.any():
            continue
        rows.append(
            {
                "steps": [lo, hi],
                "states": int(mask.sum()),
                "mean_q_policy": float(values[mask, 0].mean()),
                "mean_q_expert": float(values[mask, -1].mean()),
                "mean_q_segment_min": float(values[mask].min(axis=1).mean()),
                "p_first_step_down": float(shape["first_step_down"][mask].mean()),
                "p_valley": float(shape["valley"][mask].mean()),
                "mean_valley_depth": float(shape["valley_depth"][mask].mean()),
                "p_local_max": float(local_max[mask].mean()),
                "p_at_bound": float(at_bound[mask].mean()),
                "action_gap": float(np.abs(action[mask] - expert_action[mask]).mean()),
            }
        )
    return {"points": points, "h": h, "tol": tol, "phases": rows}


def format_landscape(result: dict[str, Any]) -> str:
    """`q_landscape`'s result as an aligned table."""
    lines = [
        f"Q from the policy's action to the expert's ({result['points']} points; coordinate "
        f"probes at h = {result['h']}; valley tolerance {result['tol']}):",
        f"  {'steps':>9s} {'n':>5s} {'Q(pi)':>9s} {'Q(expert)':>10s} {'min seg':>9s} "
        f"{'P(1st down)':>12s} {'P(valley)':>10s} {'depth':>8s} {'P(local max)':>13s} "
        f"{'P(at bound)':>12s} {'|a_pi-a_exp|':>13s}",
    ]
    for row in result["phases"]:
        lo, hi = row["steps"]
        lines.append(
            f"  {f'{lo}-{hi}':>9s} {row['states']:5d} {row['mean_q_policy']:9.4g} "
            f"{row['mean_q_expert']:10.4g} {row['mean_q_segment_min']:9.4g} "
            f"{row['p_first_step_down']:12.2f} {row['p_valley']:10.2f} "
            f"{row['mean_valley_depth']:8.3g} {row['p_local_max']:13.2f} "
            f"{row['p_at_bound']:12.2f} {row['action_gap']:13.2f}"
        )
    return "\n".join(lines)
