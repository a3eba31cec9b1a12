"""The scorer of `lse-latent/` and `q-temperature/` (their PREREG.md): arms against the presets'
default, every run trained on one machine.

``python score.py OUT.json default=DIR ARM=DIR ... [--repro DIR] [--final30]``, each DIR a
`cvl-sweep` folder's algorithm folder (``<root>/cvl_mc`` or ``<root>/cvl``). Each run is scored
by the expert-normalised return of its last 3 evaluations pooled (5k-10k, 30 episodes), its
success over the same episodes and its critic's accuracy (``critic_accuracy``, mean over the
updates after 9000). For each arm: the screen's mean over door-open and drawer-open x seeds 0
and 1 and its reading against the default; once the arm and the default have the mixed suite's
4 x 3, the confirmation (rliable IQMs with 95% CIs, P(arm > default), mean success per task, run
times, the reading). ``--repro DIR``: the default's reach runs compared, evaluation by
evaluation, with those under DIR (another snapshot, the same machine). ``--final30``: every run
by 30 episodes of its final policy (``cvl-evaluate --episodes 30 --seed 100`` in its
``final/``), without the screen. ``--suite stitched``: the hard suite's stitched door-open and
drawer-open x 3 seeds in place of the mixed suite's 4 x 3, without the screen. ``--subset
door-open:0 ...``: each arm's mean over those runs, where it has them all."""

import argparse
import json
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

TASKS = [f"{t}-v3" for t in ("door-open", "drawer-open", "faucet-open", "reach")]
STITCHED = TASKS[:2]  # the hard suite's stitched half (`--suite stitched`)
SEEDS = (0, 1, 2)
SCREEN = [(t, s) for t in TASKS[:2] for s in (0, 1)]
READINGS = {  # --suite: (the grid's name, its reading's name, the reading if met, if not)
    "mixed": ("mixed suite 4 x 3", "section 2 target on the mixed suite", "met", "unmet"),
    "stitched": (
        "hard suite's stitched half 2 x 3",
        "the stitched half",
        "level on the stitched half",
        "behind on the stitched half",
    ),
}
LEVEL, BELOW = 0.03, 0.08  # screen: "level" within LEVEL below the default, "below" past BELOW
ACCURACY_AFTER = 9000  # critic accuracy: mean over the updates after this one


def critic_accuracy(run_dir: Path) -> float:
    """Mean ``critic_accuracy`` of the training rows after `ACCURACY_AFTER` updates."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    late = [
        r["critic_accuracy"]
        for r in rows
        if r.get("phase") == "train" and "critic_accuracy" in r and r["update"] > ACCURACY_AFTER
    ]
    if not late:
        raise SystemExit(f"{run_dir / 'metrics.jsonl'}: no critic_accuracy after {ACCURACY_AFTER}")
    return float(np.mean(late))


def per_run(algo_dir: Path, final_episodes: int | None = None) -> dict[tuple[str, int], dict]:
    """(task, seed) -> score, success, critic accuracy and wall time of each finished run."""
    if not algo_dir.is_dir():
        raise SystemExit(f"{algo_dir}: not a folder (expected <sweep>/<algorithm>)")
    out = {}
    scoring = {"final_episodes": final_episodes} if final_episodes else {"last_evals": 3}
    for r in load_runs([str(algo_dir)], **scoring):
        scores, _, normalized = score_dict([r], [r.label])
        if not normalized:
            raise SystemExit(f"{r.task}: no expert normaliser")
        run_dir = algo_dir / r.task / f"seed_{r.seed}"
        results = json.loads((run_dir / "results.json").read_text())
        out[(r.task, r.seed)] = {
            "normalized": float(scores[r.label][0, 0]),
            "success": float(r.final["success_rate"]),
            "critic_accuracy": critic_accuracy(run_dir),
            "wall_time_s": float(results["wall_time_s"]),
        }
    return out


def screen(runs: dict, default: dict) -> dict:
    """An arm's screen mean, critic accuracy and reading against the default's."""
    if not all(k in runs for k in SCREEN) or not all(k in default for k in SCREEN):
        return {}
    mean = float(np.mean([runs[k]["normalized"] for k in SCREEN]))
    gap = mean - float(np.mean([default[k]["normalized"] for k in SCREEN]))
    return {
        "mean": mean,
        "critic accuracy": float(np.mean([runs[k]["critic_accuracy"] for k in SCREEN])),
        "against the default": gap,
        "reading": "level" if gap >= -LEVEL else "below" if gap < -BELOW else "part",
    }


def confirmation(arm: str, runs: dict, default: dict, scored: str, suite: str) -> dict:
    """rliable IQMs with CIs, P(arm > default), mean success per task and the reading, over
    the ``suite``'s tasks x 3 seeds."""
    tasks = STITCHED if suite == "stitched" else TASKS
    _, name_of_reading, met, unmet = READINGS[suite]
    pair = {arm: runs, "default": default}
    scores = {
        name: np.asarray([[r[(t, s)]["normalized"] for t in tasks] for s in SEEDS])
        for name, r in pair.items()
    }
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [(arm, "default")])[f"{arm},default"]
    return {
        "scored_by": scored,
        "tasks": tasks,
        "iqm": {name: agg[name]["IQM"] for name in scores},
        f"P({arm} > default)": poi,
        "mean success": {
            name: {t: float(np.mean([r[(t, s)]["success"] for s in SEEDS])) for t in tasks}
            for name, r in pair.items()
        },
        "wall time s (min, max)": {
            name: [
                min(v["wall_time_s"] for v in r.values()),
                max(v["wall_time_s"] for v in r.values()),
            ]
            for name, r in pair.items()
        },
        name_of_reading: met if poi["point"] >= 0.5 else unmet,
    }


def reproduction(default_dir: Path, other_dir: Path) -> dict:
    """The default's reach runs against the same runs from another snapshot: equal evaluations?"""
    out = {}
    for s in SEEDS:
        paths = [d / "reach-v3" / f"seed_{s}" / "evals.jsonl" for d in (default_dir, other_dir)]
        if all(p.exists() for p in paths):
            a, b = (
                [json.loads(x)["episode_returns"] for x in p.read_text().splitlines()]
                for p in paths
            )
            out[f"reach seed {s}"] = {"evaluations": len(a), "identical": a == b}
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, metavar="OUT.json")
    parser.add_argument("arms", nargs="+", metavar="LABEL=DIR", help="'default=DIR' among them")
    parser.add_argument("--repro", type=Path, default=None, metavar="DIR")
    parser.add_argument("--final30", action="store_true")
    parser.add_argument("--suite", choices=tuple(READINGS), default="mixed")
    parser.add_argument(
        "--subset", nargs="+", default=None, metavar="TASK:SEED", help="each arm's mean over these"
    )
    args = parser.parse_args(argv)
    pairs = [a.partition("=") for a in args.arms]
    if any(not label or not sep or not path for label, sep, path in pairs):
        parser.error("arms: expected LABEL=DIR")
    args.arms = {label: Path(path) for label, _, path in pairs}
    if "default" not in args.arms:
        parser.error("arms: expected one 'default=DIR'")
    return args


def main() -> None:
    args = parse_args()
    final = 30 if args.final30 else None
    runs = {label: per_run(path, final) for label, path in args.arms.items()}
    default = runs["default"]
    scored = (
        "30 episodes of each final policy (seed 100)"
        if final
        else "last 3 evaluations pooled (5k, 7.5k, 10k; 30 episodes)"
    )
    result: dict = {
        "scored_by": scored,
        "runs": {
            label: {f"{t} seed {s}": v for (t, s), v in sorted(r.items())}
            for label, r in runs.items()
        },
    }
    grid_name = READINGS[args.suite][0]
    tasks = STITCHED if args.suite == "stitched" else TASKS
    grid = [(t, s) for t in tasks for s in SEEDS]
    for label, r in runs.items():
        if label == "default":
            continue
        if not final and args.suite == "mixed":
            result[f"screen: {label}"] = screen(r, default)
        if all(k in r and k in default for k in grid):
            result[f"confirmation, {grid_name}: {label}"] = confirmation(
                label, r, default, scored, args.suite
            )
    if args.subset:
        keys = [(f"{t}-v3", int(seed)) for t, _, seed in (x.partition(":") for x in args.subset)]
        result["subset"] = {
            "runs": [f"{t} seed {s}" for t, s in keys],
            "mean": {
                label: float(np.mean([r[k]["normalized"] for k in keys]))
                for label, r in runs.items()
                if all(k in r for k in keys)
            },
        }
    if args.repro is not None:
        result["reproduction"] = reproduction(args.arms["default"], args.repro)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(args.out)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
