"""`MetricsLogger`: a training run's metrics and evaluations as JSON lines, TensorBoard
(`cvl_eval.training.tb_events`, written in the caller's thread) and (optionally) Weights & Biases
(`cvl_eval.training.wandb_sink`). Every write error names its file; log files are opened
without following symbolic links."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from cvl_data.jsonio import naming_path, open_no_follow
from cvl_eval.runs.folder import RunFolder
from cvl_eval.training.wandb_sink import WandbSink

__all__ = ["MetricsLogger"]


def _append(path: Path) -> IO[str]:
    """``path`` opened for appending text, never through a symbolic link."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    return os.fdopen(open_no_follow(path, flags), "a", encoding="utf-8")


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
        self._metrics = _append(run.metrics)  # closed in close()
        self._evals = _append(run.evals)
        self._tb = None
        if tensorboard:
            from cvl_eval.training.tb_events import EventFile

            self._tb = EventFile(run.tensorboard, purge_step=purge_step or None)

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
            self._tb.add_scalars(scalars, global_step)
        if self._wandb is not None:
            self._wandb.log(scalars, global_step)

    def flush(self) -> None:
        for path, handle in ((self.run.metrics, self._metrics), (self.run.evals, self._evals)):
            with naming_path(path):
                handle.flush()
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
