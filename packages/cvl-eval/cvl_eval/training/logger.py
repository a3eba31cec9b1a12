"""`MetricsLogger`: a training run's metrics and evaluations as JSON lines and TensorBoard."""

from __future__ import annotations

import json
from typing import Any

from cvl_data.jsonio import naming_path
from cvl_eval.runs.folder import RunFolder

__all__ = ["MetricsLogger"]


class MetricsLogger:
    """Appends metrics/eval records to JSON lines and TensorBoard (tags ``<phase>/<key>``)."""

    def __init__(self, run: RunFolder, tensorboard: bool, purge_step: int | None = None):
        self.run = run
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
        if self._tb is not None:
            skip = ("phase", "update", "step", "pretrain_step")
            for key, value in record.items():
                if key not in skip and isinstance(value, (int, float)):
                    self._tb.add_scalar(f"{phase}/{key}", value, global_step)

    def log_eval(self, record: dict[str, Any], global_step: int) -> None:
        with naming_path(self.run.evals):
            self._evals.write(json.dumps(record) + "\n")
            self._evals.flush()
        if self._tb is not None:
            for key in ("return", "success", "length", "normalized"):
                if record.get(key) is not None:
                    self._tb.add_scalar(f"eval/{key}", record[key], global_step)

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
