"""The presets' runs scored by 30 episodes of their final policies instead of their last three
evaluations pooled. argv: PRESET_ROOT out.json SUITE=ALGO,ALGO,... [SUITE=...] (cvl_mc first: it
is the learner compared with the others).

PRESET_ROOT holds the `cvl-paper` experiment folders (``mixed/``, ``hard/``). Every run of the
named learners has been evaluated by ``cvl-evaluate --checkpoint <run> --episodes 30 --seed 100``
(the training's evaluation seed), which writes ``<run>/final/eval_30ep_seed100.json``. A run's
score is the expert-normalised mean return of those 30 episodes. Their first 10 have the episode
seeds of the training's last evaluation (10 episodes at 10k, seed 100); how far they are from it
is recorded (the policy's batched pass over 30 environments rounds differently than over 10).
Per suite: rliable IQM with 95% CIs, P(cvl_mc > each) and the success per task over the 30
episodes; the pooled scores stand in `baselines.json`."""

import json
import sys
from pathlib import Path

import numpy as np
from baselines import fmt, iqm_and_p

from cvl_eval.envs.expert_scores import normalized_score

ALGOS = ("cvl_mc", "iql", "filtered_bc", "bc", "weighted_bc", "fql", "cvl", "cql")
EVAL_FILE = "final/eval_30ep_seed100.json"


def run_score(run: Path) -> tuple[float, float, float, int]:
    """(normalised mean return, success rate) of a run's 30 final episodes, and how far their
    first 10 are from the training's last evaluation (the same checkpoint and episode seeds; the
    batched policy pass differs by float rounding between 10 and 30 environments): the largest
    return difference and the number of episodes whose success differs."""
    final = json.loads((run / EVAL_FILE).read_text())
    last = json.loads((run / "evals.jsonl").read_text().splitlines()[-1])
    if len(final["returns"]) != 30 or final["seed"] != 100:
        raise SystemExit(f"{run / EVAL_FILE}: expected 30 episodes at seed 100")
    if final["learner_step"] != last["update"]:
        raise SystemExit(
            f"{run}: final policy at {final['learner_step']}, last evaluation at "
            f"{last['update']}"
        )
    first = len(last["episode_returns"])
    gap = np.abs(np.asarray(final["returns"][:first]) - last["episode_returns"]).max()
    flips = sum(a != b for a, b in zip(final["successes"][:first], last["episode_successes"]))
    score = normalized_score(final["env_name"], float(np.mean(final["returns"])))
    return score, float(np.mean(final["successes"])), float(gap), int(flips)


def suite_numbers(folder: Path, algos: list[str]) -> dict:
    """Scores, IQM and P(cvl_mc > each), and success per task, over one suite's runs."""
    runs_root = folder / "runs"
    if algos[0] != "cvl_mc" or any(a not in ALGOS for a in algos):
        raise SystemExit(f"learners: expected cvl_mc first, then some of {ALGOS}, got {algos}")
    tasks = sorted(p.name for p in (runs_root / algos[0]).iterdir() if p.is_dir())
    scores, success, gaps, flips = {}, {}, {}, {}
    for a in algos:
        cells = [[run_score(runs_root / a / t / f"seed_{s}") for t in tasks] for s in range(3)]
        scores[a] = np.asarray([[c[0] for c in row] for row in cells])
        success[a] = {t: float(np.mean([row[i][1] for row in cells])) for i, t in enumerate(tasks)}
        gaps[a] = max(c[2] for row in cells for c in row)
        flips[a] = sum(c[3] for row in cells for c in row)
    return {
        "tasks": tasks,
        "scored_by": "30 episodes of the final policy (seed 100)",
        "scores": {a: s.tolist() for a, s in scores.items()},
        "success": success,
        "first_10_against_last_evaluation": {
            "max_abs_return_difference": gaps,
            "episodes_whose_success_differs": flips,
        },
        **iqm_and_p(scores),
    }


def main(argv: list[str]) -> None:
    root, out_file = Path(argv[0]), Path(argv[1])
    chosen = dict(arg.split("=", 1) for arg in argv[2:])
    result = {s: suite_numbers(root / s, algos.split(",")) for s, algos in chosen.items()}
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)
    for suite, r in result.items():
        print(f"{suite} (30 final episodes):")
        for a, iqm in r["iqm"].items():
            p = r["p_cvl_mc_over"].get(a)
            cells = ", ".join(f"{t[:-3]} {v:.2f}" for t, v in r["success"][a].items())
            line = f"  {a:12s} IQM {fmt(iqm)}" + (f"  P(cvl_mc > it) {fmt(p)}" if p else "")
            print(f"{line}  success {cells}")


if __name__ == "__main__":
    main(sys.argv[1:])
