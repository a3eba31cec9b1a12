"""`MetricsLogger`: a training run's metrics and evaluations as JSON lines, TensorBoard and
(optionally) Weights & Biases (`cvl_eval.training.wandb_sink`)."""

from __future__ import annotations

import json
from typing import Any

from cvl_data.jsonio import naming_path
from cvl_eval.runs.folder import RunFolder
from cvl_eval.training.wandb_sink import WandbSink

__all__ = ["MetricsLogger"]


class MetricsLogger:
    """Appends metrics/eval records to JSON lines, TensorBoard (tags ``<phase>/<key>``) and, when
    given, a `WandbSink` (same keys and steps)."""

    def __init__(
        self,
        run: RunFolder,
        tensorboard: bool,
        purge_step: int | None = None,
        wandb: WandbSink | None = None,
    ):
        self.run = run
        self._wandb = wandb
        self._metrics = open(run.metrics, "a")  # noqa: SIM115 - closed in close()
        self._evals = open(run.evals, "a")  # noqa: SIM115
        self._tb = None
        if tensorboard:
            import tensorboard  # noqa: F401 - SummaryWriter needs it; explicit for Pants
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(run.tensorboard), purge_step=purge_step or None)

    def log_metrics(self, record: dict[str, Any], global_step: int, phase: str) -> None:
        with naming_path(self.run.metrics):  # e.g. a full disk
            self._metrics.write(json.dumps(record) + "\n")
            self._metrics.flush()
        skip = ("phase", "update", "step", "pretrain_step")
        scalars = {
            f"{phase}/{key}": value
            for key, value in record.items()
            if key not in skip and isinstance(value, (int, float))
        }
        self._scalars(scalars, global_step)

    def log_eval(self, record: dict[str, Any], global_step: int) -> None:
        with naming_path(self.run.evals):
            self._evals.write(json.dumps(record) + "\n")
            self._evals.flush()
        keys = ("return", "success", "length", "normalized")
        scalars = {f"eval/{k}": record[k] for k in keys if record.get(k) is not None}
        self._scalars(scalars, global_step)

    def _scalars(self, scalars: dict[str, float], global_step: int) -> None:
        if self._tb is not None:
            for tag, value in scalars.items():
                self._tb.add_scalar(tag, value, global_step)
        if self._wandb is not None:
            self._wandb.log(scalars, global_step)

    def flush(self) -> None:
        self._metrics.flush()
        self._evals.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        self.flush()
        self._metrics.close()
        self._evals.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.close()
