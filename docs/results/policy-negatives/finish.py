"""Where the default's failing episodes end (PREREG.md, after the fifth amendment; a diagnosis,
no plan's reading): for each checkpoint, 30 episodes of its acting policy (seed 100, the
training's evaluation seeds, the mean action, one environment so the states come in order) and
per episode the distance of the task's moved point to its goal, at the end and at its closest:
plate-slide's puck (state [4:7]); reach's gripper centre, which the state does not hold: the hand
([0:3]) less 0.045 in z (measured on reach-v3 over 200 random steps: the offset is (0.000, -0.001,
0.045) with deviations up to 0.005 in y, a tenth of reach's threshold); the goal at [36:39]. Meta-World counts a
success at a step where that distance is within the task's threshold (plate-slide 0.07, reach
0.05); an episode succeeds if some step does. Per checkpoint: the success rate, the median end
and closest distances, and the failing episodes' closest distances in threshold multiples.

The rollouts are `return-weighting/rollout.py`'s `episode_states`.

argv: TASK OUT.json CHECKPOINT... (a run's final/ or checkpoints/step_* folder); prints one line
per checkpoint and writes OUT.json atomically."""

import json
import os
import sys
from pathlib import Path

import numpy as np

from cvl_algos import load_learner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "return-weighting"))
from rollout import episode_states  # noqa: E402  (the same rollouts as return-weighting's)

EPISODES = 30
POINT = {"plate-slide-v3": slice(4, 7), "reach-v3": slice(0, 3)}
THRESHOLD = {"plate-slide-v3": 0.07, "reach-v3": 0.05}
OFFSET = {"plate-slide-v3": np.zeros(3), "reach-v3": np.array([0.0, 0.0, 0.045])}


def checkpoint_row(task: str, path: str) -> dict:
    learner = load_learner(path, device="cpu", restore_global_rng=False)
    result, episodes = episode_states(learner, task, EPISODES)
    distance = [
        np.linalg.norm(states[:, POINT[task]] - OFFSET[task] - states[:, 36:39], axis=-1)
        for states in episodes
    ]
    ends = np.array([d[-1] for d in distance])
    closest = np.array([d.min() for d in distance])
    failed = ~np.asarray(result.successes, dtype=bool)
    ratio = closest[failed] / THRESHOLD[task]
    return {
        "step": learner.step,
        "success": float(np.mean(result.successes)),
        "median_end_distance": round(float(np.median(ends)), 3),
        "median_closest_distance": round(float(np.median(closest)), 3),
        "failed_episodes": int(failed.sum()),
        "failed_closest_in_thresholds": [round(float(r), 2) for r in np.sort(ratio)],
        "failed_within_2_thresholds": int(np.sum(ratio <= 2.0)),
    }


if __name__ == "__main__":
    task, out, *checkpoints = sys.argv[1:]
    if task not in POINT:
        raise SystemExit(f"TASK: expected one of {sorted(POINT)}, got {task!r}")
    rows = {}
    for path in checkpoints:
        rows[path] = row = checkpoint_row(task, path)
        print(path, row, flush=True)
    document = {"task": task, "episodes": EPISODES, "threshold": THRESHOLD[task], "rows": rows}
    if os.path.exists(out):
        with open(out) as f:
            stored = json.load(f)
        stored[task] = document
        document = stored
    else:
        document = {task: document}
    with open(out + ".tmp", "w") as f:
        json.dump(document, f, indent=1)
    os.replace(out + ".tmp", out)
