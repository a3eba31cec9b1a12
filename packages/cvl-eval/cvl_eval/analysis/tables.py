"""The paper's per-task table: mean +- std over seeds per algorithm and task, best in bold.

Input is ``{algorithm: {task: [final return of seed 0, seed 1, ...]}}`` (raw returns, as in the
paper's Table 3), or long records (`results_from_records`). Output as Markdown, CSV or the
paper's LaTeX rows. A cell reads ``3188 ± 348.9`` (mean without decimals, std with one, as in
the paper); the best mean of a row is bold (all tied best means are).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Results = Mapping[str, Mapping[str, Sequence[float]]]
"""``{algorithm: {task: [value per seed]}}``."""


@dataclass(frozen=True)
class TableFormat:
    """How cells are written.

    Attributes:
        mean_decimals: decimals of the mean (paper: 0).
        std_decimals: decimals of the std (paper: 1).
        ddof: delta degrees of freedom of the std over seeds (0: population std, NumPy's
            default; 1: sample std).
        strip_version: write ``reach`` for ``reach-v3``.
        higher_is_better: bold the largest mean (False: the smallest).
        missing: text of a cell without data.
    """

    mean_decimals: int = 0
    std_decimals: int = 1
    ddof: int = 0
    strip_version: bool = True
    higher_is_better: bool = True
    missing: str = "-"


DEFAULT_FORMAT = TableFormat()


@dataclass(frozen=True)
class Cell:
    """Statistics of one (task, algorithm) cell."""

    mean: float
    std: float
    num_seeds: int


def results_from_records(
    records: Iterable[Mapping], value_key: str = "return"
) -> dict[str, dict[str, list[float]]]:
    """Group records ``{"algorithm", "task", "seed", value_key}`` into `Results` (seed order)."""
    grouped: dict[str, dict[str, dict[int, float]]] = {}
    for record in records:
        by_task = grouped.setdefault(str(record["algorithm"]), {})
        by_seed = by_task.setdefault(str(record["task"]), {})
        seed = int(record["seed"])
        if seed in by_seed:
            raise ValueError(f"duplicate record for {record['algorithm']}/{record['task']}/{seed}")
        by_seed[seed] = float(record[value_key])
    return {
        algo: {task: [v for _, v in sorted(seeds.items())] for task, seeds in tasks.items()}
        for algo, tasks in grouped.items()
    }


def cell_stats(results: Results, fmt: TableFormat = DEFAULT_FORMAT) -> dict[str, dict[str, Cell]]:
    """``{task: {algorithm: Cell}}`` for every (task, algorithm) with at least one value."""
    table: dict[str, dict[str, Cell]] = {}
    for algo, tasks in results.items():
        for task, values in tasks.items():
            array = np.asarray(values, dtype=np.float64)
            if array.ndim != 1 or len(array) == 0:
                raise ValueError(f"{algo}/{task}: expected a non-empty list of values")
            std = float(array.std(ddof=fmt.ddof)) if len(array) > fmt.ddof else 0.0
            table.setdefault(task, {})[algo] = Cell(float(array.mean()), std, len(array))
    return table


def best_of_row(row: Mapping[str, Cell], fmt: TableFormat = DEFAULT_FORMAT) -> set[str]:
    """Algorithms with the best mean in a row (all of them when tied)."""
    if not row:
        return set()
    means = {algo: cell.mean for algo, cell in row.items()}
    best = max(means.values()) if fmt.higher_is_better else min(means.values())
    return {algo for algo, mean in means.items() if mean == best}


def _task_label(task: str, fmt: TableFormat) -> str:
    return task.removesuffix("-v3") if fmt.strip_version else task


def _orders(
    stats: Mapping[str, Mapping[str, Cell]],
    algorithms: Sequence[str] | None,
    tasks: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    if algorithms is None:
        algorithms = sorted({a for row in stats.values() for a in row})
    if tasks is None:
        tasks = sorted(stats)
    return list(algorithms), list(tasks)


def format_cell(cell: Cell, fmt: TableFormat = DEFAULT_FORMAT, pm: str = "±") -> str:
    """``"3188 ± 348.9"`` for mean 3188.2, std 348.94 with the paper's decimals."""
    return f"{cell.mean:.{fmt.mean_decimals}f} {pm} {cell.std:.{fmt.std_decimals}f}"


def _rows(
    results: Results,
    algorithms: Sequence[str] | None,
    tasks: Sequence[str] | None,
    fmt: TableFormat,
    pm: str,
    bold: tuple[str, str],
) -> tuple[list[str], list[list[str]]]:
    stats = cell_stats(results, fmt)
    algorithms, tasks = _orders(stats, algorithms, tasks)
    rows = []
    for task in tasks:
        row = {a: c for a, c in stats.get(task, {}).items() if a in algorithms}
        best = best_of_row(row, fmt)
        cells = [_task_label(task, fmt)]
        for algo in algorithms:
            if algo not in row:
                cells.append(fmt.missing)
                continue
            text = format_cell(row[algo], fmt, pm)
            cells.append(f"{bold[0]}{text}{bold[1]}" if algo in best else text)
        rows.append(cells)
    return algorithms, rows


def to_markdown(
    results: Results,
    algorithms: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    fmt: TableFormat = DEFAULT_FORMAT,
) -> str:
    """Markdown table: one row per task, one column per algorithm, best in ``**bold**``."""
    algorithms, rows = _rows(results, algorithms, tasks, fmt, "±", ("**", "**"))
    lines = ["| Task | " + " | ".join(algorithms) + " |"]
    lines.append("|" + "---|" * (len(algorithms) + 1))
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines) + "\n"


def to_latex_rows(
    results: Results,
    algorithms: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    fmt: TableFormat = DEFAULT_FORMAT,
) -> str:
    """The body rows of the paper's LaTeX table (``task & m $\\pm$ s & ... \\\\``)."""
    _, rows = _rows(results, algorithms, tasks, fmt, "$\\pm$", ("\\textbf{", "}"))
    return "".join(" & ".join(cells) + " \\\\\n" for cells in rows)


def to_csv(
    results: Results,
    algorithms: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    fmt: TableFormat = DEFAULT_FORMAT,
) -> str:
    """CSV: ``task``, then ``<algo>_mean``, ``<algo>_std``, ``<algo>_seeds`` per algorithm
    (4 decimals, empty when missing), then ``best`` (best algorithms joined by ``;``)."""
    stats = cell_stats(results, fmt)
    algorithms, tasks = _orders(stats, algorithms, tasks)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["task"]
    for algo in algorithms:
        header += [f"{algo}_mean", f"{algo}_std", f"{algo}_seeds"]
    writer.writerow([*header, "best"])
    for task in tasks:
        row = {a: c for a, c in stats.get(task, {}).items() if a in algorithms}
        out = [_task_label(task, fmt)]
        for algo in algorithms:
            cell = row.get(algo)
            out += (
                ["", "", ""]
                if cell is None
                else [f"{cell.mean:.4f}", f"{cell.std:.4f}", str(cell.num_seeds)]
            )
        best = [a for a in algorithms if a in best_of_row(row, fmt)]
        writer.writerow([*out, ";".join(best)])
    return buffer.getvalue()


def write_tables(
    results: Results,
    stem: str | Path,
    algorithms: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    fmt: TableFormat = DEFAULT_FORMAT,
) -> dict[str, Path]:
    """Write ``<stem>.md`` and ``<stem>.csv``; returns their paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": stem.with_suffix(".md"), "csv": stem.with_suffix(".csv")}
    paths["markdown"].write_text(to_markdown(results, algorithms, tasks, fmt))
    paths["csv"].write_text(to_csv(results, algorithms, tasks, fmt))
    return paths
