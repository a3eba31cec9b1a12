"""The cost of DDPG+BC's neighbourhood cap (`bc_q_cap_neighbours`): learner updates with it
against the plain cap (`bc_q_cap`), and its one-time nearest-neighbour search.

Both learners are the presets' CVL with the critic's uniform action term (their settings read
from `cvl_eval.pipelines.quickstart`'s override lists; 128 x 128, batch 256, Meta-World sizes: 39-dimensional states, 4-dimensional actions); the neighbour batches carry
``k`` neighbour states and actions per anchor, as `cvl_data.ContrastiveSampler` draws them.
Updates are timed in interleaved rounds, so both see the same machine load; prints both rates,
the ratio ``neighbours / plain`` and the seconds `cvl_data.neighbours` takes for ``--steps-data``
steps of 500-step episodes.

Usage::

    python benchmarks/bench_neighbourhood_cap.py              # k = 8, 50k steps, 1 thread
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import time

import numpy as np
import torch

from cvl_algos import CVLConfig, make_learner
from cvl_data import ContrastiveBatch
from cvl_data.neighbours import nearest_other_episode_steps
from cvl_eval.pipelines.quickstart import QUICKSTART_CVL_OVERRIDES, QUICKSTART_MIXED_OVERRIDES
from cvl_eval.training.overrides import typed_overrides


def presets_settings() -> dict:
    """The presets' CVL on mixed-quality data (lr 1e-3, the quickstart's CVL settings and the
    mixed settings, the critic's uniform action term included), typed as `CVLConfig` fields,
    with the plain cap (no neighbours; `main` sets them per learner)."""
    items = ("lr=1e-3", *QUICKSTART_CVL_OVERRIDES, *QUICKSTART_MIXED_OVERRIDES["cvl_mc"])
    settings = typed_overrides(CVLConfig, items, "cvl_mc")
    return {**settings, "bc_q_cap": True, "bc_q_cap_neighbours": 0}


def batch(gen: torch.Generator, size: int, obs_dim: int, action_dim: int, k: int):
    """A random batch with rewards, and the same batch with ``k`` neighbours per anchor."""
    obs = lambda *s: torch.randn(*s, obs_dim, generator=gen)  # noqa: E731
    act = lambda *s: torch.rand(*s, action_dim, generator=gen) * 2 - 1  # noqa: E731
    plain = ContrastiveBatch(
        obs_t=obs(size),
        action_t=act(size),
        reward_t=torch.rand(size, generator=gen),
        obs_next=obs(size),
        done=torch.zeros(size),
        obs_future=obs(size),
        reward_future=torch.rand(size, generator=gen),
        offset=torch.ones(size, dtype=torch.int64),
        task_id=None,
    )
    return plain, dataclasses.replace(
        plain, neighbour_obs_t=obs(size, k), neighbour_action_t=act(size, k)
    )


def rate(learner, batches) -> float:
    start = time.perf_counter()
    for b in batches:
        learner.update(b)
    return len(batches) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--updates", type=int, default=50, help="updates per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-data", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    obs_dim, action_dim = 39, 4
    settings = presets_settings()
    learners = {
        name: make_learner(
            "cvl_mc",
            (obs_dim,),
            action_dim,
            seed=0,
            hidden=(128, 128),
            batch_size=256,
            **{**settings, **extra},
        )
        for name, extra in (("plain", {}), ("neighbours", {"bc_q_cap_neighbours": args.k}))
    }
    gen = torch.Generator().manual_seed(0)
    pairs = [batch(gen, 256, obs_dim, action_dim, args.k) for _ in range(args.updates)]
    streams = {"plain": [p for p, _ in pairs], "neighbours": [n for _, n in pairs]}
    for name, learner in learners.items():
        rate(learner, streams[name][:5])  # warm-up
    rates = {name: [] for name in learners}
    for _ in range(args.rounds):
        for name, learner in learners.items():
            rates[name].append(rate(learner, streams[name]))
    ratios = [n / p for n, p in zip(rates["neighbours"], rates["plain"], strict=True)]
    observations = torch.randn(args.steps_data, obs_dim)
    offsets = np.arange(0, args.steps_data + 1, 500)
    start = time.perf_counter()
    nearest_other_episode_steps(observations, offsets, args.k)
    search = time.perf_counter() - start
    print(
        f"CVL updates, batch 256, 128 x 128, k = {args.k}, {args.threads} thread(s), "
        f"{platform.processor() or platform.machine()}, torch {torch.__version__}"
    )
    for name, values in rates.items():
        print(f"  {name:10s} {statistics.median(values):6.1f} updates/s (median of {args.rounds})")
    print(
        f"  ratio neighbours / plain: {statistics.median(ratios):.2f} (rounds: "
        f"{', '.join(f'{r:.2f}' for r in ratios)})"
    )
    print(f"  nearest-neighbour search, {args.steps_data} steps: {search:.1f} s once per sampler")


if __name__ == "__main__":
    main()
