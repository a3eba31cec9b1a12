"""The paper's dataset protocol: SAC trained online for N frames; its whole replay buffer is the
offline dataset (paper appendix, "Dataset composition"; DESIGN.md sec. 2, "Baselines").

`generate_sac` trains `cvl_algos`' ``"sac"`` learner on one Meta-World task or on
MountainCarContinuous-v0 and writes every transition it collects, episode by episode as episodes
end, through `cvl_data.DatasetWriter`: the dataset on disk is the replay buffer. With
``pixel_path`` the same run also writes a pixel dataset (frames rendered by
`cvl_eval.envs.pixels.PixelObservation`) with identical episodes; SAC itself acts and learns on states.

Protocol per env step: the first ``warmup_frames`` actions are uniform random, later ones are
sampled from the SAC policy; the transition goes into the replay buffer (kept on the training
device); once ``warmup_frames`` frames are collected, each env step is followed by
``updates_per_step`` SAC updates on uniformly drawn batches. The frame budget ends the last
episode early if needed (marked ``truncated``), so the dataset holds exactly ``frames`` steps.

Resuming: every ``checkpoint_every`` episodes (and after the last one), the learner
(``learner.save``: safetensors + JSON, RNG states included) and the counters (episodes, frames,
returns) are checkpointed *after* the episode is committed to the dataset(s). Everything random
in an episode is a function of ``(seed, episode index)`` or lives in the learner's checkpoint:
reset seed, warm-up action RNG and the buffer's sampling generator are reseeded per episode. So a
resumed run reloads its buffer from the committed episodes on disk, replays the episodes
committed after the checkpoint with their stored actions (the env is deterministic given its
reset seed and the actions; they are not written again) and continues: the datasets and the
final learner equal an uninterrupted run's (bit for bit on CPU).

Layout: `SACDataConfig` and `SACGenerationReport` live in `cvl_eval.datagen.sac.config`, one
episode's loop in `cvl_eval.datagen.sac.episode`, the checkpoints in
`cvl_eval.datagen.sac.checkpoints`; the replay buffer is `cvl_data.ReplayBuffer`, refilled on
resumption from `cvl_data.open_committed`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvl_algos.runtime import process_settings
from cvl_data import DatasetError, DatasetWriter, ReplayBuffer, open_committed
from cvl_data.jsonio import package_versions
from cvl_eval.datagen.recording import dataset_spec, open_generation, write_episode
from cvl_eval.datagen.resume_check import refuse_changes
from cvl_eval.datagen.sac.checkpoints import (
    STATE_FILE,
    STATE_FORMAT,
    default_checkpoint_dir,
    read_state,
    save_checkpoint,
)
from cvl_eval.datagen.sac.config import SACDataConfig, SACGenerationReport
from cvl_eval.datagen.sac.episode import run_sac_episode
from cvl_eval.envs.make import is_metaworld
from cvl_eval.rollout.episode import Episode
from cvl_eval.runs.config_changes import changed_fields, config_defaults

__all__ = ["generate_sac"]

# Config fields that may change between an interrupted run and its resumption.
_RESUMABLE_CHANGES = ("device", "checkpoint_every", "num_threads")

PROVENANCE_PACKAGES = (
    "cvl-eval",
    "cvl-algos",
    "cvl-data",
    "cvl-models",
    "torch",
    "numpy",
    "gymnasium",
    "metaworld",
    "mujoco",
)
"""Packages whose versions shape the data (recorded in the provenance)."""


def _provenance(config: SACDataConfig, obs_kind: str) -> dict[str, Any]:
    return {
        "generator": "cvl_eval.datagen.sac.generate.generate_sac",
        "policy": "SAC (cvl_algos 'sac') trained online; dataset = its whole replay buffer",
        "config": config.to_json(),
        "seed": config.seed,
        "obs_kind": obs_kind,
        "package_versions": package_versions(PROVENANCE_PACKAGES),
    }


def _check_resumable(stored: dict[str, Any], config: SACDataConfig, where: Path) -> None:
    """The checkpointed generation (interrupted or finished) has ``config`` up to the fields that
    do not change the data; else a `ConfigError` naming the fields (`refuse_changes`). Fields
    added to the configs since ``stored`` was written count at their defaults."""
    defaults = config_defaults(SACDataConfig)
    changes = changed_fields(stored, config.to_json(), _RESUMABLE_CHANGES, defaults)
    refuse_changes(where, changes, "the SAC generation checkpointed here")


def generate_sac(
    path: str | Path,
    config: SACDataConfig,
    pixel_path: str | Path | None = None,
    checkpoint_dir: str | Path | None = None,
    progress: bool = True,
    durable: bool = True,
    on_episode: Callable[[int, Episode], None] | None = None,
) -> SACGenerationReport:
    """Train SAC online and write its whole replay buffer at ``path`` (resumes if interrupted).

    Args:
        path: dataset folder of the state observations (``cvl_data`` layout).
        config: what to generate (`SACDataConfig`).
        pixel_path: optional second dataset, same episodes, rendered frames as observations
            (Meta-World only).
        checkpoint_dir: learner checkpoints and counters; default ``<path>.sac/``. Keep it: it
            holds the final SAC (`SACGenerationReport.sac_dir`), e.g. for the Mountain Car
            analysis.
        progress: show a tqdm bar over frames (rate, ETA, episodes, recent return and success).
        durable: fsync every committed episode (`cvl_data.DatasetWriter`).
        on_episode: called as ``on_episode(e, episode)`` after episode ``e`` is committed (and
            checkpointed when due); an exception raised there interrupts the generation.

    Returns:
        A `SACGenerationReport`. Calling again on a finished generation only reports it.
    """
    with process_settings(config.num_threads):
        return _generate(path, config, pixel_path, checkpoint_dir, progress, durable, on_episode)


def _generate(path, config, pixel_path, checkpoint_dir, progress, durable, on_episode):
    """`generate_sac`'s body (same arguments)."""
    start_time = time.perf_counter()
    ckpt = Path(checkpoint_dir) if checkpoint_dir is not None else default_checkpoint_dir(path)
    targets = [(Path(path), "state")] + ([(Path(pixel_path), "pixels")] if pixel_path else [])
    if pixel_path is not None and not is_metaworld(config.env):
        raise ValueError(f"pixel datasets are rendered for Meta-World tasks only, not {config.env}")
    state = read_state(ckpt)
    if state is not None:
        _check_resumable(state["config"], config, ckpt / STATE_FILE)
    elif any(p.exists() for p, _ in targets):
        raise DatasetError(f"{targets[0][0]}: a dataset exists but {ckpt} has no {STATE_FILE}")
    counters = state or {
        "format": STATE_FORMAT,
        "config": config.to_json(),
        "episodes": 0,
        "frames": 0,
        "returns": [],
        "successes": [],
    }
    n0 = int(counters["episodes"])
    if counters["frames"] >= config.frames and all(p.exists() for p, _ in targets):
        return _report(targets, ckpt, counters, n0, 0, time.perf_counter() - start_time)
    with open_generation(config.env, pixel_path is not None, config.env_options()) as (
        env,
        writers,
    ):
        run = _open_run(env, writers, targets, config, counters, ckpt, durable)
        frames_this_call = run.collect(progress, on_episode)
    return _report(targets, ckpt, counters, n0, frames_this_call, time.perf_counter() - start_time)


def _open_run(env, writers, targets, config: SACDataConfig, counters, ckpt: Path, durable: bool):
    """The learner (new or from the checkpoint), the replay buffer refilled from the episodes
    committed before the checkpoint, and the writers of the datasets still to finish."""
    from cvl_algos import load_learner, make_learner

    n0, frames = int(counters["episodes"]), int(counters["frames"])
    committed = {}
    for p, kind in targets:
        committed[p] = open_committed(p)
        count = 0 if committed[p] is None else committed[p].num_episodes
        if count < n0:
            raise DatasetError(f"{p}: {count} episodes, behind its checkpoint's {n0}")
        if not p.exists():
            spec = dataset_spec(config.env, env, kind, _provenance(config, kind))
            writers.append((DatasetWriter(p, spec, resume=True, durable=durable), kind))
    obs_shape = env.observation_space.shape
    if env.observation_space.dtype == np.uint8:
        obs_shape = env.env.observation_space.shape
    action_dim = int(np.prod(env.action_space.shape))
    if "learner" not in counters:
        sac_kw = dataclasses.asdict(config.sac)
        learner = make_learner("sac", obs_shape, action_dim, config.device, config.seed, **sac_kw)
    else:
        learner = load_learner(ckpt / counters["learner"], config.device, restore_global_rng=False)
    buffer = ReplayBuffer(config.frames, obs_shape, action_dim, config.device)
    for e in range(n0):  # reload the replay buffer from the dataset on disk
        buffer.add_episode(committed[targets[0][0]].episode(e))
    if buffer.size != frames:
        raise DatasetError(
            f"{targets[0][0]}: {buffer.size} steps in {n0} episodes, checkpoint {frames}"
        )
    ckpt.mkdir(parents=True, exist_ok=True)
    # Episodes committed after the checkpoint are replayed with their stored actions.
    ahead = max(committed.values(), key=lambda c: 0 if c is None else c.num_episodes)
    return _Run(env, writers, learner, buffer, ahead, config, counters, ckpt)


@dataclass
class _Run:
    """One call's collection: env, writers, learner, buffer and the generation's counters."""

    env: Any
    writers: list
    learner: Any
    buffer: ReplayBuffer
    ahead: Any
    config: SACDataConfig
    counters: dict[str, Any]
    ckpt: Path

    def collect(self, progress: bool, on_episode: Callable[[int, Episode], None] | None) -> int:
        """Episodes until the frame budget is spent; returns the frames this call collected."""
        from tqdm import tqdm

        config, counters = self.config, self.counters
        frames, e = int(counters["frames"]), int(counters["episodes"])
        start = frames
        returns, successes = list(counters["returns"]), list(counters["successes"])
        bar = tqdm(
            total=config.frames,
            initial=frames,
            desc=f"sac {config.env}",
            unit="frame",
            disable=not progress,
            smoothing=0.05,
        )
        while frames < config.frames:
            stored = None
            if self.ahead is not None and e < self.ahead.num_episodes:
                stored = np.asarray(self.ahead.episode(e)["actions"])
            episode, frames = run_sac_episode(
                self.env,
                self.learner,
                self.buffer,
                config,
                e,
                frames,
                stored,
                lambda: bar.update(1),
            )
            for writer, kind in self.writers:
                if writer.num_episodes == e:
                    write_episode(writer, episode, kind)
            returns.append(episode.episode_return)
            successes.append(episode.success)
            counters.update(episodes=e + 1, frames=frames, returns=returns, successes=successes)
            if (e + 1) % config.checkpoint_every == 0 or frames >= config.frames:
                counters["learner"] = save_checkpoint(self.ckpt, self.learner, counters)
            recent = slice(-10, None)
            postfix = {
                "ep": e + 1,
                "ret": f"{np.mean(returns[recent]):.1f}",
                "success": f"{np.mean(successes[recent]):.2f}",
            }
            bar.set_postfix(postfix, refresh=False)
            if on_episode is not None:
                on_episode(e, episode)
            e += 1
        bar.close()
        return frames - start


def _report(targets, ckpt: Path, counters, resumed_from: int, frames: int, seconds: float):
    return SACGenerationReport(
        paths=tuple(str(p) for p, _ in targets),
        sac_dir=str(ckpt / counters["learner"]),
        num_episodes=int(counters["episodes"]),
        num_steps=open_committed(targets[0][0]).num_steps,
        resumed_from=resumed_from,
        returns=tuple(float(r) for r in counters["returns"]),
        successes=tuple(bool(s) for s in counters["successes"]),
        frames_this_call=frames,
        seconds=seconds,
    )
