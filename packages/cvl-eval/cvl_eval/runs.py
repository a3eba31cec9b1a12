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
    train.log          stdout/stderr of the run when a sweep launched it

Every JSON file that marks progress (``results.json``, ``checkpoints/latest.json``) is written
atomically (temp file + rename), so a killed run never leaves a half-written marker.
``write_index`` gathers the ``results.json`` of many runs into ``index.json`` and ``index.csv``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

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

INDEX_COLUMNS = (
    "run",
    "algorithm",
    "task",
    "seed",
    "steps",
    "return",
    "return_std",
    "success",
    "normalized",
    "wall_time_s",
    "path",
)
"""Columns of ``index.csv`` (one row per finished run)."""


def write_json_atomic(path: str | Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` via a temporary sibling and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary sibling and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def read_json(path: str | Path) -> Any:
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
        """The newest complete checkpoint folder (from ``checkpoints/latest.json``), or None."""
        pointer = self.checkpoints / LATEST_FILE
        if not pointer.is_file():
            return None
        folder = self.checkpoints / read_json(pointer)["dir"]
        return folder if (folder / TRAINER_STATE_FILE).is_file() else None

    def commit_checkpoint(self, folder: Path, keep: int = 1) -> None:
        """Point ``latest.json`` at ``folder`` (atomically), then delete older checkpoints.

        ``keep`` checkpoints (the newest) are kept; folders that were never committed (a crash
        between writing and committing) are removed too.
        """
        write_json_atomic(self.checkpoints / LATEST_FILE, {"dir": folder.name})
        steps = sorted(
            (p for p in self.checkpoints.iterdir() if p.is_dir() and p.name.startswith("step_")),
            key=lambda p: p.name,
        )
        for old in steps[: max(0, len(steps) - keep)]:
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)

    def checkpoint_folder(self, total_updates: int) -> Path:
        """Folder name of the checkpoint taken after ``total_updates`` updates (sortable)."""
        return self.checkpoints / f"step_{total_updates:010d}"

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


def find_runs(roots: str | Path | Iterable[str | Path], finished_only: bool = True) -> list[Path]:
    """Run folders under ``roots`` (a run folder itself, or any folder above run folders).

    A folder is a run folder when it holds ``config.json`` and (with ``finished_only``)
    ``results.json``. Sorted by path.
    """
    if isinstance(roots, (str, Path)):
        roots = [roots]
    found: set[Path] = set()
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise FileNotFoundError(f"no such run folder or directory: {root}")
        marker = RESULTS_FILE if finished_only else CONFIG_FILE
        candidates = [root] if (root / marker).is_file() else []
        candidates += [p.parent for p in root.rglob(marker)]
        for path in candidates:
            if (path / CONFIG_FILE).is_file() and (
                not finished_only or (path / RESULTS_FILE).is_file()
            ):
                found.add(path)
    return sorted(found)


def index_row(run_dir: str | Path, base: str | Path | None = None) -> dict[str, Any]:
    """One ``index.csv`` row from a finished run's ``results.json``."""
    run = RunFolder(run_dir)
    results = run.read_results()
    final = results.get("final_eval", {})
    path = run.path if base is None else os.path.relpath(run.path, base)
    return {
        "run": results.get("run_name", run.path.name),
        "algorithm": results["label"],
        "task": results["task"],
        "seed": results["seed"],
        "steps": results["steps"],
        "return": final.get("mean_return"),
        "return_std": final.get("std_return"),
        "success": final.get("success_rate"),
        "normalized": final.get("mean_normalized_return"),
        "wall_time_s": results.get("wall_time_s"),
        "path": str(path),
    }


def write_index(
    run_dirs: Iterable[str | Path], out_dir: str | Path, extra: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Write ``index.json`` (rows plus ``extra``) and ``index.csv`` over finished runs."""
    out = Path(out_dir)
    rows = [index_row(p, base=out) for p in sorted(Path(p) for p in run_dirs)]
    rows.sort(key=lambda r: (r["algorithm"], r["task"], r["seed"]))
    document = {"num_runs": len(rows), "runs": rows, **(extra or {})}
    paths = {"json": out / "index.json", "csv": out / "index.csv"}
    write_json_atomic(paths["json"], document)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(INDEX_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(paths["csv"], buffer.getvalue())
    return paths


def write_policy_run(
    path: str | Path,
    label: str,
    task: str,
    result: Any,
    seed: int = 0,
    description: str = "",
) -> Path:
    """A finished run folder for a policy that was evaluated but not trained (e.g. a random
    baseline): ``config.json`` and ``results.json`` in the schema of trained runs (no curve,
    no checkpoint), so reports and indexes treat it like any other run.

    Args:
        result: the policy's `cvl_eval.rollout.EvalResult`.
    """
    run = RunFolder(path)
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run.config, {"label": label, "task": task, "description": description})
    document = result.to_dict()
    results = {
        "run_name": run.path.name,
        "label": label,
        "algorithm": label,
        "task": task,
        "seed": seed,
        "steps": 0,
        "pretrain_steps": 0,
        "description": description,
        "final_eval": {**document["summary"], **document},
        "curve": [],
    }
    write_json_atomic(run.results, results)
    return run.path


def versions() -> dict[str, str]:
    """Versions of our packages and the main libraries (recorded in every run folder)."""
    out = {}
    for name in ("cvl-data", "cvl-models", "cvl-algos", "cvl-eval", "torch", "metaworld"):
        try:
            out[name] = package_version(name)
        except PackageNotFoundError:
            module = __import__(name.replace("-", "_"))
            out[name] = str(getattr(module, "__version__", "unknown"))
    return out


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
        self._metrics.write(json.dumps(record) + "\n")
        self._metrics.flush()
        if self._tb is not None:
            skip = ("phase", "update", "step", "pretrain_step")
            for key, value in record.items():
                if key not in skip and isinstance(value, (int, float)):
                    self._tb.add_scalar(f"{phase}/{key}", value, global_step)

    def log_eval(self, record: dict[str, Any], global_step: int) -> None:
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
