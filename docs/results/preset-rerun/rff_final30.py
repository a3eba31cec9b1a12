"""The RFF target scored by the final policies: the presets' CVL with random features (`cvl`)
against the presets' CVL without them (`cvl_mc`), each run scored by 30 episodes of its final
policy. argv: PRESET_ROOT out.json, run from this folder.

PRESET_ROOT holds ``mixed/`` and, when it was run, ``hard/``: `cvl-paper` experiment folders with
the runs of ``--algorithms cvl``, each evaluated by ``cvl-evaluate --checkpoint <run> --episodes
30 --seed 100`` (read through `cvl-report`'s `load_runs(final_episodes=30)`). CVL without RFF's
final-policy scores are those of `final30.json` (its runs repeat run for run; `compare.json`). The
RFF runs' pooled last-3 scores are checked against `baselines.json`, which scored the same runs
trained earlier. Per suite (and the hard suite's stitched half): IQM with 95% CIs and P(cvl >
cvl_mc), the issue's RFF target (P >= 0.5), and success per task."""

import json
import sys
from pathlib import Path

import numpy as np
from baselines import STITCHED

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict


def rff_and_mc(scores: dict[str, np.ndarray]) -> dict:
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("cvl", "cvl_mc")])["cvl,cvl_mc"]
    return {"iqm": {a: agg[a]["IQM"] for a in scores}, "p_cvl_over_cvl_mc": poi}


def suite(root: Path, name: str, here: Path) -> dict:
    runs_root = str(root / name / "runs" / "cvl")
    runs = load_runs([runs_root], final_episodes=30)
    final, tasks, normalized = score_dict(runs, ["cvl"])
    pooled, pooled_tasks, _ = score_dict(load_runs([runs_root], last_evals=3), ["cvl"])
    stored = json.loads((here / "final30.json").read_text())[name]
    published = json.loads((here / "baselines.json").read_text())[name]
    if not normalized or tasks != stored["tasks"] or pooled_tasks != published["tasks"]:
        raise SystemExit(f"{name}: task order or normalisation differs from the stored scores")
    scores = {"cvl_mc": np.asarray(stored["scores"]["cvl_mc"]), "cvl": final["cvl"]}
    if any(s.shape != (3, 4) for s in scores.values()):
        raise SystemExit(f"{name}: expected 3 seeds x 4 tasks")
    success = {
        t: float(np.mean([r.final["success_rate"] for r in runs if r.task == t])) for t in tasks
    }
    out = {
        "tasks": tasks,
        "scores": {a: s.tolist() for a, s in scores.items()},
        "all": rff_and_mc(scores),
        "cvl_success": success,
        "cvl_mc_success": stored["success"]["cvl_mc"],
        "cvl_pooled_repeats_baselines_json_max_abs_difference": float(
            np.abs(pooled["cvl"] - np.asarray(published["scores"]["cvl"])).max()
        ),
    }
    if name == "hard":
        idx = [tasks.index(t) for t in STITCHED]
        out["stitched_half"] = rff_and_mc({a: s[:, idx] for a, s in scores.items()})
    return out


def main(argv: list[str]) -> None:
    root, out_file, here = Path(argv[0]), Path(argv[1]), Path(__file__).parent
    names = [n for n in ("mixed", "hard") if (root / n / "runs" / "cvl").is_dir()]
    result = {
        "scored_by": "30 episodes of the final policy (seed 100)",
        **{n: suite(root, n, here) for n in names},
    }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    for n in names:
        for part in ("all", "stitched_half"):
            if part in result[n]:
                r = result[n][part]
                iqm = {
                    a: f"{v['point']:.2f} [{v['low']:.2f}, {v['high']:.2f}]"
                    for a, v in r["iqm"].items()
                }
                p = r["p_cvl_over_cvl_mc"]
                print(
                    f"{n} {part}: {iqm}  P(cvl > cvl_mc) {p['point']:.2f} [{p['low']:.2f}, {p['high']:.2f}]"
                )
        print(f"  repeats: {result[n]['cvl_pooled_repeats_baselines_json_max_abs_difference']:.2e}")


if __name__ == "__main__":
    main(sys.argv[1:])
