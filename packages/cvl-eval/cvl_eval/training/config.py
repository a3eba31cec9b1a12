"""The description of one offline training run: `TrainConfig`, and what its callback sees.

`TrainConfig` is the frozen, documented config of a run; `StepInfo` is what `train`'s callback
sees after each update. The trainer knows no algorithm by name: what an algorithm needs (rewards,
its pretraining phase, its sampler) comes from its learner class's declarations
(`cvl_algos.base.LearnerBase`). `cvl_eval.training.plan` validates a config,
`cvl_eval.training.loop` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["TRAINER_STATE_VERSION", "StepInfo", "TrainConfig"]

TRAINER_STATE_VERSION = 1


@dataclass(frozen=True)
class StepInfo:
    """What the `train` callback sees after each update."""

    phase: str
    """"pretrain" or "train"."""
    step: int
    """Labelled (finetuning) updates so far."""
    pretrain_step: int
    """Reward-free pretraining updates so far."""
    update: int
    """Updates of both phases so far."""
    metrics: dict[str, Any]
    """The metrics this update returned: detached 0-d tensors on the training device
    (``float(v)`` reads one, which waits for the device)."""


@dataclass(frozen=True)
class TrainConfig:
    """One offline training run: algorithm x dataset x seed, and how to log, evaluate, save.

    Defaults follow the paper where it gives a value (learner hyperparameters come from the
    ``cvl_algos`` configs; ``overrides`` changes them).
    """

    dataset: str
    """Folder of the target task's dataset (``cvl_data`` format; states or pixels)."""
    out_dir: str
    """Run folder (config, logs, TensorBoard, checkpoints, results; see `cvl_eval.runs`)."""
    algorithm: str = "cvl"
    """A registered offline algorithm (`cvl_algos.offline_algorithms`): bc, cql, cql_uds, cvl (RFF),
    cvl_mc (no RFF), ..."""
    seed: int = 0
    """Seeds the learner's networks and RNG and the samplers."""
    steps: int = 100_000
    """Gradient steps on the labelled target data (after any pretraining)."""
    task: str | None = None
    """Evaluation task (kept canonical: ``reach`` becomes ``reach-v3``); default: the dataset's.
    Given, it must match the dataset's task."""
    pretrain_datasets: tuple[str, ...] = ()
    """Related tasks' datasets (rewards ignored), for learners with a pretraining phase
    (`cvl_algos.pretraining`): ``related_tasks`` ones (cvl, cvl_mc) pretrain their critic on them
    (reward-free; paper sec. 5.2); ``self`` ones (cql_uds) share them at reward 0 (UDS)."""
    pretrain_include_target: bool = True
    """``related_tasks`` learners: also pretrain on the target's own data with rewards hidden."""
    pretrain_steps: int | None = None
    """Pretraining updates; default: the learner config's ``pretrain_steps`` (50k)."""
    label: str | None = None
    """Name of the run's algorithm in reports; default ``algorithm``, or
    ``<algorithm>_pretrained`` for a ``related_tasks`` learner given related data."""
    observations: Literal["auto", "state", "pixels"] = "auto"
    """Expected observation kind; a dataset of the other kind is refused."""
    hidden: tuple[int, ...] | None = None
    """Hidden widths of every network (overrides the learner config's ``hidden``)."""
    batch_size: int | None = None
    """Batch size (overrides the learner config's ``batch_size``)."""
    overrides: tuple[str, ...] = ()
    """Other learner config fields as ``key=value``, e.g. ``lambda_bc=0.1``; each value is read
    as its field's declared type (``normalize_q=false``, ``hidden=[64,64]``) or refused
    (`cvl_eval.training.overrides`)."""
    device: str = "cpu"
    """``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when available)."""
    num_threads: int | None = None
    """torch CPU threads during the run (None: torch's default)."""
    log_every: int = 100
    """Log metrics (averaged over the interval) every this many updates."""
    eval_every: int = 10_000
    """Evaluate every this many labelled steps (0: only at the end)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    eval_seed: int = 100
    """Evaluation seed: every evaluation of every run uses the same episode seeds."""
    eval_max_steps: int | None = None
    """Optional episode step limit during evaluation (the env's own: 500 / 999)."""
    eval_at_start: bool = False
    """Also evaluate before the first labelled step (after any pretraining)."""
    camera: str | None = None
    """Camera of pixel evaluation; default: the dataset's (its provenance), else ``corner``."""
    checkpoint_every: int = 10_000
    """Checkpoint every this many updates (0: only the final one)."""
    keep_checkpoints: int = 1
    """Periodic checkpoints kept on disk (the newest)."""
    resume: bool = False
    """Continue the run in ``out_dir`` from its last checkpoint (a finished run is returned
    as is; a missing one starts)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    tensorboard: bool = True
    """Write TensorBoard events to ``<out_dir>/tb``."""
    wandb: bool = False
    """Also log metrics and evaluations to Weights & Biases (``pip install 'cvl-eval[wandb]'``;
    files in ``<out_dir>/wandb``; ``WANDB_MODE=offline`` keeps them local). Off by default."""
    wandb_project: str = "cvl"
    """Weights & Biases project."""
    wandb_group: str | None = None
    """Weights & Biases group (a sweep sets its folder's name)."""
    verify_checksums: bool = False
    """Check the datasets' sha256 checksums when opening them (content checks always run)."""

    def __post_init__(self) -> None:
        if self.task is not None:  # envs (and metaworld) load only for a config that names one
            from cvl_eval.envs.make import config_name

            object.__setattr__(self, "task", config_name(self.task))
