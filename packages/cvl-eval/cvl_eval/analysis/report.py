"""From run folders to the paper's figures and tables.

`report(ReportConfig)` reads finished run folders (``results.json`` and ``evals.jsonl``, see
`cvl_eval.runs.folder`) and writes into ``out_dir``:

- ``table.md`` / ``table.csv``: final return, mean +- std over seeds per algorithm and task, the
  best in bold (`cvl_eval.analysis.tables`, the paper's table 3 layout); ``success.md`` /
  ``.csv`` the same for the success rate;
- ``learning_curves.png`` (+ ``.json``): evaluation return vs gradient steps, mean +- std over
  seeds (`cvl_eval.analysis.curves`);
- ``rliable/``: aggregate intervals (median, IQM, mean, optimality gap), performance profiles,
  probability of improvement (with more than one algorithm) and, when all runs were evaluated at
  the same steps, sample-efficiency curves (`cvl_eval.analysis.plots.write_rliable_report`) on
  expert-normalised scores (Meta-World; raw returns for tasks without a reference);
- ``report.json``: the numbers and the paths.

rliable needs the same number of runs for every task of an algorithm: each algorithm keeps its
first ``n`` seeds per task, ``n`` its smallest seed count, over the tasks every algorithm has.
With ``episodes_as_runs`` (single-seed reports such as the quickstart's) the evaluation
episodes of the final evaluation play the role of runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.curves import plot_learning_curves
from cvl_eval.analysis.metrics import BootstrapConfig
from cvl_eval.analysis.plots import write_rliable_report
from cvl_eval.analysis.run_scores import (
    RunRecord,
    curve_dict,
    curve_records,
    grouped,
    load_runs,
    score_dict,
)
from cvl_eval.analysis.tables import TableFormat, write_tables
from cvl_eval.errors import ConfigError

__all__ = ["ReportConfig", "report"]


@dataclass(frozen=True)
class ReportConfig:
    """What to report on and where."""

    runs: tuple[str, ...]
    """Run folders, or folders above them (a sweep folder); every finished run found counts."""
    out_dir: str
    """Folder for the tables, figures and ``report.json``."""
    algorithms: tuple[str, ...] | None = None
    """Algorithm (label) order in tables and figures; default: sorted. Others are left out."""
    bootstrap_reps: int = 2000
    """Stratified bootstrap replications of the rliable intervals."""
    episodes_as_runs: bool = False
    """rliable over the final evaluation's episodes instead of seeds (single-seed reports)."""
    last_evals: int = 1
    """Score each run by the pooled episodes of its last K evaluations (1: the final evaluation
    alone); tables, rliable and ``report.json`` all use that score, and ``report.md`` says it."""
    up_to_step: int | None = None
    """Read every run as if it had stopped at this step: its evaluations after it are left out
    of the score, the learning curves and rliable's sample-efficiency curves, and each run must
    have evaluated at exactly this step (e.g. the 10k-step score of 30k-step runs)."""
    final_episodes: int | None = None
    """Score each run by this many episodes of its final policy instead of its evaluations:
    ``<run>/final/eval_<N>ep_seed<S>.json``, written beforehand by ``cvl-evaluate --checkpoint
    <run> --episodes N --seed S`` (S the run's evaluation seed; a run without it is refused with
    that command). Learning curves still come from the evaluations. Not with ``last_evals`` or
    ``up_to_step``."""
    title: str = "CVL report"
    """Heading of ``report.md``."""
    pairs: tuple[str, ...] = ()
    """Probability-of-improvement pairs as ``X,Y`` (P(X > Y)); default: the first algorithm
    against each other one."""


def report(config: ReportConfig) -> dict[str, Any]:
    """Write the tables, learning curves and rliable figures of the runs; see the module doc."""
    algorithms, runs = _selected_runs(config)
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    per_episode = config.episodes_as_runs
    returns = grouped(runs, "mean_return", "returns" if per_episode else None)
    successes = grouped(runs, "success_rate", "successes" if per_episode else None)
    files = _write_tables(returns, successes, algorithms, out)
    records = curve_records(runs, algorithms)
    if records:
        curve_algos = [a for a in algorithms if any(r["algorithm"] == a for r in records)]
        files["learning_curves_png"] = str(
            plot_learning_curves(records, out / "learning_curves.png", algorithms=curve_algos)
        )
    scores, tasks, normalized = score_dict(runs, algorithms, config.episodes_as_runs)
    curves = None if config.episodes_as_runs else curve_dict(runs, algorithms, tasks, normalized)
    rliable_files = write_rliable_report(
        scores,
        out / "rliable",
        BootstrapConfig(reps=config.bootstrap_reps),
        curve_dict=curves[0] if curves else None,
        steps=curves[1] if curves else None,
        pairs=_pairs(config.pairs, algorithms) or None,
    )
    files.update({f"rliable_{k}": v for k, v in rliable_files.items()})
    summary = {
        "algorithms": algorithms,
        "tasks": sorted({r.task for r in runs}),
        "num_runs": len(runs),
        "rliable": {
            "tasks": tasks,
            "normalized": normalized,
            "runs_are": "evaluation episodes" if config.episodes_as_runs else "seeds",
            "runs_per_task": {a: int(s.shape[0]) for a, s in scores.items()},
        },
        "final_return": returns,
        "final_success": successes,
        "values_are": "per evaluation episode" if per_episode else "per seed",
        "scored_by": _scored_by(config.last_evals, config.up_to_step, config.final_episodes),
        "files": files,
    }
    write_json_atomic(out / "report.json", summary)
    (out / "report.md").write_text(_markdown(config.title, summary, out))
    files["report_json"] = str(out / "report.json")
    files["report_md"] = str(out / "report.md")
    return summary


def _scored_by(
    last_evals: int, up_to_step: int | None = None, final_episodes: int | None = None
) -> str:
    if final_episodes is not None:
        return f"{final_episodes} episodes of the final policy"
    at = "" if up_to_step is None else f" up to step {up_to_step}"
    if last_evals == 1:
        return (
            "the final evaluation" if up_to_step is None else f"the evaluation at step {up_to_step}"
        )
    return f"the pooled episodes of the last {last_evals} evaluations{at}"


def _selected_runs(config: ReportConfig) -> tuple[list[str], list[RunRecord]]:
    """The algorithms (labels) to report, in order, and their finished runs; checked."""
    if config.bootstrap_reps < 1:
        raise ConfigError("bootstrap_reps must be >= 1")
    try:
        runs = load_runs(config.runs, config.last_evals, config.up_to_step, config.final_episodes)
    except FileNotFoundError as error:
        raise ConfigError(str(error)) from None
    if not runs:
        raise ConfigError(f"no finished runs (results.json) under {list(config.runs)}")
    present = sorted({r.label for r in runs})
    algorithms = list(config.algorithms or present)
    missing = [a for a in algorithms if a not in present]
    if missing:
        raise ConfigError(f"no finished runs of {missing}; found {present}")
    selected = [r for r in runs if r.label in algorithms]
    _refuse_repeated_runs(selected)
    return algorithms, selected


def _refuse_repeated_runs(runs: list[RunRecord]) -> None:
    """Two runs of one label, task and seed would be averaged into one table cell and one
    rliable column (e.g. a task's mixture and its stitch dataset under two roots): refused,
    with both folders named, before anything is written."""
    seen: dict[tuple[str, str, int], RunRecord] = {}
    for run in runs:
        key = (run.label, run.task, run.seed)
        if key in seen:
            raise ConfigError(
                f"two runs of {run.label} on {run.task} seed {run.seed}: {seen[key].path} and "
                f"{run.path}; report them separately or give them different --label"
            )
        seen[key] = run


def _write_tables(returns, successes, algorithms: list[str], out: Path) -> dict[str, str]:
    """``table.md`` / ``.csv`` (final return) and ``success.md`` / ``.csv``; their paths."""
    tables = write_tables(returns, out / "table", algorithms=algorithms)
    success_format = TableFormat(mean_decimals=2, std_decimals=2)
    success = write_tables(successes, out / "success", algorithms=algorithms, fmt=success_format)
    return {
        "table_md": str(tables["markdown"]),
        "table_csv": str(tables["csv"]),
        "success_md": str(success["markdown"]),
        "success_csv": str(success["csv"]),
    }


def _markdown(title: str, summary: dict[str, Any], out: Path) -> str:
    lines = [f"# {title}", ""]
    rl = summary["rliable"]
    lines.append(
        f"{summary['num_runs']} runs, algorithms {', '.join(summary['algorithms'])}; "
        f"tasks {', '.join(t.removesuffix('-v3') for t in summary['tasks'])}. Each run is "
        f"scored by {summary['scored_by']}."
    )
    over = "evaluation episodes" if rl["runs_are"] == "evaluation episodes" else "seeds"
    lines += ["", f"## Final return (mean ± std over {over})", ""]
    lines.append((out / "table.md").read_text())
    lines += ["## Success rate", "", (out / "success.md").read_text()]
    score = "expert-normalised score" if rl["normalized"] else "raw return"
    lines += [
        "## Figures",
        "",
        f"rliable on the {score}, runs = {rl['runs_are']}:",
        "",
    ]
    for key, path in summary["files"].items():
        if path.endswith(".png"):
            lines.append(f"- {key}: `{Path(path).relative_to(out)}`")
    return "\n".join(lines) + "\n"


def _pairs(pairs: tuple[str, ...], algorithms: list[str]) -> list[tuple[str, str]]:
    """``X,Y`` strings as (X, Y); each name must be a reported algorithm."""
    out = []
    for pair in pairs:
        x, sep, y = pair.partition(",")
        if not sep or x not in algorithms or y not in algorithms or x == y:
            raise ConfigError(
                f"--pairs: {pair!r} must be X,Y with two different algorithms of {algorithms}"
            )
        out.append((x, y))
    return out
