"""Recording episodes from an environment, and the dataset specs to store them.

Shared by the scripted-expert generator (`cvl_eval.generate`) and the SAC replay generator:
`run_episode` records one episode as an `Episode` (state observations always, rendered frames
too when the env is a `PixelObservation` keeping its state), `dataset_spec` describes the
matching `cvl_data.DatasetSpec`, `write_episode` appends an episode to a writer in the
layout ``cvl_data`` expects (T + 1 observations, T actions/rewards/flags), and `open_generation`
holds one generation's env and dataset writers (finished on success, always closed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from cvl_eval.envs import MOUNTAIN_CAR, canonical_name, is_metaworld, make_env

if TYPE_CHECKING:
    from cvl_data import DatasetWriter

METAWORLD_ENV_ID = "Meta-World/MT1"
"""``DatasetSpec.env_id`` of Meta-World datasets."""


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


def run_episode(env: gym.Env, act: Callable[[np.ndarray], np.ndarray], seed: int) -> Episode:
    """Run one episode from ``env.reset(seed=seed)`` choosing actions with ``act(state)``.

    ``act`` receives the state observation (also for pixel envs, through ``info["state"]``) and
    returns one action; it is clipped to the action space before stepping and recording.
    """
    pixels = env.observation_space.dtype == np.uint8
    low, high = env.action_space.low, env.action_space.high
    obs, info = env.reset(seed=seed)
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


def dataset_spec(
    env_name: str,
    env: gym.Env,
    obs_kind: str = "state",
    provenance: dict[str, Any] | None = None,
    has_rewards: bool = True,
):
    """The `cvl_data.DatasetSpec` for recording ``env`` (state or pixel observations).

    For ``obs_kind="pixels"`` ``env`` must be the `PixelObservation` env; for ``"state"`` either
    a state env or a pixel env (its state shape is read from the unwrapped env's space).
    """
    from cvl_data import DatasetSpec

    name = canonical_name(env_name)
    if obs_kind == "pixels":
        obs_shape, obs_dtype = env.observation_space.shape, "uint8"
    elif obs_kind == "state":
        space = env.observation_space
        if space.dtype == np.uint8:  # a pixel env: its state goes to info["state"]
            space = env.env.observation_space
        obs_shape, obs_dtype = space.shape, "float32"
    else:
        raise ValueError(f"obs_kind must be 'state' or 'pixels', got {obs_kind!r}")
    return DatasetSpec(
        env_id=METAWORLD_ENV_ID if is_metaworld(name) else MOUNTAIN_CAR,
        task=name,
        obs_kind=obs_kind,
        obs_shape=tuple(obs_shape),
        obs_dtype=obs_dtype,
        action_shape=tuple(env.action_space.shape),
        action_low=env.action_space.low.tolist(),
        action_high=env.action_space.high.tolist(),
        has_rewards=has_rewards,
        provenance=dict(provenance or {}),
    )


def write_episode(
    writer, episode: Episode, obs_kind: str = "state", info: dict[str, Any] | None = None
) -> None:
    """Append ``episode`` to a `cvl_data.DatasetWriter` (states or frames as observations),
    with optional per-episode ``info`` (see ``DatasetWriter.add_episode``)."""
    if obs_kind == "pixels" and episode.frames is None:
        raise ValueError("the episode has no frames to write as pixel observations")
    observations = episode.frames if obs_kind == "pixels" else episode.states
    writer.add_episode(
        observations,
        episode.actions,
        episode.rewards if writer.spec.has_rewards else None,
        terminated=episode.terminated,
        truncated=episode.truncated,
        info=info,
    )


@contextmanager
def open_generation(
    env_name: str, **make_env_kwargs: Any
) -> Iterator[tuple[gym.Env, list[tuple[DatasetWriter, str]]]]:
    """The env of one dataset generation and the list of ``(writer, obs_kind)`` it fills.

    The env is ``make_env(env_name, keep_state=True, **make_env_kwargs)`` (a pixel env also
    reports its state). The caller appends the `cvl_data.DatasetWriter` s it opens to the list;
    when the block ends without an exception every writer is finished; in any case every writer
    is then closed, and the env last.
    """
    env = make_env(env_name, keep_state=True, **make_env_kwargs)
    writers: list[tuple[DatasetWriter, str]] = []
    try:
        yield env, writers
        for writer, _ in writers:
            writer.finish()
    finally:
        for writer, _ in writers:
            writer.close()
        env.close()
