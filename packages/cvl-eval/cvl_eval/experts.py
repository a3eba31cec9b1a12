"""Scripted Meta-World experts and the expert-return table used to normalise scores.

``normalized_score(task, raw) = raw / expert_mean_return(task)``: 1.0 is the scripted expert
(``metaworld.policies.ENV_POLICY_MAP``) on the same evaluation protocol, 0.0 is zero return.
The table ships in the package (``cvl_eval/data/expert_returns.json``) and is recomputed by::

    python -m cvl_eval.experts --episodes 10 --processes 2 --out expert_returns.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from functools import cache
from importlib import resources
from importlib.metadata import version as package_version
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from cvl_eval.envs import TASK_NAMES, canonical_name
from cvl_eval.rollout import evaluate_policy

EXPERT_TABLE_RESOURCE = "data/expert_returns.json"
"""The packaged table, relative to this module's package (a literal path next to the module:
Pants' asset inference finds the ``resources`` target from it)."""


class ScriptedExpert:
    """Batched wrapper of Meta-World's scripted policy for one task.

    ``expert(obs)`` maps state observations (N, 39) to actions (N, 4) in [-1, 1] (float32). The
    scripted policies are stateless, so rows from different episodes can share one call.
    """

    def __init__(self, task: str):
        from metaworld.policies import ENV_POLICY_MAP

        self.task = canonical_name(task)
        if self.task not in ENV_POLICY_MAP:
            raise ValueError(f"no scripted expert for {self.task!r}")
        self._policy = ENV_POLICY_MAP[self.task]()

    def act_one(self, obs: np.ndarray) -> np.ndarray:
        """Action (4,) for one observation (39,)."""
        with warnings.catch_warnings():
            # "Constant(s) may be too high": the env clips actions to [-1, 1]; so do we.
            warnings.simplefilter("ignore", UserWarning)
            action = self._policy.get_action(np.asarray(obs, dtype=np.float64))
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs)
        if obs.ndim != 2 or obs.shape[1] != 39:
            raise ValueError(f"expected state observations (N, 39), got {obs.shape}")
        return np.stack([self.act_one(o) for o in obs])


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
            "metaworld_version": package_version("metaworld"),
            "seconds": round(time.time() - start, 1),
            "command": f"python -m cvl_eval.experts --episodes {episodes} --seed {seed}",
        },
        "tasks": {t: rows[t] for t in sorted(rows)},
    }


@cache
def load_expert_table() -> dict:
    """The packaged expert table (see module docstring), read with importlib.resources."""
    text = resources.files("cvl_eval").joinpath(EXPERT_TABLE_RESOURCE).read_text()
    return json.loads(text)


def expert_return(task: str) -> float:
    """Mean return of the scripted expert on ``task`` (from the packaged table)."""
    name = canonical_name(task)
    tasks = load_expert_table()["tasks"]
    if name not in tasks:
        raise KeyError(f"{name!r} is not in the expert table (Meta-World tasks only)")
    return float(tasks[name]["mean_return"])


def normalized_score(task: str, raw_return: float | np.ndarray) -> float | np.ndarray:
    """``raw_return / expert_return(task)``; keeps the shape of ``raw_return``.

    Raw returns are the primary record everywhere; this is for cross-task aggregation.
    """
    reference = expert_return(task)
    if isinstance(raw_return, np.ndarray):
        return raw_return / reference
    return float(raw_return) / reference


def main(argv: list[str] | None = None) -> int:
    """Entry point: recompute the expert table and write it as JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m cvl_eval.experts",
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
