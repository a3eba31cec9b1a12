"""Recording one episode from an environment: `run_episode` -> `Episode`.

`run_episode` records state observations always, and rendered frames too when the env is a
`cvl_eval.envs.pixels.PixelObservation` keeping its state; `step_success` is the success rule
of every rollout (Meta-World's ``info["success"]``, else reaching a terminal state). The dataset
generators (`cvl_eval.datagen`) store episodes; evaluation (`cvl_eval.rollout.evaluate`) counts
successes with the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["Episode", "run_episode", "step_success"]


@dataclass(frozen=True)
class Episode:
    """One recorded episode of T steps.

    Attributes:
        states: (T + 1, *state_shape) float32 state observations s_0 .. s_T.
        actions: (T, A) float32 actions a_0 .. a_{T-1} (as sent to the env, in bounds).
        rewards: (T,) float32 rewards r_0 .. r_{T-1}.
        terminated: (T,) bool.
        truncated: (T,) bool (the last step of a time-limited episode).
        success: Meta-World ``info["success"]`` was 1 at some step (Mountain Car: terminated).
        frames: (T + 1, H, W, 3) uint8 frames, or None when not rendered.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    success: bool
    frames: np.ndarray | None = None

    def __post_init__(self) -> None:
        T = len(self.actions)
        if T < 1:
            raise ValueError("an episode has at least one step")
        if len(self.states) != T + 1:
            raise ValueError(f"states has {len(self.states)} rows, expected T + 1 = {T + 1}")
        for name in ("rewards", "terminated", "truncated"):
            if getattr(self, name).shape != (T,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({T},)")
        if self.frames is not None and len(self.frames) != T + 1:
            raise ValueError(f"frames has {len(self.frames)} rows, expected T + 1 = {T + 1}")

    @property
    def length(self) -> int:
        """Number of steps T."""
        return len(self.actions)

    @property
    def episode_return(self) -> float:
        """Undiscounted return."""
        return float(self.rewards.sum(dtype=np.float64))


def step_success(info: dict[str, Any], terminated: bool) -> bool:
    """Success of one step: Meta-World's ``info["success"]``, else reaching a terminal state."""
    if "success" in info:
        return float(info["success"]) >= 1.0
    return bool(terminated)


def _state_of(obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
    return np.asarray(info.get("state", obs), dtype=np.float32)


def _skip_until(env: gym.Env, act, obs, info, start) -> tuple[Any, dict[str, Any]]:
    """Step ``env`` with ``act`` until ``start(state, t)`` holds; the observation and info there."""
    t = 0
    while not start(_state_of(obs, info), t):
        action = np.clip(
            np.asarray(act(_state_of(obs, info)), dtype=np.float32),
            env.action_space.low,
            env.action_space.high,
        )
        obs, _, term, trunc, info = env.step(action)
        t += 1
        if term or trunc:
            raise ValueError(f"the episode ended after {t} steps, before its recording start")
    return obs, info


def run_episode(
    env: gym.Env,
    act: Callable[[np.ndarray], np.ndarray],
    seed: int,
    start: Callable[[np.ndarray, int], bool] | None = None,
) -> Episode:
    """Run one episode from ``env.reset(seed=seed)`` choosing actions with ``act(state)``.

    ``act`` receives the state observation (also for pixel envs, through ``info["state"]``) and
    returns one action; it is clipped to the action space before stepping and recording.
    With ``start``, the episode is recorded from the first state for which ``start(state, t)``
    holds (``t``: steps taken since the reset); ``act`` takes the steps before it, unrecorded.

    Raises:
        ValueError: the episode ended before ``start`` held (nothing would be recorded).
    """
    pixels = env.observation_space.dtype == np.uint8
    low, high = env.action_space.low, env.action_space.high
    obs, info = env.reset(seed=seed)
    if start is not None:
        obs, info = _skip_until(env, act, obs, info, start)
    states, frames = [_state_of(obs, info)], [obs] if pixels else None
    actions, rewards, terminated, truncated = [], [], [], []
    success = False
    while True:
        action = np.clip(np.asarray(act(states[-1]), dtype=np.float32), low, high)
        obs, reward, term, trunc, info = env.step(action)
        states.append(_state_of(obs, info))
        if pixels:
            frames.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        success |= step_success(info, term)
        if term or trunc:
            break
    return Episode(
        states=np.stack(states).astype(np.float32),
        actions=np.stack(actions).astype(np.float32),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated, dtype=bool),
        truncated=np.asarray(truncated, dtype=bool),
        success=bool(success),
        frames=np.stack(frames) if pixels else None,
    )
