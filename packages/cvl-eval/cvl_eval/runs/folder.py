"""Run folders: what one training run writes, and the index over many runs.

A run folder (one algorithm x task x seed) holds::

    config.json        the TrainConfig (plus package versions), written before any work
    metrics.jsonl      one JSON record per logged training step (loss terms, steps/s, ...)
    progress.csv       the same records as CSV (rewritten from metrics.jsonl at each checkpoint
                       and at the end, so it always parses)
    evals.jsonl        one record per evaluation: step, return, success, length, normalised score
    tb/                TensorBoard event files (``tensorboard --logdir <run>/tb``)
    checkpoints/       ``latest.json`` -> ``step_<N>/`` (learner checkpoint + ``trainer.json``)
    final/             the learner's final checkpoint (``cvl_algos`` format)
    results.json       the final results; its presence marks the run as finished
    train.log          stdout/stderr of the run when a sweep launched it (a failure's traceback
                       included)
    error.json         the error line of the last failed attempt in a sweep
                       (`cvl_eval.pipelines.sweep_worker`)
    run.lock           the PID of the process training here, locked while it runs
                       (`cvl_eval.runs.lock`)

Every JSON file that marks progress (``results.json``, ``checkpoints/latest.json``) is written
atomically (temp file + rename), so a killed run never leaves a half-written marker.
`cvl_eval.runs.index` gathers the ``results.json`` of many runs into ``index.json`` and
``index.csv``.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic, write_text_atomic

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
PROGRESS_FILE = "progress.csv"
EVALS_FILE = "evals.jsonl"
RESULTS_FILE = "results.json"
TB_DIR = "tb"
CHECKPOINTS_DIR = "checkpoints"
LATEST_FILE = "latest.json"
FINAL_DIR = "final"
TRAINER_STATE_FILE = "trainer.json"
LOG_FILE = "train.log"


def read_json(path: str | Path) -> Any:
    """The JSON document at ``path``."""
    with open(path) as handle:
        return json.load(handle)


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a JSON-lines file; a torn last line (killed writer) is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records


def records_to_csv(records: Sequence[Mapping[str, Any]]) -> str:
    """CSV text of records; columns are the union of keys in order of first appearance."""
    columns: list[str] = []
    for record in records:
        for key in record:
            if key not in columns:
                columns.append(key)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _csv_value(v) for k, v in record.items()})
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return value


def checkpoint_name(total_updates: int) -> str:
    """Name of the checkpoint folder taken after ``total_updates`` updates (sorts by step)."""
    return f"step_{total_updates:010d}"


class RunFolder:
    """Paths and small file operations of one run folder (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # -- paths -----------------------------------------------------------------------------------

    @property
    def config(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def metrics(self) -> Path:
        return self.path / METRICS_FILE

    @property
    def progress(self) -> Path:
        return self.path / PROGRESS_FILE

    @property
    def evals(self) -> Path:
        return self.path / EVALS_FILE

    @property
    def results(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def tensorboard(self) -> Path:
        return self.path / TB_DIR

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS_DIR

    @property
    def final(self) -> Path:
        return self.path / FINAL_DIR

    @property
    def log(self) -> Path:
        return self.path / LOG_FILE

    # -- state -----------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """A run is finished when its ``results.json`` exists."""
        return self.results.is_file()

    def latest_checkpoint(self) -> Path | None:
        """The newest complete checkpoint folder (from ``checkpoints/latest.json``), or None
        (also for a missing or unreadable ``latest.json``; `checkpoint_candidates` lists the
        others)."""
        folder = self.latest_pointer()
        return folder if folder is not None and (folder / TRAINER_STATE_FILE).is_file() else None

    def latest_pointer(self) -> Path | None:
        """The folder ``checkpoints/latest.json`` names (it may be missing), or None when the
        pointer is missing or unreadable."""
        pointer = self.checkpoints / LATEST_FILE
        try:
            name = read_json(pointer)["dir"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not isinstance(name, str) or not name.startswith("step_") or "/" in name:
            return None
        return self.checkpoints / name

    def checkpoint_candidates(self) -> list[Path]:
        """Checkpoint folders a resume may continue from, in order of preference: the one
        ``latest.json`` names (when it exists), then every other ``step_*`` folder, newest
        first (kept older checkpoints, or one written but never committed)."""
        steps = self._step_folders()[::-1]
        latest = self.latest_pointer()
        first = [latest] if latest is not None and latest in steps else []
        return first + [p for p in steps if p not in first]

    def has_checkpoints(self) -> bool:
        """Whether ``checkpoints/`` holds any checkpoint folder or pointer (valid or not)."""
        return bool(self.checkpoint_candidates()) or (self.checkpoints / LATEST_FILE).exists()

    def discard_unstarted(self, remove_folder: bool = False) -> None:
        """Remove what a start that failed before its first update wrote (the config and the
        empty logs), so the corrected command runs without ``--resume``; the lock file stays
        (see `cvl_eval.runs.lock`), unless ``remove_folder``: the start created the folder, and
        its holder (still holding the lock) removes it whole."""
        if remove_folder:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for path in (self.config, self.metrics, self.evals, self.progress):
            path.unlink(missing_ok=True)
        shutil.rmtree(self.tensorboard, ignore_errors=True)

    def commit_checkpoint(self, folder: Path, keep: int = 1) -> None:
        """Point ``latest.json`` at ``folder`` (atomically), then delete older checkpoints.

        ``keep`` checkpoints (the newest) are kept; folders that were never committed (a crash
        between writing and committing) are removed too.
        """
        write_json_atomic(self.checkpoints / LATEST_FILE, {"dir": folder.name})
        steps = self._step_folders()
        for old in steps[: max(0, len(steps) - keep)]:
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)

    def _step_folders(self) -> list[Path]:
        """The ``step_*`` checkpoint folders, oldest first (their names sort by step)."""
        if not self.checkpoints.is_dir():
            return []
        return sorted(
            (p for p in self.checkpoints.iterdir() if p.is_dir() and p.name.startswith("step_")),
            key=lambda p: p.name,
        )

    def checkpoint_folder(self, total_updates: int) -> Path:
        """Folder of the checkpoint taken after ``total_updates`` updates (`checkpoint_name`)."""
        return self.checkpoints / checkpoint_name(total_updates)

    def truncate_logs(self, step_key: str, last: int) -> None:
        """Drop records with ``record[step_key] > last`` from metrics.jsonl and evals.jsonl
        (work done after the checkpoint a resumed run continues from), then rewrite the CSV."""
        for path in (self.metrics, self.evals):
            if path.exists():
                kept = [r for r in read_jsonl(path) if r.get(step_key, 0) <= last]
                write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in kept))
        self.write_progress_csv()

    def write_progress_csv(self) -> None:
        """Rewrite ``progress.csv`` from ``metrics.jsonl``."""
        write_text_atomic(self.progress, records_to_csv(read_jsonl(self.metrics)))

    def read_results(self) -> dict:
        return read_json(self.results)

    def read_evals(self) -> list[dict]:
        return read_jsonl(self.evals)
