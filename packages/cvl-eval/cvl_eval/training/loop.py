"""The offline training loop: ``train(TrainConfig) -> results``.

One run = one offline algorithm of the registry (``bc``, ``cql``, ``cql_uds``, ``cvl``,
``cvl_mc``, ...; learners with a pretraining phase optionally pretrained on reward-free
related-task data) on one dataset folder (states or pixels), seeded. It

1. validates everything that can be checked without doing work (`validate`): task and algorithm
   names, learner overrides, rewards present where the learner declares it needs them,
   observation kind, budgets, the run folder; each problem is a `ConfigError` with a clear
   message (`cvl_eval.training.plan`);
2. builds the learner (`cvl_algos.make_learner`) and the samplers it asks for
   (``learner.make_sampler``), data kept on the training device (`cvl_eval.training.session`);
3. runs the pretraining phase (if any) then ``steps`` gradient steps on the one schedule of
   `cvl_algos.pretraining.run_phases`, with a tqdm bar (steps/s, ETA, the learner's
   ``progress_metrics``), logging averaged metrics every ``log_every`` updates to TensorBoard,
   ``metrics.jsonl`` and ``progress.csv``, evaluating every ``eval_every`` labelled steps with
   `cvl_eval.rollout.evaluate.evaluate_policy` (fixed evaluation seeds) and checkpointing every
   ``checkpoint_every`` updates (atomically; `cvl_eval.runs.folder`);
4. writes the final checkpoint and ``results.json``.

From creating the run folder to the end, the run holds the folder's lock
(`cvl_eval.runs.lock`): a second process training into it is refused, naming the holder's PID.

``resume=True`` continues a stopped run exactly: the learner (networks, optimisers, RNG states,
step counters) and the samplers' generators are restored from the last checkpoint and logs
written after it are dropped, so the final checkpoint equals an uninterrupted run's bit for bit.
SIGINT/SIGTERM stop a run gracefully (checkpoint at the next step boundary, then
`TrainingStopped`); a second SIGINT interrupts at once, a repeated SIGTERM does not.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from cvl_algos.pretraining import PhaseUpdate, run_phases
from cvl_algos.runtime import process_settings
from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.errors import TrainingStopped
from cvl_eval.runs.folder import RunFolder
from cvl_eval.runs.lock import hold_run_lock
from cvl_eval.training.checks import check_run_contents
from cvl_eval.training.config import StepInfo, TrainConfig
from cvl_eval.training.plan import validate
from cvl_eval.training.session import Session, StopFlag, start_session

__all__ = [
    "Log",
    "eval_due",
    "finish",
    "open_session",
    "progress_bar",
    "run_session",
    "train",
]


def train(
    config: TrainConfig, callback: Callable[[StepInfo], bool | None] | None = None
) -> dict[str, Any]:
    """Train one run as described by ``config``; return its results (also in ``results.json``).

    Args:
        config: the run (see `TrainConfig`).
        callback: called after every update with a `StepInfo`; returning True requests a
            graceful stop (checkpoint, then `TrainingStopped`), as SIGINT does. An exception
            raised by it propagates (the run stops without a checkpoint, like a crash).

    Raises:
        ConfigError: a bad config, before any work.
        TrainingStopped: a graceful stop; ``resume=True`` continues the run.
    """
    plan = validate(config)
    run = RunFolder(config.out_dir)
    if config.resume and run.finished:
        return run.read_results()
    with process_settings(config.num_threads), StopFlag() as stop:
        with open_session(config, plan, run) as session:
            if session is None:  # another process finished it meanwhile
                return run.read_results()
            return run_session(session, stop, callback)


@contextlib.contextmanager
def open_session(config: TrainConfig, plan: Any, run: RunFolder) -> Iterator[Session | None]:
    """Hold the run folder's lock and yield its `Session` (fresh, or restored on resume); None
    when the run is found finished once the lock is held. A run that fails to start before any
    checkpoint leaves nothing behind to resume (no folder at all when it created the folder);
    the logger is closed at the end."""
    created = not run.path.exists()
    run.path.mkdir(parents=True, exist_ok=True)
    with hold_run_lock(run.path):
        # again: another process may have written it meanwhile
        check_run_contents(config, run, plan.data_identity)
        if config.resume and run.finished:
            yield None
            return
        fresh = not run.config.exists()
        if fresh:
            write_json_atomic(run.config, plan.config_record(config))
        try:
            session = start_session(config, plan, run)
        except BaseException:
            if fresh and not run.has_checkpoints():  # nothing ran: no --resume needed
                run.discard_unstarted(remove_folder=created)
            raise
        try:
            yield session
        finally:
            session.logger.close()


def run_session(session: Session, stop: StopFlag, callback: Callable | None) -> dict[str, Any]:
    """The updates left (`run_phases`), each followed by logging, evaluation and checkpoint as
    due; then the final evaluation, checkpoint and ``results.json``."""
    plan, config, learner = session.plan, session.config, session.learner
    total = plan.pretrain_steps + config.steps
    bar = progress_bar(f"{plan.label} {plan.task} s{config.seed}", total, session.updates, config)
    log = Log(session, bar, total)
    if config.eval_at_start and learner.step == 0 and session.last_eval is None:
        if plan.pretrain_steps == 0 or session.pretrain_done == plan.pretrain_steps:
            session.evaluate()
    final = None
    samplers = session.samplers
    phases = run_phases(
        learner, samplers.get("pretrain"), samplers.get("train"), config.steps, plan.pretrain_steps
    )
    try:
        for update in phases:
            bar.update(1)
            log.add(update)
            if update.phase == "train" and eval_due(learner.step, config):
                evaluation = session.evaluate()
                if learner.step == config.steps:
                    final = evaluation
                bar.set_postfix(log.postfix({"phase": update.phase}), refresh=True)
            _checkpoint_or_stop(session, stop, callback, update, total)
    finally:
        bar.close()
    return finish(session, final)


def finish(session: Session, final: dict | None) -> dict[str, Any]:
    """The end of a run: the final evaluation (unless given), the final checkpoint, logs and
    ``results.json``; returns the results."""
    if final is None:  # resumed after the final evaluation but before results were written
        final = session.evaluate()
    session.learner.save(session.run.final)
    results = _results(session, final)
    session.logger.flush()
    session.run.write_progress_csv()
    write_json_atomic(session.run.results, results)
    return results


def progress_bar(desc: str, total: int, initial: int, config: TrainConfig) -> Any:
    """A run's tqdm bar (steps/s, ETA), hidden unless ``config.progress``."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="step",
        disable=not config.progress,
        dynamic_ncols=True,
        mininterval=0.5,
    )


def eval_due(step: int, config: TrainConfig) -> bool:
    """An evaluation after labelled step ``step``: every ``eval_every`` steps and at the end."""
    return step == config.steps or bool(config.eval_every and step % config.eval_every == 0)


def _checkpoint_or_stop(
    session: Session, stop: StopFlag, callback: Callable | None, update: PhaseUpdate, total: int
) -> None:
    """Checkpoint when due or when a stop is asked (signal or callback), then stop gracefully."""
    config, updates = session.config, session.updates
    stop_now = stop.requested
    if callback is not None:
        learner = session.learner
        info = StepInfo(update.phase, learner.step, session.pretrain_done, updates, update.metrics)
        stop_now = bool(callback(info)) or stop_now
    if updates < total and (
        stop_now or (config.checkpoint_every and updates % config.checkpoint_every == 0)
    ):
        session.save_checkpoint()
    if stop_now and updates < total:
        raise TrainingStopped(
            f"stopped after {updates} updates; continue with resume=True "
            f"(--resume) and the same out_dir {session.run.path}"
        )


class Log:
    """Metric averages over ``log_every`` updates (and at the end of each phase) to the logger,
    and the progress bar's postfix: the learner's ``progress_metrics`` and the last evaluation.

    The metrics stay on the device between logs (`Session.add_metrics`): they are read back
    once per log, not once per update."""

    def __init__(self, session: Session, bar: Any, total: int) -> None:
        self.session, self.bar, self.total = session, bar, total
        self.tick, self.tick_updates = time.monotonic(), session.updates

    def add(self, update: PhaseUpdate) -> None:
        session = self.session
        session.add_metrics(update.metrics)
        updates = session.updates
        if updates % session.config.log_every == 0 or updates == self.total or update.phase_end:
            sums = session.read_window()
            now = time.monotonic()
            rate = (updates - self.tick_updates) / max(now - self.tick, 1e-9)
            record = {
                "phase": update.phase,
                "update": updates,
                "step": session.learner.step,
                "pretrain_step": session.pretrain_done,
                "steps_per_s": round(rate, 3),
                "time_s": round(session.wall_time(), 3),
                **{k: v / sums["__count__"] for k, v in sums.items() if k != "__count__"},
            }
            session.logger.log_metrics(record, updates, update.phase)
            sums.clear()
            self.tick, self.tick_updates = now, updates
            self.bar.set_postfix(self.postfix(record), refresh=False)

    def postfix(self, record: dict) -> dict[str, str]:
        out = {"phase": record.get("phase", "")}
        for key in self.session.learner.progress_metrics:
            if key in record:
                out[key] = f"{record[key]:.3g}"
        last_eval = self.session.last_eval
        if last_eval is not None:
            out["eval_ret"] = f"{last_eval['return']:.0f}"
            out["succ"] = f"{last_eval['success']:.2f}"
        return out


def _results(session: Session, final: dict) -> dict:
    plan, config, learner = session.plan, session.config, session.learner
    result = final["result"]
    evals = session.run.read_evals()
    return {
        "run_name": session.run.path.name,
        "label": plan.label,
        "algorithm": plan.algorithm,
        "task": plan.task,
        "seed": config.seed,
        "steps": learner.step,
        "pretrain_steps": session.pretrain_done,
        "obs_kind": "pixels" if plan.pixels else "state",
        "dataset": config.dataset,
        "pretrain_datasets": list(config.pretrain_datasets),
        "data_identity": plan.data_identity,
        "device": str(plan.device),
        "wall_time_s": round(session.wall_time(), 3),
        "final_eval": {**result.to_dict()["summary"], **result.to_dict()},
        "curve": [
            {k: e[k] for k in ("step", "return", "success", "normalized", "length")} for e in evals
        ],
        "final_checkpoint": str(session.run.final.relative_to(session.run.path)),
        "learner_config": to_json_data(learner.config),
    }
