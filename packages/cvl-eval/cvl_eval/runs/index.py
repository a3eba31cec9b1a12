"""The index over many run folders: finding finished runs, ``index.json`` / ``index.csv``, and
run folders for policies that were evaluated but not trained (e.g. a random baseline)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic, write_text_atomic
from cvl_eval.runs.folder import CONFIG_FILE, RESULTS_FILE, RunFolder

__all__ = ["find_runs", "index_row", "write_index", "write_policy_run"]

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
        result: the policy's `cvl_eval.rollout.evaluate.EvalResult`.
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
