"""Sweeps: algorithms x tasks x seeds as parallel local processes, resumable, with an index.

`sweep(SweepConfig)` expands the grid into runs (`cvl_eval.pipelines.sweep_plan.expand`: one
`TrainConfig` each, run folder ``<out_dir>/<label>/<task>/seed_<k>``), skips finished runs (a run
is finished when its ``results.json`` exists), and trains the others, up to ``workers`` at a time
(`cvl_eval.pipelines.sweep_local`: a fresh spawned interpreter per run, or per (algorithm, task)
with ``vectorise_seeds``, that calls `cvl_eval.training.loop.train` with ``resume=True``, its output
in ``<run>/train.log``; it dies with the sweep, and a failure leaves its traceback in the log). A
run interrupted earlier continues from its last checkpoint. At the end ``index.json`` and
``index.csv`` list every finished run and ``sweep.json`` (and ``index.json``) record what this call
did, each failed run with its error line, log and config. Every run's config is validated before
any process starts.

Datasets come from ``data_root``: the dataset of task ``t`` is ``<data_root>/<t>`` (as
`cvl_eval.datagen` writes them, e.g. ``data/drawer-open-v3``); which names a sweep accepts, and
the related tasks' data some learners get: `cvl_eval.pipelines.sweep_plan`.

``backend="ray"`` submits each run as a Ray task instead (`cvl_eval.pipelines.sweep_ray`: a local
instance, or a cluster at ``ray_address``; ``num_cpus`` / ``num_gpus`` reserved per run); the
guarantees above hold there too, with the run folders on storage every node reaches.
"""

from __future__ import annotations

import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.pipelines.sweep_local import Outcomes, exit_on_sigterm, run_processes
from cvl_eval.pipelines.sweep_local import group_runs as _jobs
from cvl_eval.pipelines.sweep_plan import (
    SweepConfig,
    SweepRun,
    SweepVariant,
    expand,
    sweep_variants,
)
from cvl_eval.runs.folder import RunFolder
from cvl_eval.runs.index import find_runs, write_index
from cvl_eval.training.plan import validate

__all__ = ["SweepConfig", "SweepRun", "SweepVariant", "expand", "sweep", "sweep_variants"]


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
    outcomes = Outcomes(len(runs), len(finished), progress)
    previous = exit_on_sigterm()  # a SIGTERM stops the runs gracefully (they checkpoint)
    try:
        if config.backend == "ray":
            _run_on_ray(todo, config, outcomes)
        else:
            run_processes(_jobs(todo, config.vectorise_seeds), config.workers, outcomes)
    finally:
        outcomes.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return _record(config, runs, finished, outcomes)


def _record(
    config: SweepConfig, runs: list[SweepRun], finished: list[SweepRun], outcomes: Outcomes
) -> dict[str, Any]:
    """Write the index of every finished run and ``sweep.json`` (what this call did); raise the
    `RuntimeError` naming each failed run."""
    out = Path(config.out_dir)
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
            f"{len(failed)} of {len(runs) - len(finished)} runs failed (tracebacks in their "
            f"train.log; errors and configs in {out / 'sweep.json'}): "
            + "; ".join(f"{f['run']}: {f['error']}" for f in failed)
        )
    return record


def _run_on_ray(todo: list[SweepRun], config: SweepConfig, outcomes: Outcomes) -> None:
    """Train ``todo`` as Ray tasks (`cvl_eval.pipelines.sweep_ray`); an interruption cancels
    the tasks in flight, whose runs checkpoint before they stop."""
    from cvl_eval.pipelines.sweep_ray import RayBackend

    jobs = [(run.config, str(RunFolder(run.config.out_dir).log)) for run in todo]
    num_cpus = config.num_cpus if config.num_cpus is not None else config.threads_per_run
    with RayBackend(config.ray_address, num_cpus, config.num_gpus, config.workers) as ray:
        ray.run(jobs, lambda index, code, error: outcomes.record(todo[index], code, error))
