"""Dataset generation for one or several tasks, of any kind cvl-eval offers, into a data root.

`generate_datasets(GenerateConfig)` writes ``<out_dir>/<task>`` for each task (the layout sweeps
read as ``data_root``) and, with ``pixels``, ``<out_dir>/pixels/<task>`` (rendered frames, same
episodes). Kinds:

- ``scripted``: Meta-World's scripted expert with Gaussian action noise and epsilon-random
  actions (`cvl_eval.datagen.scripted.generate_scripted`); quick.
- ``sac``: the paper's protocol, SAC trained online for ``frames`` env steps, its whole replay
  buffer is the dataset (`cvl_eval.datagen.sac.generate.generate_sac`); Meta-World tasks and
  ``MountainCarContinuous-v0``, each with its environment's defaults (`cvl_eval.envs.defaults`:
  Mountain Car's warm-up actions are held for 25 steps). The final SAC is kept in
  ``<out_dir>/<task>.sac/``.
- ``mixture``: whole episodes from named behaviour sources (``sources``; default the task's
  mixture of the mixed-quality suite, `cvl_eval.datagen.mixed_suite`): the task's expert, other
  tasks' experts in this task's environment, random actions, saved checkpoints
  (`cvl_eval.datagen.behaviours`). The log holds each source's episodes, return and success.
- ``curriculum``: a replay-like buffer; the task's expert with noise std and epsilon annealed
  from ``curriculum_sigma[0]`` / ``curriculum_epsilon[0]`` (random-like) to ``[1]`` (expert).
- ``noisy``: OGBench's noisy expert: per episode a noise level ``xi ~ U(0, sigma_max)``, Gaussian
  action noise of std ``xi`` per dimension, and uniform-random actions with probability
  ``random_fraction`` per step (`cvl_eval.datagen.behaviours.noisy_plan`); the log holds return
  and success per quarter of the noise range.
- ``stitch``: a mixture whose episodes cover the task's parts separately and none solves it
  (``sources``; default `cvl_eval.datagen.hard_suite.stitch_sources`: the expert's approach then
  wrong behaviour, and the expert recorded from mid-task on).

Every generation resumes where an interrupted one stopped; finished datasets are skipped. A
generation holds its data root's lock (``<out_dir>/generate.lock``, `cvl_eval.runs.lock`) from
start to end: a second generation into the same root is refused, naming the holder's PID, and
leftovers of earlier writers nobody will resume are removed under the lock (`_clear_leftovers`).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cvl_data import is_dataset
from cvl_data.jsonio import write_json_atomic
from cvl_eval.envs.make import check_camera, config_name, is_metaworld, require_canonical
from cvl_eval.errors import ConfigError, check_ranges
from cvl_eval.runs.lock import hold_lock

KINDS = ("scripted", "sac", "mixture", "curriculum", "noisy", "stitch")
LOCK_FILE = "generate.lock"
"""A data root's lock file: one generation writes into a data root at a time."""

BEHAVIOUR_KINDS = ("mixture", "curriculum", "noisy", "stitch")
"""Kinds written by `cvl_eval.datagen.behaviours.generate_behaviour_dataset`."""


@dataclass(frozen=True)
class GenerateConfig:
    """Which datasets to generate, and where."""

    tasks: tuple[str, ...]
    """Tasks: Meta-World names (with or without ``-v3``; kept canonical, with it);
    ``MountainCarContinuous-v0`` (sac)."""
    out_dir: str = "data"
    """Data root: ``<out_dir>/<task>`` (and ``<out_dir>/pixels/<task>`` with ``pixels``)."""
    kind: Literal["scripted", "sac", "mixture", "curriculum", "noisy", "stitch"] = "scripted"
    """``scripted`` (noisy scripted expert), ``sac`` (the paper's SAC replay buffer), ``mixture``
    (episodes of several behaviours, good and bad), ``curriculum`` (annealed noisy expert),
    ``noisy`` (expert with a per-episode noise level) or ``stitch`` (the task's parts in separate
    episodes, none solving it)."""
    pixels: bool = False
    """Also write a pixel dataset (Meta-World; same episodes, rendered frames)."""
    image_size: int = 84
    """Frame size of pixel datasets."""
    camera: str = "corner"
    """Camera of pixel datasets."""
    seed: int = 0
    """Seed of the generation (goals, episodes, noise, SAC)."""
    episodes: int = 100
    """scripted: episodes per task."""
    noise_sigma: float = 0.3
    """scripted: std of the Gaussian action noise."""
    epsilon: float = 0.1
    """scripted: probability of a uniform-random action."""
    sources: tuple[str, ...] = ()
    """mixture, stitch: behaviour sources ``KIND[:ARG][,sigma=S][,eps=E][,weight=W]``, e.g.
    ``expert,weight=0.25 expert:drawer-close,weight=0.75``, with ``switch=COND>KIND...`` (another
    behaviour takes over at COND) or ``start=COND`` (recorded from COND on), e.g.
    ``'expert,switch=near+50>random' 'expert,start=near+150'``
    (`cvl_eval.datagen.sources.SOURCE_GRAMMAR`); empty: the task's default mixture
    (`cvl_eval.datagen.mixed_suite.mixture_sources`) or stitch recipe
    (`cvl_eval.datagen.hard_suite.stitch_sources`)."""
    curriculum_sigma: tuple[float, float] = (1.0, 0.3)
    """curriculum: expert action-noise std of the first and the last episode."""
    curriculum_epsilon: tuple[float, float] = (1.0, 0.1)
    """curriculum: random-action probability of the first and the last episode."""
    sigma_max: float = 1.0
    """noisy: each episode's action-noise std is drawn from U(0, sigma_max) (> 0)."""
    random_fraction: float = 0.1
    """noisy: probability of a uniform-random action at each step (in [0, 1])."""
    frames: int = 500_000
    """sac: env steps per task = transitions in the dataset (paper: 500k)."""
    warmup_frames: int | None = None
    """sac: uniform-random actions before the policy acts (at most ``frames``); None: the
    environment's default (`cvl_eval.envs.defaults`; 5k, Mountain Car 10k held for 25 steps)."""
    device: str = "cpu"
    """sac: training device of SAC."""
    sac_hidden: tuple[int, ...] | None = None
    """sac: hidden widths of SAC's Q networks and policy (None: SAC's own, the paper's 256 x 256;
    `cvl_algos.sac.SACConfig.hidden`)."""
    sac_batch_size: int | None = None
    """sac: SAC's batch size (None: SAC's own, the paper's 512)."""
    sac_manual_gradients: bool = False
    """sac: SAC's update with hand-written gradients (`cvl_algos.sac.SACConfig.manual_gradients`):
    the same update up to float rounding, 1.1-1.4x faster per frame on a CPU thread
    (docs/performance.md); off: autograd's, with which the presets' data was made."""
    max_steps: int | None = None
    """Optional episode step limit (Meta-World: 500, Mountain Car: 999)."""
    progress: bool = True
    """Progress bars."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(config_name(t) for t in self.tasks))


def check_generate(config: GenerateConfig) -> list[str]:
    """The canonical task names of ``config``; a `ConfigError` for anything wrong, before any work."""
    if config.kind not in KINDS:
        raise ConfigError(f"unknown dataset kind {config.kind!r}; choose one of {list(KINDS)}")
    if not config.tasks:
        raise ConfigError("no tasks given")
    numbers = {
        "episodes": config.episodes,
        "frames": config.frames,
        "image_size": config.image_size,
    }
    for key, value in numbers.items():
        if value < 1:
            raise ConfigError(f"{key} must be >= 1, got {value}")
    if not config.sigma_max > 0:
        raise ConfigError(f"--sigma-max must be > 0, got {config.sigma_max}")
    if not 0.0 <= config.random_fraction <= 1.0:
        raise ConfigError(f"--random-fraction must lie in [0, 1], got {config.random_fraction}")
    tasks = []
    for task in config.tasks:
        try:
            name = require_canonical(task)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if not is_metaworld(name) and (config.kind != "sac" or config.pixels):
            raise ConfigError(
                f"{name}: scripted experts and pixel datasets exist for Meta-World tasks only; "
                "use kind=sac without pixels"
            )
        if config.kind in BEHAVIOUR_KINDS:
            try:
                behaviour_config(config, name)
            except ValueError as error:
                raise ConfigError(f"{name}: --sources / --curriculum-*: {error}") from None
        tasks.append(name)
    _check_numbers(config)
    if config.pixels:
        try:
            check_camera(tasks[0], config.camera)
        except ValueError as error:
            raise ConfigError(f"--camera: {error}") from None
    return tasks


def _check_numbers(config: GenerateConfig) -> None:
    """Counts, sizes and noise levels within their ranges (each refusal names its flag)."""
    optional = {"max_steps": 1, "warmup_frames": 0, "sac_batch_size": 1}
    ok = {k: getattr(config, k) is None or getattr(config, k) >= v for k, v in optional.items()}
    check_ranges(
        config,
        {
            "episodes": (config.episodes >= 1, ">= 1"),
            "frames": (config.frames >= 1, ">= 1"),
            "image_size": (config.image_size >= 1, ">= 1"),
            "noise_sigma": (config.noise_sigma >= 0, ">= 0"),
            "epsilon": (0 <= config.epsilon <= 1, "in [0, 1]"),
            "max_steps": (ok["max_steps"], ">= 1"),
            "warmup_frames": (ok["warmup_frames"], ">= 0"),
            "sac_batch_size": (ok["sac_batch_size"], ">= 1"),
            "sac_hidden": (_widths_ok(config.sac_hidden), "one or more widths, each >= 1"),
            "seed": (config.seed >= 0, ">= 0"),
        },
    )


def _widths_ok(widths: tuple[int, ...] | None) -> bool:
    return widths is None or (len(widths) >= 1 and all(w >= 1 for w in widths))


def dataset_paths(config: GenerateConfig, task: str) -> tuple[Path, Path | None]:
    """Where the state (and pixel) dataset of ``task`` go."""
    root = Path(config.out_dir)
    return root / task, (root / "pixels" / task if config.pixels else None)


def generate_datasets(config: GenerateConfig) -> dict[str, Any]:
    """Generate (or finish) every task's dataset; returns and writes ``<out_dir>/generation.json``
    entries per task: paths, episodes, transitions, mean return and success of this call."""
    tasks = check_generate(config)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with hold_lock(out / LOCK_FILE, "generates datasets", "--out-dir"):
        _clear_leftovers([p for t in tasks for p in dataset_paths(config, t) if p is not None])
        return _generate_locked(config, tasks, out)


def _clear_leftovers(paths: list[Path]) -> None:
    """Remove what an earlier writer of these datasets left behind and no one will use: the
    scratch folders of a start that died (``<task>.partial.init-<pid>``), and a ``.partial``
    beside a finished dataset (a lost race of two generations, from before the lock). Only
    called while holding the data root's lock, so no other generation is writing them."""
    for path in paths:
        stale = list(path.parent.glob(f"{path.name}.partial.init-*"))
        if is_dataset(path) and path.with_name(f"{path.name}.partial").is_dir():
            stale.append(path.with_name(f"{path.name}.partial"))
        for folder in stale:
            print(f"removing stale {folder}", file=sys.stderr, flush=True)
            shutil.rmtree(folder)


def _generate_locked(config: GenerateConfig, tasks: list[str], out: Path) -> dict[str, Any]:
    log_path = out / "generation.json"
    log = json.loads(log_path.read_text()) if log_path.exists() else {}
    for index, task in enumerate(tasks):
        print(f"[{index + 1}/{len(tasks)}] {config.kind} dataset of {task}", flush=True)
        tick = time.monotonic()
        state_path, pixel_path = dataset_paths(config, task)
        report = generate_task(config, task, state_path, pixel_path)
        entry = {
            "kind": config.kind,
            "paths": list(report.paths),
            "episodes": report.num_episodes,
            "transitions": report.num_steps,
            "seconds_this_call": round(time.monotonic() - tick, 1),
        }
        if report.returns:
            entry["mean_return"] = sum(report.returns) / len(report.returns)
            entry["success_rate"] = sum(report.successes) / len(report.successes)
        if config.kind == "sac":
            entry["sac_dir"] = report.sac_dir
        if config.kind in BEHAVIOUR_KINDS:
            entry["sources"] = _source_table(state_path)
        log[task] = entry
        write_json_atomic(log_path, log)
    return {task: log[task] for task in tasks}


def behaviour_config(config: GenerateConfig, task: str):
    """The `BehaviourDataConfig` of ``task`` for the behaviour kinds (`BEHAVIOUR_KINDS`)."""
    from cvl_eval.datagen.behaviours import BehaviourDataConfig
    from cvl_eval.datagen.hard_suite import stitch_sources
    from cvl_eval.datagen.mixed_suite import mixture_sources

    sources = config.sources
    if config.kind == "mixture" and not sources:
        sources = mixture_sources(task)
    if config.kind == "stitch" and not sources:
        sources = stitch_sources(task)
    return BehaviourDataConfig(
        task=task,
        kind=config.kind,
        num_episodes=config.episodes,
        sources=tuple(sources) or ("expert",),
        sigma=tuple(config.curriculum_sigma),
        epsilon=tuple(config.curriculum_epsilon),
        sigma_max=config.sigma_max,
        random_fraction=config.random_fraction,
        seed=config.seed,
        max_steps=config.max_steps,
        image_size=config.image_size,
        camera=config.camera,
    )


def _source_table(state_path: Path) -> dict[str, dict[str, float]]:
    from cvl_data import open_dataset
    from cvl_eval.datagen.behaviours import format_source_table, source_table

    table = source_table(open_dataset(state_path))
    print(format_source_table(table), flush=True)
    return table


def generate_task(
    config: GenerateConfig, task: str, state_path: Path, pixel_path: Path | None = None
):
    """Generate (or finish) the dataset of one canonical ``task`` of ``config`` at ``state_path``
    (and ``pixel_path``); returns the generator's `GenerationReport`."""
    if config.kind in BEHAVIOUR_KINDS:
        from cvl_eval.datagen.behaviours import generate_behaviour_dataset

        return generate_behaviour_dataset(
            state_path,
            behaviour_config(config, task),
            pixel_path=pixel_path,
            progress=config.progress,
        )
    if config.kind == "scripted":
        from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted

        scripted = ScriptedConfig(
            task=task,
            num_episodes=config.episodes,
            noise_sigma=config.noise_sigma,
            epsilon=config.epsilon,
            seed=config.seed,
            max_steps=config.max_steps,
            image_size=config.image_size,
            camera=config.camera,
        )
        return generate_scripted(
            state_path, scripted, pixel_path=pixel_path, progress=config.progress
        )
    from cvl_eval.datagen.sac.generate import generate_sac

    return generate_sac(
        state_path, sac_config(config, task), pixel_path=pixel_path, progress=config.progress
    )


def sac_config(config: GenerateConfig, task: str):
    """The `SACDataConfig` of ``task``: its environment's defaults, then the config's fields (SAC's
    sizes where given); the warm-up never exceeds the frame budget."""
    from cvl_algos.sac import SACConfig
    from cvl_eval.datagen.sac.config import sac_data_config

    fields = {} if config.warmup_frames is None else {"warmup_frames": config.warmup_frames}
    learner = {"hidden": config.sac_hidden, "batch_size": config.sac_batch_size}
    learner["manual_gradients"] = config.sac_manual_gradients or None
    if any(value is not None for value in learner.values()):
        learner = {k: v for k, v in learner.items() if v is not None}
        fields["sac"] = dataclasses.replace(SACConfig(), **learner)
    sac = sac_data_config(
        task,
        frames=config.frames,
        seed=config.seed,
        device=config.device,
        max_episode_steps=config.max_steps,
        image_size=config.image_size,
        camera=config.camera,
        **fields,
    )
    return dataclasses.replace(sac, warmup_frames=min(sac.warmup_frames, sac.frames))
