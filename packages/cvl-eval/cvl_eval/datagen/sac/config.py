"""The config and the report of a SAC replay-buffer generation (`cvl_eval.datagen.sac.generate`).

`SACDataConfig` describes one generation (task, frame budget, warm-up, the SAC learner's config,
seed, device, checkpointing); `sac_data_config` builds one with the environment's defaults
(`cvl_eval.envs.defaults`); `SACGenerationReport` is what `generate_sac` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cvl_algos.sac import SACConfig
from cvl_data.jsonio import to_json_data
from cvl_eval.envs.defaults import env_defaults
from cvl_eval.envs.make import canonical_name

__all__ = ["SACDataConfig", "SACGenerationReport", "sac_data_config"]


@dataclass(frozen=True)
class SACDataConfig:
    """SAC replay-buffer dataset generation (defaults: the paper's protocol where it gives one).

    Attributes:
        env: Meta-World task (with or without ``-v3``; kept canonical) or
            ``"MountainCarContinuous-v0"``.
        frames: env steps collected = transitions in the dataset (paper: 500k).
        warmup_frames: uniform-random actions before the policy acts; updates start after them
            (not in the paper; a common SAC default).
        warmup_action_repeat: each warm-up random action is held for this many steps (1: i.i.d.
            uniform actions). Mountain Car needs temporally correlated exploration: i.i.d.
            uniform actions reached its goal in 0 of 40 episodes, actions held for 25 steps in
            38 of 40 (docs/deviations.md); Meta-World does not (`sac_data_config` applies the
            environment's defaults, `cvl_eval.envs.defaults`).
        updates_per_step: SAC updates after each env step once warm-up is over (not in the paper).
        sac: the SAC learner's config: batch size 512, lr 3e-4, 256x256 DenseNet MLPs, discount
            0.99, grad-norm clip 100 (paper table 1), twin Q, automatic entropy tuning.
        seed: seeds the env's goal set, the episode reset seeds, warm-up actions, buffer sampling
            and the learner's initialisation and RNG.
        device: training device of the learner and the replay buffer (e.g. ``"cuda"``).
        checkpoint_every: checkpoint the learner every this many episodes (and at the end).
        num_threads: torch intra-op threads while generating (restored afterwards); None keeps
            torch's setting. SAC's small matmuls gain nothing from more threads, and on a busy
            2-core machine 2 threads ran about 20x slower than 1 (docs/performance.md,
            "Throughput at the paper's sizes").
        max_episode_steps: optional shorter time limit (Meta-World: 500, Mountain Car: 999).
        goals: Meta-World goal protocol, ``"mt1"`` or ``"random"`` (see `make_env`).
        image_size: frame size of the pixel dataset (when one is written).
        camera: camera of the pixel dataset (when one is written).
    """

    env: str
    frames: int = 500_000
    warmup_frames: int = 5_000
    warmup_action_repeat: int = 1
    updates_per_step: int = 1
    sac: SACConfig = field(default_factory=SACConfig)
    seed: int = 0
    device: str = "cpu"
    checkpoint_every: int = 1
    num_threads: int | None = 1
    max_episode_steps: int | None = None
    goals: str = "mt1"
    image_size: int = 84
    camera: str = "corner"

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", canonical_name(self.env))
        if self.frames < 1 or self.warmup_frames < 0 or self.updates_per_step < 0:
            raise ValueError("need frames >= 1, warmup_frames >= 0 and updates_per_step >= 0")
        if self.warmup_action_repeat < 1:
            raise ValueError(f"warmup_action_repeat must be >= 1, got {self.warmup_action_repeat}")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")

    def env_options(self) -> dict[str, Any]:
        """`make_env` options of the generation's env (besides ``pixels``)."""
        options = {
            "seed": self.seed,
            "goals": self.goals,
            "max_episode_steps": self.max_episode_steps,
        }
        return {**options, "image_size": self.image_size, "camera": self.camera}

    def to_json(self) -> dict[str, Any]:
        """The config as JSON data (tuples become lists)."""
        return to_json_data(self)


def sac_data_config(env: str, **fields: Any) -> SACDataConfig:
    """`SACDataConfig` of ``env`` with its environment's defaults (`cvl_eval.envs.defaults`, e.g.
    Mountain Car's held warm-up actions), then ``fields`` on top."""
    env = canonical_name(env)
    return SACDataConfig(env, **{**env_defaults(env).sac_data, **fields})


@dataclass(frozen=True)
class SACGenerationReport:
    """What a `generate_sac` call did.

    Attributes:
        paths: finished dataset folders (state, then pixels if requested).
        sac_dir: checkpoint of the final SAC learner (``cvl_algos.load_learner(sac_dir)``).
        num_episodes: episodes in the dataset(s).
        num_steps: transitions in the dataset(s) (= ``config.frames``).
        resumed_from: episodes already checkpointed when this call started.
        returns: returns of all episodes, in order (also those of earlier, interrupted calls).
        successes: Meta-World success (Mountain Car: goal reached) of all episodes.
        frames_this_call: env steps this call collected (replayed ones included).
        seconds: wall time of this call.
    """

    paths: tuple[str, ...]
    sac_dir: str
    num_episodes: int
    num_steps: int
    resumed_from: int
    returns: tuple[float, ...]
    successes: tuple[bool, ...]
    frames_this_call: int
    seconds: float

    @property
    def frames_per_second(self) -> float:
        """Env steps per second of this call (SAC updates included)."""
        return self.frames_this_call / max(self.seconds, 1e-9)
