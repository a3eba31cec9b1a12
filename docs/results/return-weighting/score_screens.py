"""PREREG.md, twenty-fifth to twenty-eighth amendments: the screens of the neighbourhood cap at
k = 32 (`awcapn32`) and of the return weights at T = 0.1 and 0.2 under the cap (`awcapn_t01`,
`awcapn_t02`), T = 0.1's partial confirmation, and the default `awcapn` on the held-out mixtures at
seed 2.

python score_screens.py RUNS OUT.json   (run from this folder: it imports score.py beside it)

The new runs are read from RUNS; the arms they are compared with are the committed per-run scores
beside this script: `awcapn.json` (`awcapn`, `aw03` and the term at seeds 0-1, their screens),
`scores_3seeds.json` (the term `uneg` and `aw03` at seeds 0-2, whose first two rows are
`awcapn.json`'s). Screen C's and screen A's runs and readings;
then, when its four runs exist, the held-out 4 x 3: rliable IQM with 95% CIs and
P(`awcapn` > each).
"""

import json
import sys
from pathlib import Path

import numpy as np
from score import committed, compared, run_row, runs_by_key, score_matrix

SCORED_BY = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
SCREEN_C = ("lever-pull", "plate-slide")


def held_out_2seeds():
    """{arm: (2 seeds, 4 tasks) normalised scores} and the task order, from `awcapn.json`."""
    part = committed("awcapn.json")["held-out 4 x 2, 10k"]
    return {a: np.asarray(v) for a, v in part["scores"].items()}, part["tasks"]


def screen_c(root, arm):
    """``arm`` on held-out lever-pull and plate-slide, seeds 0-1, against `awcapn` and `aw03`
    on the same runs' tasks and seeds (mean normalised score)."""
    found = runs_by_key(root, {arm}, SCREEN_C, (0, 1)).get(arm, {})
    rows = {
        f"{t} seed {s}": run_row(found[(t, s)]) for t in SCREEN_C for s in (0, 1) if (t, s) in found
    }
    scores, tasks = held_out_2seeds()
    columns = [tasks.index(f"{t}-v3") for t in SCREEN_C]
    part = {
        "runs": rows,
        "committed means": {
            a: round(float(scores[a][:, columns].mean()), 3) for a in ("awcapn", "aw03")
        },
    }
    if len(rows) == 4:
        mean = round(float(np.mean([r["normalized"] for r in rows.values()])), 3)
        part["mean_normalized"] = mean
        part["reading"] = "recovers" if mean >= 0.78 else "no gain" if mean <= 0.71 else "part"
    print("C", arm, part)
    return part


def screen_a(root, arm):
    """``arm`` + ``s20k`` on stitched plate-slide, seed 0, scored at 20k."""
    found = runs_by_key(root, {arm + "s20k"}, ("plate-slide",), (0,), 20000)
    run = found.get(arm + "s20k", {}).get(("plate-slide", 0))
    part = {"runs": {"plate-slide seed 0": run_row(run)} if run else {}}
    if run:
        part["reading"] = "keeps the fix" if run.final["success_rate"] >= 0.5 else "loses it"
    print("A", arm, part)
    return part


def screen_d(root, arm):
    """``arm`` on stitched door-open, seeds 1-2 (where T = 0.1 failed), against `awcapn`."""
    found = runs_by_key(root, {arm}, ("door-open",), (1, 2)).get(arm, {})
    rows = {
        f"door-open (stitch) seed {s}": run_row(found[("door-open", s)])
        for s in (1, 2)
        if ("door-open", s) in found
    }
    hard = committed("awcapn.json")["hard suite, 10k"]["success"]["awcapn"]
    part = {"runs": rows, "awcapn success": hard["door-open (stitch)"][1:]}
    if len(rows) == 2:
        mean = round(float(np.mean([r["success"] for r in rows.values()])), 3)
        part["mean_success"] = mean
        part["reading"] = (
            "keeps door-open" if mean >= 0.5 else "loses it" if mean <= 0.2 else "part"
        )
    print("D", arm, part)
    return part


def held_out_3seeds(root):
    """The default `awcapn` over the held-out 4 x 3 (its seed-2 runs from RUNS) against the term
    and `aw03` at seeds 0-2."""
    two, tasks = held_out_2seeds()
    names = [t.removesuffix("-v3") for t in tasks]
    found = runs_by_key(root, {"awcapn"}, names, (2,)).get("awcapn", {})
    if len(found) < 4:
        return None
    rows = {t: run_row(found[(t, 2)]) for t in names}
    ref = committed("scores_3seeds.json")["held-out"]
    assert ref["tasks"] == tasks, (ref["tasks"], tasks)
    scores = {a: np.asarray(ref["scores"][a]) for a in ("uneg", "aw03")}
    seed2 = score_matrix(found, names, (2,))
    scores = {"awcapn": np.vstack([two["awcapn"], seed2]), **scores}
    part = {"seed 2 runs": rows, **compared(scores, "awcapn", tasks)}
    point = part["probability_of_improvement"]["awcapn,uneg"]["point"]
    part["reading"] = "stands" if point >= 0.5 else "not confirmed at three seeds"
    return part


def confirmation_t01(root):
    """`awcapn_t01` (the twenty-seventh amendment's confirmation) where its runs exist: the
    held-out 4 x 2 against `awcapn`, `aw03`, the term and filtered BC of `awcapn.json`, and the
    hard suite's stitched half at the seeds where both its runs exist, against `awcapn` and the
    term at those seeds (a partial suite: reported, moves nothing)."""
    arm, out = "awcapn_t01", {}
    scores, tasks = held_out_2seeds()
    names = [t.removesuffix("-v3") for t in tasks]
    found = runs_by_key(root, {arm}, names, (0, 1)).get(arm, {})
    if len(found) == 8:
        scores = {arm: score_matrix(found, names, (0, 1)), **scores}
        out["held-out 4 x 2, 10k"] = compared(scores, arm, tasks)
        out["held-out 4 x 2, 10k"]["success"] = {
            t: [round(found[(t, s)].final["success_rate"], 3) for s in (0, 1)] for t in names
        }
    hard = committed("awcapn.json")["hard suite, 10k"]
    stitch = ("door-open", "drawer-open")
    found = runs_by_key(root, {arm}, stitch, (0, 1, 2)).get(arm, {})
    seeds = [s for s in (0, 1, 2) if all((t, s) in found for t in stitch)]
    if seeds:
        rows = {f"{t} (stitch) seed {s}": run_row(found[(t, s)]) for t in stitch for s in seeds}
        columns = [hard["tasks"].index(f"{t} (stitch)") for t in stitch]
        mine = score_matrix(found, stitch, seeds)
        ref = {a: np.asarray(hard["scores"][a])[seeds][:, columns] for a in ("awcapn", "uneg")}
        part = {"seeds": seeds, "runs": rows}
        if len(seeds) >= 2:
            part.update(compared({arm: mine, **ref}, arm, [f"{t} (stitch)" for t in stitch]))
        else:
            part["mean normalized"] = {
                a: round(float(v.mean()), 3) for a, v in {arm: mine, **ref}.items()
            }
        out["hard suite, stitched half (partial), 10k"] = part
    return out


def main(root, path):
    out = {
        "scored_by": SCORED_BY,
        "compared runs": "awcapn seeds 0-1 and the new runs: AMD EPYC; uneg, aw03: Intel Xeon",
    }
    for arm, what in (("awcapn32", "k = 32"), ("awcapn_t01", "T = 0.1")):
        out[f"screen C, held-out lever-pull and plate-slide, {what}, 10k"] = screen_c(root, arm)
        out[f"screen A, stitched plate-slide, {what}, 20k"] = screen_a(root, arm)
    out["screen D, stitched door-open seeds 1-2, T = 0.2, 10k"] = screen_d(root, "awcapn_t02")
    out["screen C, held-out lever-pull and plate-slide, T = 0.2, 10k"] = screen_c(
        root, "awcapn_t02"
    )
    part = held_out_3seeds(root)
    if part is not None:
        out["held-out 4 x 3, the default awcapn, 10k"] = part
    out["confirmation of awcapn_t01 (partial where runs are missing)"] = confirmation_t01(root)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
