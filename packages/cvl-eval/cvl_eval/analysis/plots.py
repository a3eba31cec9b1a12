"""PNG plots of the rliable results of `cvl_eval.analysis.metrics` (rliable.plot_utils; Agg chosen
when a plot is drawn, `cvl_eval.analysis.figures.use_agg`).

`write_rliable_report` computes every metric of a score dict, writes the numbers as JSON and
one PNG per kind of plot, and returns the paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter
from rliable import plot_utils

from cvl_eval.analysis.figures import algorithm_colors, save_figure, steps_label, use_agg
from cvl_eval.analysis.metrics import (
    AGGREGATE_NAMES,
    DEFAULT_BOOTSTRAP,
    BootstrapConfig,
    aggregate_scores,
    performance_profiles,
    probability_of_improvement,
    sample_efficiency,
)

ROW_HEIGHT = 0.5  # inches per algorithm in the aggregate plot


def _legend(ax, algorithms: Sequence[str]) -> None:
    """Legend above the axes, one line per algorithm (rliable adds CI patches to the handles)."""
    colors = algorithm_colors(algorithms)
    handles = [Line2D([0], [0], color=colors[a], lw=2.5, label=a) for a in algorithms]
    ax.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=min(len(algorithms), 4),
        fontsize="medium",
        frameon=False,
    )


def plot_aggregates(aggregates: Mapping[str, Mapping], path: str | Path) -> Path:
    """Median / IQM / mean / optimality gap with CIs, one panel per metric."""
    use_agg()
    algorithms = list(aggregates)
    points = {a: np.array([aggregates[a][m]["point"] for m in AGGREGATE_NAMES]) for a in algorithms}
    intervals = {
        a: np.array(
            [
                [aggregates[a][m]["low"] for m in AGGREGATE_NAMES],
                [aggregates[a][m]["high"] for m in AGGREGATE_NAMES],
            ]
        )
        for a in algorithms
    }
    fig, _ = plot_utils.plot_interval_estimates(
        points,
        intervals,
        metric_names=list(AGGREGATE_NAMES),
        algorithms=algorithms,
        colors=algorithm_colors(algorithms),
        xlabel="Normalized score (1 = scripted expert)",
        subfigure_width=3.6,
        row_height=ROW_HEIGHT,
        xlabel_y_coordinate=-0.55 / (ROW_HEIGHT * len(algorithms)),
    )
    return save_figure(fig, path)


def plot_profiles(profiles: Mapping[str, Mapping], path: str | Path) -> Path:
    """Performance profiles (score distributions) with CI bands."""
    use_agg()
    algorithms = list(profiles)
    taus = np.asarray(next(iter(profiles.values()))["tau"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot_utils.plot_performance_profiles(
        {a: np.asarray(profiles[a]["profile"]) for a in algorithms},
        taus,
        performance_profile_cis={
            a: (np.asarray(profiles[a]["low"]), np.asarray(profiles[a]["high"])) for a in algorithms
        },
        colors=algorithm_colors(algorithms),
        xlabel=r"Normalized score ($\tau$)",
        ylabel=r"Fraction of runs with score $> \tau$",
        labelsize="large",
        ticklabelsize="medium",
        ax=ax,
    )
    _legend(ax, algorithms)
    return save_figure(fig, path)


def plot_improvement(improvement: Mapping[str, Mapping], path: str | Path) -> Path:
    """P(X > Y) with CIs, one row per pair."""
    use_agg()
    keys = list(improvement)
    fig, ax = plt.subplots(figsize=(5, 0.6 + 0.55 * len(keys)))
    plot_utils.plot_probability_of_improvement(
        {k: np.array([improvement[k]["point"]]) for k in keys},
        {k: np.array([[improvement[k]["low"]], [improvement[k]["high"]]]) for k in keys},
        pair_separator=",",
        ax=ax,
        labelsize="medium",
        ticklabelsize="medium",
    )
    ax.set_xlim(-0.02, 1.02)  # probabilities: one fixed scale across reports
    ax.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
    return save_figure(fig, path)


def plot_efficiency(curves: Mapping[str, Mapping], path: str | Path, xlabel: str) -> Path:
    """IQM vs training step with CI bands."""
    use_agg()
    algorithms = list(curves)
    steps = np.asarray(next(iter(curves.values()))["steps"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot_utils.plot_sample_efficiency_curve(
        steps,
        {a: np.asarray(curves[a]["iqm"]) for a in algorithms},
        {a: np.array([curves[a]["low"], curves[a]["high"]]) for a in algorithms},
        algorithms=algorithms,
        colors=algorithm_colors(algorithms),
        xlabel=xlabel,
        ylabel="IQM normalized score",
        labelsize="large",
        ticklabelsize="medium",
        ax=ax,
    )
    ax.xaxis.set_major_formatter(FuncFormatter(steps_label))
    _legend(ax, algorithms)
    return save_figure(fig, path)


def write_rliable_report(
    score_dict: Mapping[str, np.ndarray],
    out_dir: str | Path,
    config: BootstrapConfig = DEFAULT_BOOTSTRAP,
    pairs: Sequence[tuple[str, str]] | None = None,
    curve_dict: Mapping[str, np.ndarray] | None = None,
    steps: Sequence[float] | None = None,
    step_label: str = "Gradient steps",
) -> dict[str, str]:
    """Compute all rliable metrics; write ``rliable.json`` and PNGs into ``out_dir``.

    Args:
        score_dict: per algorithm, final normalised scores (runs, tasks).
        out_dir: output folder.
        config: bootstrap settings.
        pairs: probability-of-improvement pairs (default: first algorithm vs each other).
        curve_dict: optional per algorithm (runs, tasks, points) scores over training.
        steps: training step of each curve point (with ``curve_dict``).
        step_label: x-axis label of the sample-efficiency plot.

    Returns:
        Map of artefact name -> file path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    numbers: dict = {}
    numbers["bootstrap"] = {
        "reps": config.reps,
        "confidence": config.confidence,
        "method": config.method,
        "seed": config.seed,
        "task_bootstrap": config.task_bootstrap,
    }
    numbers["aggregates"] = aggregate_scores(score_dict, config)
    numbers["performance_profiles"] = performance_profiles(score_dict, config=config)
    paths = {
        "aggregates_png": str(plot_aggregates(numbers["aggregates"], out / "aggregates.png")),
        "profiles_png": str(plot_profiles(numbers["performance_profiles"], out / "profiles.png")),
    }
    if len(score_dict) > 1:
        numbers["probability_of_improvement"] = probability_of_improvement(
            score_dict, pairs, config
        )
        paths["improvement_png"] = str(
            plot_improvement(numbers["probability_of_improvement"], out / "improvement.png")
        )
    if curve_dict is not None:
        if steps is None:
            raise ValueError("steps are required with curve_dict")
        numbers["sample_efficiency"] = sample_efficiency(curve_dict, steps, config)
        paths["efficiency_png"] = str(
            plot_efficiency(numbers["sample_efficiency"], out / "efficiency.png", step_label)
        )
    json_path = out / "rliable.json"
    json_path.write_text(json.dumps(numbers, indent=2) + "\n")
    paths["json"] = str(json_path)
    return paths
