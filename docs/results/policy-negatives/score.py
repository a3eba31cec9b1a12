"""policy-negatives' scorer (PREREG.md): arms `k16` and `polu` against the presets' `cvl_mc`.
argv: ROOT out.json, run from this folder; ROOT holds ``<arm>/heldout`` (the held-out sweep's
``--out-dir``) and ``<arm>/hard`` (the `cvl-paper hard` folder) per arm.

Each run is scored by the expert-normalised return of its last 3 evaluations pooled (5k-10k) and
its success over the same episodes. References: the presets' `cvl_mc` of
`preset-rerun/heldout_baselines.json` (held-out, with filtered BC) and `preset-rerun/baselines.json`
(`hard`). Screen H: held-out hammer and lever-pull x seeds 0 and 1; screen D: the hard suite's
stitched door-open x seeds 0 and 1; the held-out 4 x 2 and 4 x 3 (rliable IQM, P(improvement))
once an arm's runs for them exist."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

ARMS = ("k16", "polu")
HELD_OUT = ["hammer-v3", "handle-pull-v3", "lever-pull-v3", "plate-slide-v3"]
SCREEN_H = [("hammer-v3", 0), ("hammer-v3", 1), ("lever-pull-v3", 0), ("lever-pull-v3", 1)]
SCREEN_D = [("door-open-v3", 0), ("door-open-v3", 1)]
BANDS_H = (0.46, 0.50)  # "no gain" at or below, "gain" at or above, "part" between
KEEPS_D = 0.5  # mean success of the last 3 evaluations over both runs


def per_run(root: Path) -> dict[tuple[str, int], dict]:
    """(task, seed) -> normalised score and success of each finished run under ``root``."""
    if not root.exists():
        return {}
    out = {}
    for r in load_runs([str(root)], last_evals=3):
        scores, _, normalized = score_dict([r], [r.label])
        if not normalized:
            raise SystemExit(f"{r.task}: no expert normaliser")
        out[(r.task, r.seed)] = {
            "normalized": float(scores[r.label][0, 0]),
            "success": float(r.final["success_rate"]),
        }
    return out


def band(mean: float) -> str:
    low, high = BANDS_H
    return "gain" if mean >= high else "no gain" if mean <= low else "part"


def held_out(arm: str, runs_h: dict, held: dict, seeds: tuple[int, ...]) -> dict:
    """rliable IQM with 95% CIs of ``arm``, the presets' `cvl_mc` and filtered BC over the
    held-out mixtures x ``seeds``, P(arm > each), and the arm's mean success per mixture; over 3
    seeds also the amendment's reading (P(arm > cvl_mc) >= 0.6)."""
    rows = list(seeds)
    scores = {
        arm: np.asarray([[runs_h[(t, s)]["normalized"] for t in HELD_OUT] for s in rows]),
        "awcapn_t02": np.asarray(held["scores"]["cvl_mc"])[rows],
        "filtered_bc": np.asarray(held["scores"]["filtered_bc"])[rows],
    }
    agg = aggregate_scores(scores)
    pairs = [(arm, "awcapn_t02"), (arm, "filtered_bc")]
    poi = probability_of_improvement(scores, pairs)
    out = {
        "tasks": HELD_OUT,
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "probability_of_improvement": {f"{a},{b}": poi[f"{a},{b}"] for a, b in pairs},
        "mean success": {
            t: float(np.mean([runs_h[(t, s)]["success"] for s in rows])) for t in HELD_OUT
        },
    }
    if len(rows) == 3:
        confirmed = poi[f"{arm},awcapn_t02"]["point"] >= 0.6
        out["reading"] = "confirmed on the held-out mixtures" if confirmed else "not confirmed"
    return out


def main(argv: list[str]) -> None:
    root, out_file, here = Path(argv[0]), Path(argv[1]), Path(__file__).parent
    stored = here.parent / "preset-rerun"
    held = json.loads((stored / "heldout_baselines.json").read_text())
    hard = json.loads((stored / "baselines.json").read_text())["hard"]
    if held["tasks"] != HELD_OUT:
        raise SystemExit("heldout_baselines.json's task order differs")

    def ref(table: dict, algo: str, task: str, seed: int) -> float:
        return float(table["scores"][algo][seed][table["tasks"].index(task)])

    result = {"scored_by": "last 3 evaluations pooled (5k, 7.5k, 10k; 30 episodes)"}
    default_h = float(np.mean([ref(held, "cvl_mc", t, s) for t, s in SCREEN_H]))
    result["reference"] = {
        "screen H, the presets' cvl_mc": default_h,
        "screen H, filtered BC": float(
            np.mean([ref(held, "filtered_bc", t, s) for t, s in SCREEN_H])
        ),
        "screen D, the presets' cvl_mc (normalised)": [
            ref(hard, "cvl_mc", t, s) for t, s in SCREEN_D
        ],
    }
    for arm in ARMS:
        runs_h = per_run(root / arm / "heldout" / "cvl_mc")
        runs_d = per_run(root / arm / "hard" / "runs" / "cvl_mc")
        entry = {
            "held-out runs": {f"{t} seed {s}": v for (t, s), v in sorted(runs_h.items())},
            "hard runs": {f"{t} seed {s}": v for (t, s), v in sorted(runs_d.items())},
        }
        if all(k in runs_h for k in SCREEN_H):
            mean = float(np.mean([runs_h[k]["normalized"] for k in SCREEN_H]))
            entry["screen H"] = {"mean": mean, "default": default_h, "reading": band(mean)}
        if all(k in runs_d for k in SCREEN_D):
            success = float(np.mean([runs_d[k]["success"] for k in SCREEN_D]))
            normalized = float(np.mean([runs_d[k]["normalized"] for k in SCREEN_D]))
            entry["screen D"] = {
                "mean success": success,
                "mean normalised": normalized,
                "reading": "keeps door-open" if success >= KEEPS_D else "loses door-open",
            }
        for seeds, name in (((0, 1), "held-out 4 x 2"), ((0, 1, 2), "held-out 4 x 3")):
            if all((t, s) in runs_h for t in HELD_OUT for s in seeds):
                entry[name] = held_out(arm, runs_h, held, seeds)
        result[arm] = entry
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(json.dumps(result, indent=1)[:4000])


if __name__ == "__main__":
    main(sys.argv[1:])
