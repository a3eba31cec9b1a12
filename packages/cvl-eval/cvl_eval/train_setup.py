"""What a training run needs before its first update: the config, its validation, the data.

`TrainConfig` is the frozen, documented description of one run; `validate` checks it without
doing any work (it reads only ``meta.json`` files) and returns a `Plan` (everything derived
from the config and the datasets' specs); `build_sources` opens the datasets and builds the
relabelled views each algorithm trains on; `cvl_eval.training` runs the loop.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cvl_eval.runs import RunFolder, read_json, versions

OFFLINE_ALGORITHMS: tuple[str, ...] = ("bc", "cql", "cql_uds", "cvl", "cvl_mc")
"""Algorithms `train` runs (every name of ``cvl_algos.ALGORITHMS`` except the online ``sac``)."""

NEEDS_REWARDS = {"bc": False, "cql": True, "cql_uds": True, "cvl": True, "cvl_mc": True}
"""Whether the target dataset must carry rewards (BC never reads them)."""

PRETRAINABLE = ("cvl", "cvl_mc", "cql_uds")
"""Algorithms that accept related-task (reward-free) data through ``pretrain_datasets``."""

TRAINER_STATE_VERSION = 1

# Fields that may change when a stopped run is resumed (they do not change the result).
_RESUME_FREE_FIELDS = ("resume", "progress", "num_threads", "tensorboard")


class ConfigError(ValueError):
    """A training (or sweep, or evaluation) config that cannot run; raised before any work."""


class TrainingStopped(RuntimeError):
    """A run stopped gracefully (signal or callback) after writing a checkpoint."""


@dataclass(frozen=True)
class StepInfo:
    """What the `train` callback sees after each update."""

    phase: str
    """"pretrain" or "train"."""
    step: int
    """Labelled (finetuning) updates so far."""
    pretrain_step: int
    """Reward-free pretraining updates so far."""
    update: int
    """Updates of both phases so far."""
    metrics: dict[str, float]
    """The metrics this update returned."""


@dataclass(frozen=True)
class TrainConfig:
    """One offline training run: algorithm x dataset x seed, and how to log, evaluate, save.

    Defaults follow the paper where it gives a value (learner hyperparameters come from the
    ``cvl_algos`` configs; ``overrides`` changes them).
    """

    dataset: str
    """Folder of the target task's dataset (``cvl_data`` format; states or pixels)."""
    out_dir: str
    """Run folder (config, logs, TensorBoard, checkpoints, results; see `cvl_eval.runs`)."""
    algorithm: str = "cvl"
    """One of `OFFLINE_ALGORITHMS`: bc, cql, cql_uds, cvl (RFF), cvl_mc (no RFF)."""
    seed: int = 0
    """Seeds the learner's networks and RNG and the samplers."""
    steps: int = 100_000
    """Gradient steps on the labelled target data (after any pretraining)."""
    task: str | None = None
    """Evaluation task; default: the dataset's. Given, it must match the dataset's task."""
    pretrain_datasets: tuple[str, ...] = ()
    """Related tasks' datasets (rewards ignored). cvl/cvl_mc: critic-only pretraining on them
    (reward-free; paper sec. 5.2); cql_uds: the shared data of UDS at reward 0."""
    pretrain_include_target: bool = True
    """cvl/cvl_mc: also pretrain on the target's own data with its rewards hidden."""
    pretrain_steps: int | None = None
    """Pretraining updates; default: the learner config's ``pretrain_steps`` (50k)."""
    label: str | None = None
    """Name of the run's algorithm in reports; default ``algorithm``, or
    ``<algorithm>_pretrained`` for CVL with pretraining data."""
    observations: Literal["auto", "state", "pixels"] = "auto"
    """Expected observation kind; a dataset of the other kind is refused."""
    hidden: tuple[int, ...] | None = None
    """Hidden widths of every network (overrides the learner config's ``hidden``)."""
    batch_size: int | None = None
    """Batch size (overrides the learner config's ``batch_size``)."""
    overrides: tuple[str, ...] = ()
    """Other learner config fields as ``key=value`` (JSON values), e.g. ``lambda_bc=0.1``."""
    device: str = "cpu"
    """``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when available)."""
    num_threads: int | None = None
    """torch CPU threads during the run (None: torch's default)."""
    log_every: int = 100
    """Log metrics (averaged over the interval) every this many updates."""
    eval_every: int = 10_000
    """Evaluate every this many labelled steps (0: only at the end)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    eval_seed: int = 100
    """Evaluation seed: every evaluation of every run uses the same episode seeds."""
    eval_max_steps: int | None = None
    """Optional episode step limit during evaluation (the env's own: 500 / 999)."""
    eval_at_start: bool = False
    """Also evaluate before the first labelled step (after any pretraining)."""
    camera: str | None = None
    """Camera of pixel evaluation; default: the dataset's (its provenance), else ``corner``."""
    checkpoint_every: int = 10_000
    """Checkpoint every this many updates (0: only the final one)."""
    keep_checkpoints: int = 1
    """Periodic checkpoints kept on disk (the newest)."""
    resume: bool = False
    """Continue the run in ``out_dir`` from its last checkpoint (a finished run is returned
    as is; a missing one starts)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    tensorboard: bool = True
    """Write TensorBoard events to ``<out_dir>/tb``."""
    verify_checksums: bool = False
    """Check the datasets' sha256 checksums when opening them (content checks always run)."""


@dataclass(frozen=True)
class Plan:
    """Everything `validate` derives from a `TrainConfig` and the datasets' specs."""

    algorithm: str
    label: str
    task: str
    pixels: bool
    obs_shape: tuple[int, ...]
    action_dim: int
    device: str
    overrides: dict[str, Any]
    pretrain_steps: int
    image_size: int
    camera: str
    dataset_spec: Any
    pretrain_specs: tuple = field(default=())

    def make_samplers(self, learner: Any, sources: dict[str, Any], seed: int) -> dict[str, Any]:
        """The samplers the learner's ``sampler_kind`` needs, seeded from ``seed``."""
        from cvl_data import ContrastiveSampler, TransitionSampler

        cfg = learner.config
        samplers = {}
        for index, (name, source) in enumerate(sources.items()):
            if source is None:
                continue
            sampler_seed = int(np.random.SeedSequence([seed, 0x5A, index]).generate_state(1)[0])
            if learner.sampler_kind == "contrastive":
                samplers[name] = ContrastiveSampler(
                    source,
                    cfg.batch_size,
                    discount=cfg.discount,
                    device=self.device,
                    mode=getattr(cfg, "sampler_mode", "uniform"),
                    seed=sampler_seed,
                )
            else:
                samplers[name] = TransitionSampler(
                    source, cfg.batch_size, device=self.device, seed=sampler_seed
                )
        return samplers

    def config_record(self, config: TrainConfig) -> dict[str, Any]:
        """What ``config.json`` holds."""
        return {
            "train_config": _as_json(config),
            "label": self.label,
            "task": self.task,
            "obs_kind": "pixels" if self.pixels else "state",
            "learner_overrides": self.overrides,
            "pretrain_steps": self.pretrain_steps,
            "versions": versions(),
        }


def _as_json(config: Any) -> dict[str, Any]:
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }


def parse_overrides(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``("lambda_bc=0.1", "hidden=[64,64]")`` -> ``{"lambda_bc": 0.1, "hidden": (64, 64)}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not of the form key=value")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out[key.strip()] = tuple(value) if isinstance(value, list) else value
    return out


def read_dataset_spec(path: str | os.PathLike) -> Any:
    """The `cvl_data.DatasetSpec` of a finished dataset folder, from its ``meta.json`` only."""
    from cvl_data import DatasetSpec

    path = Path(path)
    if not path.exists():
        partial = path.with_name(path.name + ".partial")
        if partial.exists():
            raise ConfigError(
                f"dataset {path} is not finished (an interrupted generation left {partial}); "
                "run the generation again to complete it"
            )
        raise ConfigError(f"no dataset at {path}")
    meta_file = path / "meta.json"
    if not meta_file.is_file():
        raise ConfigError(f"{path} is not a dataset folder (no meta.json)")
    try:
        return DatasetSpec.from_json(
            json.loads(meta_file.read_text())["spec"], where=str(meta_file)
        )
    except (KeyError, ValueError, TypeError) as error:
        raise ConfigError(f"{meta_file}: unreadable dataset spec ({error})") from None


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} asked for but CUDA is not available here")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"unknown device {device!r}: use cpu, cuda, cuda:N or auto")
    return device


def learner_overrides(config: TrainConfig) -> dict[str, Any]:
    from cvl_algos import learner_class

    overrides = parse_overrides(config.overrides)
    for name, value in (("hidden", config.hidden), ("batch_size", config.batch_size)):
        if value is not None:
            if name in overrides:
                raise ConfigError(f"{name} given both as a field and in overrides")
            overrides[name] = tuple(value) if name == "hidden" else value
    config_cls = learner_class(config.algorithm).config_cls
    known = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(
            f"{config.algorithm}: unknown learner config field(s) {unknown}; known: {sorted(known)}"
        )
    try:
        dataclasses.replace(config_cls(), **overrides)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{config.algorithm}: invalid learner config: {error}") from None
    return overrides


def _check_numbers(config: TrainConfig) -> None:
    checks = [
        ("steps", config.steps >= 1),
        ("log_every", config.log_every >= 1),
        ("eval_every", config.eval_every >= 0),
        ("eval_episodes", config.eval_episodes >= 1),
        ("checkpoint_every", config.checkpoint_every >= 0),
        ("keep_checkpoints", config.keep_checkpoints >= 1),
        ("pretrain_steps", config.pretrain_steps is None or config.pretrain_steps >= 0),
        ("num_threads", config.num_threads is None or config.num_threads >= 1),
        ("eval_max_steps", config.eval_max_steps is None or config.eval_max_steps >= 1),
    ]
    for name, ok in checks:
        if not ok:
            raise ConfigError(f"{name} = {getattr(config, name)} is out of range")


def _check_kind(spec: Any, path: str, config: TrainConfig) -> None:
    if config.observations != "auto" and spec.obs_kind != config.observations:
        kind = "a pixel" if spec.obs_kind == "pixels" else "a state"
        raise ConfigError(
            f"{path} is {kind} dataset (obs_kind={spec.obs_kind!r}, obs_shape={spec.obs_shape}) "
            f"but the config expects observations={config.observations!r}"
        )


def validate(config: TrainConfig) -> Plan:
    """Check ``config`` without doing any work; return the derived `Plan`.

    Raises:
        ConfigError: with a message saying what is wrong and how to fix it.
    """
    from cvl_eval.envs import canonical_name, is_metaworld

    if config.algorithm not in OFFLINE_ALGORITHMS:
        hint = " (sac is online: it generates datasets)" if config.algorithm == "sac" else ""
        raise ConfigError(
            f"unknown algorithm {config.algorithm!r}{hint}; choose one of {list(OFFLINE_ALGORITHMS)}"
        )
    _check_numbers(config)
    spec = read_dataset_spec(config.dataset)
    _check_kind(spec, config.dataset, config)
    try:
        task = canonical_name(config.task or spec.task)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if config.task is not None and canonical_name(spec.task) != task:
        raise ConfigError(f"dataset {config.dataset} holds task {spec.task!r}, not {task!r}")
    if NEEDS_REWARDS[config.algorithm] and not spec.has_rewards:
        extra = (
            "; reward-free data can only serve as pretrain_datasets of cvl/cvl_mc"
            if config.algorithm in ("cvl", "cvl_mc")
            else ""
        )
        raise ConfigError(
            f"dataset {config.dataset} has no rewards, but {config.algorithm} needs them{extra}"
        )
    if config.pretrain_datasets and config.algorithm not in PRETRAINABLE:
        raise ConfigError(
            f"{config.algorithm} takes no pretraining data; pretrain_datasets work with "
            f"{list(PRETRAINABLE)}"
        )
    pretrain_specs = []
    for path in config.pretrain_datasets:
        other = read_dataset_spec(path)
        _check_kind(other, path, config)
        if other.obs_shape != spec.obs_shape or other.action_shape != spec.action_shape:
            raise ConfigError(
                f"pretraining dataset {path} has observations {other.obs_shape} / actions "
                f"{other.action_shape}, the target {spec.obs_shape} / {spec.action_shape}"
            )
        pretrain_specs.append(other)
    overrides = learner_overrides(config)
    device = _resolve_device(config.device)
    pixels = spec.obs_kind == "pixels"
    if pixels and not is_metaworld(task):
        raise ConfigError(f"pixel evaluation exists for Meta-World tasks only, not {task}")
    pretrain_steps = _pretrain_steps(config, overrides)
    label = config.label or (
        f"{config.algorithm}_pretrained"
        if config.pretrain_datasets and config.algorithm != "cql_uds"
        else config.algorithm
    )
    provenance = spec.provenance.get("config", {}) if isinstance(spec.provenance, dict) else {}
    plan = Plan(
        algorithm=config.algorithm,
        label=label,
        task=task,
        pixels=pixels,
        obs_shape=tuple(spec.obs_shape),
        action_dim=int(np.prod(spec.action_shape)),
        device=device,
        overrides=overrides,
        pretrain_steps=pretrain_steps,
        image_size=int(spec.obs_shape[0]) if pixels else 84,
        camera=config.camera or provenance.get("camera", "corner"),
        dataset_spec=spec,
        pretrain_specs=tuple(pretrain_specs),
    )
    check_run_folder(config, RunFolder(config.out_dir))
    return plan


def _pretrain_steps(config: TrainConfig, overrides: dict[str, Any]) -> int:
    from cvl_algos import learner_class

    default = overrides.get(
        "pretrain_steps", getattr(learner_class(config.algorithm).config_cls(), "pretrain_steps", 0)
    )
    if config.algorithm in ("cvl", "cvl_mc"):
        active = bool(config.pretrain_datasets)
    elif config.algorithm == "cql_uds":
        active = not config.pretrain_datasets  # with shared data UDS trains on the union
    else:
        active = False
    if not active:
        if config.pretrain_steps:
            raise ConfigError(
                f"pretrain_steps={config.pretrain_steps} but {config.algorithm} has no "
                "pretraining phase with this data (give pretrain_datasets to cvl/cvl_mc)"
            )
        return 0
    return int(default if config.pretrain_steps is None else config.pretrain_steps)


def check_run_folder(config: TrainConfig, run: RunFolder) -> None:
    """A new run needs an empty folder; a resumed one the same config as before."""
    if not run.path.exists():
        return
    if not run.path.is_dir():
        raise ConfigError(f"out_dir {run.path} exists and is not a folder")
    if not config.resume:
        if any(run.path.iterdir()):
            raise ConfigError(
                f"out_dir {run.path} already holds a run; pass resume=True (--resume) to "
                "continue it, or choose another out_dir"
            )
        return
    if run.config.is_file():
        stored = read_json(run.config)["train_config"]
        current = _as_json(config)
        differ = sorted(
            k
            for k in set(stored) | set(current)
            if k not in _RESUME_FREE_FIELDS and stored.get(k) != current.get(k)
        )
        if differ:
            details = ", ".join(f"{k}: {stored.get(k)!r} -> {current.get(k)!r}" for k in differ)
            raise ConfigError(f"cannot resume {run.path} with a different config ({details})")


def build_sources(plan: Plan, config: TrainConfig) -> dict[str, Any]:
    """Open the datasets; ``{"train": source, "pretrain": source or None}`` for the learner."""
    from cvl_data import concat_datasets, open_dataset, reward_free

    target = open_dataset(config.dataset, verify=config.verify_checksums)
    shared = [open_dataset(p, verify=config.verify_checksums) for p in config.pretrain_datasets]
    if plan.algorithm == "cql_uds":
        from cvl_algos import uds_datasets

        uds = uds_datasets(target, shared)
        return {"train": uds.train, "pretrain": uds.pretrain if plan.pretrain_steps else None}
    pretrain = None
    if plan.pretrain_steps and shared:
        parts = ([target] if config.pretrain_include_target else []) + shared
        pretrain = concat_datasets([reward_free(p) for p in parts])
    return {"train": target, "pretrain": pretrain}
