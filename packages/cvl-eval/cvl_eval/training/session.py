"""One process session of a training run: the learner, its samplers and logger, restored from the
run's newest valid checkpoint when resuming (`cvl_eval.training.resume`), and what the loop does with them (evaluate, log,
checkpoint). Graceful stops on SIGINT/SIGTERM come from `StopFlag`.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from cvl_algos.common import metrics_to_floats
from cvl_eval.rollout.evaluate import EvalResult, evaluate_policy
from cvl_eval.runs.folder import TRAINER_STATE_FILE, RunFolder
from cvl_eval.training.config import TRAINER_STATE_VERSION, TrainConfig
from cvl_eval.training.logger import MetricsLogger
from cvl_eval.training.plan import Plan
from cvl_eval.training.resume import resume_point
from cvl_eval.training.wandb_sink import WandbSink

__all__ = ["Session", "StopFlag", "evaluate_learner", "start_session"]


def evaluate_learner(learner: Any, plan: Plan, config: TrainConfig) -> EvalResult:
    """`evaluate_policy` of ``learner``'s deterministic policy with the run's fixed eval seeds."""
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
class Session:
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
    """Metric sums since the last log (averaged at the next one); count under "__count__".
    Updates not yet read from the device wait in ``pending`` (see `add_metrics`)."""
    pending: list[dict[str, torch.Tensor]] = field(default_factory=list)
    """Metrics of updates since the window was last read, still as device tensors."""

    def add_metrics(self, metrics: dict[str, torch.Tensor]) -> None:
        """Queue one update's metrics (0-d tensors) for the window; nothing is read back."""
        self.pending.append(metrics)

    def read_window(self) -> dict[str, float]:
        """Fold the queued metrics into ``window`` with one host transfer and return it.

        The sums are accumulated update by update in float64, so they do not depend on when
        the queue is read (a resumed run logs the same averages as an uninterrupted one).
        """
        if self.pending:
            values = [v.float() for metrics in self.pending for v in metrics.values()]
            floats = iter(metrics_to_floats(dict(enumerate(values))).values())
            for metrics in self.pending:
                for key in metrics:
                    self.window[key] = self.window.get(key, 0.0) + next(floats)
                self.window["__count__"] = self.window.get("__count__", 0) + 1
            self.pending.clear()
        return self.window

    @property
    def pretrain_done(self) -> int:
        return self.learner.pretrain_steps

    @property
    def updates(self) -> int:
        """Updates of both phases so far (the global step of logs and checkpoints)."""
        return self.pretrain_done + self.learner.step

    def wall_time(self) -> float:
        return self.wall_before + time.monotonic() - self.started

    def save_checkpoint(self) -> None:
        folder = self.run.checkpoint_folder(self.updates)
        state = {
            "version": TRAINER_STATE_VERSION,
            "updates": self.updates,
            "step": self.learner.step,
            "pretrain_steps": self.pretrain_done,
            "samplers": {k: _sampler_state(s) for k, s in self.samplers.items()},
            "wall_time_s": self.wall_time(),
            "last_eval": self.last_eval,
            "log_window": self.read_window(),
        }
        # trainer.json is checksummed with the learner and written in the same atomic save
        self.learner.save(folder, extra_files={TRAINER_STATE_FILE: state})
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


class StopFlag:
    """SIGINT/SIGTERM -> stop at the next step boundary. A second SIGINT (Ctrl-C twice)
    interrupts at once; SIGTERM never does: supervisors and the sweep workers' parent-death
    signal (`cvl_eval.pipelines.sweep_worker`) may send it more than once, and the graceful
    stop must still write its checkpoint."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def start_session(config: TrainConfig, plan: Plan, run: RunFolder) -> Session:
    """Build (or restore from the latest checkpoint) the learner, samplers and logger."""
    from cvl_algos import make_learner

    point = resume_point(run, plan.device) if config.resume else None
    if point is not None:
        learner, trainer = point
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
    samplers = plan.samplers(learner, plan.sources(config, learner), config.seed, config.progress)
    wall_before = 0.0
    last_eval = None
    if trainer is not None:
        for name, state in trainer["samplers"].items():
            _set_sampler_state(samplers[name], state)
        wall_before = float(trainer["wall_time_s"])
        last_eval = trainer.get("last_eval")
        run.truncate_logs("update", int(trainer["updates"]))
    elif config.resume:  # a run that never reached a checkpoint (`resume_point`): start over
        run.truncate_logs("update", -1)
    updates = (int(trainer["updates"]) + 1) if trainer is not None else 0
    logger = MetricsLogger(
        run, config.tensorboard, purge_step=updates, wandb=_wandb(config, plan, run)
    )
    return Session(
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


def _wandb(config: TrainConfig, plan: Plan, run: RunFolder) -> WandbSink | None:
    """The run's W&B sink when ``config.wandb`` (named by the run's label, task and seed)."""
    if not config.wandb:
        return None
    from cvl_data.jsonio import to_json_data

    name = f"{plan.label}/{plan.task}/seed_{config.seed}"
    return WandbSink(run.path, config.wandb_project, config.wandb_group, name, to_json_data(config))
