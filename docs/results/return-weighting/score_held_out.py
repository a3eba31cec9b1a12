"""PREREG.md, thirty-second to fortieth amendments: the presets' default (`awcapn_t02`) on
the held-out mixtures and stitched tasks at 20k, and screens under it (`awcapn32_t02`, `bc_alpha`).

python score_held_out.py RUNS OUT.json   (run from this folder: it imports score.py beside it)

First, from committed files only: the default over the held-out 4 x 3 at 10k (`t02.json`) against
filtered BC and BC with the weights at T = 0.1 over the same mixtures and seeds (`control.json`).

Thirty-second: `awcapn_t02_20k` over the held-out 4 x 2, scored at 20k against `aw03` and filtered
BC at 20k as `steps20k.json` holds them (rliable IQM with 95% CIs, P(improvement), the reading),
and the same runs scored at 10k beside the 10k runs of `t02.json` (equal if training does not
depend on the step budget). Thirty-third: screen C of `awcapn32_t02` (held-out lever-pull and
plate-slide, seeds 0 and 1) against the committed screen means (it read "part", so the plan's
screen A and 4 x 2 did not run). Thirty-fourth:
`awcapn_t02s20k` on stitched plate-slide and plate-slide-side x seeds 0-2, scored at 20k and 10k,
against IQL, BC and weighted BC of `stitch20k.json` (rliable IQM, P(improvement), mean success).
Thirty-fifth and thirty-sixth: screens H (held-out hammer and lever-pull, seeds 0 and 1) and D (stitched door-open,
seeds 1 and 2) of `awcapn_t02_a1` and `awcapn_t02_a01` (`bc_alpha` 1 and 0.1). Thirty-seventh:
`awcapn_t02_a01` over the held-out 4 x 2 against the default and filtered BC of `t02.json`.
Thirty-eighth: `awcapn_t02_20k` and filtered BC at 20k (`filtered_bc20k`), both on this machine,
over the held-out 4 x 3, read at 20k and at 10k. Thirty-ninth: the same two arms at 20k on the
suite's four mixtures x seeds 0 and 1 (`awcapn_t02m20k`, `filtered_bc20k`), read at 20k and 10k.
Fortieth: the same over 4 x 3 with both arms' seed 2.
"""

import json
import sys
from pathlib import Path

import numpy as np
from score import committed, compared, run_row, runs_by_key, score_matrix

DEFAULT, K32 = "awcapn_t02", "awcapn32_t02"
LONG = DEFAULT + "_20k"
SCORED_BY = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"


def held_out_20k(root):
    """The thirty-second amendment, or None until all 8 runs exist."""
    ref = committed("steps20k.json")["held-out"]
    names = [t.removesuffix("-v3") for t in ref["tasks"]]
    part, matrices = {}, {}
    for steps in (20000, 10000):
        found = runs_by_key(root, {LONG}, names, (0, 1), steps).get(LONG, {})
        if len(found) < 8:
            return None
        matrices[steps] = score_matrix(found, names, (0, 1))
        runs = {f"{t} seed {s}": run_row(found[(t, s)]) for s in (0, 1) for t in names}
        part[f"runs at {steps // 1000}k"] = runs
    at_10k = np.asarray(committed("t02.json")["held-out 4 x 2, 10k"]["scores"][DEFAULT])
    part["10k equals the 10k runs"] = bool(np.allclose(matrices[10000], at_10k, atol=1e-9))
    scores = {LONG: matrices[20000], **{a: np.asarray(v) for a, v in ref["scores"].items()}}
    part.update(compared(scores, LONG, ref["tasks"]))
    point = part["probability_of_improvement"][f"{LONG},filtered_bc20k"]["point"]
    part["reading"] = "level given the steps" if point >= 0.5 else "behind at 20k too"
    return part


FBC_LONG = "filtered_bc20k"
MIXED = ("door-open", "drawer-open", "faucet-open", "reach")


def against_filtered_bc_20k(root, label, names, seeds, behind="behind at 20k too"):
    """``label`` against filtered BC at 20k (``FBC_LONG``) on ``names`` x ``seeds``, read at 20k
    and at 10k (rliable IQM with 95% CIs, P(``label`` > it), mean success, each run) and the
    plan's reading ("level given the steps" if P >= 0.5, else ``behind``, the plan's words); None
    until every run of both exists."""
    tasks, size, arms, part = (
        [f"{t}-v3" for t in names],
        f"{len(names)} x {len(seeds)}",
        (label, FBC_LONG),
        {},
    )
    for steps in (20000, 10000):
        found = runs_by_key(root, set(arms), names, seeds, steps)
        if any(len(found.get(a, {})) < len(names) * len(seeds) for a in arms):
            return None
        scores = {a: score_matrix(found[a], names, seeds) for a in arms}
        key = f"{size} at {steps // 1000}k"
        part[key] = compared(scores, label, tasks)
        part[key]["mean success"] = {
            a: {t: round(float(np.mean([found[a][(t, s)].final["success_rate"] for s in seeds])), 3)
                for t in names}
            for a in arms
        }  # fmt: skip
        part[key]["runs"] = {
            a: {f"{t} seed {s}": run_row(found[a][(t, s)]) for s in seeds for t in names}
            for a in arms
        }
    point = part[f"{size} at 20k"]["probability_of_improvement"][f"{label},{FBC_LONG}"]["point"]
    part["reading"] = "level given the steps" if point >= 0.5 else behind
    return part


def held_out_20k_4x3(root):
    """The thirty-eighth amendment: ``LONG`` against filtered BC at 20k, both on this machine,
    over the held-out 4 x 3, and the 4 x 2 of seeds 0 and 1 at 20k; None until all runs exist."""
    names = [t.removesuffix("-v3") for t in committed("steps20k.json")["held-out"]["tasks"]]
    part = against_filtered_bc_20k(root, LONG, names, (0, 1, 2))
    if part is not None:
        scores = part["4 x 3 at 20k"]["scores"]
        part["4 x 2 at 20k, seeds 0 and 1"] = compared(
            {a: np.asarray(v)[:2] for a, v in scores.items()}, LONG, [f"{t}-v3" for t in names]
        )
    return part


def mixed_20k(root):
    """The thirty-ninth amendment: ``DEFAULT`` at 20k (label ``awcapn_t02m20k``) against filtered
    BC at 20k on the suite's mixtures x seeds 0 and 1; None until all 16 runs exist."""
    return against_filtered_bc_20k(root, DEFAULT + "m20k", MIXED, (0, 1))


def mixed_20k_4x3(root):
    """The fortieth amendment: `mixed_20k` over seeds 0-2; None until all 24 runs exist."""
    return against_filtered_bc_20k(root, DEFAULT + "m20k", MIXED, (0, 1, 2), "behind at 20k")


def screen(root, label, task, seeds, steps):
    """``label``'s runs on ``task`` x ``seeds`` scored at ``steps``, or None until all exist."""
    found = runs_by_key(root, {label}, (task,), seeds, steps).get(label, {})
    if len(found) < len(seeds):
        return None
    return {f"{task} seed {s}": run_row(found[(task, s)]) for s in seeds}


def two_task_screen(root, label, tasks):
    """``label``'s runs on ``tasks`` x seeds 0 and 1 at 10k and their mean normalised score, or
    (None, None) until all four exist."""
    rows = {}
    for task in tasks:
        found = screen(root, label, task, (0, 1), 10000)
        if found is None:
            return None, None
        rows.update(found)
    return rows, round(float(np.mean([r["normalized"] for r in rows.values()])), 3)


def screen_c(root):
    """Screen C of ``K32``: "recovers" if the mean normalised score >= 0.78, "no gain" if
    <= 0.71, otherwise "part" (the twenty-fifth amendment's bands), or None."""
    rows, mean = two_task_screen(root, K32, ("lever-pull", "plate-slide"))
    if rows is None:
        return None
    screens = committed("screens.json")
    k32 = screens["screen C, held-out lever-pull and plate-slide, k = 32, 10k"]
    t02 = screens["screen C, held-out lever-pull and plate-slide, T = 0.2, 10k"]
    reference = {
        "awcapn (k = 8, T = 0.3)": k32["committed means"]["awcapn"],
        "awcapn32 (k = 32, T = 0.3)": k32["mean_normalized"],
        "awcapn_t02 (k = 8, T = 0.2)": t02["mean_normalized"],
        "aw03": k32["committed means"]["aw03"],
    }
    reading = "recovers" if mean >= 0.78 else "no gain" if mean <= 0.71 else "part"
    return {"runs": rows, "committed means": reference, "mean_normalized": mean, "reading": reading}


def alpha01_held_out(root):
    """The thirty-seventh amendment: `awcapn_t02_a01` over the held-out 4 x 2 against
    ``DEFAULT`` and filtered BC of `t02.json`, or None until its 8 runs exist."""
    label, ref = "awcapn_t02_a01", committed("t02.json")["held-out 4 x 2, 10k"]
    names = [t.removesuffix("-v3") for t in ref["tasks"]]
    found = runs_by_key(root, {label}, names, (0, 1)).get(label, {})
    if len(found) < 8:
        return None
    scores = {label: score_matrix(found, names, (0, 1))}
    scores.update({a: np.asarray(ref["scores"][a]) for a in (DEFAULT, "filtered_bc")})
    part = compared(scores, label, ref["tasks"])
    part["runs"] = {f"{t} seed {s}": run_row(found[(t, s)]) for s in (0, 1) for t in names}
    return part


STITCHED = ("plate-slide", "plate-slide-side")
STITCH_ARMS = {"iqls20k": "IQL", "bc_s20k": "BC", "awbc01s20k": "weighted BC"}


def stitched_20k(root):
    """The thirty-fourth amendment at 20k and 10k, or None until all 6 runs exist."""
    label, seeds, part = DEFAULT + "s20k", (0, 1, 2), {}
    for steps in (20000, 10000):
        found = runs_by_key(root, {label}, STITCHED, seeds, steps).get(label, {})
        if len(found) < 6:
            return None
        ref = committed("stitch20k.json")[f"scored at {steps // 1000}k"]["runs"]
        scores = {DEFAULT: score_matrix(found, STITCHED, seeds)}
        for arm in STITCH_ARMS:
            runs = ref[arm]
            scores[arm] = np.asarray(
                [[runs[f"{t} seed {s}"]["normalized"] for t in STITCHED] for s in seeds]
            )
        success = {
            t: round(float(np.mean([found[(t, s)].final["success_rate"] for s in seeds])), 3)
            for t in STITCHED
        }
        key = f"at {steps // 1000}k"
        part[key] = compared(scores, DEFAULT, list(STITCHED))
        part[key]["runs"] = {
            f"{t} seed {s}": run_row(found[(t, s)]) for t in STITCHED for s in seeds
        }
        part[key]["mean success"] = {
            DEFAULT: success,
            **{
                arm: {
                    t: round(
                        float(np.mean([ref[arm][f"{t} seed {s}"]["success"] for s in seeds])), 3
                    )
                    for t in STITCHED
                }
                for arm in STITCH_ARMS
            },
        }
    at_20k = part["at 20k"]["mean success"][DEFAULT]
    failed = [t for t, v in at_20k.items() if v < 0.8]
    part["reading"] = "solves both" if not failed else f"below 0.8 success: {failed}"
    part["arms"] = STITCH_ARMS
    return part


def against_filtered_bc(root):
    """The default over the held-out 4 x 3 at 10k (`t02.json`) against filtered BC and BC with the
    weights at T = 0.1 over the same mixtures and seeds (`control.json`, Intel Xeon), and each
    arm's mean success per mixture (the default's from its runs under ``root``)."""
    ours = committed("t02.json")["held-out 4 x 3, 10k (thirtieth amendment)"]
    control = committed("control.json")
    ref, arms = control["held-out"], ("filtered_bc", "awbc01")
    assert ours["tasks"] == ref["tasks"], (ours["tasks"], ref["tasks"])
    scores = {DEFAULT: np.asarray(ours["scores"][DEFAULT])}
    scores.update({a: np.asarray(ref["scores"][a]) for a in arms})
    part = compared(scores, DEFAULT, ours["tasks"])
    names, seeds = [t.removesuffix("-v3") for t in ours["tasks"]], (0, 1, 2)
    found = runs_by_key(root, {DEFAULT}, names, seeds).get(DEFAULT, {})
    if len(found) == 12:
        assert np.allclose(score_matrix(found, names, seeds), scores[DEFAULT], atol=1e-9)
        success = {
            DEFAULT: [[found[(t, s)].final["success_rate"] for t in names] for s in seeds],
            **{a: [[control["runs"][a][f"{t} seed {s}"]["success"] for t in names] for s in seeds]
               for a in arms},  # fmt: skip
        }
        part["mean success"] = {
            a: dict(zip(names, np.round(np.mean(v, axis=0), 3).tolist()))
            for a, v in success.items()
        }
        print("mean success", part["mean success"])
    return part


ALPHA_ARMS = {"awcapn_t02_a1": 1.0, "awcapn_t02_a01": 0.1}


def screen_h(root, label):
    """The thirty-fifth amendment's screen H of ``label`` (held-out hammer and lever-pull, seeds 0
    and 1): "gain" if the mean normalised score >= 0.50, "no gain" if <= 0.46, else "part"."""
    ref = committed("t02.json")["held-out 4 x 2, 10k"]
    columns = [ref["tasks"].index(f"{t}-v3") for t in ("hammer", "lever-pull")]
    rows, mean = two_task_screen(root, label, ("hammer", "lever-pull"))
    if rows is None:
        return None
    reference = {
        a: round(float(np.asarray(ref["scores"][a])[:, columns].mean()), 3)
        for a in (DEFAULT, "filtered_bc")
    }
    reading = "gain" if mean >= 0.50 else "no gain" if mean <= 0.46 else "part"
    return {
        "runs": rows,
        "same runs' means": reference,
        "mean_normalized": mean,
        "reading": reading,
    }


def screen_d(root, label):
    """Screen D of ``label`` (stitched door-open, seeds 1 and 2): "keeps door-open" if the mean
    success >= 0.5, else "loses it"; None until both runs exist."""
    rows = screen(root, label, "door-open", (1, 2), 10000)
    if rows is None:
        return None
    mean = round(float(np.mean([r["success"] for r in rows.values()])), 3)
    ref = committed("screens.json")["screen D, stitched door-open seeds 1-2, T = 0.2, 10k"]
    return {
        "runs": rows,
        f"{DEFAULT} mean success": ref["mean_success"],
        "mean_success": mean,
        "reading": "keeps door-open" if mean >= 0.5 else "loses it",
    }


def main(root, path):
    out = {"scored_by": SCORED_BY, "compared runs": "AMD EPYC, 7e69886 packages, unless named"}
    out["held-out 4 x 3, 10k, against filtered BC and weighted BC (control.json)"] = (
        against_filtered_bc(root)
    )
    long = held_out_20k(root)
    if long is not None:
        long["compared with"] = "aw03_20k and filtered_bc20k of steps20k.json (Intel Xeon)"
        out["held-out 4 x 2, 20k (thirty-second amendment)"] = long
        print("held-out 20k:", long["reading"], "| 10k equal:", long["10k equals the 10k runs"])
    for key, part in (
        ("held-out 4 x 3, 20k, filtered BC on the same machine (thirty-eighth amendment)",
         held_out_20k_4x3(root)),
        ("the suite's mixtures 4 x 2, 20k, filtered BC beside (thirty-ninth amendment)",
         mixed_20k(root)),
        ("the suite's mixtures 4 x 3, 20k, filtered BC beside (fortieth amendment)",
         mixed_20k_4x3(root)),
    ):  # fmt: skip
        if part is not None:
            out[key] = part
            print(f"{key}: {part['reading']}")
    c = screen_c(root)
    if c is not None:
        out["screen C, held-out lever-pull and plate-slide, k = 32, T = 0.2, 10k"] = c
        print("screen C:", c["mean_normalized"], c["reading"])
    for label, alpha in ALPHA_ARMS.items():
        for name, part in (("H", screen_h(root, label)), ("D", screen_d(root, label))):
            if part is not None:
                out[f"screen {name}, bc_alpha = {alpha:g} ({label}), 10k"] = part
                print(label, name, part["reading"], part.get("mean_normalized"))
    alpha01 = alpha01_held_out(root)
    if alpha01 is not None:
        out["held-out 4 x 2, bc_alpha = 0.1 (thirty-seventh amendment), 10k"] = alpha01
    stitched = stitched_20k(root)
    if stitched is not None:
        stitched["compared with"] = "iqls20k, bc_s20k, awbc01s20k of stitch20k.json (Intel Xeon)"
        out["held-out stitched tasks 2 x 3, 20k (thirty-fourth amendment)"] = stitched
        print("stitched:", stitched["reading"])
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
