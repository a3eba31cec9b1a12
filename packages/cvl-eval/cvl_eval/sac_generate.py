"""The paper's dataset protocol: SAC trained online for N frames; its whole replay buffer is the
offline dataset (paper appendix, "Dataset composition"; DESIGN.md sec. 2, "Baselines").

`generate_sac` trains `cvl_algos`' ``"sac"`` learner on one Meta-World task or on
MountainCarContinuous-v0 and writes every transition it collects, episode by episode as episodes
end, through `cvl_data.DatasetWriter`: the dataset on disk is the replay buffer. With
``pixel_path`` the same run also writes a pixel dataset (frames rendered by
`cvl_eval.pixels.PixelObservation`) with identical episodes; SAC itself acts and learns on states.

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
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cvl_algos.sac import SACConfig
from cvl_eval.collect import Episode, dataset_spec, step_success, write_episode
from cvl_eval.envs import canonical_name, is_metaworld, make_env
from cvl_eval.generate import episode_seed
from cvl_eval.sac_replay import (
    STATE_FILE,
    STATE_FORMAT,
    ReplayBuffer,
    committed_episodes,
    default_checkpoint_dir,
    final_sac_dir,
    read_state,
    save_checkpoint,
)

__all__ = [
    "SACDataConfig",
    "SACGenerationReport",
    "default_checkpoint_dir",
    "final_sac_dir",
    "generate_sac",
]

# Config fields that may change between an interrupted run and its resumption.
_RESUMABLE_CHANGES = ("device", "checkpoint_every", "num_threads")


@dataclass(frozen=True)
class SACDataConfig:
    """SAC replay-buffer dataset generation (defaults: the paper's protocol where it gives one).

    Attributes:
        env: Meta-World task (with or without ``-v3``) or ``"MountainCarContinuous-v0"``.
        frames: env steps collected = transitions in the dataset (paper: 500k).
        warmup_frames: uniform-random actions before the policy acts; updates start after them
            (not in the paper; a common SAC default).
        warmup_action_repeat: each warm-up random action is held for this many steps (1: i.i.d.
            uniform actions). Mountain Car needs temporally correlated exploration: i.i.d.
            uniform actions reached its goal in 0 of 40 episodes, actions held for 25 steps in
            38 of 40 (README); Meta-World does not.
        updates_per_step: SAC updates after each env step once warm-up is over (not in the paper).
        sac: the SAC learner's config: batch size 512, lr 3e-4, 256x256 DenseNet MLPs, discount
            0.99, grad-norm clip 100 (paper table 1), twin Q, automatic entropy tuning.
        seed: seeds the env's goal set, the episode reset seeds, warm-up actions, buffer sampling
            and the learner's initialisation and RNG.
        device: training device of the learner and the replay buffer (e.g. ``"cuda"``).
        checkpoint_every: checkpoint the learner every this many episodes (and at the end).
        num_threads: torch intra-op threads while generating (restored afterwards); None keeps
            torch's setting. SAC's small matmuls gain nothing from more threads, and on a busy
            2-core machine 2 threads ran 20x slower than 1 (1.9 vs 41 frames/s, README).
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

    def to_json(self) -> dict[str, Any]:
        """The config as JSON data (tuples become lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))


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


def _versions() -> dict[str, str]:
    """Versions of the packages that shape the data (recorded in the provenance)."""
    names = ("cvl-eval", "cvl-algos", "cvl-data", "cvl-models", "torch", "numpy")
    return {name: _version_of(name) for name in (*names, "gymnasium", "metaworld", "mujoco")}


def _version_of(name: str) -> str:
    try:
        return str(__import__(name.replace("-", "_")).__version__)
    except (ImportError, AttributeError):
        try:
            return package_version(name)
        except PackageNotFoundError:
            return "unknown"


def _provenance(config: SACDataConfig, obs_kind: str) -> dict[str, Any]:
    return {
        "generator": "cvl_eval.sac_generate.generate_sac",
        "policy": "SAC (cvl_algos 'sac') trained online; dataset = its whole replay buffer",
        "config": config.to_json(),
        "seed": config.seed,
        "obs_kind": obs_kind,
        "package_versions": _versions(),
    }


def _check_resumable(stored: dict[str, Any], config: SACDataConfig, where: Path) -> None:
    now = config.to_json()
    differ = sorted(k for k in now if k not in _RESUMABLE_CHANGES and stored.get(k) != now.get(k))
    if differ:
        raise ValueError(f"{where}: the interrupted generation's config differs in {differ}")


def _run_episode(
    env,
    learner,
    buffer: ReplayBuffer,
    config: SACDataConfig,
    e: int,
    frames: int,
    stored_actions: np.ndarray | None,
    tick: Callable[[], None],
) -> tuple[Episode, int]:
    """Collect episode ``e`` (training SAC as it goes); returns it and the new frame count.

    With ``stored_actions`` (an episode already committed after the last checkpoint) those
    actions are sent to the env instead of the sampled ones; everything else runs as usual, so
    the learner and the buffer end up where the interrupted run had them.
    """
    rng = np.random.default_rng([config.seed, 0x5AC, e])  # warm-up actions of this episode
    sampler = buffer.generator(episode_seed(config.seed + 1, e))
    low, high = env.action_space.low, env.action_space.high
    obs, info = env.reset(seed=episode_seed(config.seed, e))
    pixels = env.observation_space.dtype == np.uint8
    state = np.asarray(info["state"] if pixels else obs, dtype=np.float32)
    states, frames_seen = [state], [obs] if pixels else None
    actions, rewards, terminated, truncated = [], [], [], []
    success, held = False, None
    while True:
        t = len(actions)
        if frames < config.warmup_frames:
            if t % config.warmup_action_repeat == 0:
                held = rng.uniform(low, high).astype(np.float32)
            action = held
        else:
            action = learner.act(state, deterministic=False)
        if stored_actions is not None:
            if t >= len(stored_actions):
                raise RuntimeError(f"episode {e}: replay ran past its {t} stored actions")
            action = stored_actions[t]
        action = np.clip(np.asarray(action, dtype=np.float32), low, high)
        obs, reward, term, trunc, info = env.step(action)
        next_state = np.asarray(info["state"] if pixels else obs, dtype=np.float32)
        frames += 1
        trunc = bool(trunc) or frames >= config.frames  # the budget ends the last episode
        reward = float(np.float32(reward))
        buffer.add(state, action, reward, next_state, bool(term))
        if frames >= config.warmup_frames:
            for _ in range(config.updates_per_step):
                learner.update(buffer.sample(config.sac.batch_size, sampler))
        states.append(next_state)
        if pixels:
            frames_seen.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(bool(term))
        truncated.append(trunc)
        success |= step_success(info, bool(term))
        state = next_state
        tick()
        if term or trunc:
            break
    if stored_actions is not None and len(stored_actions) != len(actions):
        raise RuntimeError(
            f"episode {e}: replay ended after {len(actions)} steps, stored {len(stored_actions)}"
        )
    episode = Episode(
        states=np.stack(states),
        actions=np.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated, dtype=bool),
        truncated=np.asarray(truncated, dtype=bool),
        success=bool(success),
        frames=np.stack(frames_seen) if pixels else None,
    )
    return episode, frames


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
    threads = torch.get_num_threads()
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    try:
        return _generate(path, config, pixel_path, checkpoint_dir, progress, durable, on_episode)
    finally:
        torch.set_num_threads(threads)


def _generate(path, config, pixel_path, checkpoint_dir, progress, durable, on_episode):
    """`generate_sac`'s body (same arguments)."""
    from tqdm import tqdm

    from cvl_algos import load_learner, make_learner
    from cvl_data import DatasetError, DatasetWriter

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
    n0, frames = int(counters["episodes"]), int(counters["frames"])
    returns, successes = list(counters["returns"]), list(counters["successes"])
    if frames >= config.frames and all(p.exists() for p, _ in targets):
        return _report(targets, ckpt, counters, n0, 0, time.perf_counter() - start_time)

    env = make_env(
        config.env,
        seed=config.seed,
        pixels=pixel_path is not None,
        image_size=config.image_size,
        camera=config.camera,
        keep_state=True,
        max_episode_steps=config.max_episode_steps,
        goals=config.goals,
    )
    writers: list[tuple[DatasetWriter, str]] = []
    frames_this_call = 0
    try:
        committed = {}
        for p, kind in targets:
            committed[p] = committed_episodes(p)
            count = 0 if committed[p] is None else committed[p].num_episodes
            if count < n0:
                raise DatasetError(f"{p}: {count} episodes, behind its checkpoint's {n0}")
            if not p.exists():
                spec = dataset_spec(config.env, env, kind, _provenance(config, kind))
                writers.append((DatasetWriter(p, spec, resume=True, durable=durable), kind))
        # Episodes committed after the checkpoint are replayed with their stored actions.
        ahead = max(committed.values(), key=lambda c: 0 if c is None else c.num_episodes)
        obs_shape = env.observation_space.shape
        if env.observation_space.dtype == np.uint8:
            obs_shape = env.env.observation_space.shape
        action_dim = int(np.prod(env.action_space.shape))
        if state is None:
            sac_kw = dataclasses.asdict(config.sac)
            learner = make_learner(
                "sac", obs_shape, action_dim, config.device, config.seed, **sac_kw
            )
        else:
            learner = load_learner(ckpt / state["learner"], config.device, restore_global_rng=False)
        buffer = ReplayBuffer(config.frames, obs_shape, action_dim, config.device)
        for e in range(n0):  # reload the replay buffer from the dataset on disk
            buffer.add_episode(committed[targets[0][0]].episode(e))
        if buffer.size != frames:
            raise DatasetError(f"{path}: {buffer.size} steps in {n0} episodes, checkpoint {frames}")
        ckpt.mkdir(parents=True, exist_ok=True)
        bar = tqdm(
            total=config.frames,
            initial=frames,
            desc=f"sac {config.env}",
            unit="frame",
            disable=not progress,
            smoothing=0.05,
        )
        e = n0
        while frames < config.frames:
            stored = None
            if ahead is not None and e < ahead.num_episodes:
                stored = np.asarray(ahead.episode(e)["actions"])
            before = frames
            episode, frames = _run_episode(
                env, learner, buffer, config, e, frames, stored, lambda: bar.update(1)
            )
            frames_this_call += frames - before
            for writer, kind in writers:
                if writer.num_episodes == e:
                    write_episode(writer, episode, kind)
            returns.append(episode.episode_return)
            successes.append(episode.success)
            counters.update(episodes=e + 1, frames=frames, returns=returns, successes=successes)
            if (e + 1) % config.checkpoint_every == 0 or frames >= config.frames:
                counters["learner"] = save_checkpoint(ckpt, learner, counters)
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
        for writer, _ in writers:
            writer.finish()
    finally:
        for writer, _ in writers:
            writer.close()
        env.close()
    return _report(targets, ckpt, counters, n0, frames_this_call, time.perf_counter() - start_time)


def _report(targets, ckpt: Path, counters, resumed_from: int, frames: int, seconds: float):
    return SACGenerationReport(
        paths=tuple(str(p) for p, _ in targets),
        sac_dir=str(ckpt / counters["learner"]),
        num_episodes=int(counters["episodes"]),
        num_steps=committed_episodes(targets[0][0]).num_steps,
        resumed_from=resumed_from,
        returns=tuple(float(r) for r in counters["returns"]),
        successes=tuple(bool(s) for s in counters["successes"]),
        frames_this_call=frames,
        seconds=seconds,
    )
