"""The description of one offline training run: `TrainConfig`, and what goes with it.

`TrainConfig` is the frozen, documented config of a run; the algorithm tables
(`OFFLINE_ALGORITHMS`, `NEEDS_REWARDS`, `PRETRAINABLE`), the errors a run raises (`ConfigError`,
`TrainingStopped`) and what its callback sees (`StepInfo`) live here too.
`cvl_eval.train_setup` validates a config and opens its data; `cvl_eval.training` runs it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

OFFLINE_ALGORITHMS: tuple[str, ...] = ("bc", "filtered_bc", "cql", "cql_uds", "cvl", "cvl_mc", "iql")
"""Algorithms `train` runs (every name of ``cvl_algos.ALGORITHMS`` except the online ``sac``)."""

NEEDS_REWARDS = {"bc": False, "filtered_bc": True, "cql": True, "cql_uds": True, "cvl": True, "cvl_mc": True, "iql": True}
"""Whether the target dataset must carry rewards (BC never reads them)."""

PRETRAINABLE = ("cvl", "cvl_mc", "cql_uds")
"""Algorithms that accept related-task (reward-free) data through ``pretrain_datasets``."""

TRAINER_STATE_VERSION = 1


class ConfigError(ValueError):
    """A training (or sweep, or evaluation) config that cannot run; raised before any work."""


class TrainingStopped(RuntimeError):
    """A run stopped gracefully (signal or callback) after writing a checkpoint."""


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
    metrics: dict[str, float]
    """The metrics this update returned."""


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
    """One of `OFFLINE_ALGORITHMS`: bc, cql, cql_uds, cvl (RFF), cvl_mc (no RFF)."""
    seed: int = 0
    """Seeds the learner's networks and RNG and the samplers."""
    steps: int = 100_000
    """Gradient steps on the labelled target data (after any pretraining)."""
    task: str | None = None
    """Evaluation task; default: the dataset's. Given, it must match the dataset's task."""
    pretrain_datasets: tuple[str, ...] = ()
    """Related tasks' datasets (rewards ignored). cvl/cvl_mc: critic-only pretraining on them
    (reward-free; paper sec. 5.2); cql_uds: the shared data of UDS at reward 0."""
    pretrain_include_target: bool = True
    """cvl/cvl_mc: also pretrain on the target's own data with its rewards hidden."""
    pretrain_steps: int | None = None
    """Pretraining updates; default: the learner config's ``pretrain_steps`` (50k)."""
    label: str | None = None
    """Name of the run's algorithm in reports; default ``algorithm``, or
    ``<algorithm>_pretrained`` for CVL with pretraining data."""
    observations: Literal["auto", "state", "pixels"] = "auto"
    """Expected observation kind; a dataset of the other kind is refused."""
    hidden: tuple[int, ...] | None = None
    """Hidden widths of every network (overrides the learner config's ``hidden``)."""
    batch_size: int | None = None
    """Batch size (overrides the learner config's ``batch_size``)."""
    overrides: tuple[str, ...] = ()
    """Other learner config fields as ``key=value`` (JSON values), e.g. ``lambda_bc=0.1``."""
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
    verify_checksums: bool = False
    """Check the datasets' sha256 checksums when opening them (content checks always run)."""


def config_as_json(config: Any) -> dict[str, Any]:
    """A config dataclass as JSON data (tuples become lists), as ``config.json`` stores it."""
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }
