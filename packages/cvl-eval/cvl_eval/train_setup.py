"""What a training run needs before its first update: the config, its validation, the data.

`TrainConfig` is the frozen, documented description of one run; `validate` checks it without
doing any work (it reads only ``meta.json`` files) and returns a `Plan` (everything derived
from the config and the datasets' specs); `build_sources` opens the datasets and builds the
relabelled views each algorithm trains on; `cvl_eval.training` runs the loop.

`TrainConfig`, the algorithm tables and the errors live in `cvl_eval.train_config`, the checks
`validate` runs in `cvl_eval.train_checks`; this module re-exports their public names, so
``from cvl_eval.train_setup import ConfigError, TrainConfig`` keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvl_eval.runs import RunFolder, versions
from cvl_eval.train_checks import (
    check_kind,
    check_numbers,
    check_run_folder,
    learner_overrides,
    parse_overrides,
    read_dataset_spec,
    resolve_device,
    resolve_pretrain_steps,
)
from cvl_eval.train_config import (
    NEEDS_REWARDS,
    OFFLINE_ALGORITHMS,
    PRETRAINABLE,
    TRAINER_STATE_VERSION,
    ConfigError,
    StepInfo,
    TrainConfig,
    TrainingStopped,
    config_as_json,
)

__all__ = [
    "NEEDS_REWARDS",
    "OFFLINE_ALGORITHMS",
    "PRETRAINABLE",
    "TRAINER_STATE_VERSION",
    "ConfigError",
    "Plan",
    "StepInfo",
    "TrainConfig",
    "TrainingStopped",
    "build_sources",
    "check_run_folder",
    "learner_overrides",
    "parse_overrides",
    "read_dataset_spec",
    "validate",
]


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
            if name == "train":
                source = learner.training_source(source)
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
            "train_config": config_as_json(config),
            "label": self.label,
            "task": self.task,
            "obs_kind": "pixels" if self.pixels else "state",
            "learner_overrides": self.overrides,
            "pretrain_steps": self.pretrain_steps,
            "versions": versions(),
        }


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
    check_numbers(config)
    spec = read_dataset_spec(config.dataset)
    check_kind(spec, config.dataset, config)
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
        check_kind(other, path, config)
        if other.obs_shape != spec.obs_shape or other.action_shape != spec.action_shape:
            raise ConfigError(
                f"pretraining dataset {path} has observations {other.obs_shape} / actions "
                f"{other.action_shape}, the target {spec.obs_shape} / {spec.action_shape}"
            )
        pretrain_specs.append(other)
    overrides = learner_overrides(config)
    device = resolve_device(config.device)
    pixels = spec.obs_kind == "pixels"
    if pixels and not is_metaworld(task):
        raise ConfigError(f"pixel evaluation exists for Meta-World tasks only, not {task}")
    pretrain_steps = resolve_pretrain_steps(config, overrides)
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
