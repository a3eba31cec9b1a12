"""The hard suite's filtered BC scored by 30 episodes of its final policies, beside the
presets' CVL and IQL scored the same way (`final30.json`): the suite's target (CVL above filtered
BC with intervals that do not overlap) checked by the final policies as well as by the pooled
score (`baselines.json`). argv: PRESET_ROOT out.json, run from this folder.

PRESET_ROOT/hard is a `cvl-paper hard` folder with the runs of ``--algorithms filtered_bc``,
each evaluated by ``cvl-evaluate --checkpoint <run> --episodes 30 --seed 100``. Their pooled last-3
scores are checked against `baselines.json`, which scored the same learners' earlier runs (they
must repeat, or this is not the same experiment)."""

import json
import sys
from pathlib import Path

import numpy as np
from baselines import STITCHED, fmt, iqm_and_p
from final30 import run_score

from cvl_eval.analysis.run_scores import load_runs, score_dict

CLONING = ("filtered_bc",)


def main(argv: list[str]) -> None:
    root, out_file, here = Path(argv[0]) / "hard", Path(argv[1]), Path(__file__).parent
    stored = json.loads((here / "final30.json").read_text())["hard"]
    published = json.loads((here / "baselines.json").read_text())["hard"]
    tasks = stored["tasks"]
    pooled, pooled_tasks, _ = score_dict(
        load_runs([str(root / "runs" / a) for a in CLONING], last_evals=3), list(CLONING)
    )
    if pooled_tasks != tasks or published["tasks"] != tasks:
        raise SystemExit("the stored scores' task order differs")
    repeats = {
        a: float(np.abs(pooled[a] - np.asarray(published["scores"][a])).max()) for a in CLONING
    }
    scores = {a: np.asarray(stored["scores"][a]) for a in ("cvl_mc", "iql")}
    success = {a: stored["success"][a] for a in ("cvl_mc", "iql")}
    for a in CLONING:
        cells = [[run_score(root / "runs" / a / t / f"seed_{s}") for t in tasks] for s in range(3)]
        scores[a] = np.asarray([[c[0] for c in row] for row in cells])
        success[a] = {t: float(np.mean([row[i][1] for row in cells])) for i, t in enumerate(tasks)}
    idx = [tasks.index(t) for t in STITCHED]
    result = {
        "tasks": tasks,
        "scored_by": "30 episodes of the final policy (seed 100)",
        "scores": {a: s.tolist() for a, s in scores.items()},
        "success": success,
        "all": iqm_and_p(scores),
        "stitched_half": iqm_and_p({a: s[:, idx] for a, s in scores.items()}),
        "pooled_repeats_baselines_json_max_abs_difference": repeats,
    }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    for part in ("all", "stitched_half"):
        print(f"hard {part} (30 final episodes):")
        for a, iqm in result[part]["iqm"].items():
            p = result[part]["p_cvl_mc_over"].get(a)
            print(f"  {a:12s} IQM {fmt(iqm)}" + (f"  P(cvl_mc > it) {fmt(p)}" if p else ""))
    print("pooled repeats baselines.json, largest |difference|:", repeats)


if __name__ == "__main__":
    main(sys.argv[1:])
