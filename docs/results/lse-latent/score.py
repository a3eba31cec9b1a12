"""lse-latent's scorer (PREREG.md): arms `lsex256`, `lsex64` and the presets' default, each a
`cvl-sweep` folder, all trained on one machine.

``python score.py LSEX256 LSEX64 DEFAULT out.json [REPRO]``, run from this folder: each run scored
by the expert-normalised return of its last 3 evaluations pooled (5k-10k, 30 episodes), its success
over the same episodes and its critic's accuracy (``critic_accuracy``, mean over the updates after
9000); the screen's readings; once `lsex256` and the default have the mixed suite's 4 x 3, the
confirmation (rliable IQMs with 95% CIs, P(`lsex256` > default), mean success per task, run
times); with ``REPRO`` (a `cvl-sweep` folder of the default's reach runs from another snapshot on
this machine), the reproduction check of the default's reach runs, evaluation by evaluation.

``python score.py LSEX256 LSEX64 DEFAULT final30.json final30``: the same 4 x 3 by 30 episodes of
each final policy (``cvl-evaluate --episodes 30 --seed 100`` in each run's ``final/``)."""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.run_scores import load_runs, score_dict

TASKS = [f"{t}-v3" for t in ("door-open", "drawer-open", "faucet-open", "reach")]
SEEDS = (0, 1, 2)
SCREEN = [(t, s) for t in TASKS[:2] for s in (0, 1)]
LEVEL, BELOW = 0.03, 0.08  # screen: "level" within LEVEL below the default, "below" past BELOW
ACCURACY_AFTER = 9000  # critic accuracy: mean over the updates after this one
ALGO = {"lsex256": "cvl", "lsex64": "cvl", "default": "cvl_mc"}


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


def per_run(root: Path, final_episodes: int | None = None) -> dict[tuple[str, int], dict]:
    """(task, seed) -> score, success, critic accuracy and wall time of each finished run."""
    out = {}
    scoring = {"final_episodes": final_episodes} if final_episodes else {"last_evals": 3}
    for r in load_runs([str(root)], **scoring) if root.exists() else []:
        scores, _, normalized = score_dict([r], [r.label])
        if not normalized:
            raise SystemExit(f"{r.task}: no expert normaliser")
        run_dir = root / r.label / r.task / f"seed_{r.seed}"
        results = json.loads((run_dir / "results.json").read_text())
        out[(r.task, r.seed)] = {
            "normalized": float(scores[r.label][0, 0]),
            "success": float(r.final["success_rate"]),
            "critic_accuracy": critic_accuracy(run_dir),
            "wall_time_s": float(results["wall_time_s"]),
        }
    return out


def screen(arms: dict[str, dict]) -> dict:
    """The screen's means over its four runs, its reading and the latent's effect."""
    out = {}
    means = {
        arm: float(np.mean([runs[k]["normalized"] for k in SCREEN]))
        for arm, runs in arms.items()
        if all(k in runs for k in SCREEN)
    }
    for arm in means:
        out[f"{arm} mean"] = means[arm]
        out[f"{arm} critic accuracy"] = float(
            np.mean([arms[arm][k]["critic_accuracy"] for k in SCREEN])
        )
    if "lsex256" in means and "default" in means:
        gap = means["lsex256"] - means["default"]
        out["reading"] = "level" if gap >= -LEVEL else "below" if gap < -BELOW else "part"
    if "lsex256" in means and "lsex64" in means:
        out["lsex256 - lsex64"] = means["lsex256"] - means["lsex64"]
    return out


def confirmation(arms: dict[str, dict], scored: str) -> dict:
    """rliable IQMs with CIs, P(`lsex256` > default), mean success per task and the reading."""
    pair = {a: arms[a] for a in ("lsex256", "default")}
    scores = {
        arm: np.asarray([[runs[(t, s)]["normalized"] for t in TASKS] for s in SEEDS])
        for arm, runs in pair.items()
    }
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("lsex256", "default")])["lsex256,default"]
    return {
        "scored_by": scored,
        "tasks": TASKS,
        "iqm": {a: agg[a]["IQM"] for a in scores},
        "P(lsex256 > default)": poi,
        "mean success": {
            arm: {t: float(np.mean([runs[(t, s)]["success"] for s in SEEDS])) for t in TASKS}
            for arm, runs in pair.items()
        },
        "wall time s (min, max)": {
            arm: [
                min(r["wall_time_s"] for r in runs.values()),
                max(r["wall_time_s"] for r in runs.values()),
            ]
            for arm, runs in pair.items()
        },
        "section 2 target on the mixed suite": "met" if poi["point"] >= 0.5 else "unmet",
    }


def reproduction(default_root: Path, other_root: Path) -> dict:
    """The default's reach runs against the same runs from another snapshot: equal evaluations?"""
    out = {}
    for s in SEEDS:
        paths = [
            r / "cvl_mc" / "reach-v3" / f"seed_{s}" / "evals.jsonl"
            for r in (default_root, other_root)
        ]
        if not all(p.exists() for p in paths):
            continue
        a, b = (
            [json.loads(x)["episode_returns"] for x in p.read_text().splitlines()] for p in paths
        )
        out[f"reach seed {s}"] = {"evaluations": len(a), "identical": a == b}
    return out


def main(argv: list[str]) -> None:
    roots = dict(zip(ALGO, (Path(a) for a in argv[:3])))
    out_file = Path(argv[3])
    final = argv[4:5] == ["final30"]
    arms = {arm: per_run(root, 30 if final else None) for arm, root in roots.items()}
    result = {
        "scored_by": (
            "30 episodes of each final policy (seed 100)"
            if final
            else "last 3 evaluations pooled (5k, 7.5k, 10k; 30 episodes)"
        ),
        "runs": {
            arm: {f"{t} seed {s}": v for (t, s), v in sorted(runs.items())}
            for arm, runs in arms.items()
        },
    }
    if not final:
        result["screen"] = screen(arms)
    grid = [(t, s) for t in TASKS for s in SEEDS]
    if all(k in arms[a] for a in ("lsex256", "default") for k in grid):
        result["confirmation, mixed suite 4 x 3"] = confirmation(arms, result["scored_by"])
    if argv[4:5] and not final:
        result["reproduction"] = reproduction(roots["default"], Path(argv[4]))
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
