"""Quick datasets from Meta-World's scripted experts, with action noise; resumable.

Each episode ``e`` is a pure function of the config and ``e``: its reset seed is
`cvl_eval.datagen.recording.episode_seed` ``(config.seed, e)`` and its noise RNG is
``numpy.random.default_rng([config.seed, e])``. So an interrupted generation resumed with
``DatasetWriter(..., resume=True)`` writes exactly the episodes an uninterrupted run would have:
episodes already committed are skipped, nothing is duplicated or lost.

Noise model (per step): ``a = clip(expert(s) + sigma * N(0, I), -1, 1)``; with probability
``epsilon`` the action is replaced by a uniform random one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from cvl_data.jsonio import package_versions, to_json_data
from cvl_eval.datagen.episodes import (
    EpisodeEnvOptions,
    EpisodeGeneration,
    GenerationReport,
    generate_episodes,
)
from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.envs.make import canonical_name, is_metaworld
from cvl_eval.rollout.episode import Episode


@dataclass(frozen=True)
class ScriptedConfig(EpisodeEnvOptions):
    """Scripted-expert dataset generation (and, keyword-only, its env: `EpisodeEnvOptions`).

    Attributes:
        task: Meta-World task (with or without ``-v3``; kept canonical).
        num_episodes: episodes in the finished dataset.
        noise_sigma: std of the Gaussian noise added to the expert's action.
        epsilon: probability of replacing the action by a uniform random one.
    """

    task: str
    num_episodes: int = 100
    noise_sigma: float = 0.1
    epsilon: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", canonical_name(self.task))
        if not is_metaworld(self.task):
            raise ValueError(f"scripted experts exist for Meta-World tasks only, not {self.task}")
        if self.num_episodes <= 0:
            raise ValueError(f"num_episodes must be positive, got {self.num_episodes}")
        if self.noise_sigma < 0 or not 0.0 <= self.epsilon <= 1.0:
            raise ValueError("need noise_sigma >= 0 and 0 <= epsilon <= 1")


def noisy_expert(
    expert: Callable[[np.ndarray], np.ndarray], sigma: float, epsilon: float, rng
) -> Callable[[np.ndarray], np.ndarray]:
    """Wrap a one-observation policy with Gaussian noise and epsilon-random actions."""

    def act(state: np.ndarray) -> np.ndarray:
        action = np.asarray(expert(state), dtype=np.float64)
        noise = rng.standard_normal(action.shape)
        random_action = rng.uniform(-1.0, 1.0, size=action.shape)
        if rng.random() < epsilon:  # draws above are always taken: a fixed RNG stream per step
            return random_action.astype(np.float32)
        return np.clip(action + sigma * noise, -1.0, 1.0).astype(np.float32)

    return act


def _provenance(config: ScriptedConfig, obs_kind: str) -> dict:
    versions = package_versions(("cvl_eval", "metaworld"))
    return {
        "generator": "cvl_eval.datagen.scripted.generate_scripted",
        "policy": "metaworld.policies.ENV_POLICY_MAP + gaussian noise + epsilon-random",
        "config": to_json_data(config),
        "obs_kind": obs_kind,
        "cvl_eval_version": versions["cvl_eval"],
        "metaworld_version": versions["metaworld"],
    }


def generate_scripted(
    path: str | Path,
    config: ScriptedConfig,
    pixel_path: str | Path | None = None,
    progress: bool = True,
    durable: bool = True,
    on_episode: Callable[[int, Episode], None] | None = None,
) -> GenerationReport:
    """Write (or resume) a scripted-expert dataset at ``path``.

    Args:
        path: dataset folder for state observations (``cvl_data`` layout).
        config: what to generate.
        pixel_path: optional second dataset with rendered (image_size, image_size, 3) frames
            as observations and the same actions/rewards (one run yields both datasets).
        progress: show a tqdm bar (episodes, rate, ETA, running success).
        durable: fsync every committed episode (`cvl_data.DatasetWriter`).
        on_episode: called as ``on_episode(e, episode)`` after episode ``e`` is committed.

    Returns:
        A `GenerationReport`. Calling again on a finished dataset does nothing but report it.
    """
    expert = ScriptedExpert(config.task).act_one

    def actor(e: int, rng: np.random.Generator, action_dim: int):
        return noisy_expert(expert, config.noise_sigma, config.epsilon, rng)

    provenance = partial(_provenance, config)
    generation = EpisodeGeneration(config, provenance, actor, desc=f"scripted {config.task}")
    return generate_episodes(path, pixel_path, generation, progress, durable, on_episode)
