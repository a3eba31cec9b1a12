"""Construction of single-task Meta-World v3 environments (goal-observable, seeded).

Two goal protocols:

- ``"mt1"`` (default): Meta-World's MT1 benchmark. ``metaworld.MT1(task, seed)`` draws 50 goals
  for the task; every reset picks one of them with the env's RNG. This is what
  ``gym.make("Meta-World/MT1", env_name=task, seed=seed)`` builds (same raw env, same
  ``RandomTaskSelectWrapper``, same seeding), except that the 50 goals are computed once per
  process and ``(task, seed)`` and reused: computing them costs ~1 s (51 simulated resets),
  which ``gym.make`` pays for every env.
- ``"random"``: a fresh goal at every reset, drawn from the task's goal distribution with the
  env's seeded RNG (Meta-World's ``seeded_rand_vec`` mode). No goal set to precompute, so an env
  costs only its model load (~0.3 s).
"""

from __future__ import annotations

import pickle
from functools import lru_cache
from typing import Literal

import gymnasium as gym
import numpy as np

GoalMode = Literal["mt1", "random"]
GOAL_MODES: tuple[str, ...] = ("mt1", "random")


@lru_cache(maxsize=128)
def mt1_tasks(task: str, seed: int) -> tuple:
    """The 50 ``metaworld.Task`` goals of ``metaworld.MT1(task, seed)`` (cached per process)."""
    import metaworld

    return tuple(metaworld.MT1(task, seed=seed).train_tasks)


def _random_goal_task(task: str, raw: gym.Env):
    """A Task that makes ``raw`` goal-observable; its goal is replaced at every reset."""
    from metaworld.types import Task

    space = raw._random_reset_space  # every v3 env defines its goal/object sampling box
    data = {
        "rand_vec": np.asarray(space.low, dtype=np.float64),
        "env_cls": type(raw),
        "partially_observable": False,
    }
    return Task(env_name=task, data=pickle.dumps(data))


def make_metaworld(task: str, seed: int, goals: GoalMode = "mt1") -> gym.Env:
    """Build the goal-observable Meta-World env for canonical ``task`` (e.g. ``reach-v3``).

    The raw env is seeded with ``seed`` (its RNG picks goals; its action space is seeded too).
    Episodes end with ``truncated=True`` after 500 steps; ``terminated`` is always False.
    """
    from metaworld.env_dict import MT50_V3
    from metaworld.wrappers import RandomTaskSelectWrapper

    if goals not in GOAL_MODES:
        raise ValueError(f"goals must be one of {GOAL_MODES}, got {goals!r}")
    raw = MT50_V3[task]()
    raw.seed(seed)
    if goals == "mt1":
        env = gym.wrappers.TimeLimit(raw, max_episode_steps=raw.max_path_length)
        env = RandomTaskSelectWrapper(env, list(mt1_tasks(task, seed)))
        env.unwrapped.set_task(mt1_tasks(task, seed)[0])  # goal-observable from the start
    else:
        raw.set_task(_random_goal_task(task, raw))
        raw._freeze_rand_vec = False  # set_task freezes the goal; we draw one per reset
        raw.seeded_rand_vec = True  # ... from the env's seeded RNG
        env = gym.wrappers.TimeLimit(raw, max_episode_steps=raw.max_path_length)
    return env


def goal_observable_space(env: gym.Env) -> gym.spaces.Box:
    """The float32 observation space of a goal-observable Meta-World env (goal bounds set)."""
    space = env.unwrapped.sawyer_observation_space
    return gym.spaces.Box(
        low=space.low.astype(np.float32),
        high=space.high.astype(np.float32),
        shape=space.shape,
        dtype=np.float32,
    )
