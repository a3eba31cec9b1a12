"""Checks of the parts of a `TrainConfig`, each raising `ConfigError` with what to fix.

`cvl_eval.training.plan.validate` runs them all: the algorithm (`check_algorithm`), numbers in
range (`check_numbers`), optional loggers installed (`check_loggers`), learner overrides (`learner_overrides`, typed by
`cvl_eval.training.overrides`), datasets read from their ``meta.json`` only
(`read_dataset_spec`, `check_kind`, `check_data`; the episode sizes the policy step's
neighbour search needs, `check_neighbour_data`), the device (`resolve_device`), the
pretraining budget (`resolve_pretrain_steps`) and the run folder (`check_run_folder`). What an algorithm accepts comes from its learner class's declarations.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import numpy as np

from cvl_algos import learner_class, offline_algorithms
from cvl_algos.pretraining import has_pretraining_phase
from cvl_data.jsonio import to_json_data
from cvl_eval.errors import ConfigError, check_ranges
from cvl_eval.runs.config_changes import changed_fields, config_defaults
from cvl_eval.runs.folder import RunFolder, read_json
from cvl_eval.runs.lock import LOCK_FILE, check_not_locked
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.overrides import typed_overrides

# Fields that may change when a stopped run is resumed (they do not change the result). The
# run folder is where it is found (``out_dir``): a moved run folder resumes.
RESUME_FREE_FIELDS = (
    "resume",
    "progress",
    "num_threads",
    "tensorboard",
    "wandb",
    "wandb_project",
    "wandb_group",
    "out_dir",
)
# Fields holding paths: compared as resolved paths (``./data/x`` is ``data/x``).
PATH_FIELDS = ("dataset", "pretrain_datasets")


def read_dataset_spec(path: str | os.PathLike) -> Any:
    """The `cvl_data.DatasetSpec` of a finished dataset folder, from its metadata only."""
    from cvl_data import DatasetError, read_spec

    try:
        return read_spec(path)
    except DatasetError as error:
        raise ConfigError(str(error)) from None


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when available, else ``cpu``; refuses CUDA where there is none."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} asked for but CUDA is not available here")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"unknown device {device!r}: use cpu, cuda, cuda:N or auto")
    return device


def learner_overrides(config: TrainConfig) -> dict[str, Any]:
    """The learner config fields the run changes (``overrides``, ``hidden``, ``batch_size``),
    each converted to its field's declared type (`cvl_eval.training.overrides`) and checked
    against the algorithm's config class."""
    config_cls = learner_class(config.algorithm).config_cls
    overrides = typed_overrides(config_cls, config.overrides, config.algorithm)
    for name, value in (("hidden", config.hidden), ("batch_size", config.batch_size)):
        if value is not None:
            if name in overrides:
                raise ConfigError(f"{name} given both as a field and in overrides")
            overrides[name] = tuple(value) if name == "hidden" else value
    try:
        learner_config = dataclasses.replace(config_cls(), **overrides)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{config.algorithm}: invalid learner config: {error}") from None
    _check_sizes(learner_config, config.algorithm)
    return overrides


def _check_sizes(learner_config: Any, algorithm: str) -> None:
    """Network widths and the batch size are positive (``--hidden``, ``--batch-size`` or an
    override) and learning rates finite and positive, refused here rather than deep inside the
    first network, sampler or optimiser."""
    hidden = getattr(learner_config, "hidden", None)
    if hidden is not None and any(int(width) < 1 for width in hidden):
        raise ConfigError(
            f"{algorithm}: hidden = {list(hidden)}: every width must be >= 1 (--hidden or "
            "override hidden)"
        )
    batch_size = getattr(learner_config, "batch_size", None)
    if batch_size is not None and batch_size < 1:
        raise ConfigError(
            f"{algorithm}: batch_size = {batch_size} is out of range: expected >= 1 "
            "(--batch-size or override batch_size)"
        )
    for name in (f.name for f in dataclasses.fields(learner_config)):
        value = getattr(learner_config, name)
        if (name == "lr" or name.endswith("_lr")) and not (0 < value < math.inf):
            raise ConfigError(
                f"{algorithm}: {name} = {value} is out of range: a learning rate must be a "
                f"finite number > 0 (--overrides {name}=...)"
            )


def check_numbers(config: TrainConfig) -> None:
    """Budgets, intervals and counts within their ranges."""

    def optional(value: int | None, least: int) -> bool:
        return value is None or value >= least

    check_ranges(
        config,
        {
            "seed": (config.seed >= 0, ">= 0"),
            "eval_seed": (config.eval_seed >= 0, ">= 0"),
            "steps": (config.steps >= 1, ">= 1"),
            "log_every": (config.log_every >= 1, ">= 1"),
            "eval_every": (config.eval_every >= 0, ">= 0"),
            "eval_episodes": (config.eval_episodes >= 1, ">= 1"),
            "checkpoint_every": (config.checkpoint_every >= 0, ">= 0"),
            "keep_checkpoints": (config.keep_checkpoints >= 1, ">= 1"),
            "pretrain_steps": (optional(config.pretrain_steps, 0), ">= 0"),
            "num_threads": (optional(config.num_threads, 1), ">= 1"),
            "eval_max_steps": (optional(config.eval_max_steps, 1), ">= 1"),
        },
    )


def check_loggers(config: TrainConfig) -> None:
    """The optional loggers asked for are installed (``wandb``)."""
    if config.wandb:
        from cvl_eval.training.wandb_sink import import_wandb

        import_wandb()


def check_kind(spec: Any, path: str, config: TrainConfig) -> None:
    """The dataset at ``path`` holds the observation kind ``config.observations`` expects."""
    if config.observations != "auto" and spec.obs_kind != config.observations:
        kind = "a pixel" if spec.obs_kind == "pixels" else "a state"
        raise ConfigError(
            f"{path} is {kind} dataset (obs_kind={spec.obs_kind!r}, obs_shape={spec.obs_shape}) "
            f"but the config expects observations={config.observations!r}"
        )


def check_algorithm(config: TrainConfig) -> type:
    """The learner class of ``config.algorithm``, an offline algorithm of the registry."""
    from cvl_algos import ALGORITHMS

    offline = offline_algorithms()
    if config.algorithm not in offline:
        online = config.algorithm in ALGORITHMS
        hint = f" ({config.algorithm} is online: it generates datasets)" if online else ""
        raise ConfigError(
            f"unknown algorithm {config.algorithm!r}{hint}; choose one of {list(offline)}"
        )
    return learner_class(config.algorithm)


def check_data(learner_cls: type, spec: Any, config: TrainConfig) -> None:
    """The target has rewards where the learner needs them; related data only where the learner
    has a pretraining phase."""
    name = config.algorithm
    if learner_cls.needs_rewards and not spec.has_rewards:
        extra = ""
        if learner_cls.pretraining == "related_tasks":
            extra = f"; reward-free data can only serve as pretrain_datasets of {name}"
        raise ConfigError(f"dataset {config.dataset} has no rewards, but {name} needs them{extra}")
    if config.pretrain_datasets and learner_cls.pretraining == "none":
        takers = [a for a in offline_algorithms() if learner_class(a).pretraining != "none"]
        raise ConfigError(f"{name} takes no pretraining data; pretrain_datasets work with {takers}")


def check_weighted_data(spec: Any, config: TrainConfig, overrides: dict[str, Any]) -> None:
    """The target has rewards where the checked `learner_overrides` weigh its episodes by
    return (``return_weight_temperature``, for any learner that takes it)."""
    if overrides.get("return_weight_temperature") is not None and not spec.has_rewards:
        raise ConfigError(
            f"dataset {config.dataset} has no rewards, but return_weight_temperature weighs "
            f"its episodes by return"
        )


def check_neighbour_data(
    spec: Any, config: TrainConfig, overrides: dict[str, Any], pretrain: bool
) -> None:
    """Each source the learner samples (the target; with a pretraining phase, ``pretrain``,
    also the related datasets, with the target when ``pretrain_include_target``) has at least
    ``bc_q_cap_neighbours`` steps outside its longest episode, where the checked
    `learner_overrides` cap the policy step's Q at each state's nearest steps of other episodes
    (`cvl_data.neighbours`), state observations and no more than `MAX_NEIGHBOUR_STEPS` steps.
    Reads the episode offsets only."""
    k = overrides.get("bc_q_cap_neighbours") or 0
    if not k:
        return
    if spec.obs_kind != "state":
        raise ConfigError(
            f"dataset {config.dataset} holds {spec.obs_kind} observations, but "
            f"bc_q_cap_neighbours={k} searches nearest states: use state data or 0"
        )
    from cvl_data import DatasetError, episode_lengths
    from cvl_data.neighbours import MAX_NEIGHBOUR_STEPS

    try:
        target = episode_lengths(config.dataset)
        related = [episode_lengths(path) for path in config.pretrain_datasets if pretrain]
    except DatasetError as error:
        raise ConfigError(str(error)) from None
    sources = {f"dataset {config.dataset}": target}
    if related:
        union = [*related, target] if config.pretrain_include_target else related
        sources["the pretraining data"] = np.concatenate(union)
    for name, lengths in sources.items():
        others = int(lengths.sum() - lengths.max())
        if lengths.sum() > MAX_NEIGHBOUR_STEPS:
            raise ConfigError(
                f"{name} has {int(lengths.sum())} steps, but bc_q_cap_neighbours={k} searches "
                f"every pair of steps exactly, at most {MAX_NEIGHBOUR_STEPS} steps: use less "
                "data or bc_q_cap_neighbours=0"
            )
        if k > others:
            raise ConfigError(
                f"{name} has {others} steps outside its longest episode ({len(lengths)} "
                f"episodes), but bc_q_cap_neighbours={k} caps each state's Q at its {k} nearest "
                "steps of other episodes: use more episodes or a smaller bc_q_cap_neighbours "
                "(0 turns the cap's neighbours off)"
            )


def read_pretrain_specs(spec: Any, config: TrainConfig) -> tuple[Any, ...]:
    """The specs of the related tasks' datasets: of the expected kind, with the target's
    observation and action shapes."""
    specs = []
    for path in config.pretrain_datasets:
        other = read_dataset_spec(path)
        check_kind(other, path, config)
        if other.obs_shape != spec.obs_shape or other.action_shape != spec.action_shape:
            raise ConfigError(
                f"pretraining dataset {path} has observations {other.obs_shape} / actions "
                f"{other.action_shape}, the target {spec.obs_shape} / {spec.action_shape}"
            )
        specs.append(other)
    return tuple(specs)


def resolve_pretrain_steps(
    learner_cls: type, config: TrainConfig, overrides: dict[str, Any]
) -> int:
    """Pretraining updates of the run (0 where the learner has no pretraining phase with this
    data, `cvl_algos.pretraining.has_pretraining_phase`; an explicit ``pretrain_steps`` is
    refused there)."""
    if not has_pretraining_phase(learner_cls.pretraining, bool(config.pretrain_datasets)):
        if config.pretrain_steps:
            raise ConfigError(
                f"pretrain_steps={config.pretrain_steps} but {config.algorithm} has no "
                "pretraining phase with this data (related-task pretraining needs "
                "pretrain_datasets)"
            )
        return 0
    if config.pretrain_steps is not None:
        return int(config.pretrain_steps)
    return int(overrides.get("pretrain_steps", learner_cls.config_cls().pretrain_steps))


def data_identity(config: TrainConfig) -> dict[str, Any]:
    """The content fingerprints of the run's datasets (`cvl_data.dataset_fingerprint`, from their
    metadata): what ``config.json`` records, and what a resume must find again."""
    from cvl_data import DatasetError, dataset_fingerprint

    try:
        return {
            "dataset": dataset_fingerprint(config.dataset),
            "pretrain_datasets": [dataset_fingerprint(p) for p in config.pretrain_datasets],
        }
    except DatasetError as error:
        raise ConfigError(str(error)) from None


def check_run_folder(
    config: TrainConfig, run: RunFolder, identity: dict[str, Any] | None = None
) -> None:
    """A new run needs an empty folder; a resumed one the same config (and, given ``identity``,
    the same data) as before; neither a folder another process trains in
    (`cvl_eval.runs.lock`)."""
    if not run.path.exists():
        return
    if not run.path.is_dir():
        raise ConfigError(f"out_dir {run.path} exists and is not a folder")
    check_not_locked(run.path)
    check_run_contents(config, run, identity)


def check_run_contents(
    config: TrainConfig, run: RunFolder, identity: dict[str, Any] | None = None
) -> None:
    """The existing folder ``run`` is empty (a new run) or holds a run of the same config (a
    resumed one) on the same data (`check_same_data`); `check_run_folder` without the lock, for
    its holder."""
    if not config.resume:
        if any(p.name != LOCK_FILE for p in run.path.iterdir()):
            raise ConfigError(
                f"out_dir {run.path} already holds a run; pass resume=True (--resume) to "
                "continue it, or choose another out_dir"
            )
        return
    if run.config.is_file():
        stored = _stored_train_config(run)
        current = to_json_data(config)
        defaults = config_defaults(TrainConfig)  # fields added since the run was recorded
        differ = changed_fields(
            _comparable_config(stored),
            _comparable_config(current),
            RESUME_FREE_FIELDS,
            _comparable_config(defaults),
        )
        if differ:
            details = ", ".join(
                f"{k}: {stored.get(k, old)!r} -> {current.get(k)!r}"
                for k, (old, _) in differ.items()
            )
            raise ConfigError(f"cannot resume {run.path} with a different config ({details})")
        if identity is not None:
            check_same_data(run, config, identity)


def check_same_data(run: RunFolder, config: TrainConfig, identity: dict[str, Any]) -> None:
    """The datasets a resumed run reads hold the content it started on (``data_identity`` of its
    ``config.json``; a run folder from before that record is not checked)."""
    recorded = read_json(run.config).get("data_identity")
    if not isinstance(recorded, dict):
        return
    paths = {"dataset": [config.dataset], "pretrain_datasets": list(config.pretrain_datasets)}
    for key, now in identity.items():
        before = recorded.get(key)
        before = before if isinstance(before, list) else [before]
        for index, fingerprint in enumerate(now if isinstance(now, list) else [now]):
            if index >= len(before) or before[index] != fingerprint:
                old = before[index] if index < len(before) else None
                raise ConfigError(
                    f"cannot resume {run.path}: {paths[key][index]} is not the data the run "
                    f"started on (content fingerprint {str(old)[:12]} recorded in {run.config} "
                    f"(field 'data_identity.{key}'), now {fingerprint[:12]}); put that data "
                    "back, or train on the new data in another out_dir"
                )


def _stored_train_config(run: RunFolder) -> dict[str, Any]:
    """The ``train_config`` of the run's ``config.json`` (a `ConfigError` naming the file)."""
    import json

    try:
        stored = read_json(run.config)["train_config"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{run.config}: not a run config ({type(error).__name__}: {error}); cannot resume"
        ) from None
    if not isinstance(stored, dict):
        raise ConfigError(f"{run.config} (field 'train_config'): expected an object")
    return stored


def _comparable_config(config: dict[str, Any]) -> dict[str, Any]:
    return {key: _comparable(key, value) for key, value in config.items()}


def _comparable(key: str, value: Any) -> Any:
    """``value`` of config field ``key`` as resume compares it: paths resolved."""
    if key not in PATH_FIELDS or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [os.path.realpath(v) for v in value]
    return os.path.realpath(value)
