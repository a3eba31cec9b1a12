"""Q between the policy's action and the scripted expert's at the policy's own states: another
basin (a valley on the way, the policy's action a local maximum) or a pull elsewhere (Q rising
towards the expert)? `cvl_eval.analysis.q_landscape`.

Run (run folders or checkpoint folders of CVL, CQL, IQL or SAC):

    ./pants run benchmarks/q_landscape.py -- --run runs/cvl_mc/door-open-v3/seed_1 \\
        --dataset data/door-open-v3 --rollouts 3 --out landscape.json

or ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval
python benchmarks/q_landscape.py ...``. Prints one table per run; ``--out`` gets ``{run:
result}`` as JSON, written atomically. Episodes are the evaluations' (`evaluation_seeds`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.critic_diagnostics import q_function, resolve_checkpoint
from cvl_eval.analysis.on_policy_critic import PHASES, rollout_states
from cvl_eval.analysis.q_landscape import format_landscape, q_landscape
from cvl_eval.envs.experts import ScriptedExpert


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, nargs="+", required=True, metavar="DIR")
    parser.add_argument("--dataset", type=Path, required=True, metavar="DIR")
    parser.add_argument("--rollouts", type=int, default=3, help="episodes of the policy")
    parser.add_argument("--seed", type=int, default=100, help="evaluation seed of the episodes")
    parser.add_argument("--points", type=int, default=21, help="Q evaluations along a segment")
    parser.add_argument("--h", type=float, default=0.05, help="coordinate probe step")
    parser.add_argument("--num-futures", type=int, default=4096, help="CVL's data futures")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.json")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    if args.rollouts < 1:
        parser.error(f"--rollouts must be at least 1, got {args.rollouts}")
    return args


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    dataset = open_dataset(args.dataset)
    task = dataset.spec.task
    expert = ScriptedExpert(task)
    results = {}
    for run in args.run:
        learner = load_learner(resolve_checkpoint(run), device="cpu", restore_global_rng=False)
        q = q_function(learner, dataset, args.num_futures, seed=0)
        visited = rollout_states(learner, task, args.rollouts, args.seed)
        expert_action = np.clip(expert(visited["obs"]), -1.0, 1.0).astype(np.float32)
        result = q_landscape(q, visited, expert_action, PHASES, args.points, args.h)
        result["success"] = [bool(s) for s in visited["success"]]
        print(f"{run} ({sum(result['success'])} of {args.rollouts} rollouts successful)")
        print(format_landscape(result) + "\n")
        results[str(run)] = result
    if args.out is not None:
        print(f"wrote {write_json_atomic(args.out, results, durable=False)}")


if __name__ == "__main__":
    main()
