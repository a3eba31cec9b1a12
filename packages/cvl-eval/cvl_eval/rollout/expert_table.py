"""Recomputing the expert-return table (`cvl_eval.envs.expert_scores`) by evaluating the scripted
experts with `evaluate_policy`::

    python -m cvl_eval.rollout.expert_table --episodes 20 --processes 2 \\
        --out cvl_eval/envs/data/expert_returns.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from cvl_data.jsonio import package_versions
from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.envs.make import TASK_NAMES, canonical_name
from cvl_eval.rollout.evaluate import evaluate_policy

__all__ = ["compute_expert_table", "expert_stats"]


def expert_stats(
    task: str, episodes: int, seed: int = 0, max_steps: int | None = None
) -> dict[str, float]:
    """Evaluate the scripted expert on ``task``; the row stored in the expert table."""
    result = evaluate_policy(task, ScriptedExpert(task), episodes, seed=seed, max_steps=max_steps)
    return {
        "mean_return": result.mean_return,
        "std_return": result.std_return,
        "success_rate": result.success_rate,
        "mean_length": result.mean_length,
        "num_episodes": result.num_episodes,
    }


def _stats_job(args: tuple[str, int, int, int | None]) -> tuple[str, dict[str, float]]:
    task, episodes, seed, max_steps = args
    return task, expert_stats(task, episodes, seed=seed, max_steps=max_steps)


def compute_expert_table(
    tasks: tuple[str, ...] = TASK_NAMES,
    episodes: int = 10,
    seed: int = 0,
    processes: int = 2,
    max_steps: int | None = None,
    progress: bool = True,
) -> dict:
    """Expert statistics for ``tasks`` (in parallel over ``processes`` worker processes).

    Returns:
        ``{"meta": {...protocol...}, "tasks": {task: {"mean_return", "std_return",
        "success_rate", "mean_length", "num_episodes"}}}``, tasks in sorted order.
    """
    from tqdm import tqdm

    jobs = [(canonical_name(t), episodes, seed, max_steps) for t in tasks]
    start = time.time()
    rows: dict[str, dict[str, float]] = {}
    bar = tqdm(total=len(jobs), desc="expert table", unit="task", disable=not progress)
    if processes <= 1:
        for job in jobs:
            task, stats = _stats_job(job)
            rows[task] = stats
            bar.update(1)
    else:
        with get_context("spawn").Pool(processes) as pool:
            for task, stats in pool.imap_unordered(_stats_job, jobs):
                rows[task] = stats
                bar.update(1)
    bar.close()
    return {
        "meta": {
            "policy": "metaworld.policies.ENV_POLICY_MAP (deterministic, actions clipped)",
            "episodes_per_task": episodes,
            "evaluation_seed": seed,
            "max_steps": max_steps,
            "metaworld_version": package_versions(("metaworld",))["metaworld"],
            "seconds": round(time.time() - start, 1),
            "command": f"python -m cvl_eval.rollout.expert_table --episodes {episodes} --seed {seed}",
        },
        "tasks": {t: rows[t] for t in sorted(rows)},
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point: recompute the expert table and write it as JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m cvl_eval.rollout.expert_table",
        description="Recompute the expert-return table.",
    )
    parser.add_argument("--episodes", type=int, default=10, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0, help="evaluation seed")
    parser.add_argument("--processes", type=int, default=2, help="worker processes")
    parser.add_argument("--max-steps", type=int, default=None, help="episode step limit")
    parser.add_argument("--tasks", nargs="*", default=None, help="subset of tasks (default all)")
    parser.add_argument("--out", type=Path, required=True, help="output JSON path")
    args = parser.parse_args(argv)
    tasks = tuple(args.tasks) if args.tasks else TASK_NAMES
    table = compute_expert_table(
        tasks,
        args.episodes,
        seed=args.seed,
        processes=args.processes,
        max_steps=args.max_steps,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=2) + "\n")
    rates = [row["success_rate"] for row in table["tasks"].values()]
    print(
        f"wrote {args.out}: {len(rates)} tasks, mean expert success {np.mean(rates):.3f}, "
        f"{table['meta']['seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
