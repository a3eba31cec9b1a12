"""Writing recorded episodes as datasets: the spec, one episode, one generation's writers.

Shared by the scripted-expert generator (`cvl_eval.datagen.scripted`) and the SAC replay
generator (`cvl_eval.datagen.sac.generate`): `dataset_spec` describes the `cvl_data.DatasetSpec`
of an env's episodes, `write_episode` appends an `Episode` to a writer in the layout ``cvl_data``
expects (T + 1 observations, T actions/rewards/flags), and `open_generation` holds one
generation's env and dataset writers (finished on success, always closed); `episode_seed` is
the reset seed of a generation's episode ``e``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from cvl_eval.envs.make import MOUNTAIN_CAR, is_metaworld, make_env
from cvl_eval.rollout.episode import Episode

if TYPE_CHECKING:
    from cvl_data import DatasetWriter

__all__ = ["dataset_spec", "episode_seed", "open_generation", "write_episode"]

METAWORLD_ENV_ID = "Meta-World/MT1"
"""``DatasetSpec.env_id`` of Meta-World datasets."""


def episode_seed(seed: int, episode: int) -> int:
    """Reset seed of episode ``episode`` of a generation seeded with ``seed``."""
    return int(np.random.SeedSequence([seed, 0x6E4, episode]).generate_state(1)[0])


def dataset_spec(
    env_name: str,
    env: gym.Env,
    obs_kind: str = "state",
    provenance: dict[str, Any] | None = None,
    has_rewards: bool = True,
):
    """The `cvl_data.DatasetSpec` for recording ``env`` of the canonical ``env_name`` (state or
    pixel observations).

    For ``obs_kind="pixels"`` ``env`` must be the `PixelObservation` env; for ``"state"`` either
    a state env or a pixel env (its state shape is read from the unwrapped env's space).
    """
    from cvl_data import DatasetSpec

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
        env_id=METAWORLD_ENV_ID if is_metaworld(env_name) else MOUNTAIN_CAR,
        task=env_name,
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
    env_name: str, pixels: bool, env_options: dict[str, Any]
) -> Iterator[tuple[gym.Env, list[tuple[DatasetWriter, str]]]]:
    """The env of one dataset generation and the list of ``(writer, obs_kind)`` it fills.

    The env is ``make_env(env_name, pixels=pixels, keep_state=True, **env_options)`` (a pixel env
    also reports its state; the options come from the generation's config, ``env_options()``).
    The caller appends the `cvl_data.DatasetWriter` s it opens to the list; when the block ends
    without an exception every writer is finished; in any case every writer is then closed, and
    the env last.
    """
    env = make_env(env_name, pixels=pixels, keep_state=True, **env_options)
    writers: list[tuple[DatasetWriter, str]] = []
    try:
        yield env, writers
        for writer, _ in writers:
            writer.finish()
    finally:
        for writer, _ in writers:
            writer.close()
        env.close()
