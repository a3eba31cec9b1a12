"""Learning curves: evaluation return (and success rate) vs gradient steps, mean +- std over
seeds, as PNG.

Input is long records, one per evaluation: ``{"algorithm", "task", "seed", "step", "return"}``
and optionally ``"success"`` (what a training loop logs), as a list of dicts or a pandas
DataFrame; with ``success`` each task gets a success-rate panel under its return panel. Per (task, algorithm)
the curve is averaged over seeds at the steps every seed has evaluated, so a seed that stopped
early does not silently bias the mean.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from cvl_eval.analysis.figures import algorithm_colors, save_figure, steps_label, use_agg

REQUIRED_COLUMNS = ("algorithm", "task", "seed", "step", "return")


def as_frame(records: pd.DataFrame | Iterable[Mapping]) -> pd.DataFrame:
    """Records as a DataFrame with the `REQUIRED_COLUMNS` (checked)."""
    frame = records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame(list(records))
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"learning-curve records lack columns {missing}")
    if frame.duplicated(["algorithm", "task", "seed", "step"]).any():
        raise ValueError("duplicate (algorithm, task, seed, step) records")
    return frame


def curve_stats(
    records: pd.DataFrame | Iterable[Mapping], ddof: int = 0, value: str = "return"
) -> pd.DataFrame:
    """Mean and std of ``value`` over seeds per (task, algorithm, step), at steps all seeds
    evaluated.

    Returns:
        DataFrame with columns task, algorithm, step, mean, std, seeds (sorted).
    """
    frame = as_frame(records)
    if value not in frame.columns:
        raise ValueError(f"learning-curve records lack the column {value!r}")
    seeds = frame.groupby(["task", "algorithm"])["seed"].nunique().rename("all_seeds")
    grouped = frame.groupby(["task", "algorithm", "step"])[value]
    stats = pd.DataFrame(
        {
            "mean": grouped.mean(),
            "std": grouped.std(ddof=ddof).fillna(0.0),
            "seeds": grouped.count(),
        }
    ).reset_index()
    stats = stats.join(seeds, on=["task", "algorithm"])
    stats = stats[stats["seeds"] == stats["all_seeds"]].drop(columns="all_seeds")
    return stats.sort_values(["task", "algorithm", "step"]).reset_index(drop=True)


PANELS = {"return": "Episode return", "success": "Success rate"}
"""The values a learning-curve figure plots, with their axis labels."""


def plot_learning_curves(
    records: pd.DataFrame | Iterable[Mapping],
    path: str | Path,
    algorithms: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    ncols: int = 5,
    xlabel: str = "Gradient steps",
    ddof: int = 0,
) -> Path:
    """One panel per task, one line per algorithm (mean over seeds) with a +-std band; records
    with ``success`` add a success-rate panel under each task's return panel.

    Also writes the plotted numbers next to the PNG as ``<path>.json`` (``value`` says which).
    """
    use_agg()
    frame = as_frame(records)
    values = [v for v in PANELS if v in frame.columns]
    stats = {v: curve_stats(frame, ddof=ddof, value=v) for v in values}
    algorithms = list(algorithms or sorted(stats["return"]["algorithm"].unique()))
    tasks = list(tasks or sorted(stats["return"]["task"].unique()))
    colors = algorithm_colors(algorithms)
    ncols = max(1, min(ncols, len(tasks)))
    nrows = math.ceil(len(tasks) / ncols) * len(values)
    # The legend wraps into rows of as many entries as the figure's width holds: an entry is
    # about 0.6 in of line and padding plus 0.085 in per character of the longest name.
    entry_width = 0.6 + 0.085 * max(len(str(a)) for a in algorithms)
    legend_cols = max(1, min(len(algorithms), int(3.4 * ncols / entry_width)))
    legend_height = 0.25 * math.ceil(len(algorithms) / legend_cols) + 0.1
    height = 2.7 * nrows + legend_height
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.4 * ncols, height), squeeze=False, sharex=True
    )
    for index, task in enumerate(tasks):
        row, col = divmod(index, ncols)
        for offset, value in enumerate(values):
            ax = axes[row * len(values) + offset, col]
            _plot_panel(ax, stats[value], task, algorithms, colors)
            ax.set_ylabel(PANELS[value])
            if value == "success":
                ax.set_ylim(-0.05, 1.05)
    for index in range(len(tasks), axes.shape[1] * nrows // len(values)):
        row, col = divmod(index, ncols)
        for offset in range(len(values)):
            axes[row * len(values) + offset, col].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    handles = [Line2D([0], [0], color=colors[a], lw=2.5, label=a) for a in algorithms]
    fig.legend(handles=handles, loc="upper center", ncol=legend_cols, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_height / height))
    path = save_figure(fig, path, tight=False)
    numbers = [
        {"value": value, **row}
        for value, table in stats.items()
        for row in table[table["task"].isin(tasks) & table["algorithm"].isin(algorithms)].to_dict(
            orient="records"
        )
    ]
    path.with_suffix(".json").write_text(json.dumps(numbers, indent=1))
    return path


def _plot_panel(ax, stats: pd.DataFrame, task: str, algorithms, colors) -> None:
    """One task's curves of one value: mean line and +-std band per algorithm."""
    for algo in algorithms:
        curve = stats[(stats["task"] == task) & (stats["algorithm"] == algo)]
        if curve.empty:
            continue
        x, mean, std = curve["step"].to_numpy(), curve["mean"].to_numpy(), curve["std"].to_numpy()
        ax.plot(x, mean, color=colors[algo], lw=1.8)
        ax.fill_between(x, mean - std, mean + std, color=colors[algo], alpha=0.2, lw=0)
    ax.set_title(task.removesuffix("-v3"), fontsize="medium")
    ax.grid(alpha=0.3)
    ax.xaxis.set_major_formatter(FuncFormatter(steps_label))


def final_returns(records: pd.DataFrame | Iterable[Mapping]) -> dict[str, dict[str, list[float]]]:
    """Each seed's return at its last step, as ``{algorithm: {task: [per seed]}}`` (for tables)."""
    frame = as_frame(records).sort_values("step")
    last = frame.groupby(["algorithm", "task", "seed"]).tail(1).sort_values("seed")
    out: dict[str, dict[str, list[float]]] = {}
    for (algo, task), group in last.groupby(["algorithm", "task"]):
        out.setdefault(str(algo), {})[str(task)] = [float(v) for v in group["return"]]
    return out
