"""policy-negatives' scorer (PREREG.md): arms `k16` and `polu` against the presets' `cvl_mc`.
argv: ROOT out.json, run from this folder; ROOT holds ``<arm>/heldout`` (the held-out sweep's
``--out-dir``) and ``<arm>/hard`` (the `cvl-paper hard` folder) per arm.

Each run is scored by the expert-normalised return of its last 3 evaluations pooled (5k-10k) and
its success over the same episodes. References: the presets' `cvl_mc` of
`preset-rerun/heldout_baselines.json` (held-out, with filtered BC) and `preset-rerun/baselines.json`
(`hard`). Screen H: held-out hammer and lever-pull x seeds 0 and 1; screen D: the hard suite's
stitched door-open x seeds 0 and 1; the held-out 4 x 2 and 4 x 3 (rliable IQM, P(improvement))
and the second amendment's mixed and hard suites at 4 x 3 (``<arm>/mixed``, a `cvl-paper mixed`
folder, and ``<arm>/hard``; references `preset-rerun/baselines.json`'s `mixed` and `hard`) once an
arm's runs for them exist; the fourth amendment's held-out stitched tasks (``stho/runs``, a
`cvl-sweep` folder) against `awcapn_t02` at 10k of `return-weighting/held_out.json`; the fifth
amendment's stitched plate-slide at 20k (``stho/runs20k``, scored 15k-20k) against `awcapn_t02` at
20k of the same file, each run's first 10k checked to repeat its 10k run's evaluations."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.runs.folder import RunFolder

ARMS = ("k16", "polu")
HELD_OUT = ["hammer-v3", "handle-pull-v3", "lever-pull-v3", "plate-slide-v3"]
SCREEN_H = [("hammer-v3", 0), ("hammer-v3", 1), ("lever-pull-v3", 0), ("lever-pull-v3", 1)]
SCREEN_D = [("door-open-v3", 0), ("door-open-v3", 1)]
BANDS_H = (0.46, 0.50)  # "no gain" at or below, "gain" at or above, "part" between
# the third amendment: screen H of `polu` at K = 16 against `polu`'s own screen H
SCREEN_AGAINST = {"polu16": ("polu", (0.56, 0.59))}
KEEPS_D = 0.5  # mean success of the last 3 evaluations over both runs
SEEDS = (0, 1, 2)
STITCHED = ["door-open-v3", "drawer-open-v3"]  # the hard suite's stitch datasets
HELD_OUT_STITCHED = "held-out stitched tasks 2 x 3, 20k (thirty-fourth amendment)"
SOLVES = 0.8  # the fourth amendment: mean success over the three seeds on each task
RECOVERS = 0.8  # the fifth amendment: mean success over the three seeds at 15k-20k


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


def band(mean: float, bands: tuple[float, float] = BANDS_H) -> str:
    low, high = bands
    return "gain" if mean >= high else "no gain" if mean <= low else "part"


def versus(arm: str, runs: dict, table: dict, seeds: tuple[int, ...]) -> dict:
    """rliable IQM with 95% CIs of ``arm``, the presets' `cvl_mc` and filtered BC over
    ``table``'s tasks x ``seeds`` (``table``: a reference of `preset-rerun`, per-run scores by seed
    and task), P(arm > each), and the arm's mean success per task."""
    rows, tasks = list(seeds), table["tasks"]
    ref = score_table(arm, runs, table, tasks, seeds)
    scores = {arm: ref[arm], "awcapn_t02": ref["cvl_mc"], "filtered_bc": ref["filtered_bc"]}
    agg = aggregate_scores(scores)
    pairs = [(arm, "awcapn_t02"), (arm, "filtered_bc")]
    poi = probability_of_improvement(scores, pairs)
    return {
        "tasks": tasks,
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "probability_of_improvement": {f"{a},{b}": poi[f"{a},{b}"] for a, b in pairs},
        "mean success": {t: float(np.mean([runs[(t, s)]["success"] for s in rows])) for t in tasks},
    }


def score_table(arm: str, runs: dict, table: dict, tasks: list, seeds: tuple[int, ...]) -> dict:
    """{learner: seeds x tasks normalised scores} of every learner of ``table`` and ``arm``."""
    rows, cols = list(seeds), [table["tasks"].index(t) for t in tasks]
    scores = {a: np.asarray(v)[rows][:, cols] for a, v in table["scores"].items()}
    scores[arm] = np.asarray([[runs[(t, s)]["normalized"] for t in tasks] for s in rows])
    return scores


def labelled(runs: dict) -> dict:
    """``runs`` keyed by "task seed s", sorted."""
    return {f"{t} seed {s}": v for (t, s), v in sorted(runs.items())}


def complete(runs: dict, table: dict, seeds: tuple[int, ...]) -> bool:
    return all((t, s) in runs for t in table["tasks"] for s in seeds)


def suites(arm: str, runs_m: dict, runs_d: dict, mixed: dict, hard: dict) -> dict:
    """The second amendment: the mixed and hard suites at 4 x 3, and its rule (the presets take
    ``arm`` if P(arm > cvl_mc) >= 0.5 on both)."""
    out = {
        "mixed 4 x 3": versus(arm, runs_m, mixed, SEEDS),
        "hard 4 x 3": versus(arm, runs_d, hard, SEEDS),
    }
    p = [out[k]["probability_of_improvement"][f"{arm},awcapn_t02"]["point"] for k in out]
    out["reading"] = "the presets take it" if min(p) >= 0.5 else "the default stays"
    for name, runs, table in (("mixed", runs_m, mixed), ("hard", runs_d, hard)):
        out[f"{name}: P({arm} > each learner of the preset's command)"] = against_all(
            arm, runs, table, table["tasks"]
        )
    out["hard, stitched half (door-open, drawer-open)"] = against_all(
        arm, runs_d, hard, STITCHED, with_iqm=True
    )
    return out


def against_all(arm: str, runs: dict, table: dict, tasks: list, with_iqm: bool = False) -> dict:
    """P(arm > each learner of ``table``) over ``tasks`` x 3 seeds (and every IQM)."""
    scores = score_table(arm, runs, table, tasks, SEEDS)
    pairs = [(arm, a) for a in table["scores"]]
    poi = probability_of_improvement(scores, pairs)
    out = {b: poi[f"{a},{b}"] for a, b in pairs}
    if with_iqm:
        agg = aggregate_scores(scores)
        out = {"iqm": {a: agg[a]["IQM"] for a in scores}, "probability_of_improvement": out}
    return out


def held_out_stitched(runs: dict, here: Path) -> dict:
    """The fourth amendment: the default (`polu`) on stitched plate-slide and plate-slide-side x
    seeds 0-2 at 10k against `awcapn_t02`'s 10k scores, and its reading."""
    stored = json.loads((here.parent / "return-weighting" / "held_out.json").read_text())
    ref = stored[HELD_OUT_STITCHED]["at 10k"]
    tasks = [f"{t}-v3" for t in ref["tasks"]]
    scores = {
        "polu": np.asarray([[runs[(t, s)]["normalized"] for t in tasks] for s in SEEDS]),
        "awcapn_t02": np.asarray(ref["scores"]["awcapn_t02"]),
    }
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("polu", "awcapn_t02")])
    success = {t: float(np.mean([runs[(t, s)]["success"] for s in SEEDS])) for t in tasks}
    lost = [t for t in tasks if success[t] < SOLVES]
    return {
        "runs": labelled(runs),
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "probability_of_improvement": poi["polu,awcapn_t02"],
        "mean success": success,
        "reading": "keeps the held-out stitched tasks" if not lost else f"loses {', '.join(lost)}",
    }


def repeats_10k(run_10k: Path, run_20k: Path) -> bool:
    """Whether a 20k run's evaluations up to 10k repeat its 10k run's, episode for episode."""
    first, second = (
        [e["episode_returns"] for e in RunFolder(run).read_evals()] for run in (run_10k, run_20k)
    )
    return len(first) > 0 and first == second[: len(first)]


def stitched_20k(root: Path, here: Path) -> dict | None:
    """The fifth amendment: the default (`polu`) on stitched plate-slide x seeds 0-2 at 20k,
    scored 15k-20k, beside `awcapn_t02`'s 20k scores run by run, and its reading."""
    runs = per_run(root / "stho" / "runs20k" / "cvl_mc")
    task = "plate-slide-v3"
    if not all((task, s) in runs for s in SEEDS):
        return None
    stored = json.loads((here.parent / "return-weighting" / "held_out.json").read_text())
    ref = stored[HELD_OUT_STITCHED]["at 20k"]
    column = ref["tasks"].index("plate-slide")
    folder = Path("cvl_mc") / task
    success = float(np.mean([runs[(task, s)]["success"] for s in SEEDS]))
    return {
        "scored_by": "last 3 evaluations pooled (15k, 17.5k, 20k; 30 episodes)",
        "runs": {f"{task} seed {s}": runs[(task, s)] for s in SEEDS},
        "awcapn_t02 at 20k (normalised)": {
            f"{task} seed {s}": ref["scores"]["awcapn_t02"][s][column] for s in SEEDS
        },
        "first 10k repeat the 10k runs": {
            f"seed {s}": repeats_10k(
                root / "stho" / "runs" / folder / f"seed_{s}",
                root / "stho" / "runs20k" / folder / f"seed_{s}",
            )
            for s in SEEDS
        },
        "mean success": success,
        "reading": "recovers given the steps" if success >= RECOVERS else "stalls",
    }


def pooled(polu: dict, held: dict, here: Path) -> dict:
    """Not a plan's reading: `polu` against the default before it (`awcapn_t02`, uniform
    negatives) over every dataset both ran on at 10k, seeds 0-2 (the held-out mixtures, both
    suites, the held-out stitched tasks): 14 tasks x 3 seeds, IQM and P(polu > awcapn_t02)."""
    suite_refs = json.loads((here.parent / "preset-rerun" / "baselines.json").read_text())
    stitched = json.loads((here.parent / "return-weighting" / "held_out.json").read_text())
    stitched = stitched[HELD_OUT_STITCHED]["at 10k"]
    groups = [
        (polu["held-out runs"], held["tasks"], np.asarray(held["scores"]["cvl_mc"])),
        (polu["mixed runs"], suite_refs["mixed"]["tasks"], suite_refs["mixed"]["scores"]["cvl_mc"]),
        (polu["hard runs"], suite_refs["hard"]["tasks"], suite_refs["hard"]["scores"]["cvl_mc"]),
        (
            polu["held-out stitched 2 x 3 (fourth amendment)"]["runs"],
            [f"{t}-v3" for t in stitched["tasks"]],
            stitched["scores"]["awcapn_t02"],
        ),
    ]
    new, old = [], []
    for runs, tasks, reference in groups:
        new.append([[runs[f"{t} seed {s}"]["normalized"] for t in tasks] for s in SEEDS])
        old.append(np.asarray(reference)[list(SEEDS)])
    scores = {"polu": np.concatenate(new, axis=1), "awcapn_t02": np.concatenate(old, axis=1)}
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("polu", "awcapn_t02")])
    return {
        "tasks": scores["polu"].shape[1],
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "probability_of_improvement": poi["polu,awcapn_t02"],
    }


def main(argv: list[str]) -> None:
    root, out_file, here = Path(argv[0]), Path(argv[1]), Path(__file__).parent
    stored = here.parent / "preset-rerun"
    held = json.loads((stored / "heldout_baselines.json").read_text())
    suite_refs = json.loads((stored / "baselines.json").read_text())
    mixed, hard = suite_refs["mixed"], suite_refs["hard"]
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
            "held-out runs": labelled(runs_h),
            "hard runs": labelled(runs_d),
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
        for seeds, name in (((0, 1), "held-out 4 x 2"), (SEEDS, "held-out 4 x 3")):
            if complete(runs_h, held, seeds):
                entry[name] = versus(arm, runs_h, held, seeds)
        if "held-out 4 x 3" in entry:
            three = entry["held-out 4 x 3"]
            confirmed = three["probability_of_improvement"][f"{arm},awcapn_t02"]["point"]
            three["reading"] = (
                "confirmed on the held-out mixtures" if confirmed >= 0.6 else "not confirmed"
            )
        runs_m = per_run(root / arm / "mixed" / "runs" / "cvl_mc")
        if runs_m:
            entry["mixed runs"] = labelled(runs_m)
        if complete(runs_m, mixed, SEEDS) and complete(runs_d, hard, SEEDS):
            entry["suites"] = suites(arm, runs_m, runs_d, mixed, hard)
        result[arm] = entry
    for arm, (base, bands) in SCREEN_AGAINST.items():
        runs_h = per_run(root / arm / "heldout" / "cvl_mc")
        entry = {"held-out runs": labelled(runs_h)}
        if all(k in runs_h for k in SCREEN_H):
            mean = float(np.mean([runs_h[k]["normalized"] for k in SCREEN_H]))
            against = result[base]["screen H"]["mean"]
            entry["screen H"] = {"mean": mean, base: against, "reading": band(mean, bands)}
        result[arm] = entry
    runs_s = per_run(root / "stho" / "runs" / "cvl_mc")
    if all((f"{t}-v3", s) in runs_s for t in ("plate-slide", "plate-slide-side") for s in SEEDS):
        polu = result["polu"]
        polu["held-out stitched 2 x 3 (fourth amendment)"] = held_out_stitched(runs_s, here)
        polu["post hoc: every dataset of both defaults, 14 x 3"] = pooled(polu, held, here)
    twenty = stitched_20k(root, here)
    if twenty is not None:
        result["polu"]["stitched plate-slide at 20k (fifth amendment)"] = twenty
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(json.dumps(result, indent=1)[:6000])


if __name__ == "__main__":
    main(sys.argv[1:])
