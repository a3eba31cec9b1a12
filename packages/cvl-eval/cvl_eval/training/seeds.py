"""``train_seeds(configs)``: K runs that differ only in their seed, trained in one process by one
`cvl_algos.vectorised.VectorisedLearner`.

Each run keeps everything a run trained alone has: its folder and lock, its sampler stream, its
logs (metrics every ``log_every`` updates, evaluations, TensorBoard, W&B), its checkpoints and
``results.json``; a stop (SIGTERM/SIGINT) checkpoints every run and a restart resumes them. Seed
``k`` follows, within float rounding, the run `cvl_eval.training.loop.train` would give it
(tests check the final checkpoints). Runs are trained one after another in this process instead
when they cannot be vectorised: a learner that does not declare its update as stages, a compiled
learner, or runs restored at different steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

from cvl_algos.pretraining import PhaseUpdate
from cvl_algos.runtime import process_settings
from cvl_eval.errors import ConfigError, TrainingStopped
from cvl_eval.runs.folder import RunFolder
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import (
    Log,
    eval_due,
    finish,
    open_session,
    progress_bar,
    run_session,
)
from cvl_eval.training.plan import validate
from cvl_eval.training.session import Session, StopFlag

__all__ = ["check_seed_group", "train_seeds"]


def check_seed_group(configs: Sequence[TrainConfig]) -> None:
    """``ConfigError`` unless ``configs`` are runs that differ only in seed and folder, without
    a pretraining phase (the vectorised learner trains labelled updates only)."""
    if not configs:
        raise ConfigError("train_seeds: no runs")
    first = dataclasses.replace(configs[0], seed=0, out_dir="")
    for config in configs[1:]:
        if dataclasses.replace(config, seed=0, out_dir="") != first:
            raise ConfigError(
                f"train_seeds: {config.out_dir} differs from {configs[0].out_dir} in more than "
                "its seed and folder"
            )
    if len({c.out_dir for c in configs}) != len(configs):
        raise ConfigError("train_seeds: two runs share a folder")
    if configs[0].pretrain_datasets:
        raise ConfigError("train_seeds: runs with a pretraining phase are trained one by one")


def train_seeds(configs: Sequence[TrainConfig]) -> list[dict[str, Any]]:
    """Train the runs ``configs`` (same everything but seed and folder); returns each run's
    results in order. Finished runs (with ``resume``) are returned as they are.

    Raises:
        ConfigError: a bad config or group, before any work.
        TrainingStopped: a graceful stop; every unfinished run has a checkpoint to resume.
    """
    check_seed_group(configs)
    plans = [validate(config) for config in configs]
    runs = [RunFolder(config.out_dir) for config in configs]
    results: dict[int, dict] = {
        k: run.read_results() for k, run in enumerate(runs) if configs[k].resume and run.finished
    }
    todo = [k for k in range(len(configs)) if k not in results]
    with process_settings(configs[0].num_threads), StopFlag() as stop:
        with contextlib.ExitStack() as stack:
            sessions = {}
            for k in todo:
                session = stack.enter_context(open_session(configs[k], plans[k], runs[k]))
                if session is None:
                    results[k] = runs[k].read_results()
                else:
                    sessions[k] = session
            if sessions:
                results.update(zip(sessions, _train(list(sessions.values()), stop), strict=True))
    return [results[k] for k in range(len(configs))]


def _train(sessions: list[Session], stop: StopFlag) -> list[dict[str, Any]]:
    """Vectorised when the sessions allow it, else one after another (`train`'s loop)."""
    from cvl_algos.vectorised import VectorisedLearner, unsupported

    learners = [s.learner for s in sessions]
    if unsupported(learners) is not None:
        return [run_session(session, stop, None) for session in sessions]
    return _vectorised_loop(sessions, VectorisedLearner(learners), stop)


def _vectorised_loop(sessions: list[Session], vector: Any, stop: StopFlag) -> list[dict]:
    """`train`'s loop for K sessions: one vectorised update, then each run's logging,
    evaluation and checkpoint as due (the learners synced first when one is due)."""
    config, steps, plan = sessions[0].config, sessions[0].config.steps, sessions[0].plan
    seeds = ",".join(str(s.config.seed) for s in sessions)
    bar = progress_bar(f"{plan.label} {plan.task} s{seeds}", steps, vector.step, config)
    logs = [Log(session, bar, steps) for session in sessions]
    if config.eval_at_start and vector.step == 0:
        for session in sessions:
            if session.last_eval is None:
                session.evaluate()
    finals: list[dict | None] = [None] * len(sessions)
    try:
        while vector.step < steps:
            metrics = vector.update([s.samplers["train"].sample() for s in sessions])
            step = vector.step
            bar.update(1)
            evaluate = eval_due(step, config)
            every = config.checkpoint_every
            checkpoint = step < steps and (stop.requested or bool(every and step % every == 0))
            if evaluate or checkpoint:
                vector.sync()
            for k, session in enumerate(sessions):
                logs[k].add(PhaseUpdate("train", metrics[k], False))
                if evaluate:
                    evaluation = session.evaluate()
                    if step == steps:
                        finals[k] = evaluation
                if checkpoint:
                    session.save_checkpoint()
            if stop.requested and step < steps:
                raise TrainingStopped(
                    f"stopped after {step} updates; continue with resume=True (--resume) and "
                    f"the same folders ({', '.join(str(s.run.path) for s in sessions)})"
                )
    finally:
        bar.close()
    # the learners hold the final state: synced for the evaluation due at the last step, or
    # restored from their checkpoints when there was no step left
    return [finish(session, final) for session, final in zip(sessions, finals, strict=True)]
