"""A sweep's runs on this machine: child processes, up to ``workers`` at a time.

`run_processes` starts each job (one run, or with ``vectorise_seeds`` the seeds of an (algorithm,
task) trained together, `group_runs`, `cvl_eval.training.seeds`) as a ``multiprocessing`` spawn
child (`cvl_eval.pipelines.sweep_worker.train_in_child`: ``resume=True``, its output in
``<run>/train.log``; it dies with the sweep, and a failure leaves its traceback in the log).
`Outcomes` records how each run ended, with the progress bar; `exit_on_sigterm` turns SIGTERM
into SystemExit so an interrupted sweep stops its children gracefully (they checkpoint).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

from cvl_algos import learner_class
from cvl_eval.pipelines.sweep_plan import SweepRun
from cvl_eval.pipelines.sweep_worker import failure_record, train_in_child
from cvl_eval.runs.folder import RunFolder

__all__ = ["Outcomes", "exit_on_sigterm", "group_runs", "run_processes"]


class Outcomes:
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


def group_runs(todo: list[SweepRun], vectorise_seeds: bool) -> list[list[SweepRun]]:
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


def run_processes(jobs: list[list[SweepRun]], workers: int, outcomes: Outcomes) -> None:
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


def exit_on_sigterm() -> Any:
    """Turn SIGTERM into SystemExit (so running children are stopped); returns the old handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, handler)
