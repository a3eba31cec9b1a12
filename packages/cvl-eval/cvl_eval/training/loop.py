"""The offline training loop: ``train(TrainConfig) -> results``.

One run = one offline algorithm (``bc``, ``cql``, ``cql_uds``, ``cvl``, ``cvl_mc``; CVL and
CQL+UDS optionally pretrained on reward-free related-task data) on one dataset folder (states or
pixels), seeded. It

1. validates everything that can be checked without doing work (`validate`): task and algorithm
   names, learner overrides, rewards present where the algorithm needs them, observation kind,
   budgets, the run folder; each problem is a `ConfigError` with a clear message;
2. builds the learner (`cvl_algos.make_learner`) and the sampler its ``sampler_kind`` asks for
   (`cvl_data.ContrastiveSampler` / `TransitionSampler`), data kept on the training device;
3. runs the pretraining phase (if any) then ``steps`` gradient steps with a
   tqdm bar (steps/s, ETA), logging averaged metrics every ``log_every`` updates to TensorBoard,
   ``metrics.jsonl`` and ``progress.csv``, evaluating every ``eval_every`` labelled steps with
   `cvl_eval.rollout.evaluate_policy` (fixed evaluation seeds) and checkpointing every
   ``checkpoint_every`` updates (atomically; `cvl_eval.runs`);
4. writes the final checkpoint and ``results.json``.

``resume=True`` continues a stopped run exactly: the learner (networks, optimisers, RNG states,
step counters) and the samplers' generators are restored from the last checkpoint and logs
written after it are dropped, so the final checkpoint equals an uninterrupted run's bit for bit.
SIGINT/SIGTERM stop a run gracefully (checkpoint at the next step boundary, then
`TrainingStopped`); a second signal interrupts at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from cvl_eval.runs import (
    TRAINER_STATE_FILE,
    MetricsLogger,
    RunFolder,
    read_json,
    write_json_atomic,
)
from cvl_eval.train_setup import (
    TRAINER_STATE_VERSION,
    ConfigError,
    Plan,
    StepInfo,
    TrainConfig,
    TrainingStopped,
    build_sources,
    validate,
)

__all__ = [
    "ConfigError",
    "StepInfo",
    "TrainConfig",
    "TrainingStopped",
    "evaluate_learner",
    "train",
    "validate",
]


def evaluate_learner(learner: Any, plan: Plan, config: TrainConfig) -> Any:
    """`evaluate_policy` of ``learner``'s deterministic policy with the run's fixed eval seeds."""
    from cvl_eval.rollout import evaluate_policy

    return evaluate_policy(
        plan.task,
        lambda obs: learner.act(obs, deterministic=True),
        config.eval_episodes,
        seed=config.eval_seed,
        pixels=plan.pixels,
        max_steps=config.eval_max_steps,
        image_size=plan.image_size,
        camera=plan.camera,
    )


def _sampler_state(sampler: Any) -> list[int]:
    return sampler.generator.get_state().tolist()


def _set_sampler_state(sampler: Any, state: list[int]) -> None:
    sampler.generator.set_state(torch.tensor(state, dtype=torch.uint8))


@dataclass
class _Session:
    """Mutable state of one call of `train` (one process session of a run)."""

    plan: Plan
    config: TrainConfig
    run: RunFolder
    learner: Any
    samplers: dict[str, Any]
    logger: MetricsLogger
    wall_before: float
    started: float
    last_eval: dict | None = None
    window: dict[str, float] = field(default_factory=dict)
    """Metric sums since the last log (averaged at the next one); count under "__count__"."""

    @property
    def pretrain_done(self) -> int:
        return int(getattr(self.learner, "pretrain_steps", 0))

    @property
    def updates(self) -> int:
        """Updates of both phases so far (the global step of logs and checkpoints)."""
        return self.pretrain_done + self.learner.step

    def wall_time(self) -> float:
        return self.wall_before + time.monotonic() - self.started

    def save_checkpoint(self) -> None:
        folder = self.run.checkpoint_folder(self.updates)
        self.learner.save(folder)
        state = {
            "version": TRAINER_STATE_VERSION,
            "updates": self.updates,
            "step": self.learner.step,
            "pretrain_steps": self.pretrain_done,
            "samplers": {k: _sampler_state(s) for k, s in self.samplers.items()},
            "wall_time_s": self.wall_time(),
            "last_eval": self.last_eval,
            "log_window": self.window,
        }
        write_json_atomic(folder / TRAINER_STATE_FILE, state)
        self.logger.flush()
        self.run.write_progress_csv()
        self.run.commit_checkpoint(folder, keep=self.config.keep_checkpoints)

    def evaluate(self) -> dict:
        result = evaluate_learner(self.learner, self.plan, self.config)
        summary = result.to_dict()["summary"]
        record = {
            "step": self.learner.step,
            "update": self.updates,
            "return": summary["mean_return"],
            "return_std": summary["std_return"],
            "success": summary["success_rate"],
            "length": summary["mean_length"],
            "normalized": summary["mean_normalized_return"],
            "episode_returns": list(result.returns),
            "episode_successes": [bool(s) for s in result.successes],
            "time_s": round(self.wall_time(), 3),
        }
        self.logger.log_eval(record, self.updates)
        self.last_eval = record
        return {"record": record, "result": result}


class _StopFlag:
    """SIGINT/SIGTERM -> stop at the next step boundary (a second signal interrupts at once)."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _start_session(config: TrainConfig, plan: Plan, run: RunFolder) -> _Session:
    """Build (or restore from the latest checkpoint) the learner, samplers and logger."""
    from cvl_algos import load_learner, make_learner

    sources = build_sources(plan, config)
    checkpoint = run.latest_checkpoint() if config.resume else None
    if checkpoint is not None:
        learner = load_learner(checkpoint, device=plan.device)
        trainer = read_json(checkpoint / TRAINER_STATE_FILE)
    else:
        learner = make_learner(
            plan.algorithm,
            plan.obs_shape,
            plan.action_dim,
            plan.device,
            config.seed,
            **plan.overrides,
        )
        trainer = None
    samplers = plan.make_samplers(learner, sources, config.seed)
    wall_before = 0.0
    last_eval = None
    if trainer is not None:
        for name, state in trainer["samplers"].items():
            _set_sampler_state(samplers[name], state)
        wall_before = float(trainer["wall_time_s"])
        last_eval = trainer.get("last_eval")
        run.truncate_logs("update", int(trainer["updates"]))
    elif config.resume:  # resuming a run that never reached a checkpoint: start over
        run.truncate_logs("update", -1)
    updates = (int(trainer["updates"]) + 1) if trainer is not None else 0
    logger = MetricsLogger(run, config.tensorboard, purge_step=updates)
    return _Session(
        plan=plan,
        config=config,
        run=run,
        learner=learner,
        samplers=samplers,
        logger=logger,
        wall_before=wall_before,
        started=time.monotonic(),
        last_eval=last_eval,
        window=dict(trainer.get("log_window", {})) if trainer is not None else {},
    )


def _results(session: _Session, final: dict) -> dict:
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
        "device": str(plan.device),
        "wall_time_s": round(session.wall_time(), 3),
        "final_eval": {**result.to_dict()["summary"], **result.to_dict()},
        "curve": [
            {k: e[k] for k in ("step", "return", "success", "normalized", "length")} for e in evals
        ],
        "final_checkpoint": str(session.run.final.relative_to(session.run.path)),
        "learner_config": _jsonable(learner.config),
    }


def _jsonable(config: Any) -> dict:
    import dataclasses

    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }


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
    run.path.mkdir(parents=True, exist_ok=True)
    if not run.config.exists():
        write_json_atomic(run.config, plan.config_record(config))
    threads = config.num_threads
    context = _torch_threads(threads) if threads else contextlib.nullcontext()
    with context, _StopFlag() as stop:
        session = _start_session(config, plan, run)
        try:
            return _loop(session, stop, callback)
        finally:
            session.logger.close()


@contextlib.contextmanager
def _torch_threads(n: int):
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _loop(session: _Session, stop: _StopFlag, callback: Callable | None) -> dict[str, Any]:
    from tqdm import tqdm

    plan, config, learner, run = session.plan, session.config, session.learner, session.run
    total = plan.pretrain_steps + config.steps
    bar = tqdm(
        total=total,
        initial=session.updates,
        desc=f"{plan.label} {plan.task} s{config.seed}",
        unit="step",
        disable=not config.progress,
        dynamic_ncols=True,
        mininterval=0.5,
    )
    sums = session.window
    tick = time.monotonic()
    tick_updates = session.updates
    if config.eval_at_start and learner.step == 0 and session.last_eval is None:
        if plan.pretrain_steps == 0 or session.pretrain_done == plan.pretrain_steps:
            session.evaluate()
    final = None
    try:
        while session.updates < total:
            pretraining = session.pretrain_done < plan.pretrain_steps
            if pretraining:
                metrics = learner.pretrain_update(session.samplers["pretrain"].sample())
            else:
                metrics = learner.update(session.samplers["train"].sample())
            bar.update(1)
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value
            sums["__count__"] = sums.get("__count__", 0) + 1
            updates = session.updates
            phase = "pretrain" if pretraining else "train"
            phase_end = pretraining and session.pretrain_done == plan.pretrain_steps
            if updates % config.log_every == 0 or updates == total or phase_end:
                now = time.monotonic()
                rate = (updates - tick_updates) / max(now - tick, 1e-9)
                record = {
                    "phase": phase,
                    "update": updates,
                    "step": learner.step,
                    "pretrain_step": session.pretrain_done,
                    "steps_per_s": round(rate, 3),
                    "time_s": round(session.wall_time(), 3),
                    **{k: v / sums["__count__"] for k, v in sums.items() if k != "__count__"},
                }
                session.logger.log_metrics(record, updates, phase)
                sums.clear()
                tick, tick_updates = now, updates
                bar.set_postfix(_postfix(record, session.last_eval), refresh=False)
            if not pretraining and (
                learner.step == config.steps
                or (config.eval_every and learner.step % config.eval_every == 0)
            ):
                evaluation = session.evaluate()
                if learner.step == config.steps:
                    final = evaluation
                bar.set_postfix(_postfix({"phase": phase}, session.last_eval), refresh=True)
            stop_now = stop.requested
            if callback is not None:
                info = StepInfo(phase, learner.step, session.pretrain_done, updates, metrics)
                stop_now = bool(callback(info)) or stop_now
            if updates < total and (
                stop_now or (config.checkpoint_every and updates % config.checkpoint_every == 0)
            ):
                session.save_checkpoint()
            if stop_now and updates < total:
                raise TrainingStopped(
                    f"stopped after {updates} updates; continue with resume=True "
                    f"(--resume) and the same out_dir {run.path}"
                )
    finally:
        bar.close()
    if final is None:  # resumed after the final evaluation but before results were written
        final = session.evaluate()
    learner.save(run.final)
    results = _results(session, final)
    session.logger.flush()
    run.write_progress_csv()
    write_json_atomic(run.results, results)
    return results


def _postfix(record: dict, last_eval: dict | None) -> dict[str, str]:
    out = {"phase": record.get("phase", "")}
    shown = [k for k in ("critic_loss", "policy_loss", "actor_loss", "bc_loss") if k in record]
    for key in shown[:2]:
        out[key] = f"{record[key]:.3g}"
    if last_eval is not None:
        out["eval_ret"] = f"{last_eval['return']:.0f}"
        out["succ"] = f"{last_eval['success']:.2f}"
    return out
