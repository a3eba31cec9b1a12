"""rff-20k's scorer (PREREG.md): the mixed preset's `cvl` run to 20k steps against the presets'
`cvl_mc` at 20k (`awcapn_t02m20k`, from the committed `return-weighting/held_out.json`).
argv: RUNS out.json, run from this folder; RUNS is the sweep's ``--out-dir``.

Each run is scored by the expert-normalised return of its last 3 evaluations pooled (15k, 17.5k,
20k), and read at 10k (5k, 7.5k, 10k) for the calibration against the presets' 10k runs
(`preset-rerun/baselines.json`). The screen (door-open and reach x seeds 0 and 1) is scored
whenever its runs exist; the confirmation (rliable IQM with 95% CIs, P(rff20k > awcapn_t02m20k))
once all 4 x 3 do."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

TASKS = ["door-open-v3", "drawer-open-v3", "faucet-open-v3", "reach-v3"]
SCREEN = {"door-open-v3": (0, 1), "reach-v3": (0, 1)}
PASS_MARK = 0.987  # the reference's screen mean 1.017 less 0.03 (PREREG.md)
REFERENCE = "the suite's mixtures 4 x 3, 20k, filtered BC beside (fortieth amendment)"


def per_run(runs: list) -> dict[tuple[str, int], dict]:
    """(task, seed) -> normalised score and success of each run."""
    out = {}
    for r in runs:
        scores, _, normalized = score_dict([r], ["cvl"])
        if not normalized:
            raise SystemExit(f"{r.task}: no expert normaliser")
        out[(r.task, r.seed)] = {
            "normalized": float(scores["cvl"][0, 0]),
            "success": float(r.final["success_rate"]),
        }
    return out


def main(argv: list[str]) -> None:
    runs_root, out_file, here = str(Path(argv[0]) / "cvl"), Path(argv[1]), Path(__file__).parent
    at20k = per_run(load_runs([runs_root], last_evals=3))
    at10k = per_run(load_runs([runs_root], last_evals=3, up_to_step=10000))
    stored10k = json.loads((here.parent / "preset-rerun" / "baselines.json").read_text())["mixed"]
    ref = json.loads((here.parent / "return-weighting" / "held_out.json").read_text())[REFERENCE]
    ref = ref["4 x 3 at 20k"]
    if ref["tasks"] != TASKS or stored10k["tasks"] != TASKS:
        raise SystemExit("the stored scores' task order differs")
    reference = np.asarray(ref["scores"]["awcapn_t02m20k"])  # (seeds, tasks)
    calibration = {
        f"{t} seed {s}": at10k[(t, s)]["normalized"] - stored10k["scores"]["cvl"][s][TASKS.index(t)]
        for (t, s) in sorted(at10k)
    }
    result = {
        "scored_by": "last 3 evaluations pooled (30 episodes): 15k-20k, and 5k-10k for the 10k read",
        "runs at 20k": {f"{t} seed {s}": v for (t, s), v in sorted(at20k.items())},
        "runs at 10k": {f"{t} seed {s}": v for (t, s), v in sorted(at10k.items())},
        "10k read minus the presets' 10k run (calibration, 0 = the same learner)": calibration,
    }
    screen = [(t, s) for t, seeds in SCREEN.items() for s in seeds]
    if all(k in at20k for k in screen):
        mean = float(np.mean([at20k[k]["normalized"] for k in screen]))
        ref_mean = float(np.mean([reference[s, TASKS.index(t)] for t, s in screen]))
        result["screen"] = {
            "rff20k mean": mean,
            "awcapn_t02m20k mean": ref_mean,
            "pass mark": PASS_MARK,
            "passes": mean >= PASS_MARK,
        }
    if all((t, s) in at20k for t in TASKS for s in range(3)):
        arm = np.asarray([[at20k[(t, s)]["normalized"] for t in TASKS] for s in range(3)])
        scores = {"rff20k": arm, "awcapn_t02m20k": reference}
        agg = aggregate_scores(scores)
        poi = probability_of_improvement(scores, [("rff20k", "awcapn_t02m20k")])
        result["confirmation"] = {
            "tasks": TASKS,
            "scores": {a: s.tolist() for a, s in scores.items()},
            "iqm": {a: agg[a]["IQM"] for a in scores},
            "probability_of_improvement": poi["rff20k,awcapn_t02m20k"],
            "target met (P >= 0.5)": poi["rff20k,awcapn_t02m20k"]["point"] >= 0.5,
            "mean success": {
                "rff20k": {
                    t: float(np.mean([at20k[(t, s)]["success"] for s in range(3)])) for t in TASKS
                },
                "awcapn_t02m20k": ref["mean success"]["awcapn_t02m20k"],
            },
        }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(
        json.dumps({k: v for k, v in result.items() if k in ("screen", "confirmation")}, indent=1)
    )
    print("calibration, largest |difference|:", max(map(abs, calibration.values()), default=None))


if __name__ == "__main__":
    main(sys.argv[1:])
