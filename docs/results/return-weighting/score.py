"""Return-weighted anchors (rw01, rw03; aw03 weighs the advantage over the start) against the
presets' CVL (uneg) on the same machine. argv: RUNS out.json screen | confirm ARM [fbc] |
confirm3 ARM | drawer | seed2 | iql | suite mixed hard | suite20k hard stitch-half noisy-half |
control BC_ARM... | screen3 | stitch20k | term20k | cap | capn.
"drawer": stitched drawer-open, seeds 0 and 1, each arm's runs (after the confirmation).
"confirm3": "confirm" over seeds 0-2 (outside the plan's confirmation, beside it).
"seed2": the held-out mixtures' seed 2 runs of both arms; "iql": IQL with and without aw03's
weights on the held-out mixtures, seeds 0 and 1 (each run, the means, and when all ran the IQM
beside aw03's).
"suite mixed hard": each suite's 4 datasets x the seeds every run of both arms has (PREREG.md,
fourth amendment), rliable IQM with 95% CIs and P(aw03 > presets), mean success per dataset
("mixed@aw05": another arm's). "screen2": the fifth and sixth amendments' screen (T = 0.5; the
weights on the critic's or the policy's anchors only). "20k": the seventh amendment's runs.
"control awbc01 awbc03": the eleventh amendment's BC with aw03's weights beside aw03, filtered BC
and the presets (held-out mixtures, seeds 0-2; both suites with the first arm named).
"screen3": the twelfth amendment's screen of `aw01` (CVL with the weights at T = 0.1).
"suite20k hard stitch-half noisy-half": the tenth amendment's 20k runs of both arms, scored at 20k
and, from the same runs, at 10k, and the thirteenth's BC runs on stitched door-open beside them.
"stitch20k": the fourteenth amendment's arms on the four stitched datasets at 20k steps (and 10k),
and the fifteenth's CVL without the critic's action term on stitched plate-slide.
"term20k": the sixteenth amendment's CVL with and without the critic's action term at 20k steps
(and 10k) on the four stitched datasets x seeds 0-2 and the held-out mixtures x seeds 0 and 1,
and the seventeenth's runs with the term on stitched plate-slide to 40k.
"cap": the eighteenth to twentieth amendments' screens of the term with `bc_q_cap`.
"capn": the twenty-first (return weights on stitched plate-slide) and twenty-second (the cap at
the best the data reached nearby, `bc_q_cap_neighbours`) amendments.
"curves": every evaluation of the runs `curves.py` draws.
"screen": each screen run's pooled last 3 evaluations (success, normalised return), the arms'
means and PREREG.md's verdict. "confirm": rliable IQM with 95% stratified-bootstrap CIs and
P(ARM > other) over the held-out mixtures x the seeds in SEEDS (with filtered BC: "fbc")."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.envs.expert_scores import normalized_score

ARMS = ("uneg", "rw01", "rw03", "aw03")
HELD_OUT = ("handle-pull", "lever-pull", "hammer", "plate-slide")
SCREEN = (("handle-pull", "held-out"), ("lever-pull", "held-out"), ("door-open", "stitch"))
SEEDS = (0, 1)  # the confirmation's seeds (PREREG.md, third amendment)
SCORED_BY = "last 3 evaluations up to step 10000, pooled (30 episodes)"


def runs_by_key(root, labels, tasks, seeds, steps=10000):
    """{label: {(task, seed): run}} of the runs under ``root``, scored at ``steps``."""
    found, roots = {}, [Path(root) / label for label in labels if (Path(root) / label).is_dir()]
    for run in load_runs(roots, last_evals=3, up_to_step=steps) if roots else ():
        task = run.task.removesuffix("-v3")
        if run.label in labels and task in tasks and run.seed in seeds:
            found.setdefault(run.label, {})[(task, run.seed)] = run
    return found


def score_matrix(runs, keys, seeds):
    """``(seeds, keys)`` expert-normalised returns of ``runs`` ({(key, seed): run})."""
    return np.asarray(
        [[normalized_score(runs[(k, s)].task, runs[(k, s)].final["mean_return"]) for k in keys]
         for s in seeds])  # fmt: skip


def run_row(run):
    """A run's pooled success and normalised return, rounded as the JSON files store them."""
    norm = normalized_score(run.task, run.final["mean_return"])
    return {"success": round(run.final["success_rate"], 3), "normalized": round(float(norm), 3)}


def screen_table(root, out, screen, arms, suffix):
    """Each screen run's pooled success and normalised return by arm (``screen``: (task, part)
    pairs, seeds 0 and 1; a run's label is its arm + ``suffix[part]``), and each arm's means
    per part over the runs it has all of."""
    for task, part in screen:
        found = runs_by_key(root, [a + suffix[part] for a in arms], [task], (0, 1))
        for seed in (0, 1):
            row = {}
            for arm in arms:
                run = found.get(arm + suffix[part], {}).get((task, seed))
                if run is not None:
                    row[arm] = run_row(run)
            out["runs"][f"{task} ({part}) seed {seed}"] = row
    for part in dict.fromkeys(part for _, part in screen):
        rows = [v for k, v in out["runs"].items() if f"({part})" in k]
        out[f"mean_{part}"] = {
            arm: {m: round(float(np.mean([r[arm][m] for r in rows])), 3)
                  for m in ("success", "normalized")}
            for arm in arms if all(arm in r for r in rows)}


def print_screen(out, parts):
    for key, row in out["runs"].items():
        print(f"{key:35s}", "  ".join(f"{a} {v['success']:.2f} ({v['normalized']:.2f})"
                                       for a, v in row.items()))
    print(*(f"{part} {out[f'mean_{part}']}" for part in parts), f"passes {out['passes']}", sep="\n")


def screen(root, out):
    screen_table(root, out, SCREEN, ARMS, {"held-out": "", "stitch": ""})
    base = out["mean_held-out"]["uneg"]["success"], out["mean_stitch"]["uneg"]["success"]
    out["passes"] = {
        arm: out["mean_held-out"][arm]["success"] >= base[0] + 0.15
        and out["mean_stitch"][arm]["success"] >= base[1] - 0.10
        for arm in ARMS[1:] if arm in out["mean_held-out"] and arm in out["mean_stitch"]}
    print_screen(out, ("held-out", "stitch"))


def compare(found, labels, pairs):
    """rliable IQM with 95% CIs of ``labels`` and P(x > y) for ``pairs``, from their runs."""
    runs = [r for label in labels for r in found[label].values()]
    scores, tasks, normalized = score_dict(runs, labels)
    assert normalized
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, pairs)
    print({a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in labels})
    print({k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
    return {"tasks": tasks, "scores": {a: scores[a].tolist() for a in labels},
            "aggregates": agg, "probability_of_improvement": poi}


def confirm(root, out, arm, seeds=SEEDS):
    labels = [arm, "uneg"] + (["filtered_bc"] if (len(sys.argv) > 5 and sys.argv[5] == "fbc") else [])
    found = runs_by_key(root, labels, HELD_OUT, seeds)
    for label in labels:
        missing = [(t, s) for t in HELD_OUT for s in seeds if (t, s) not in found.get(label, {})]
        assert not missing, (label, missing)
    out["held-out"] = compare(found, labels, [(arm, other) for other in labels if other != arm])
    out["held-out"]["mean_success"] = success = {
        label: {t: round(float(np.mean([found[label][(t.removesuffix("-v3"), s)]
                                        .final["success_rate"] for s in seeds])), 3)
                for t in out["held-out"]["tasks"]} for label in labels}
    print(success)


def runs_table(root, out, labels, tasks, seeds, steps=10000):
    """Each run's pooled success and normalised return, and each label's means over them;
    returns the runs found (`runs_by_key`)."""
    found = runs_by_key(root, labels, tasks, seeds, steps)
    for label in labels:
        rows = {f"{t} seed {s}": found.get(label, {}).get((t, s)) for t in tasks for s in seeds}
        rows = {k: run_row(r) for k, r in rows.items() if r is not None}
        out["runs"][label] = rows
        out.setdefault("means", {})[label] = {
            m: round(float(np.mean([v[m] for v in rows.values()])), 3) for m in ("success", "normalized")
        } if rows else None
        print(label, out["means"][label], {k: v["success"] for k, v in rows.items()})
    return found


def band(p, ahead="ahead", behind="behind"):
    """This plan's reading of a probability of improvement: ``ahead`` at >= 0.70, ``behind`` at
    <= 0.30, "level" between."""
    return ahead if p >= 0.70 else behind if p <= 0.30 else "level"


def mean_success(found, labels, tasks, seeds):
    """{label: {task: mean pooled success over the seeds it has}} for the labels and tasks with
    any run in ``found`` (`runs_by_key`)."""
    return {
        a: {t: round(float(np.mean([found[a][(t, s)].final["success_rate"] for s in seeds
                                    if (t, s) in found[a]])), 3)
            for t in tasks if any((t, s) in found[a] for s in seeds)}
        for a in labels if a in found}


def iql_iqm(root, out, found):
    """IQL's two arms (``found``: their runs) beside aw03 over the held-out mixtures x seeds 0
    and 1, when all ran."""
    labels = ["iqlaw", "iql", "aw03"]
    found = {**found, **runs_by_key(root, ["aw03"], HELD_OUT, SEEDS)}
    if all(len(found.get(label, {})) == len(HELD_OUT) * len(SEEDS) for label in labels):
        out["held-out"] = compare(found, labels, [("iqlaw", "iql"), ("aw03", "iqlaw")])


def drawer(root, out):
    found = runs_by_key(root, ("uneg", "aw03"), ["drawer-open"], (0, 1))
    for arm, runs in found.items():
        for (task, seed), run in sorted(runs.items()):
            out["runs"][f"{task} (stitch) seed {seed} {arm}"] = run_row(run)
    print(out["runs"])


SUFFIX = {"mixture": "m", "stitch": "", "noisy": "n"}  # the runs' label: arm + the data's suffix
SUFFIX_20K = {"mixture": "m20k", "stitch": "s20k", "noisy": "n20k"}  # the same, 20k-step runs
SUITES = {  # dataset: (task, kind)
    "mixed": {f"{t} (mixture)": (t, "mixture") for t in ("door-open", "drawer-open", "faucet-open", "reach")},
    "hard": {**{f"{t} (stitch)": (t, "stitch") for t in ("door-open", "drawer-open")},
             **{f"{t} (noisy)": (t, "noisy") for t in ("faucet-open", "reach")}},
}
SUITES["stitch-half"] = {k: v for k, v in SUITES["hard"].items() if v[1] == "stitch"}
SUITES["noisy-half"] = {k: v for k, v in SUITES["hard"].items() if v[1] == "noisy"}


def suite(root, out, name, arm="aw03", budget=None, steps=10000, control=None):
    """``arm`` and the presets on one suite at the seeds where all 8 runs of a seed exist
    (``name@arm``: the result under that key). ``budget="20k"``: the runs of 20k steps (labels
    arm + SUFFIX_20K[kind]), scored by their evaluations up to ``steps``. ``control``: a third
    arm (BC with the weights), with P(arm > control) and P(control > presets)."""
    datasets, arms = SUITES[name], ("uneg", arm) + ((control,) if control else ())
    suffix = SUFFIX_20K if budget == "20k" else SUFFIX
    labels = {a + suffix[kind] for _, kind in datasets.values() for a in arms}
    found = runs_by_key(root, labels, {t for t, _ in datasets.values()}, (0, 1, 2), steps)
    run = {(key, a, seed): found.get(a + suffix[kind], {}).get((task, seed))
           for key, (task, kind) in datasets.items() for a in arms for seed in (0, 1, 2)}
    seeds = [s for s in (0, 1, 2) if all(run[(k, a, s)] for k in datasets for a in arms)]
    assert seeds, f"no seed has all runs of the {name} suite"
    scores = {a: np.asarray([[normalized_score(run[(k, a, s)].task,
                                               run[(k, a, s)].final["mean_return"])
                              for k in datasets] for s in seeds]) for a in arms}
    agg = aggregate_scores(scores)
    pairs = [(arm, "uneg")] + ([(arm, control), (control, "uneg")] if control else [])
    poi = probability_of_improvement(scores, pairs)
    success = {a: {k: [round(run[(k, a, s)].final["success_rate"], 3) for s in seeds]
                   for k in datasets} for a in arms}
    key = name if arm == "aw03" else f"{name}@{arm}"
    key += f" ({budget} runs, scored at {steps // 1000}k)" if budget else ""
    key += f" with {control}" if control else ""
    out[key] = {"datasets": list(datasets), "seeds": seeds,
                "scores": {a: v.tolist() for a, v in scores.items()}, "aggregates": agg,
                "probability_of_improvement": poi, "success_per_seed": success}
    print(key, "seeds", seeds)
    print({a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in scores})
    print({k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
    for k in datasets:
        print(f"{k:24s}", "  ".join(f"{a} {success[a][k]}" for a in success))


SCREEN2_ARMS = ("uneg", "aw03", "aw05", "aw03p", "aw03c")
SCREEN2 = (("handle-pull", "held-out"), ("lever-pull", "held-out"), ("drawer-open", "mixture"))


def screen2(root, out):
    """PREREG.md, fifth and sixth amendments: each arm's screen runs (pooled success and
    normalised return), its means on the held-out and drawer-open mixture runs, the verdict."""
    screen_table(root, out, SCREEN2, SCREEN2_ARMS, {"held-out": "", "mixture": "m"})
    out["passes"] = {  # held-out >= the presets' + 0.15, drawer-open mixture >= 0.89
        arm: out["mean_held-out"][arm]["success"] >= out["mean_held-out"]["uneg"]["success"] + 0.15
        and out["mean_mixture"][arm]["success"] >= 0.89
        for arm in SCREEN2_ARMS[1:] if arm in out["mean_held-out"] and arm in out["mean_mixture"]}
    print_screen(out, ("held-out", "mixture"))


def screen3(root, out):
    """PREREG.md, twelfth amendment: `aw01` (CVL with the weights at T = 0.1) on the fifth
    amendment's screen, beside the presets, `aw03` and BC with the weights at T = 0.1."""
    arms = ("uneg", "aw03", "aw01", "awbc01")
    screen_table(root, out, SCREEN2, arms, {"held-out": "", "mixture": "m"})
    held_out, mixture = out["mean_held-out"], out["mean_mixture"]
    out["passes"] = {}
    if "aw01" in held_out and "aw01" in mixture:
        out["passes"] = {"aw01": held_out["aw01"]["success"] >= held_out["uneg"]["success"] + 0.15
                         and mixture["aw01"]["success"] >= 0.89}
    print_screen(out, ("held-out", "mixture"))


def steps20k(root, out):
    """PREREG.md, seventh amendment: the drawer-open mixture's delay (item 1) and `aw03` against
    filtered BC on the held-out mixtures (item 2), 20k steps, last 3 evaluations pooled."""
    out["scored_by"] = SCORED_BY.replace("10000", "20000")
    runs_table(root, out, ("unegm20k", "aw03m20k"), ("drawer-open",), (0, 1), steps=20000)
    means = out["means"]
    if means["unegm20k"] and means["aw03m20k"]:
        out["delay"] = means["aw03m20k"]["success"] >= means["unegm20k"]["success"] - 0.05
    labels = ["aw03_20k", "filtered_bc20k"]
    held_out = {"runs": {}}
    found = runs_table(root, held_out, labels, HELD_OUT, SEEDS, steps=20000)
    out["held-out runs"], out["held-out means"] = held_out["runs"], held_out["means"]
    if all(len(found.get(label, {})) == len(HELD_OUT) * len(SEEDS) for label in labels):
        out["held-out"] = compare(found, labels, [("aw03_20k", "filtered_bc20k")])
        p = out["held-out"]["probability_of_improvement"]["aw03_20k,filtered_bc20k"]["point"]
        out["verdict"] = band(p)
        print("verdict", out["verdict"])


def control(root, out, bc_arms):
    """PREREG.md, eleventh amendment: BC with `aw03`'s weights (``bc_arms``, e.g. awbc03) beside
    `aw03`, filtered BC and the presets on the held-out mixtures x seeds 0-2; then, for the first
    of ``bc_arms`` whose suite runs exist, both suites with it as the control."""
    labels = ["aw03", *bc_arms, "filtered_bc", "uneg"]
    found = runs_table(root, out, labels, HELD_OUT, (0, 1, 2))
    complete = [l for l in labels if len(found.get(l, {})) == len(HELD_OUT) * 3]
    pairs = [(a, b) for a, b in [("aw03", x) for x in bc_arms] + [(x, "filtered_bc") for x in bc_arms]
             if a in complete and b in complete]
    out["held-out"] = compare(found, complete, pairs)
    for name in ("mixed", "hard"):
        try:
            suite(root, out, name, control=bc_arms[0])
        except AssertionError as missing:
            print(missing)


STITCH = ("door-open", "drawer-open", "plate-slide", "plate-slide-side")
STITCH_ARMS = ("unegs20k", "awbc01s20k", "iqls20k", "bc_s20k", "aw03s20k", "plains20k")


def stitch20k(root, out):
    """PREREG.md, fourteenth amendment: the four stitched datasets x seeds 0-2 at 20k steps, each
    arm's runs (pooled success and normalised return) and, over the arms with all 12 runs, rliable
    IQM with 95% CIs and P(the presets' CVL > each other arm), read at 20k and at 10k. CVL without
    the critic's action term (`plains20k`) is listed run by run and compared in `term20k`."""
    for steps in (20000, 10000):
        part = {"runs": {}}
        found = runs_table(root, part, STITCH_ARMS, STITCH, (0, 1, 2), steps=steps)
        complete = [a for a in STITCH_ARMS
                    if a != "plains20k" and len(found.get(a, {})) == len(STITCH) * 3]
        if "unegs20k" in complete and len(complete) > 1:
            others = [a for a in complete if a != "unegs20k"]
            part["rliable"] = compare(found, complete, [("unegs20k", a) for a in others])
            poi = part["rliable"]["probability_of_improvement"]
            part["reading"] = {a: band(poi[f"unegs20k,{a}"]["point"], "CVL ahead", "other ahead")
                               for a in others}
            print(steps, part["reading"])
        part["mean_success_per_dataset"] = mean_success(found, STITCH_ARMS, STITCH, (0, 1, 2))
        out[f"scored at {steps // 1000}k"] = part


def term20k(root, out):
    """PREREG.md, sixteenth amendment: the presets' CVL with the critic's action term against the
    same CVL without it at 20k steps (and, from the same runs, 10k): the four stitched datasets x
    seeds 0-2 (item 1) and the held-out mixtures x seeds 0 and 1 (item 2). Per part: each run's
    pooled success and normalised return, mean success per dataset, and with every run of both
    arms rliable IQM with 95% CIs, P(term > without) and the amendment's reading."""
    for name, arms, tasks, seeds in (("stitched", ("unegs20k", "plains20k"), STITCH, (0, 1, 2)),
                                     ("held-out", ("uneg20k", "plain20k"), HELD_OUT, SEEDS)):
        for steps in (20000, 10000):
            part = {"runs": {}}
            found = runs_table(root, part, arms, tasks, seeds, steps=steps)
            part["mean_success_per_dataset"] = mean_success(found, arms, tasks, seeds)
            if all(len(found.get(a, {})) == len(tasks) * len(seeds) for a in arms):
                part["rliable"] = compare(found, list(arms), [arms])
                p = part["rliable"]["probability_of_improvement"][",".join(arms)]["point"]
                part["reading"] = band(p, "the term helps", "the term costs")
                print(name, steps, part["reading"])
            out[f"{name}, scored at {steps // 1000}k"] = part
    # the seventeenth amendment: the term's runs on stitched plate-slide to 40k, a stall or a delay
    part = {"runs": {}}
    found = runs_table(root, part, ("unegs40k",), ("plate-slide",), (0, 1), steps=40000)
    runs = found.get("unegs40k", {})
    part["first_success_step"] = {
        f"seed {s}": next((e["step"] for e in run.evals if e["success"] > 0), None)
        for (_, s), run in sorted(runs.items())}
    if len(runs) == 2:
        mean = float(np.mean([run.final["success_rate"] for run in runs.values()]))
        part["reading"] = "a delay" if mean >= 0.5 else "a stall"
        print("plate-slide to 40k:", part["reading"], part["first_success_step"])
    out["stitched plate-slide with the term, scored at 40k"] = part


def held_out_4x2(root, out, labels, ahead, behind):
    """The four held-out mixtures x seeds 0 and 1 at 10k, when every label has all its runs:
    rliable IQM with 95% CIs, P(labels[0] > each other label) read by `band`, mean success."""
    found = runs_by_key(root, labels, HELD_OUT, SEEDS, steps=10000)
    if all(len(found.get(label, {})) == len(HELD_OUT) * len(SEEDS) for label in labels):
        part = compare(found, labels, [(labels[0], other) for other in labels[1:]])
        poi = part["probability_of_improvement"]
        part["reading"] = {other: band(poi[f"{labels[0]},{other}"]["point"], ahead, behind)
                           for other in labels[1:]}
        part["mean_success"] = mean_success(found, labels, HELD_OUT, SEEDS)
        out["held-out mixtures 4 x 2, scored at 10k"] = part


def cap(root, out):
    """PREREG.md, eighteenth and nineteenth amendments: the term with the Q term capped at the
    data action's Q (`bc_q_cap`), on stitched plate-slide at 20k and on held-out handle-pull and
    lever-pull at 10k, beside the sixteenth amendment's runs with and without the term, and
    each screen's reading."""
    stitched = {"runs": {}}
    found = runs_table(root, stitched, ("capus20k", "unegs20k", "plains20k"), ("plate-slide",),
                       (0, 1), steps=20000)
    if len(found.get("capus20k", {})) == 2:
        mean = stitched["means"]["capus20k"]["success"]
        stitched["reading"] = "passes" if mean >= 0.5 else "fails"
    out["stitched plate-slide, scored at 20k"] = stitched
    held_out = {"runs": {}}
    found = runs_table(root, held_out, ("capu", "uneg20k", "plain20k"), ("handle-pull", "lever-pull"),
                       (0, 1), steps=10000)
    if len(found.get("capu", {})) == 4:
        mean = held_out["means"]["capu"]["success"]
        held_out["reading"] = ("keeps the gain" if mean >= 0.29 else "loses it" if mean <= 0.15
                               else "part")
    out["held-out handle-pull and lever-pull, scored at 10k"] = held_out
    # the twentieth amendment: the four held-out mixtures x seeds 0 and 1 at 10k
    held_out_4x2(root, out, ["capu", "uneg20k", "plain20k"], "cap ahead", "cap behind")
    print({k: v.get("reading") for k, v in out.items() if isinstance(v, dict)})


def capn(root, out):
    """PREREG.md, twenty-first and twenty-second amendments: the return weights (`aw03s20k`) on
    stitched plate-slide and plate-slide-side at 20k, and the term with the cap raised to the
    best Q of the data at the 8 nearest states of other episodes (`capnus20k` on stitched
    plate-slide at 20k, `capnu` on held-out hammer and lever-pull at 10k), beside the cap, the
    term and no term on the same seeds, with each reading; the twenty-third amendment's held-out
    4 x 2 and both suites (each half too) against the term, as far as their runs exist."""
    for task in ("plate-slide", "plate-slide-side"):
        part = {"runs": {}}
        labels = ("aw03s20k", "capnus20k", "capus20k", "unegs20k", "plains20k")
        found = runs_table(root, part, labels, (task,), (0, 1), steps=20000)
        means = part["means"]
        if task == "plate-slide" and len(found.get("aw03s20k", {})) == 2:
            m = means["aw03s20k"]["success"]
            part["reading_aw03s20k"] = ("stalls as the term" if m <= 0.2 else "solves it"
                                        if m >= 0.6 else "part")
        if task == "plate-slide" and len(found.get("capnus20k", {})) == 2:
            part["reading_capnus20k"] = "passes" if means["capnus20k"]["success"] >= 0.5 else "fails"
        out[f"stitched {task}, scored at 20k"] = part
    part = {"runs": {}}
    labels = ("capnu", "capu", "uneg20k", "plain20k")
    found = runs_table(root, part, labels, ("hammer", "lever-pull"), (0, 1), steps=10000)
    if len(found.get("capnu", {})) == 4:
        m = part["means"]["capnu"]["success"]
        part["reading"] = "keeps the gain" if m >= 0.43 else "loses it" if m <= 0.32 else "part"
    out["held-out hammer and lever-pull, scored at 10k"] = part
    held_out_4x2(root, out, ["capnu", "uneg20k", "capu"], "ahead", "behind")
    for name in ("stitch-half", "noisy-half", "hard", "mixed"):  # the twenty-third amendment, 2
        try:
            suite(root, out, name, arm="capnu")
        except AssertionError as missing:
            print(missing)
    print({k: {r: v[r] for r in v if r.startswith("reading")} for k, v in out.items()
           if isinstance(v, dict) and k != "runs"})


CURVES = {  # figure panel: (task, labels, steps)
    "drawer-open mixture, 10k": ("drawer-open", ("unegm", "aw03m", "aw05m", "aw03pm", "aw03cm"), 10000),
    "drawer-open mixture, 20k": ("drawer-open", ("unegm20k", "aw03m20k"), 20000),
    **{f"{t} (held-out), 20k": (t, ("aw03_20k", "filtered_bc20k"), 20000) for t in HELD_OUT},
}


def curves(root, out):
    """Success and normalised return at every evaluation of the runs that `curves.py` draws."""
    for panel, (task, labels, steps) in CURVES.items():
        found = runs_by_key(root, labels, [task], (0, 1, 2), steps=steps)
        out["runs"][panel] = {
            label: {str(seed): [{"step": e["step"], "success": e["success"],
                                 "normalized": round(float(normalized_score(run.task, e["return"])), 3)}
                                for e in run.evals]
                    for (_, seed), run in sorted(found.get(label, {}).items())}
            for label in labels}


if __name__ == "__main__":
    root, path, mode = sys.argv[1:4]
    result = {"scored_by": SCORED_BY, "runs": {}}
    if mode == "drawer":
        drawer(root, result)
    elif mode == "seed2":  # the held-out mixtures' seed 2, beside the confirmation
        runs_table(root, result, ("uneg", "aw03"), HELD_OUT, (2,))
    elif mode == "iql":  # IQL with and without aw03's weights (PREREG.md, fourth amendment, 7)
        iql_iqm(root, result, runs_table(root, result, ("iql", "iqlaw"), HELD_OUT, (0, 1)))
    elif mode == "suite":  # names "mixed", "hard" (aw03) or "mixed@ARM"
        for name in sys.argv[4:]:
            suite(root, result, *name.split("@"))
    elif mode == "screen2":
        screen2(root, result)
    elif mode == "screen3":
        screen3(root, result)
    elif mode == "20k":
        steps20k(root, result)
    elif mode == "control":  # PREREG.md, eleventh amendment: BC with the weights (argv: arms)
        control(root, result, sys.argv[4:])
    elif mode == "suite20k":  # PREREG.md, tenth amendment: the 20k runs, read at 20k and 10k
        result["scored_by"] = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
        for name in sys.argv[4:]:
            for steps in (20000, 10000):
                try:
                    suite(root, result, name, budget="20k", steps=steps)
                except AssertionError as missing:
                    print(missing)
        # the thirteenth amendment: BC with and without the weights beside both CVL arms
        door = {"runs": {}}
        runs_table(root, door, ("unegs20k", "aw03s20k", "awbc01s20k", "bc_s20k"), ("door-open",),
                   (0, 1, 2), steps=20000)
        result["stitched door-open at 20k"] = door
    elif mode == "stitch20k":  # PREREG.md, fourteenth amendment
        result["scored_by"] = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
        stitch20k(root, result)
    elif mode == "term20k":  # PREREG.md, sixteenth amendment
        result["scored_by"] = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
        term20k(root, result)
    elif mode == "cap":  # PREREG.md, eighteenth and nineteenth amendments
        result["scored_by"] = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
        cap(root, result)
    elif mode == "capn":  # PREREG.md, twenty-first and twenty-second amendments
        result["scored_by"] = "last 3 evaluations up to the step named in each key, pooled (30 episodes)"
        capn(root, result)
    elif mode == "curves":
        curves(root, result)
    elif mode == "screen":
        screen(root, result)
    elif mode == "confirm3":  # the same over seeds 0-2: reported beside the confirmation
        confirm(root, result, sys.argv[4], seeds=(0, 1, 2))
    else:
        confirm(root, result, sys.argv[4])
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def compared(scores, arm, tasks):
    """rliable IQM with 95% CIs of every arm of ``scores`` and P(``arm`` > each other arm),
    printed and as the JSON files store them."""
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [(arm, other) for other in scores if other != arm])
    print({a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in scores})
    print({k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
    return {
        "tasks": tasks,
        "scores": {a: v.tolist() for a, v in scores.items()},
        "aggregates": agg,
        "probability_of_improvement": poi,
    }


def committed(name):
    """The committed JSON file ``name`` beside this script."""
    with open(Path(__file__).resolve().parent / name) as f:
        return json.load(f)
