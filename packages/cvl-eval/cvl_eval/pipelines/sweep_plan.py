"""A sweep's plan: the grid of `SweepConfig` as runs, one `TrainConfig` each.

`expand(SweepConfig)` checks the grid (names, repeats, overrides, backend settings) before any
dataset is read and returns its cells as `SweepRun` s, in (algorithm, task, seed) order: run
folder ``<out_dir>/<label>/<task>/seed_<k>``, dataset ``<data_root>/<task>``. The names a sweep
accepts come from the learners' declarations (`sweep_variants`): every offline algorithm of the
registry, and ``<name>_pretrained`` for a learner with related-task pretraining (pretrained on the
reward-free data of the task's related tasks found in ``data_root``; paper sec. 5.2). A learner
with ``"self"`` pretraining (``cql_uds``) is given the related tasks' data the same way, to share
(UDS). Overrides are split by scope once (`scoped_overrides`); each run gets its task's
environment defaults (`cvl_eval.envs.defaults`) before them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cvl_algos import learner_class, offline_algorithms
from cvl_algos.pretraining import has_pretraining_phase, pretrained_label
from cvl_eval.envs.defaults import learner_defaults
from cvl_eval.envs.make import config_name, require_canonical
from cvl_eval.errors import ConfigError
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.overrides import typed_overrides

__all__ = [
    "SweepConfig",
    "SweepRun",
    "SweepVariant",
    "expand",
    "override_scope",
    "overrides_of_learners_run",
    "scoped_overrides",
    "sweep_variants",
]


@dataclass(frozen=True)
class SweepConfig:
    """A grid of training runs; the settings below apply to every run of the grid."""

    data_root: str
    """Folder of the datasets: ``<data_root>/<task>`` per task (e.g. ``data/reach-v3``)."""
    out_dir: str
    """Sweep folder: runs in ``<out_dir>/<algorithm>/<task>/seed_<k>``, the index at the top."""
    algorithms: tuple[str, ...] = ("bc", "cql", "cql_uds", "cvl")
    """Algorithms (`sweep_variants`: bc, cql, cql_uds, cvl, cvl_pretrained, cvl_mc, ...)."""
    tasks: tuple[str, ...] = ("drawer-open",)
    """Tasks (Meta-World names with or without ``-v3``, kept canonical, with it; or
    MountainCarContinuous-v0)."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Seeds of every (algorithm, task); a repeated seed (or algorithm, or task) is refused."""
    workers: int = 2
    """Runs trained at the same time (one process each; with ``backend="ray"``, Ray tasks in
    flight)."""
    threads_per_run: int = 1
    """torch CPU threads of each run."""
    backend: Literal["local", "ray"] = "local"
    """``local``: processes on this machine; ``ray``: one Ray task per run (``pip install
    'cvl-eval[ray]'``; run folders and datasets on storage every node reaches)."""
    ray_address: str | None = None
    """With ``backend="ray"``: ``auto`` or ``ray://host:port`` joins a running cluster; None
    starts a local instance of ``workers * num_cpus`` CPUs for this sweep."""
    num_cpus: float | None = None
    """With ``backend="ray"``: CPUs each run reserves (None: ``threads_per_run``)."""
    num_gpus: float = 0.0
    """With ``backend="ray"``: GPUs each run reserves (fractions share one; needs ``device``
    cuda)."""
    steps: int = 100_000
    """Gradient steps on the labelled data per run."""
    pretrain_steps: int | None = None
    """Pretraining updates of cvl_pretrained / cql_uds without shared data (None: 50k)."""
    hidden: tuple[int, ...] | None = None
    """Hidden widths of every network (None: the learners' 256x256)."""
    batch_size: int | None = None
    """Batch size of every run (None: the learners' own)."""
    overrides: tuple[str, ...] = ()
    """Learner config overrides ``key=value`` for every algorithm, or ``algo:key=value`` for
    one (``cvl:lambda_bc=0.0``; ``cvl`` also covers ``cvl_pretrained``). They apply after the
    task's environment defaults (`cvl_eval.envs.defaults`: lambda_bc = 0 on Mountain Car)."""
    observations: str = "auto"
    """``auto``, ``state`` or ``pixels``: the kind of dataset every run expects."""
    device: str = "cpu"
    """Device of every run (``cuda`` runs share the GPU)."""
    log_every: int = 100
    """Metrics logging interval (updates)."""
    eval_every: int = 10_000
    """Evaluation interval (labelled steps; 0: only at the end)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    eval_max_steps: int | None = None
    """Optional episode step limit during evaluation."""
    checkpoint_every: int = 10_000
    """Checkpoint interval (updates)."""
    tensorboard: bool = True
    """Write TensorBoard events in each run folder."""
    wandb: bool = False
    """Also log every run to Weights & Biases (``pip install 'cvl-eval[wandb]'``; offline with
    ``WANDB_MODE=offline``), grouped by the sweep folder's name."""
    wandb_project: str = "cvl"
    """Weights & Biases project of the runs."""
    vectorise_seeds: bool = False
    """Train the seeds of each (algorithm, task) together in one process, one vectorised learner
    (`cvl_eval.training.seeds`; each seed equals its run alone within float rounding); then
    ``workers`` counts such groups. Runs with a pretraining phase, and learners that do not
    declare their update as stages (IQL), are trained one per process as usual. Local backend
    only. Off by default: on a CPU it pays for small networks only (docs/performance.md,
    "Many seeds, one learner")."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(config_name(t) for t in self.tasks))


@dataclass(frozen=True)
class SweepVariant:
    """What a name of ``SweepConfig.algorithms`` trains."""

    algorithm: str
    """The registered algorithm."""
    related_data: bool
    """Its runs get the related tasks' datasets found in the data root."""


def sweep_variants() -> dict[str, SweepVariant]:
    """Every name a sweep accepts, from the learners' declarations: each offline algorithm (with
    related data for ``"self"`` pretraining, to share), and `pretrained_label` of each learner
    with ``"related_tasks"`` pretraining."""
    variants = {}
    for name in offline_algorithms():
        kind = learner_class(name).pretraining
        variants[name] = SweepVariant(name, related_data=kind == "self")
        if kind == "related_tasks":
            variants[pretrained_label(name)] = SweepVariant(name, related_data=True)
    return variants


@dataclass(frozen=True)
class SweepRun:
    """One cell of the grid."""

    label: str
    task: str
    seed: int
    config: TrainConfig


def _related_datasets(data_root: Path, task: str) -> tuple[str, ...]:
    """Datasets in ``data_root`` of the tasks related to ``task`` (same domain, not itself)."""
    from cvl_data import is_dataset, related_tasks

    if not data_root.is_dir():
        return ()
    available = sorted(p.name for p in data_root.iterdir() if is_dataset(p))
    return tuple(str(data_root / name) for name in related_tasks(task, available))


def override_scope(item: str) -> tuple[str | None, str]:
    """``(algorithm, setting)`` of an override: ``"cvl:lr=1e-3"`` -> ``("cvl", "lr=1e-3")``; an
    unscoped one (``"lr=1e-3"``, or a value holding a colon) -> ``(None, item)``."""
    head, sep, rest = item.partition(":")
    if not sep or "=" in head:
        return None, item
    return head, rest


def overrides_of_learners_run(
    overrides: tuple[str, ...], algorithms: tuple[str, ...]
) -> tuple[str, ...]:
    """The ``overrides`` that a sweep of ``algorithms`` (sweep names, `sweep_variants`) would use:
    the unscoped ones and those scoped to one of their learners, in order; for shared settings
    that cover learners a sweep may not run (a sweep refuses the others, `scoped_overrides`). An
    unknown name is left for the sweep to refuse (`expand`)."""
    variants = sweep_variants()
    learners = {variants[name].algorithm for name in algorithms if name in variants}
    return tuple(item for item in overrides if override_scope(item)[0] in (None, *learners))


def scoped_overrides(
    overrides: tuple[str, ...], algorithms: set[str]
) -> dict[str, tuple[str, ...]]:
    """The sweep's overrides that apply to each of ``algorithms``: the unscoped ones and
    ``algorithm:...``, in the order given; each split once, checked (a scope names one of
    ``algorithms``, which reaches a run; a value converts to its field's type,
    `typed_overrides`) before any dataset is read."""
    registered = offline_algorithms()
    per_algorithm: dict[str, list[str]] = {name: [] for name in sorted(algorithms)}
    for item in overrides:
        head, rest = override_scope(item)
        if head is None:
            for items in per_algorithm.values():
                items.append(item)
            continue
        if head not in registered:
            raise ConfigError(
                f"override {item!r}: {head!r} is not an offline algorithm; scope with one of "
                f"{list(registered)} (cvl: also covers cvl_pretrained)"
            )
        if head not in per_algorithm:
            raise ConfigError(
                f"override {item!r}: the sweep does not run {head!r} (its learners: "
                f"{sorted(per_algorithm)}), so no run would use it; add it to the algorithms "
                "or drop the override"
            )
        per_algorithm[head].append(rest)
    for name, items in per_algorithm.items():
        typed_overrides(learner_class(name).config_cls, tuple(items), name)
    return {name: tuple(items) for name, items in per_algorithm.items()}


def _env_overrides(task: str, algorithm: str) -> tuple[str, ...]:
    """The learner settings of the task's environment (`cvl_eval.envs.defaults`) as overrides."""
    fields = learner_defaults(task, learner_class(algorithm).config_cls)
    return tuple(f"{key}={json.dumps(value)}" for key, value in fields.items())


def _check_backend(config: SweepConfig) -> None:
    """Ray's settings only with ``backend="ray"``, in range; GPUs only for CUDA runs."""
    if config.backend not in ("local", "ray"):
        raise ConfigError(f"backend must be 'local' or 'ray', not {config.backend!r}")
    if config.vectorise_seeds and config.backend != "local":
        raise ConfigError("vectorise_seeds trains seeds in one local process: use --backend local")
    ray_fields = {"ray_address": None, "num_cpus": None, "num_gpus": 0.0}
    if config.backend == "local":
        set_fields = [k for k, v in ray_fields.items() if getattr(config, k) != v]
        if set_fields:
            raise ConfigError(f"{', '.join(set_fields)} only apply with --backend ray")
        return
    if config.num_cpus is not None and not config.num_cpus > 0:
        raise ConfigError(f"num_cpus must be > 0, got {config.num_cpus}")
    if not config.num_gpus >= 0:
        raise ConfigError(f"num_gpus must be >= 0, got {config.num_gpus}")
    if config.num_gpus > 0 and not config.device.startswith("cuda"):
        raise ConfigError(
            f"num_gpus {config.num_gpus} reserves GPUs for runs on device "
            f"{config.device!r}; pass --device cuda"
        )
    from cvl_eval.pipelines.sweep_ray import import_ray

    import_ray()  # installed? (a ConfigError saying how, before any work)


def expand(config: SweepConfig) -> list[SweepRun]:
    """The grid as runs, in (algorithm, task, seed) order; validates names and combinations."""
    if config.workers < 1 or config.threads_per_run < 1:
        raise ConfigError("workers and threads_per_run must be >= 1")
    _check_backend(config)
    if not config.algorithms or not config.tasks or not config.seeds:
        raise ConfigError("a sweep needs at least one algorithm, task and seed")
    variants = sweep_variants()
    for name in config.algorithms:
        if name not in variants:
            raise ConfigError(f"unknown algorithm {name!r}; choose from {list(variants)}")
    overrides = scoped_overrides(
        config.overrides, {variants[label].algorithm for label in config.algorithms}
    )
    try:
        tasks = [require_canonical(task) for task in config.tasks]
    except ValueError as error:
        raise ConfigError(str(error)) from None
    for flag, values in (
        ("algorithms", config.algorithms),
        ("tasks", tasks),
        ("seeds", config.seeds),
    ):
        repeated = sorted({str(v) for v in values if list(values).count(v) > 1})
        if repeated:  # one folder per run: a repeat would train it twice, or race itself
            raise ConfigError(f"--{flag}: {', '.join(repeated)} given more than once")
    return [
        _run(config, label, variants[label], overrides, task, int(seed))
        for label in config.algorithms
        for task in tasks
        for seed in config.seeds
    ]


def _run(
    config: SweepConfig,
    label: str,
    variant: SweepVariant,
    overrides: dict[str, tuple[str, ...]],
    task: str,
    seed: int,
) -> SweepRun:
    """One cell: its data (and related tasks' data where the variant takes it), its folder, its
    overrides (``overrides``: `scoped_overrides` by algorithm)."""
    data_root = Path(config.data_root)
    kind = learner_class(variant.algorithm).pretraining
    shared = _related_datasets(data_root, task) if variant.related_data else ()
    include_target = True
    if variant.related_data and kind == "related_tasks" and not shared:
        # No related task in the data: pretrain on the target's own reward-free data.
        shared, include_target = (str(data_root / task),), False
    phase = has_pretraining_phase(kind, bool(shared))
    train_config = TrainConfig(
        dataset=str(data_root / task),
        out_dir=str(Path(config.out_dir) / label / task / f"seed_{seed}"),
        algorithm=variant.algorithm,
        seed=seed,
        steps=config.steps,
        task=task,
        pretrain_datasets=shared,
        pretrain_include_target=include_target,
        pretrain_steps=config.pretrain_steps if phase else None,
        label=label,
        observations=config.observations,  # type: ignore[arg-type]
        hidden=config.hidden,
        batch_size=config.batch_size,
        overrides=(
            *_env_overrides(task, variant.algorithm),
            *overrides[variant.algorithm],
        ),
        device=config.device,
        num_threads=config.threads_per_run,
        log_every=config.log_every,
        eval_every=config.eval_every,
        eval_episodes=config.eval_episodes,
        eval_max_steps=config.eval_max_steps,
        checkpoint_every=config.checkpoint_every,
        resume=True,
        progress=False,
        tensorboard=config.tensorboard,
        wandb=config.wandb,
        wandb_project=config.wandb_project,
        wandb_group=Path(config.out_dir).resolve().name if config.wandb else None,
    )
    return SweepRun(label, task, seed, train_config)
