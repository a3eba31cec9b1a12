"""From run folders to the paper's figures and tables.

`report(ReportConfig)` reads finished run folders (``results.json`` and ``evals.jsonl``, see
`cvl_eval.runs`) and writes into ``out_dir``:

- ``table.md`` / ``table.csv``: final return, mean +- std over seeds per algorithm and task, the
  best in bold (`cvl_eval.tables`, the paper's table 3 layout); ``success.md`` / ``.csv`` the
  same for the success rate;
- ``learning_curves.png`` (+ ``.json``): evaluation return vs gradient steps, mean +- std over
  seeds (`cvl_eval.curves`);
- ``rliable/``: aggregate intervals (median, IQM, mean, optimality gap), performance profiles,
  probability of improvement (with more than one algorithm) and, when all runs were evaluated at
  the same steps, sample-efficiency curves (`cvl_eval.metric_plots.write_rliable_report`) on
  expert-normalised scores (Meta-World; raw returns for tasks without a reference);
- ``report.json``: the numbers and the paths.

rliable needs the same number of runs for every task of an algorithm: each algorithm keeps its
first ``n`` seeds per task, ``n`` its smallest seed count, over the tasks every algorithm has.
With ``episodes_as_runs`` (single-seed reports such as the quickstart's) the evaluation
episodes of the final evaluation play the role of runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvl_eval.runs import RunFolder, find_runs, write_json_atomic
from cvl_eval.train_setup import ConfigError


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
    title: str = "CVL report"
    """Heading of ``report.md``."""


@dataclass(frozen=True)
class RunRecord:
    """What the report reads from one finished run folder."""

    path: Path
    label: str
    task: str
    seed: int
    final: dict[str, Any]
    evals: list[dict[str, Any]]


def load_runs(roots: Sequence[str]) -> list[RunRecord]:
    """Finished runs under ``roots`` (`cvl_eval.runs.find_runs`)."""
    records = []
    for path in find_runs([Path(r) for r in roots]):
        run = RunFolder(path)
        results = run.read_results()
        records.append(
            RunRecord(
                path=path,
                label=results["label"],
                task=results["task"],
                seed=int(results["seed"]),
                final=results["final_eval"],
                evals=run.read_evals(),
            )
        )
    return records


def _normalizer(task: str):
    from cvl_eval.envs import is_metaworld
    from cvl_eval.experts import normalized_score

    if is_metaworld(task):
        return lambda r: normalized_score(task, r)
    return None


def _grouped(
    runs: list[RunRecord], key: str, episodes: str | None = None
) -> dict[str, dict[str, list[float]]]:
    """``{label: {task: [final <key> of each seed, in seed order]}}``; with ``episodes`` (a
    per-episode field of the final evaluation) the values of every episode of every seed."""
    out: dict[str, dict[str, list[tuple[int, list[float]]]]] = {}
    for run in runs:
        values = [float(v) for v in run.final[episodes]] if episodes else [run.final[key]]
        out.setdefault(run.label, {}).setdefault(run.task, []).append((run.seed, values))
    return {
        label: {task: [v for _, vs in sorted(pairs) for v in vs] for task, pairs in tasks.items()}
        for label, tasks in out.items()
    }


def score_dict(
    runs: list[RunRecord], algorithms: Sequence[str], episodes_as_runs: bool = False
) -> tuple[dict[str, np.ndarray], list[str], bool]:
    """rliable inputs: ``{label: (runs, tasks)}`` scores, the task order, normalised or not."""
    tasks = sorted(set.intersection(*({r.task for r in runs if r.label == a} for a in algorithms)))
    if not tasks:
        raise ConfigError(f"the algorithms {list(algorithms)} share no task")
    normalizers = {t: _normalizer(t) for t in tasks}
    normalized = all(n is not None for n in normalizers.values())
    scores = {}
    for algo in algorithms:
        columns = []
        for task in tasks:
            seeds = sorted(
                (r for r in runs if r.label == algo and r.task == task), key=lambda r: r.seed
            )
            values = (
                [float(x) for x in seeds[0].final["returns"]]
                if episodes_as_runs
                else [float(r.final["mean_return"]) for r in seeds]
            )
            if normalized:
                values = [normalizers[task](v) for v in values]
            columns.append(values)
        n = min(len(c) for c in columns)
        scores[algo] = np.asarray([c[:n] for c in columns], dtype=np.float64).T
    return scores, tasks, normalized


def _curve_dict(
    runs: list[RunRecord], algorithms: Sequence[str], tasks: Sequence[str], normalized: bool
) -> tuple[dict[str, np.ndarray], list[int]] | None:
    """Per algorithm (runs, tasks, points) curves at the steps every run evaluated, or None."""
    selected = [r for r in runs if r.label in algorithms and r.task in tasks]
    common = set.intersection(*({e["step"] for e in r.evals} for r in selected))
    steps = sorted(common)
    if len(steps) < 2:
        return None
    out = {}
    for algo in algorithms:
        columns = []
        for task in tasks:
            normalize = _normalizer(task) if normalized else None
            seeds = sorted(
                (r for r in selected if r.label == algo and r.task == task), key=lambda r: r.seed
            )
            rows = []
            for run in seeds:
                by_step = {e["step"]: e["return"] for e in run.evals}
                values = [by_step[s] for s in steps]
                rows.append([normalize(v) for v in values] if normalize else values)
            columns.append(rows)
        n = min(len(c) for c in columns)
        out[algo] = np.asarray([c[:n] for c in columns], dtype=np.float64).transpose(1, 0, 2)
    return out, steps


def _curve_records(runs: list[RunRecord], algorithms: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {
            "algorithm": r.label,
            "task": r.task,
            "seed": r.seed,
            "step": e["step"],
            "return": e["return"],
        }
        for r in runs
        if r.label in algorithms
        for e in r.evals
    ]


def report(config: ReportConfig) -> dict[str, Any]:
    """Write the tables, learning curves and rliable figures of the runs; see the module doc."""
    from cvl_eval.curves import plot_learning_curves
    from cvl_eval.metric_plots import write_rliable_report
    from cvl_eval.metrics import BootstrapConfig
    from cvl_eval.tables import write_tables

    if config.bootstrap_reps < 1:
        raise ConfigError("bootstrap_reps must be >= 1")
    try:
        runs = load_runs(config.runs)
    except FileNotFoundError as error:
        raise ConfigError(str(error)) from None
    if not runs:
        raise ConfigError(f"no finished runs (results.json) under {list(config.runs)}")
    present = sorted({r.label for r in runs})
    algorithms = list(config.algorithms or present)
    missing = [a for a in algorithms if a not in present]
    if missing:
        raise ConfigError(f"no finished runs of {missing}; found {present}")
    runs = [r for r in runs if r.label in algorithms]
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    per_episode = config.episodes_as_runs
    returns = _grouped(runs, "mean_return", "returns" if per_episode else None)
    successes = _grouped(runs, "success_rate", "successes" if per_episode else None)
    tables = write_tables(returns, out / "table", algorithms=algorithms)
    files.update({"table_md": str(tables["markdown"]), "table_csv": str(tables["csv"])})
    success = write_tables(successes, out / "success", algorithms=algorithms, fmt=_success_format())
    files.update({"success_md": str(success["markdown"]), "success_csv": str(success["csv"])})

    records = _curve_records(runs, algorithms)
    if records:
        curve_algos = [a for a in algorithms if any(r["algorithm"] == a for r in records)]
        files["learning_curves_png"] = str(
            plot_learning_curves(records, out / "learning_curves.png", algorithms=curve_algos)
        )

    scores, tasks, normalized = score_dict(runs, algorithms, config.episodes_as_runs)
    curves = None if config.episodes_as_runs else _curve_dict(runs, algorithms, tasks, normalized)
    rliable_files = write_rliable_report(
        scores,
        out / "rliable",
        BootstrapConfig(reps=config.bootstrap_reps),
        curve_dict=curves[0] if curves else None,
        steps=curves[1] if curves else None,
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
        "files": files,
    }
    write_json_atomic(out / "report.json", summary)
    (out / "report.md").write_text(_markdown(config.title, summary, out))
    files["report_json"] = str(out / "report.json")
    files["report_md"] = str(out / "report.md")
    return summary


def _success_format():
    from cvl_eval.tables import TableFormat

    return TableFormat(mean_decimals=2, std_decimals=2)


def _markdown(title: str, summary: dict[str, Any], out: Path) -> str:
    lines = [f"# {title}", ""]
    rl = summary["rliable"]
    lines.append(
        f"{summary['num_runs']} runs, algorithms {', '.join(summary['algorithms'])}; "
        f"tasks {', '.join(t.removesuffix('-v3') for t in summary['tasks'])}."
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
