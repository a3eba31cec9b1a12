"""Policy evaluation: N episodes with fixed seeds, stepped together with batched policy calls.

The evaluation is vectorised across episodes: up to ``num_envs`` environments run side by side
and the policy is called once per step on the stacked observations of the running ones
(``(n_running, *obs_shape) -> (n_running, action_dim)``). Episode ``i`` always uses seed
``evaluation_seeds(seed, num_episodes)[i]``, whichever environment runs it, so results do not
depend on ``num_envs``. All environments are built with the evaluation ``seed`` itself: for
Meta-World that seed fixes the benchmark's 50 goals of the task (``metaworld.MT1(task, seed)``)
and each episode seed picks one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cvl_data.jsonio import to_json_data
from cvl_eval.envs.expert_scores import normalized_score
from cvl_eval.envs.make import canonical_name, is_metaworld, make_env
from cvl_eval.envs.seeding import evaluation_seeds
from cvl_eval.rollout.episode import step_success

DEFAULT_NUM_ENVS = 10
"""Environments stepped together by default (each pixel env holds an EGL context)."""

Policy = Callable[[np.ndarray], np.ndarray]
"""A batched policy: observations (N, *obs_shape) -> actions (N, action_dim)."""


@dataclass(frozen=True)
class EvalResult:
    """Per-episode outcome of `evaluate_policy` (JSON-serialisable via `to_dict`).

    Attributes:
        env_name: canonical env name (``reach-v3``, ``MountainCarContinuous-v0``).
        seed: the evaluation seed the episode seeds were derived from.
        episode_seeds: reset seed of each episode.
        returns: undiscounted return of each episode (raw, never normalised).
        successes: Meta-World: ``info["success"]`` was 1 at some step of the episode.
            Mountain Car: the episode terminated (the car reached the flag).
        lengths: number of steps of each episode.
        pixels: whether the policy saw pixel observations.
    """

    env_name: str
    seed: int
    episode_seeds: tuple[int, ...]
    returns: tuple[float, ...]
    successes: tuple[bool, ...]
    lengths: tuple[int, ...]
    pixels: bool = False

    def __post_init__(self) -> None:
        n = len(self.episode_seeds)
        if not (len(self.returns) == len(self.successes) == len(self.lengths) == n):
            raise ValueError("episode_seeds, returns, successes and lengths differ in length")

    @property
    def num_episodes(self) -> int:
        """Number of episodes."""
        return len(self.returns)

    @property
    def mean_return(self) -> float:
        """Mean raw return over episodes."""
        return float(np.mean(self.returns))

    @property
    def std_return(self) -> float:
        """Standard deviation (ddof=0) of the raw return over episodes."""
        return float(np.std(self.returns))

    @property
    def success_rate(self) -> float:
        """Fraction of successful episodes."""
        return float(np.mean(self.successes))

    @property
    def mean_length(self) -> float:
        """Mean episode length."""
        return float(np.mean(self.lengths))

    def normalized_returns(self) -> tuple[float, ...] | None:
        """Returns divided by the scripted expert's mean return (Meta-World only, else None)."""
        if not is_metaworld(self.env_name):
            return None
        return tuple(float(normalized_score(self.env_name, r)) for r in self.returns)

    def to_dict(self) -> dict:
        """Plain dict: the per-episode lists plus a ``summary`` of means."""
        out = to_json_data(self)
        normalized = self.normalized_returns()
        out["summary"] = {
            "mean_return": self.mean_return,
            "std_return": self.std_return,
            "success_rate": self.success_rate,
            "mean_length": self.mean_length,
            "mean_normalized_return": None if normalized is None else float(np.mean(normalized)),
        }
        return out

    @classmethod
    def from_dict(cls, data: dict) -> EvalResult:
        """Inverse of `to_dict` (the summary is recomputed, not read)."""
        return cls(
            env_name=data["env_name"],
            seed=int(data["seed"]),
            episode_seeds=tuple(int(s) for s in data["episode_seeds"]),
            returns=tuple(float(r) for r in data["returns"]),
            successes=tuple(bool(s) for s in data["successes"]),
            lengths=tuple(int(n) for n in data["lengths"]),
            pixels=bool(data.get("pixels", False)),
        )

    def to_json(self, path: str | Path | None = None) -> str:
        """JSON text of `to_dict`; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            Path(path).write_text(text)
        return text


def _check_actions(actions: np.ndarray, n: int, action_dim: int) -> np.ndarray:
    actions = np.asarray(actions, dtype=np.float32)
    if actions.shape != (n, action_dim):
        raise ValueError(
            f"policy returned actions of shape {actions.shape}, expected ({n}, {action_dim})"
        )
    return actions


def evaluate_policy(
    env_name: str,
    policy: Policy,
    num_episodes: int,
    seed: int = 0,
    pixels: bool = False,
    max_steps: int | None = None,
    image_size: int = 84,
    camera: str = "corner",
    num_envs: int | None = None,
    goals: str = "mt1",
) -> EvalResult:
    """Run ``policy`` for ``num_episodes`` episodes with fixed seeds, vectorised.

    Args:
        env_name: a Meta-World task (with or without ``-v3``) or ``MountainCarContinuous-v0``.
        policy: batched callable (N, *obs_shape) -> (N, action_dim); N varies as episodes end.
        num_episodes: number of episodes.
        seed: evaluation seed; episode seeds are `evaluation_seeds` (seed, num_episodes).
        pixels: give the policy (image_size, image_size, 3) uint8 frames instead of states.
        max_steps: optional episode step limit below the env's own (500 / 999).
        image_size: frame size with ``pixels``.
        camera: camera name with ``pixels``.
        num_envs: environments stepped together (default `DEFAULT_NUM_ENVS`, at most one per
            episode).
        goals: Meta-World goal protocol (``"mt1"`` or ``"random"``, see `make_env`).

    Returns:
        EvalResult with per-episode raw returns, successes and lengths.
    """
    if num_episodes <= 0:
        raise ValueError(f"num_episodes must be positive, got {num_episodes}")
    name = canonical_name(env_name)
    seeds = evaluation_seeds(seed, num_episodes)
    env_kwargs = {
        "seed": seed,
        "pixels": pixels,
        "image_size": image_size,
        "camera": camera,
        "keep_state": False,
        "max_episode_steps": max_steps,
        "goals": goals,
    }
    n_envs = min(num_episodes, num_envs or DEFAULT_NUM_ENVS)
    with _opened_envs(name, n_envs, env_kwargs) as envs:
        returns, successes, lengths = _run_episodes(envs, policy, seeds)
    return EvalResult(
        env_name=name,
        seed=seed,
        episode_seeds=seeds,
        returns=tuple(float(r) for r in returns),
        successes=tuple(bool(s) for s in successes),
        lengths=tuple(int(n) for n in lengths),
        pixels=pixels,
    )


@contextmanager
def _opened_envs(name: str, count: int, kwargs: dict) -> Iterator[list]:
    """``count`` envs ``make_env(name, **kwargs)``, all closed when the block ends."""
    envs = []
    try:
        for _ in range(count):
            envs.append(make_env(name, **kwargs))
        yield envs
    finally:
        for env in envs:
            env.close()


def _run_episodes(
    envs: list, policy: Policy, seeds: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Episode ``i`` from reset seed ``seeds[i]`` in whichever env is free, the policy called once
    per step on the running envs' stacked observations; (returns, successes, lengths)."""
    num_episodes, n_envs = len(seeds), len(envs)
    returns = np.zeros(num_episodes, dtype=np.float64)
    successes = np.zeros(num_episodes, dtype=bool)
    lengths = np.zeros(num_episodes, dtype=np.int64)
    action_dim = int(np.prod(envs[0].action_space.shape))
    slot_episode: list[int] = [-1] * n_envs
    slot_obs: list[np.ndarray | None] = [None] * n_envs
    next_episode = 0

    def start(k: int) -> None:
        nonlocal next_episode
        if next_episode >= num_episodes:
            slot_episode[k] = -1
            return
        obs, _ = envs[k].reset(seed=seeds[next_episode])
        slot_episode[k], slot_obs[k] = next_episode, obs
        next_episode += 1

    for k in range(n_envs):
        start(k)
    while running := [k for k in range(n_envs) if slot_episode[k] >= 0]:
        batch = np.stack([slot_obs[k] for k in running])
        actions = _check_actions(policy(batch), len(running), action_dim)
        for j, k in enumerate(running):
            obs, reward, terminated, truncated, info = envs[k].step(actions[j])
            e = slot_episode[k]
            returns[e] += reward
            lengths[e] += 1
            successes[e] |= step_success(info, terminated)
            if terminated or truncated:
                start(k)
            else:
                slot_obs[k] = obs
    return returns, successes, lengths


def random_policy(action_dim: int, seed: int = 0) -> Policy:
    """A batched uniform-random policy over [-1, 1]^action_dim (a baseline)."""
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=(len(obs), action_dim)).astype(np.float32)

    return act


def summarize(results: Sequence[EvalResult]) -> dict[str, dict]:
    """Map env name -> summary dict of each result (for logging)."""
    return {r.env_name: r.to_dict()["summary"] for r in results}
