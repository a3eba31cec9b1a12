"""lse-kernel's scorer (PREREG.md): arms `lse` (``<ROOT>/cvl_mc``) and `lsex` (``<ROOT>/cvl``)
of one `cvl-sweep` folder, against the presets' default (`polu`, `policy-negatives/screen.json`)
and the presets' random features (`cvl`, `preset-rerun/baselines.json`'s `mixed`).
argv: ROOT out.json, run from this folder. Each run is scored by the expert-normalised return of
its last 3 evaluations pooled (5k-10k; 30 episodes) and its success over the same episodes. Once
both arms have every run of the mixed suite's 4 x 3, the amendment's confirmation: rliable IQMs
with 95% CIs, P(improvement) for its four pairs, its readings and the mean success per task.

``python score.py ROOT final30.json final30 POLU_ROOT``: the second amendment, the same 4 x 3
scored by 30 episodes of each final policy (``cvl-evaluate --episodes 30 --seed 100`` in each
run's ``final/``), the default's runs under ``POLU_ROOT`` (a `cvl-sweep` folder of `cvl_mc`), the
presets' random features from `preset-rerun/rff_final30.json`."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

SCREEN = [("faucet-open-v3", 0), ("faucet-open-v3", 1), ("reach-v3", 0), ("reach-v3", 1)]
ARMS = {"lse": "cvl_mc", "lsex": "cvl"}
LEVEL_A, BELOW_A = 0.93, 0.90  # screen A: `lse` level at or above, below under
MARGIN_B = 0.03  # screen B: `lsex` level with `lse` if within this below it
SEEDS = (0, 1, 2)
PAIRS = [("lsex", "lse"), ("lse", "default"), ("lsex", "default"), ("lsex", "presets' cvl")]


def per_run(root: Path, final_episodes: int | None = None) -> dict[tuple[str, int], dict]:
    """(task, seed) -> normalised score and success of each finished run: its last 3 evaluations
    pooled, or with ``final_episodes`` that many episodes of its final policy."""
    out = {}
    exists = root.exists()
    scoring = {"final_episodes": final_episodes} if final_episodes else {"last_evals": 3}
    runs = load_runs([str(root)], **scoring) if exists else []
    for r in runs:
        scores, _, normalized = score_dict([r], [r.label])
        if not normalized:
            raise SystemExit(f"{r.task}: no expert normaliser")
        out[(r.task, r.seed)] = {
            "normalized": float(scores[r.label][0, 0]),
            "success": float(r.final["success_rate"]),
        }
    return out


def references(here: Path) -> dict[str, dict[tuple[str, int], float]]:
    """The screen's runs of the presets' default and of the presets' random features."""
    polu = json.loads((here.parent / "policy-negatives" / "screen.json").read_text())["polu"]
    mixed = json.loads((here.parent / "preset-rerun" / "baselines.json").read_text())["mixed"]
    return {
        "polu": {(t, s): polu["mixed runs"][f"{t} seed {s}"]["normalized"] for t, s in SCREEN},
        "presets' cvl": {
            (t, s): float(mixed["scores"]["cvl"][s][mixed["tasks"].index(t)]) for t, s in SCREEN
        },
    }


def confirmation(arms: dict[str, dict], here: Path) -> dict:
    """The amendment: both arms, the presets' default (`polu`) and the presets' random features
    over the mixed suite's 4 x 3, and its two readings."""
    polu = json.loads((here.parent / "policy-negatives" / "screen.json").read_text())["polu"]
    mixed = json.loads((here.parent / "preset-rerun" / "baselines.json").read_text())["mixed"]
    tasks = mixed["tasks"]
    scores = {
        arm: np.asarray([[runs[(t, s)]["normalized"] for t in tasks] for s in SEEDS])
        for arm, runs in arms.items()
    }
    scores["default"] = np.asarray(
        [[polu["mixed runs"][f"{t} seed {s}"]["normalized"] for t in tasks] for s in SEEDS]
    )
    scores["presets' cvl"] = np.asarray(mixed["scores"]["cvl"])[list(SEEDS)]
    return {"tasks": tasks, **readings(scores, arms, tasks)}


def readings(scores: dict, arms: dict, tasks: list[str], scored: str = "") -> dict:
    """IQMs with CIs, P for the four pairs, mean success per task and both readings, the
    readings' names ending in ``scored`` (which score they read)."""
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, PAIRS)
    p_b, p_a = poi["lsex,lse"]["point"], poi["lse,default"]["point"]
    return {
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "probability_of_improvement": {f"{a},{b}": poi[f"{a},{b}"] for a, b in PAIRS},
        "mean success": {
            arm: {t: float(np.mean([runs[(t, s)]["success"] for s in SEEDS])) for t in tasks}
            for arm, runs in arms.items()
        },
        f"section 2 target with this kernel{scored}": "met" if p_b >= 0.5 else "unmet",
        f"the lse critic against the default{scored}": "level" if p_a >= 0.4 else "below",
    }


def final_policies(root: Path, polu_root: Path, here: Path) -> dict:
    """The second amendment: the 4 x 3 of both arms and of the default by 30 episodes of each
    final policy, beside the presets' random features by the same score, and its readings."""
    tasks = [f"{t}-v3" for t in ("door-open", "drawer-open", "faucet-open", "reach")]
    arms = {arm: per_run(root / algo, final_episodes=30) for arm, algo in ARMS.items()}
    arms["default"] = per_run(polu_root, final_episodes=30)
    for arm, runs in arms.items():
        missing = [f"{t} seed {s}" for t in tasks for s in SEEDS if (t, s) not in runs]
        if missing:
            raise SystemExit(f"{arm}: no 30-episode final evaluation for {', '.join(missing)}")
    scores = {
        arm: np.asarray([[runs[(t, s)]["normalized"] for t in tasks] for s in SEEDS])
        for arm, runs in arms.items()
    }
    rff = json.loads((here.parent / "preset-rerun" / "rff_final30.json").read_text())["mixed"]
    if rff["tasks"] != tasks:
        raise SystemExit(f"rff_final30.json (field 'mixed.tasks'): expected {tasks}")
    scores["presets' cvl"] = np.asarray(rff["scores"]["cvl"])[list(SEEDS)]
    return {
        "scored_by": "30 episodes of each final policy (seed 100)",
        "runs": {
            arm: {f"{t} seed {s}": runs[(t, s)] for t in tasks for s in SEEDS}
            for arm, runs in arms.items()
        },
        **readings(scores, arms, tasks, ", final policies"),
    }


def write(out_file: Path, result: dict) -> None:
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(json.dumps(result, indent=1))


def main(argv: list[str]) -> None:
    root, out_file, here = Path(argv[0]), Path(argv[1]), Path(__file__).parent
    if argv[2:3] == ["final30"]:
        write(out_file, final_policies(root, Path(argv[3]), here))
        return
    refs = references(here)
    result = {"scored_by": "last 3 evaluations pooled (5k, 7.5k, 10k; 30 episodes)"}
    result["reference"] = {
        name: {
            "runs": {f"{t} seed {s}": v for (t, s), v in runs.items()},
            "mean": float(np.mean(list(runs.values()))),
        }
        for name, runs in refs.items()
    }
    means, arms = {}, {}
    for arm, algo in ARMS.items():
        runs = arms[arm] = per_run(root / algo)
        result[arm] = {"runs": {f"{t} seed {s}": runs[(t, s)] for t, s in SCREEN if (t, s) in runs}}
        if all(k in runs for k in SCREEN):
            means[arm] = float(np.mean([runs[k]["normalized"] for k in SCREEN]))
            result[arm]["mean"] = means[arm]
    if "lse" in means:
        a = means["lse"]
        result["screen A"] = "level" if a >= LEVEL_A else "below" if a < BELOW_A else "part"
    if "lse" in means and "lsex" in means:
        level = means["lsex"] >= means["lse"] - MARGIN_B
        result["screen B"] = "level with lse" if level else "below"
    grid = [
        (f"{t}-v3", s) for t in ("door-open", "drawer-open", "faucet-open", "reach") for s in SEEDS
    ]
    if all(k in runs for runs in arms.values() for k in grid):
        result["runs, mixed suite 4 x 3"] = {
            arm: {f"{t} seed {s}": runs[(t, s)] for t, s in sorted(grid)}
            for arm, runs in arms.items()
        }
        result["confirmation, mixed suite 4 x 3"] = confirmation(arms, here)
    write(out_file, result)


if __name__ == "__main__":
    main(sys.argv[1:])
