"""Episode reset seeds of evaluations (`evaluation_seeds`), shared by every room that rolls out
a policy (`cvl_eval.rollout.evaluate`, `cvl_eval.analysis.on_policy_critic`)."""

from __future__ import annotations

import numpy as np

__all__ = ["evaluation_seeds"]


def evaluation_seeds(seed: int, num_episodes: int) -> tuple[int, ...]:
    """Per-episode reset seeds derived from ``seed`` (prefix-stable in ``num_episodes``).

    Seeds come from ``numpy.random.SeedSequence([seed, 0xE7A1])`` so that nearby evaluation
    seeds give unrelated episodes; asking for more episodes only appends seeds.
    """
    if num_episodes < 0:
        raise ValueError(f"num_episodes must be >= 0, got {num_episodes}")
    words = np.random.SeedSequence([seed, 0xE7A1]).generate_state(num_episodes, dtype=np.uint32)
    return tuple(int(w) for w in words)
