"""What a training run needs before its first update: its validation, its plan, its data.

`validate` checks a `TrainConfig` without doing any work (it reads only ``meta.json`` files) and
returns a `Plan` (everything derived from the config, the datasets' specs and the learner class's
declarations); `Plan.sources` opens the datasets and builds the views of the run's phases (the
learner's `training_data`); `Plan.samplers` builds the samplers the learner asks for
(`make_sampler`). `cvl_eval.training.loop` runs the plan.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cvl_algos.pretraining import pretrained_label
from cvl_data.jsonio import package_versions, to_json_data
from cvl_eval.envs.make import canonical_name, check_camera, is_metaworld, require_canonical
from cvl_eval.errors import ConfigError
from cvl_eval.runs.folder import RunFolder
from cvl_eval.training.checks import (
    check_algorithm,
    check_data,
    check_kind,
    check_loggers,
    check_neighbour_data,
    check_numbers,
    check_run_folder,
    check_weighted_data,
    data_identity,
    learner_overrides,
    read_dataset_spec,
    read_pretrain_specs,
    resolve_device,
    resolve_pretrain_steps,
)
from cvl_eval.training.config import TrainConfig

__all__ = ["RUN_VERSIONS", "Plan", "validate"]

RUN_VERSIONS = ("cvl-data", "cvl-models", "cvl-algos", "cvl-eval", "torch", "metaworld")
"""Packages whose versions every run folder records (``config.json``)."""


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
    learner_cls: type
    pretrain_specs: tuple = field(default=())
    data_identity: dict[str, Any] = field(default_factory=dict)
    """Content fingerprints of the datasets (`cvl_eval.training.checks.data_identity`)."""

    def sources(self, config: TrainConfig, learner: Any) -> dict[str, Any]:
        """Open the datasets: ``{"train": source, "pretrain": source or None}`` (the learner's
        `training_data`; no pretraining source when the run has no such phase)."""
        from cvl_data import open_dataset

        target = open_dataset(config.dataset, verify=config.verify_checksums)
        related = [
            open_dataset(p, verify=config.verify_checksums) for p in config.pretrain_datasets
        ]
        data = learner.training_data(target, related, config.pretrain_include_target)
        return {"train": data.train, "pretrain": data.pretrain if self.pretrain_steps else None}

    def samplers(
        self, learner: Any, sources: dict[str, Any], seed: int, progress: bool
    ) -> dict[str, Any]:
        """The learner's samplers (`make_sampler`) over the sources, seeded from ``seed``; a
        neighbour search over `LONG_SEARCH_STEPS` steps or more shows a bar if ``progress``."""
        samplers = {}
        for index, (name, source) in enumerate(sources.items()):
            if source is None:
                continue
            sampler_seed = int(np.random.SeedSequence([seed, 0x5A, index]).generate_state(1)[0])
            with _search_bar(learner, source, name, progress) as report:
                samplers[name] = learner.make_sampler(source, self.device, sampler_seed, report)
        return samplers

    def config_record(self, config: TrainConfig) -> dict[str, Any]:
        """What ``config.json`` holds."""
        return {
            "train_config": to_json_data(config),
            "label": self.label,
            "task": self.task,
            "obs_kind": "pixels" if self.pixels else "state",
            "learner_overrides": self.overrides,
            "pretrain_steps": self.pretrain_steps,
            "data_identity": self.data_identity,
            "versions": package_versions(RUN_VERSIONS),
        }


LONG_SEARCH_STEPS = 100_000
"""Data from this many steps up shows a bar over its neighbour search (`cvl_data.neighbours`, one
N^2 pass when a sampler is built: about 35 s at 100k steps on 2 CPU threads, 15 min at 500k)."""


@contextlib.contextmanager
def _search_bar(
    learner: Any, source: Any, name: str, progress: bool
) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar (steps/s, ETA) over the neighbourhood cap's search while the sampler of
    ``source`` is built; yields its update function, or None when the search is short, absent
    or ``progress`` is off."""
    k = getattr(learner.config, "bc_q_cap_neighbours", 0)
    if not (progress and k and source.num_steps >= LONG_SEARCH_STEPS):
        yield None
        return
    from tqdm import tqdm

    with tqdm(
        total=source.num_steps,
        desc=f"{name} data: the {k} nearest steps of other episodes",
        unit="step",
        dynamic_ncols=True,
        mininterval=0.5,
    ) as bar:
        yield bar.update


def validate(config: TrainConfig) -> Plan:
    """Check ``config`` without doing any work; return the derived `Plan`.

    Raises:
        ConfigError: with a message saying what is wrong and how to fix it.
    """
    learner_cls = check_algorithm(config)
    check_numbers(config)
    check_loggers(config)
    spec = read_dataset_spec(config.dataset)
    check_kind(spec, config.dataset, config)
    task = _task(config, spec)
    check_data(learner_cls, spec, config)
    pretrain_specs = read_pretrain_specs(spec, config)
    overrides = learner_overrides(config)
    check_weighted_data(spec, config, overrides)
    device = resolve_device(config.device)
    pixels = spec.obs_kind == "pixels"
    if pixels and not is_metaworld(task):
        raise ConfigError(f"pixel evaluation exists for Meta-World tasks only, not {task}")
    pretrain_steps = resolve_pretrain_steps(learner_cls, config, overrides)
    check_neighbour_data(spec, config, overrides, pretrain=pretrain_steps > 0)
    label = config.label or config.algorithm
    if (
        config.label is None
        and config.pretrain_datasets
        and learner_cls.pretraining == "related_tasks"
    ):
        label = pretrained_label(config.algorithm)
    provenance = spec.provenance.get("config", {}) if isinstance(spec.provenance, dict) else {}
    camera = config.camera or provenance.get("camera", "corner")
    if pixels:  # every evaluation setting is checked before the first update
        try:
            check_camera(task, camera)
        except ValueError as error:
            raise ConfigError(f"--camera: {error}") from None
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
        camera=camera,
        dataset_spec=spec,
        learner_cls=learner_cls,
        pretrain_specs=pretrain_specs,
        data_identity=data_identity(config),
    )
    check_run_folder(config, RunFolder(config.out_dir), plan.data_identity)
    return plan


def _task(config: TrainConfig, spec: Any) -> str:
    """The evaluation task: the config's (settled by `TrainConfig`; it must be the dataset's) or
    the dataset's (a name that enters here, as the dataset file spells it)."""
    try:
        task = require_canonical(config.task) if config.task is not None else None
        stored = canonical_name(spec.task)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if task is not None and stored != task:
        raise ConfigError(f"dataset {config.dataset} holds task {spec.task!r}, not {task!r}")
    return stored
