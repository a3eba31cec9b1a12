"""policy-negatives' screens H and C (PREREG.md, sixth and seventh amendments) of one arm (`polu1`:
the policy's mode alone among the action term's 8 negatives; `qgate`: the policy step's Q gated by
the data's action), against the default (`polu`, the mode, 3 samples, 4 uniform) and uniform
negatives on the same data and seeds.

- Screen H: held-out hammer and lever-pull x seeds 0 and 1, each run's expert-normalised return
  of its last 3 evaluations pooled (5k-10k), the mean over the four runs against `screen.json`'s.
- Screen C: the mixed suite's reach mixture and held-out stitched plate-slide x seeds 0-2, 30
  episodes of each final policy (`finish.py`), the mean success over the six runs against
  `finish.json`'s rows of both sources.

argv: ARM HELDOUT FINISH.json OUT.json [REF_HELDOUT REF_FINISH.json], run from this folder; ARM
names the arm in the output. HELDOUT is screen H's `cvl-sweep` out-dir; FINISH.json is
`finish.py`'s output on the arm's final policies (its row keys are the checkpoint paths, each
ending in ``seed_<s>/final``). With the last two (the eighth amendment, `polua`), the default
re-trained on the arm's machine is the reference: REF_HELDOUT its screen H out-dir, REF_FINISH.json
`finish.py` on its screen C policies; the bands keep their offsets from the default's stored
scores (H: 0.549 - 0.089 and - 0.049; C: 0.48 + 0.07 and + 0.22), and the stored references
are reported beside."""

import json
import re
import sys
from pathlib import Path

import numpy as np
from score import SCREEN_H, per_run

BANDS_H = (0.46, 0.50)  # "loses it" at or below, "keeps the gain" at or above, "part" between
BANDS_C = (0.55, 0.70)  # "keeps it" at or below, "removes the cost" at or above, "part" between
SEEDS = (0, 1, 2)
DATA_C = {
    "reach-v3": "mixed-suite reach mixture, 10k",
    "plate-slide-v3": "held-out stitched plate-slide, 10k",
}
SOURCES = {"polu": "the policy's negatives (default)", "uniform": "uniform negatives (control)"}
KEPT = ("success", "median_end_distance", "failed_within_2_thresholds")


def screen_h_runs(heldout: Path) -> tuple[dict, float]:
    """Screen H's four runs under ``heldout`` (a `cvl-sweep` out-dir) and their mean."""
    runs = per_run(heldout / "cvl_mc")
    missing = [k for k in SCREEN_H if k not in runs]
    if missing:
        raise SystemExit(f"{heldout}: screen H runs missing: {missing}")
    mean = float(np.mean([runs[k]["normalized"] for k in SCREEN_H]))
    return {f"{t} seed {s}": runs[(t, s)] for t, s in SCREEN_H}, mean


def screen_h(heldout: Path, here: Path, reference: Path | None = None) -> dict:
    runs, mean = screen_h_runs(heldout)
    stored = json.loads((here / "screen.json").read_text())
    polu = stored["polu"]["screen H"]["mean"]
    out = {"scored_by": "last 3 evaluations pooled (5k, 7.5k, 10k; 30 episodes)", "runs": runs}
    low, high = BANDS_H
    if reference is not None:  # the bands' offsets from the stored default, moved to its rerun
        out["polu here runs"], here_mean = screen_h_runs(reference)
        out["polu here"] = here_mean
        low, high = here_mean - (polu - low), here_mean - (polu - high)
        out["bands"] = [low, high]
    reading = "keeps the gain" if mean >= high else "loses it" if mean <= low else "part"
    return {
        **out,
        "mean": mean,
        "polu": polu,
        "uniform": stored["reference"]["screen H, the presets' cvl_mc"],
        "reading": reading,
    }


def arm_rows(finish: dict, task: str) -> dict[int, dict]:
    """seed -> the arm's finish row of ``task``, keyed by the seed in each checkpoint's path."""
    out = {}
    for path, row in finish[task]["rows"].items():
        found = re.search(r"seed_(\d+)/final/?$", path)
        if found is None or row["step"] != 10000:
            raise SystemExit(f"FINISH.json {task}: {path!r} is not a 10k run's final/ folder")
        out[int(found.group(1))] = {k: row[k] for k in KEPT}
    if sorted(out) != list(SEEDS):
        raise SystemExit(f"FINISH.json {task}: seeds {sorted(out)}, expected {list(SEEDS)}")
    return out


def screen_c(arm: str, finish: dict, here: Path, reference: dict | None = None) -> dict:
    stored = json.loads((here / "finish.json").read_text())
    runs = {arm: {}, "polu": {}, "uniform": {}}
    if reference is not None:
        runs["polu here"] = {}
    for task, data in DATA_C.items():
        for seed, row in arm_rows(finish, task).items():
            runs[arm][f"{task} seed {seed}"] = row
        if reference is not None:
            for seed, row in arm_rows(reference, task).items():
                runs["polu here"][f"{task} seed {seed}"] = row
        for source, label in SOURCES.items():
            for seed in SEEDS:
                row = stored[task]["rows"][f"{label} | {data} | seed {seed}"]
                runs[source][f"{task} seed {seed}"] = {k: row[k] for k in KEPT}
    means = {
        name: float(np.mean([r["success"] for r in rows.values()])) for name, rows in runs.items()
    }
    low, high = BANDS_C
    extra = {}
    if reference is not None:  # the bands' offsets from the stored default, moved to its rerun
        low, high = (means["polu here"] + b - means["polu"] for b in BANDS_C)
        extra["bands"] = [low, high]
    mean = means[arm]
    reading = "removes the cost" if mean >= high else "keeps it" if mean <= low else "part"
    return {
        "scored_by": "30 episodes of each final policy (finish.py, seed 100)",
        "runs": runs,
        "mean success": means,
        **extra,
        "reading": reading,
    }


def main(argv: list[str]) -> None:
    if len(argv) not in (4, 6):
        raise SystemExit(
            "usage: score_arm.py ARM HELDOUT FINISH.json OUT.json [REF_HELDOUT REF_FINISH.json]"
        )
    arm, heldout, finish_file, out_file = argv[0], Path(argv[1]), Path(argv[2]), Path(argv[3])
    ref_heldout = Path(argv[4]) if len(argv) == 6 else None
    ref_finish = json.loads(Path(argv[5]).read_text()) if len(argv) == 6 else None
    here = Path(__file__).parent
    finish = json.loads(finish_file.read_text())
    result = {
        "screen H": screen_h(heldout, here, ref_heldout),
        "screen C": screen_c(arm, finish, here, ref_finish),
    }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
