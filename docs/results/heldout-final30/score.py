"""The presets' learners on the four held-out mixtures at 10k steps, scored two ways: the pooled
episodes of the last 3 evaluations (the presets' reports) and 30 episodes of each run's final
policy (`cvl-report --final-episodes 30`). argv: RUNS_ROOT RESULTS_ROOT out.json.

RUNS_ROOT is the sweep folder (``<algo>/<task>/seed_<k>``); every run has been evaluated by
``cvl-evaluate --checkpoint <run> --episodes 30 --seed 100``. RESULTS_ROOT is ``docs/results``:
the pooled per-run scores are checked against the published ones, the presets' CVL and filtered
BC against ``return-weighting/held_out.json`` (the 4 x 3 at 10k) and IQL and BC against the
per-task means of ``heldout/four-tasks/report.json``. Per scoring: rliable IQM with 95% CIs and
P(cvl_mc > each), success per task; and how far the first 10 of the 30 final episodes are from
the training's last evaluation (the same checkpoint and episode seeds)."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.envs.expert_scores import normalized_score

ALGOS = ("cvl_mc", "filtered_bc", "iql", "bc")
HELD_OUT_KEY = "held-out 4 x 3, 10k, against filtered BC and weighted BC (control.json)"
PUBLISHED_LABEL = {"cvl_mc": "awcapn_t02", "filtered_bc": "filtered_bc"}


def scored(runs: list, algos: list[str]) -> dict:
    """Per-run scores (seeds x tasks), IQM [CI], P(cvl_mc > each) and success per task."""
    scores, tasks, normalized = score_dict(runs, algos)
    if not normalized or any(s.shape != (3, 4) for s in scores.values()):
        raise SystemExit("expected 3 normalised seeds x 4 tasks per learner")
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("cvl_mc", a) for a in algos[1:]])
    success = {
        a: {
            t: float(
                np.mean([r.final["success_rate"] for r in runs if (r.label, r.task) == (a, t)])
            )
            for t in tasks
        }
        for a in algos
    }
    return {
        "tasks": tasks,
        "scores": {a: s.tolist() for a, s in scores.items()},
        "iqm": {a: agg[a]["IQM"] for a in algos},
        "p_cvl_mc_over": {k.split(",")[1]: v for k, v in poi.items()},
        "success": success,
    }


def repeats(pooled: dict, results: Path) -> dict:
    """Largest difference of each learner's pooled scores from its published ones."""
    published = json.loads((results / "return-weighting/held_out.json").read_text())[HELD_OUT_KEY]
    if published["tasks"] != pooled["tasks"]:
        raise SystemExit(f"task order {published['tasks']} != {pooled['tasks']}")
    out = {}
    for algo, label in PUBLISHED_LABEL.items():
        if algo in pooled["scores"]:
            diff = np.subtract(pooled["scores"][algo], published["scores"][label])
            out[algo] = float(np.abs(diff).max())
    four = json.loads((results / "heldout/four-tasks/report.json").read_text())["final_return"]
    for algo in ("iql", "bc"):
        if algo in pooled["scores"]:
            means = np.mean(pooled["scores"][algo], axis=0)
            theirs = [
                np.mean([normalized_score(t, r) for r in four[algo][t]]) for t in pooled["tasks"]
            ]
            out[algo] = float(np.abs(means - theirs).max())
    return out


def first_episodes_gap(runs: list) -> dict:
    """Per learner: the largest return difference between the first 10 final episodes and the
    training's last evaluation, and how many of those episodes' success differs."""
    out = {}
    for r in runs:
        last = r.evals[-1]
        n = len(last["episode_returns"])
        gap = float(np.abs(np.subtract(r.final["returns"][:n], last["episode_returns"])).max())
        flips = sum(a != b for a, b in zip(r.final["successes"][:n], last["episode_successes"]))
        g, f = out.get(r.label, (0.0, 0))
        out[r.label] = (max(g, gap), f + int(flips))
    return {
        a: {"max_abs_return_difference": g, "episodes_whose_success_differs": f}
        for a, (g, f) in out.items()
    }


def main(argv: list[str]) -> None:
    runs_root, results, out_file = argv[0], Path(argv[1]), Path(argv[2])
    present = [a for a in ALGOS if (Path(runs_root) / a).is_dir()]
    pooled_runs = [r for r in load_runs([runs_root], last_evals=3) if r.label in present]
    final_runs = [r for r in load_runs([runs_root], final_episodes=30) if r.label in present]
    pooled = scored(pooled_runs, present)
    result = {
        "pooled_last_3": pooled,
        "final_30": scored(final_runs, present),
        "pooled_repeats_published_max_abs_difference": repeats(pooled, results),
        "final_30_first_10_against_last_evaluation": first_episodes_gap(final_runs),
    }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    for way in ("pooled_last_3", "final_30"):
        print(way)
        for a, iqm in result[way]["iqm"].items():
            p = result[way]["p_cvl_mc_over"].get(a)
            line = f"  {a:12s} IQM {iqm['point']:.2f} [{iqm['low']:.2f}, {iqm['high']:.2f}]"
            if p:
                line += f"  P(cvl_mc > it) {p['point']:.2f} [{p['low']:.2f}, {p['high']:.2f}]"
            cells = ", ".join(f"{t[:-3]} {v:.2f}" for t, v in result[way]["success"][a].items())
            print(f"{line}  success {cells}")
    print("repeats:", result["pooled_repeats_published_max_abs_difference"])


if __name__ == "__main__":
    main(sys.argv[1:])
