"""Sweeps: algorithms x tasks x seeds as parallel local processes, resumable, with an index.

`sweep(SweepConfig)` expands the grid into runs (one `TrainConfig` each, run folder
``<out_dir>/<label>/<task>/seed_<k>``), skips finished runs (a run is finished when its
``results.json`` exists), and launches the others as up to ``workers`` processes at a time
(``multiprocessing`` spawn: each a fresh interpreter that calls `cvl_eval.training.loop.train` with
``resume=True``, its output in ``<run>/train.log``; with ``vectorise_seeds`` one process trains
the seeds of an (algorithm, task) together, `cvl_eval.training.seeds`; `cvl_eval.pipelines.sweep_worker`: it dies
with the sweep, and a failure leaves its traceback in the log). A run interrupted earlier continues
from its last checkpoint. At the end ``index.json`` and ``index.csv`` list every finished run and
``sweep.json`` (and ``index.json``) record what this call did, each failed run with its error
line, log and config. Every run's config is validated before any process starts.

Datasets come from ``data_root``: the dataset of task ``t`` is ``<data_root>/<t>`` (as
`cvl_eval.datagen` writes them, e.g. ``data/drawer-open-v3``). The names a sweep accepts come
from the learners' declarations (`sweep_variants`): every offline algorithm of the registry, and
``<name>_pretrained`` for a learner with related-task pretraining (``cvl_pretrained``: CVL
pretrained on the reward-free data of the task's related tasks, same domain, found in
``data_root``; paper sec. 5.2). A learner with ``"self"`` pretraining (``cql_uds``) is given the
related tasks' data the same way, to share (UDS).

``backend="ray"`` submits each run as a Ray task instead (`cvl_eval.pipelines.sweep_ray`: a local
instance, or a cluster at ``ray_address``; ``num_cpus`` / ``num_gpus`` reserved per run); the
guarantees above hold there too, with the run folders on storage every node reaches.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from cvl_algos import learner_class, offline_algorithms
from cvl_algos.pretraining import has_pretraining_phase, pretrained_label
from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.envs.defaults import learner_defaults
from cvl_eval.envs.make import canonical_name
from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.sweep_worker import failure_record, train_in_child
from cvl_eval.runs.folder import RunFolder
from cvl_eval.runs.index import find_runs, write_index
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.overrides import typed_overrides
from cvl_eval.training.plan import validate

__all__ = ["SweepConfig", "SweepRun", "SweepVariant", "expand", "sweep", "sweep_variants"]


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
    """Tasks (Meta-World names with or without ``-v3``, or MountainCarContinuous-v0)."""
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
    only. Off by default: on a CPU it pays for small networks only (README, "Many seeds, one
    learner")."""


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


def _overrides_for(algorithm: str, overrides: Sequence[str]) -> tuple[str, ...]:
    """The sweep's overrides that apply to ``algorithm``: unscoped ones and ``algorithm:...``."""
    out = []
    for item in overrides:
        head, sep, rest = item.partition(":")
        if sep and "=" not in head:
            if head == algorithm:
                out.append(rest)
        else:
            out.append(item)
    return tuple(out)


def _check_overrides(config: SweepConfig, variants: dict[str, SweepVariant]) -> None:
    """Every override names a registered algorithm (when scoped) and converts to the field type
    of each algorithm it applies to (`typed_overrides`), before any dataset is read."""
    algorithms = offline_algorithms()
    for item in config.overrides:
        head, sep, _ = item.partition(":")
        if sep and "=" not in head and head not in algorithms:
            raise ConfigError(
                f"override {item!r}: {head!r} is not an offline algorithm; scope with one of "
                f"{list(algorithms)} (cvl: also covers cvl_pretrained)"
            )
    for name in sorted({variants[label].algorithm for label in config.algorithms}):
        typed_overrides(
            learner_class(name).config_cls, _overrides_for(name, config.overrides), name
        )


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
    _check_overrides(config, variants)
    try:
        tasks = [canonical_name(task) for task in config.tasks]
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
        _run(config, label, variants[label], task, int(seed))
        for label in config.algorithms
        for task in tasks
        for seed in config.seeds
    ]


def _run(config: SweepConfig, label: str, variant: SweepVariant, task: str, seed: int) -> SweepRun:
    """One cell: its data (and related tasks' data where the variant takes it), its folder."""
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
            *_overrides_for(variant.algorithm, config.overrides),
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


def sweep(config: SweepConfig, progress: bool = True) -> dict[str, Any]:
    """Run (or continue) the sweep; returns what ``sweep.json`` records.

    Raises:
        ConfigError: a bad grid or run config, before any process starts.
        RuntimeError: some runs failed (the others completed; see their ``train.log``).
    """
    if config.backend == "ray":  # every node finds the folders by the same absolute path
        config = replace(
            config,
            data_root=str(Path(config.data_root).resolve()),
            out_dir=str(Path(config.out_dir).resolve()),
        )
    runs = expand(config)
    for run in runs:
        validate(run.config)
    finished = [r for r in runs if RunFolder(r.config.out_dir).finished]
    todo = [r for r in runs if not RunFolder(r.config.out_dir).finished]
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for run in todo:
        RunFolder(run.config.out_dir).path.mkdir(parents=True, exist_ok=True)
    outcomes = _Outcomes(len(runs), len(finished), progress)
    previous = _exit_on_sigterm()  # a SIGTERM stops the runs gracefully (they checkpoint)
    try:
        if config.backend == "ray":
            _run_on_ray(todo, config, outcomes)
        else:
            _run_processes(_jobs(todo, config.vectorise_seeds), config.workers, outcomes)
    finally:
        outcomes.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    completed, failed = outcomes.completed, outcomes.failed
    extra = {"sweep_config": to_json_data(config), "failed": failed}
    paths = write_index(find_runs(out), out, extra=extra)
    record = {
        "runs": len(runs),
        "skipped_finished": [r.config.out_dir for r in finished],
        "completed": completed,
        "failed": failed,
        "index_json": str(paths["json"]),
        "index_csv": str(paths["csv"]),
    }
    write_json_atomic(out / "sweep.json", record)
    if failed:
        raise RuntimeError(
            f"{len(failed)} of {len(todo)} runs failed (tracebacks in their train.log; "
            f"errors and configs in {out / 'sweep.json'}): "
            + "; ".join(f"{f['run']}: {f['error']}" for f in failed)
        )
    return record


class _Outcomes:
    """The runs a sweep completed and those that failed, with the progress bar."""

    def __init__(self, total: int, finished: int, progress: bool) -> None:
        from tqdm import tqdm

        self.completed: list[str] = []
        self.failed: list[dict[str, Any]] = []
        self.bar = tqdm(
            total=total, initial=finished, desc="sweep", unit="run", disable=not progress
        )

    def record(self, run: SweepRun, exitcode: int | None, error: str | None = None) -> None:
        """A run has ended: completed when it exited 0 and wrote its results, else failed."""
        if exitcode == 0 and RunFolder(run.config.out_dir).finished:
            self.completed.append(run.config.out_dir)
            self.bar.update(1)
        else:
            self.failed.append(failure_record(run.config, exitcode, error))
        self.bar.set_postfix(failed=len(self.failed), refresh=False)

    def close(self) -> None:
        self.bar.close()


def _jobs(todo: list[SweepRun], vectorise_seeds: bool) -> list[list[SweepRun]]:
    """The processes to start: one run each, or with ``vectorise_seeds`` the seeds of each
    (label, task) together where the learner can take them (`cvl_eval.training.seeds`)."""
    if not vectorise_seeds:
        return [[run] for run in todo]
    groups: dict[tuple, list[SweepRun]] = {}
    for run in todo:
        together = (
            not run.config.pretrain_datasets
            and learner_class(run.config.algorithm).declares_stages()
        )
        key = (run.label, run.task) if together else (run.label, run.task, run.seed)
        groups.setdefault(key, []).append(run)
    return list(groups.values())


def _run_processes(jobs: list[list[SweepRun]], workers: int, outcomes: _Outcomes) -> None:
    """Train ``jobs`` (each one run, or several seeds trained together) in up to ``workers``
    processes at a time. On an interruption (SIGTERM, Ctrl-C) the running children are stopped
    gracefully (they checkpoint)."""
    context = multiprocessing.get_context("spawn")
    running: list[tuple[list[SweepRun], Any]] = []
    queue = list(jobs)
    try:
        while queue or running:
            while queue and len(running) < workers:
                job = queue.pop(0)
                configs = [run.config for run in job]
                log = str(RunFolder(configs[0].out_dir).log)
                process = context.Process(
                    target=train_in_child, args=(configs, log, os.getpid()), daemon=False
                )
                process.start()
                running.append((job, process))
            time.sleep(0.2)
            for item in list(running):
                job, process = item
                if process.is_alive():
                    continue
                process.join()
                running.remove(item)
                for run in job:
                    outcomes.record(run, process.exitcode)
    finally:
        for _, process in running:  # interrupted: stop children gracefully (they checkpoint)
            process.terminate()
        for _, process in running:
            process.join(timeout=60)


def _run_on_ray(todo: list[SweepRun], config: SweepConfig, outcomes: _Outcomes) -> None:
    """Train ``todo`` as Ray tasks (`cvl_eval.pipelines.sweep_ray`); an interruption cancels
    the tasks in flight, whose runs checkpoint before they stop."""
    from cvl_eval.pipelines.sweep_ray import RayBackend

    jobs = [(run.config, str(RunFolder(run.config.out_dir).log)) for run in todo]
    num_cpus = config.num_cpus if config.num_cpus is not None else config.threads_per_run
    with RayBackend(config.ray_address, num_cpus, config.num_gpus, config.workers) as ray:
        ray.run(jobs, lambda index, code, error: outcomes.record(todo[index], code, error))


def _exit_on_sigterm() -> Any:
    """Turn SIGTERM into SystemExit (so running children are stopped); returns the old handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, handler)
