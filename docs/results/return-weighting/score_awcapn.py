"""PREREG.md, twenty-fourth amendment: `awcapn` (the return weights with the neighbourhood cap).

python score_awcapn.py RUNS OUT.json   (run from this folder: it imports score.py beside it)

The new arm's runs are read from RUNS; the arms it is compared with ran on another machine and
are read from the committed files beside this script: `scores.json` (held-out 4 x 2: `aw03`, the
term `uneg`, filtered BC), `suites.json` (both suites, seeds 0-2: `uneg`, `aw03`) and `capn.json`
(stitched plate-slide at 20k). Each screen's runs and reading; the calibration run (`aw03` on
held-out plate-slide seed 0 on this machine) beside its committed score; then, when all their
runs exist, the held-out 4 x 2 and each suite: rliable IQM with 95% CIs and P(improvement).
"""

import json
import sys
from pathlib import Path

import numpy as np
from score import SUFFIX, SUITES, band, committed, run_row, runs_by_key
from score import compared as compare_arms

from cvl_eval.envs.expert_scores import normalized_score

ARM = "awcapn"
SCORED_BY = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"


def screen(root, key, label, tasks, steps, read):
    """Each run's pooled success and normalised return at ``steps``, the mean success over the
    runs and the plan's reading of it (``read``: mean success -> words)."""
    found = runs_by_key(root, {label}, tasks, (0, 1), steps).get(label, {})
    rows = {
        f"{t} seed {s}": run_row(found[(t, s)]) for t in tasks for s in (0, 1) if (t, s) in found
    }
    part = {"runs": rows}
    if len(rows) == 2 * len(tasks):
        mean = round(float(np.mean([r["success"] for r in rows.values()])), 3)
        part["mean_success"] = mean
        part["reading"] = read(mean)
    print(key, part)
    return part


def calibration(root):
    """`aw03` on held-out plate-slide seed 0 on this machine beside the committed run."""
    found = runs_by_key(root, {"aw03"}, ("plate-slide",), (0,)).get("aw03", {})
    ref = committed("scores.json")["held-out"]
    before = ref["scores"]["aw03"][0][ref["tasks"].index("plate-slide-v3")]
    row = run_row(found[("plate-slide", 0)]) if found else None
    print("calibration", row, "committed normalised", round(before, 3))
    return {"this machine": row, "committed normalized": round(before, 3)}


def held_out(root):
    """The held-out 4 x 2 against `aw03`, the term and filtered BC of `scores.json`."""
    ref = committed("scores.json")["held-out"]
    tasks = [t.removesuffix("-v3") for t in ref["tasks"]]
    found = runs_by_key(root, {ARM}, tasks, (0, 1)).get(ARM, {})
    if len(found) < 8:
        return None
    scores = {
        ARM: np.asarray(
            [
                [
                    normalized_score(found[(t, s)].task, found[(t, s)].final["mean_return"])
                    for t in tasks
                ]
                for s in (0, 1)
            ]
        )
    }
    scores.update({a: np.asarray(v) for a, v in ref["scores"].items()})
    return compared(
        scores,
        ref["tasks"],
        {
            ARM: {
                t: round(float(np.mean([found[(t, s)].final["success_rate"] for s in (0, 1)])), 3)
                for t in tasks
            }
        },
    )


def suite(root, name):
    """One suite, seeds 0-2, against the term and `aw03` of `suites.json`."""
    datasets = SUITES[name]
    ref = committed("suites.json")[name]
    assert ref["datasets"] == list(datasets), (ref["datasets"], list(datasets))
    labels = {ARM + SUFFIX[kind] for _, kind in datasets.values()}
    found = runs_by_key(root, labels, {t for t, _ in datasets.values()}, (0, 1, 2))
    run = {
        (k, s): found.get(ARM + SUFFIX[kind], {}).get((task, s))
        for k, (task, kind) in datasets.items()
        for s in (0, 1, 2)
    }
    if not all(run.values()):
        return None
    scores = {
        ARM: np.asarray(
            [
                [
                    normalized_score(run[(k, s)].task, run[(k, s)].final["mean_return"])
                    for k in datasets
                ]
                for s in (0, 1, 2)
            ]
        )
    }
    scores.update({a: np.asarray(v) for a, v in ref["scores"].items()})
    return compared(
        scores,
        list(datasets),
        {
            ARM: {
                k: [round(run[(k, s)].final["success_rate"], 3) for s in (0, 1, 2)]
                for k in datasets
            }
        },
    )


def compared(scores, tasks, success):
    """`score.compared` for ARM, with the bands and the success rates."""
    part = compare_arms(scores, ARM, tasks)
    part["reading"] = {
        k.split(",")[1]: band(v["point"]) for k, v in part["probability_of_improvement"].items()
    }
    part["success"] = success
    return part


def main(root, path):
    ps20k = committed("capn.json")["stitched plate-slide, scored at 20k"]["means"]
    out = {
        "scored_by": SCORED_BY,
        "compared runs": "Intel Xeon (committed JSON); awcapn: AMD EPYC",
        "screen B, held-out handle-pull and plate-slide, 10k": screen(
            root,
            "B",
            ARM,
            ("handle-pull", "plate-slide"),
            10000,
            lambda m: "keeps the gain" if m >= 0.75 else "loses it" if m <= 0.45 else "part",
        ),
        "screen A, stitched plate-slide, 20k": screen(
            root,
            "A",
            ARM + "s20k",
            ("plate-slide",),
            20000,
            lambda m: "passes" if m >= 0.5 else "fails",
        ),
        "stitched plate-slide 20k, committed means": {
            a: ps20k[a] for a in ("aw03s20k", "capnus20k", "unegs20k")
        },
        "calibration": calibration(root),
    }
    for key, part in (
        ("held-out 4 x 2, 10k", held_out(root)),
        ("hard suite, 10k", suite(root, "hard")),
        ("mixed suite, 10k", suite(root, "mixed")),
    ):
        if part is not None:
            out[key] = part
            print(key, part["reading"])
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
