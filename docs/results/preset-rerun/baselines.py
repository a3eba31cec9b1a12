"""The presets' CVL against the baselines the issue's targets name, all trained by one command
on one machine: `cvl-paper mixed|hard --algorithms cvl_mc iql filtered_bc bc weighted_bc fql cvl cql`
(`cvl`: CVL with random features).
argv: PRESET_ROOT PUBLISHED_ROOT out.json.

PRESET_ROOT holds ``mixed/`` and ``hard/``, each a `cvl-paper` experiment folder; PUBLISHED_ROOT
is ``docs/results``. Each run is scored as the presets' reports score it (the expert-normalised
return of its last 3 evaluations pooled). For each suite: IQM with its 95% stratified-bootstrap
CI per method, P(cvl_mc > method), on the hard suite also over its stitched half, per-task mean
return and success, and whether each baseline's per-task mean return repeats the published
table it was last reported in (`policy-average/{suite,hard}/table.md`, whose runs trained the
same learners with the same settings one by one), and weighted BC's per-run scores those of
`return-weighting/control.json`, CVL with random features the `rff_ema001` column of
`policy-average/suite/` and the table of `hard-rff/policy-average/`, and CQL the `cql_10k`
column of `mixed/` and the table of `hard-cql/`."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

ALGOS = ("cvl_mc", "iql", "filtered_bc", "bc", "weighted_bc", "fql", "cvl", "cql")
STITCHED = ("door-open-v3", "drawer-open-v3")
BASELINE_COLUMNS = {"iql": "iql_ema001", "filtered_bc": "fbc_ema001", "bc": "bc", "fql": "fql_a10"}
PUBLISHED = {  # suite -> [(table, {our learner: its column there})]
    "mixed": [
        ("policy-average/suite/table.md", {**BASELINE_COLUMNS, "cvl": "rff_ema001"}),
        ("mixed/table.md", {"cql": "cql_10k"}),
    ],
    "hard": [
        ("policy-average/hard/table.md", BASELINE_COLUMNS),
        ("hard-rff/policy-average/table.md", {"cvl": "cvl"}),
        ("hard-cql/table.md", {"cql": "cql"}),
    ],
}
WEIGHTED_BC = ("return-weighting/control.json", "awbc01")
"""Weighted BC's published per-run scores (file, label; the key ``"<suite> with awbc01"``)."""


def published_means(table: Path) -> dict[str, dict[str, float]]:
    """``{column: {task: mean return}}`` of a report's ``table.md`` (cells "mean ± std")."""
    rows = [line.strip("|").split("|") for line in table.read_text().splitlines()]
    head = [c.strip() for c in rows[0]]
    out: dict[str, dict[str, float]] = {c: {} for c in head[1:]}
    for row in rows[2:]:
        task = row[0].strip()
        for col, cell in zip(head[1:], row[1:], strict=True):
            out[col][f"{task}-v3"] = float(cell.strip().strip("*").split("±")[0])
    return out


def iqm_and_p(scores: dict[str, np.ndarray]) -> dict:
    """IQM [95% CI] per method and P(cvl_mc > method)."""
    agg = aggregate_scores(scores)
    pairs = [("cvl_mc", a) for a in scores if a != "cvl_mc"]
    poi = probability_of_improvement(scores, pairs)
    return {
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "p_cvl_mc_over": {k.split(",")[1]: v for k, v in poi.items()},
    }


def suite_numbers(folder: Path, suite: str, published_root: Path) -> dict:
    """Every number of one suite (module docstring)."""
    runs = [r for r in load_runs([str(folder / "runs")], last_evals=3) if r.label in ALGOS]
    algos = [a for a in ALGOS if any(r.label == a for r in runs)]
    scores, tasks, normalized = score_dict(runs, algos)
    if not normalized or any(s.shape != (3, len(tasks)) for s in scores.values()):
        raise SystemExit(f"{folder}: expected 3 normalised seeds per task and method")
    out = {"tasks": tasks, "scores": {a: s.tolist() for a, s in scores.items()}}
    out["all"] = iqm_and_p(scores)
    if suite == "hard":
        idx = [tasks.index(t) for t in STITCHED]
        out["stitched_half"] = iqm_and_p({a: s[:, idx] for a, s in scores.items()})
    per_task = {}
    for a in algos:
        for t in tasks:
            mine = sorted((r for r in runs if r.label == a and r.task == t), key=lambda r: r.seed)
            per_task.setdefault(a, {})[t] = {
                "mean_return": float(np.mean([r.final["mean_return"] for r in mine])),
                "success": float(np.mean([r.final["success_rate"] for r in mine])),
            }
    out["per_task"] = per_task
    out["published"] = {}
    for table, columns in PUBLISHED[suite]:
        theirs = published_means(published_root / table)
        for a, col in columns.items():
            if a in per_task:
                diff = max(abs(per_task[a][t]["mean_return"] - theirs[col][t]) for t in tasks)
                out["published"][a] = {
                    "column": col,
                    "table": table,
                    "max_abs_difference_of_task_means": diff,
                }
    if "weighted_bc" in scores:
        file, label = WEIGHTED_BC
        theirs = json.loads((published_root / file).read_text())[f"{suite} with {label}"]
        diff = np.abs(scores["weighted_bc"] - np.asarray(theirs["scores"][label])).max()
        out["published"]["weighted_bc"] = {
            "label": label,
            "file": file,
            "max_abs_difference_of_run_scores": float(diff),
        }
    return out


def fmt(d: dict) -> str:
    return f"{d['point']:.2f} [{d['low']:.2f}, {d['high']:.2f}]"


def main(argv: list[str]) -> None:
    preset_root, published_root, out_file = map(Path, argv)
    result = {s: suite_numbers(preset_root / s, s, published_root) for s in ("mixed", "hard")}
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    for suite, r in result.items():
        for part in ("all", "stitched_half"):
            if part in r:
                print(f"{suite} {part}:")
                for a, iqm in r[part]["iqm"].items():
                    p = r[part]["p_cvl_mc_over"].get(a)
                    print(f"  {a:12s} IQM {fmt(iqm)}" + (f"  P(cvl_mc > it) {fmt(p)}" if p else ""))
        for a, t in r["per_task"].items():
            cells = ", ".join(
                f"{k[:-3]} {v['mean_return']:.0f}/{v['success']:.2f}" for k, v in t.items()
            )
            print(f"  {a:12s} {cells}")
        for a, pub in r["published"].items():
            if "table" in pub:
                diff = pub["max_abs_difference_of_task_means"]
                print(f"  {a} vs {pub['table']} [{pub['column']}]: max |task mean diff| {diff:.1f}")
            else:
                diff = pub["max_abs_difference_of_run_scores"]
                print(f"  {a} vs {pub['file']} [{pub['label']}]: max |run score diff| {diff:.2g}")


if __name__ == "__main__":
    main(sys.argv[1:])
