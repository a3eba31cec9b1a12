"""A sweep's child process: one training run, its output in its ``train.log``, tied to the sweep.

`train_in_child` is the target of each process `cvl_eval.pipelines.sweep` starts. It

- dies with the sweep: on Linux the kernel sends it SIGTERM when the sweep process ends, even
  by SIGKILL (``prctl(PR_SET_PDEATHSIG)``), and SIGTERM stops a run gracefully after a
  checkpoint, so a killed sweep leaves no orphan training on;
- keeps a failure's traceback in ``train.log`` (written while the log is still open; once the
  process's streams are closed Python can only say ``lost sys.stderr``) and its last line in
  ``error.json`` of the run folder (`read_error`), which the sweep copies into its records.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic
from cvl_eval.runs.folder import RunFolder
from cvl_eval.training.config import TrainConfig

__all__ = [
    "ERROR_FILE",
    "config_from_json",
    "failure_record",
    "main",
    "read_error",
    "train_in_child",
]

ERROR_FILE = "error.json"
"""The error of a run's last failed attempt in a sweep (removed when an attempt starts)."""

_PR_SET_PDEATHSIG = 1


def train_in_child(
    configs: TrainConfig | Sequence[TrainConfig], log_path: str, parent_pid: int
) -> None:
    """Child process: train ``configs`` (one run, or several seeds of one run together,
    `cvl_eval.training.seeds`) with stdout/stderr in ``log_path``; exit code 1 (and the
    traceback in the log, the error in each run's ``error.json``) when training fails."""
    configs = [configs] if isinstance(configs, TrainConfig) else list(configs)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; SIGTERM stops gracefully
    _die_with(parent_pid)
    error_files = [Path(config.out_dir) / ERROR_FILE for config in configs]
    for error_file in error_files:
        error_file.unlink(missing_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    for config in configs[1:]:  # the group's output goes to the first run's log
        with open(RunFolder(config.out_dir).log, "a") as other:
            print(f"== {stamp} trained with its other seeds; output in {log_path}", file=other)
    with open(log_path, "a", buffering=1) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log
        print(f"== {stamp} train {', '.join(c.out_dir for c in configs)}", flush=True)
        try:
            if len(configs) == 1:
                from cvl_eval.training.loop import train

                train(configs[0])
            else:
                from cvl_eval.training.seeds import train_seeds

                train_seeds(configs)
        except BaseException as error:  # noqa: BLE001 - recorded, then the exit code says it
            traceback.print_exc(file=log)
            log.flush()
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            for error_file in error_files:
                write_json_atomic(error_file, {"error": last, "log": str(log_path)})
            raise SystemExit(1) from None


def read_error(run_dir: str | Path) -> str | None:
    """The error line a failed attempt left in ``run_dir`` (None when there is none)."""
    import json

    path = Path(run_dir) / ERROR_FILE
    try:
        return str(json.loads(path.read_text())["error"])
    except (OSError, ValueError, KeyError):
        return None


def _die_with(parent_pid: int) -> None:
    """Ask the kernel for SIGTERM when the parent ends (Linux); exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            print(f"warning: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(errno)}", file=sys.stderr)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        raise SystemExit(1)


def failure_record(
    config: TrainConfig, exitcode: int | None, error: str | None = None
) -> dict[str, Any]:
    """What a sweep records of a failed run: folder, exit code, error line (the run's own, else
    ``error``, e.g. the Ray task's), log, config."""
    from cvl_data.jsonio import to_json_data

    return {
        "run": config.out_dir,
        "exitcode": exitcode,
        "error": read_error(config.out_dir) or error or f"exit code {exitcode} (no error recorded)",
        "log": str(Path(config.out_dir) / "train.log"),
        "config": to_json_data(config),
    }


def config_from_json(data: dict[str, Any]) -> TrainConfig:
    """The `TrainConfig` that ``to_json_data`` turned into ``data`` (lists back to tuples)."""
    return TrainConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def main(argv: list[str] | None = None) -> None:
    """``python -m cvl_eval.pipelines.sweep_worker CONFIG_JSON LOG_PATH PARENT_PID``: one run
    in a fresh interpreter (a Ray task's child, `cvl_eval.pipelines.sweep_ray`)."""
    import json

    config_json, log_path, parent_pid = argv if argv is not None else sys.argv[1:]
    train_in_child(config_from_json(json.loads(config_json)), log_path, int(parent_pid))


if __name__ == "__main__":
    main()
