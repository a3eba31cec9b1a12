"""PREREG.md, twenty-ninth amendment: the confirmation of `awcapn_t02` (the return weights at
T = 0.2 under the neighbourhood cap) against the default `awcapn` (T = 0.3).

python score_t02.py RUNS OUT.json   (run from this folder: it imports score.py beside it)

The new arm's runs are read from RUNS (labels: `awcapn_t02` on the held-out mixtures and the
stitch data, + "n" on the noisy data, + "m" on the mixed suite, + "s20k" on stitched plate-slide
at 20k); the default's are the committed per-run scores of `awcapn.json` (same machine and
snapshot), with the term `uneg` and `aw03` beside it. Test A's runs and reading; the held-out
4 x 2 and each suite 4 x 3 when all their runs exist (rliable IQM with 95% CIs, P(`awcapn_t02` >
each)); a suite with missing runs at the seeds where all its runs exist, marked partial; and the
amendment's verdict. Then the thirtieth amendment: the held-out 4 x 3 when the seed-2 runs exist,
against `awcapn`, the term and `aw03` over seeds 0-2 as `screens.json` holds them. Then the
thirty-first amendment's screen: the drawer-open mixture at 20k, seeds 0 and 2, read at 10k and 20k.
"""

import json
import sys
from pathlib import Path

import numpy as np
from score import SUFFIX, SUITES, committed, compared, run_row, runs_by_key, score_matrix

ARM, DEFAULT = "awcapn_t02", "awcapn"
SCORED_BY = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"


def test_a(root):
    """Stitched plate-slide, seeds 0 and 1, scored at 20k: passes if the mean success >= 0.5."""
    found = runs_by_key(root, {ARM + "s20k"}, ("plate-slide",), (0, 1), 20000)
    found = found.get(ARM + "s20k", {})
    rows = {
        f"plate-slide seed {s}": run_row(found[("plate-slide", s)])
        for s in (0, 1)
        if ("plate-slide", s) in found
    }
    default = committed("awcapn.json")["screen A, stitched plate-slide, 20k"]
    part = {"runs": rows, f"{DEFAULT} mean success": default["mean_success"]}
    if len(rows) == 2:
        part["mean_success"] = round(float(np.mean([r["success"] for r in rows.values()])), 3)
        part["reading"] = "passes" if part["mean_success"] >= 0.5 else "fails"
    print("A", part)
    return part


def scored(root, key, datasets, seeds):
    """The committed arms of ``awcapn.json[key]`` beside ``ARM``'s runs (``datasets``: column
    name -> (task, label)) at the seeds where all its runs exist; None if no seed has them."""
    ref = committed("awcapn.json")[key]
    assert ref["tasks"] == list(datasets), (ref["tasks"], list(datasets))
    labels = {label for _, label in datasets.values()}
    found = runs_by_key(root, labels, {t for t, _ in datasets.values()}, seeds)
    run = {
        (k, s): found.get(label, {}).get((task, s))
        for k, (task, label) in datasets.items()
        for s in seeds
    }
    full = [s for s in seeds if all(run[(k, s)] for k in datasets)]
    if not full:
        return None
    rows = [seeds.index(s) for s in full]
    scores = {
        ARM: score_matrix(run, datasets, full),
        **{a: np.asarray(v)[rows] for a, v in ref["scores"].items()},
    }
    part = {"seeds": full, "complete": full == list(seeds)}
    part.update(compared(scores, ARM, list(datasets)))
    part["success"] = {
        ARM: {k: [round(run[(k, s)].final["success_rate"], 3) for s in full] for k in datasets},
        DEFAULT: ref["success"][DEFAULT],
    }
    return part


def held_out_3seeds(root):
    """``ARM`` over the held-out 4 x 3 against the arms of `screens.json`'s 4 x 3, or None."""
    ref = committed("screens.json")["held-out 4 x 3, the default awcapn, 10k"]
    names = [t.removesuffix("-v3") for t in ref["tasks"]]
    found = runs_by_key(root, {ARM}, names, (0, 1, 2)).get(ARM, {})
    if len(found) < 12:
        return None
    scores = {
        ARM: score_matrix(found, names, (0, 1, 2)),
        **{a: np.asarray(v) for a, v in ref["scores"].items()},
    }
    part = {"seed 2 runs": {t: run_row(found[(t, 2)]) for t in names}}
    part.update(compared(scores, ARM, ref["tasks"]))
    point = part["probability_of_improvement"][f"{ARM},{DEFAULT}"]["point"]
    part["reading"] = "stands" if point >= 0.5 else "not confirmed at three seeds"
    return part


def drawer_20k(root):
    """``ARM`` + ``m20k`` on the drawer-open mixture, seeds 0 and 2, scored at 10k and at 20k
    ("speed only" at 20k if the mean success >= 0.9, "a loss" if <= 0.6), or None."""
    label, part = ARM + "m20k", {}
    for steps in (10000, 20000):
        found = runs_by_key(root, {label}, ("drawer-open",), (0, 2), steps).get(label, {})
        if len(found) < 2:
            return None
        rows = {f"seed {s}": run_row(found[("drawer-open", s)]) for s in (0, 2)}
        mean = round(float(np.mean([r["success"] for r in rows.values()])), 3)
        part[f"at {steps // 1000}k"] = {"runs": rows, "mean_success": mean}
    mean = part["at 20k"]["mean_success"]
    part["reading"] = "speed only" if mean >= 0.9 else "a loss" if mean <= 0.6 else "part"
    return part


def main(root, path):
    held = committed("awcapn.json")["held-out 4 x 2, 10k"]["tasks"]
    parts = {
        "test A, stitched plate-slide, 20k": test_a(root),
        "held-out 4 x 2, 10k": scored(
            root, "held-out 4 x 2, 10k", {t: (t.removesuffix("-v3"), ARM) for t in held}, [0, 1]
        ),
        **{
            f"{name} suite, 10k": scored(
                root,
                f"{name} suite, 10k",
                {k: (task, ARM + SUFFIX[kind]) for k, (task, kind) in SUITES[name].items()},
                [0, 1, 2],
            )
            for name in ("hard", "mixed")
        },
    }
    out = {
        "scored_by": SCORED_BY,
        "compared runs": "all AMD EPYC, 7e69886 packages",
        **{k: v for k, v in parts.items() if v is not None},
    }
    points = {
        k: v["probability_of_improvement"][f"{ARM},{DEFAULT}"]["point"]
        for k, v in parts.items()
        if v is not None and "probability_of_improvement" in v
    }
    complete = all(v is not None and v.get("complete", "reading" in v) for v in parts.values())
    moves = (
        complete
        and parts["test A, stitched plate-slide, 20k"]["reading"] == "passes"
        and all(p >= 0.5 for p in points.values())
    )
    out["verdict"] = {
        f"P({ARM} > {DEFAULT})": points,
        "complete": complete,
        "default moves to T = 0.2": moves,
    }
    print(out["verdict"])
    three = held_out_3seeds(root)
    if three is not None:
        out["held-out 4 x 3, 10k (thirtieth amendment)"] = three
        print("held-out 4 x 3", three["reading"])
    drawer = drawer_20k(root)
    if drawer is not None:
        out["drawer-open mixture, 20k (thirty-first amendment)"] = drawer
        print("drawer-open mixture 20k", drawer)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
