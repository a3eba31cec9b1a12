"""Environment construction: the 50 Meta-World v3 tasks and MountainCarContinuous-v0.

`make_env` is the one entry point. Meta-World tasks are built as
``gym.make("Meta-World/MT1", env_name=..., seed=...)`` would (see `cvl_eval.envs.metaworld_tasks`)
and wrapped so that

- observations are float32 of shape (39,), goal-observable (the goal occupies the last 3 dims),
  with an observation space whose bounds match the goal-observable layout;
- ``reset(seed=s)`` is deterministic (Meta-World ignores the gymnasium reset seed, so we reseed
  the underlying env, which selects the goal and the action-space RNG);
- pixel observations (optional) come from `cvl_eval.envs.pixels.PixelObservation`.

MountainCarContinuous-v0 gets the same seeding convention (the first reset after `make_env`
uses ``seed`` unless another is given) and float32 observations of shape (2,).

Names are settled once, where they enter: a command's config (`GenerateConfig`, `TrainConfig`,
`SweepConfig`, `PaperConfig`, `QuickstartConfig`, `EvaluateConfig`, through `config_name`), a
dataset's recorded task, a mixture source's text, and the library's own entry points that a user
calls by hand with a name (`make_env`, the dataset configs, `ScriptedExpert`, `evaluate_policy`,
`expert_return`, `mixture_sources`; `canonical_name` returns a canonical name as given, so a name
that already passed a door is not derived again). Everything else takes canonical names
(`ENV_NAMES`) as given and refuses any other spelling (`require_canonical`: `is_metaworld`,
`env_defaults`, `check_camera`, a command's checks).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from cvl_eval.envs.metaworld_tasks import GoalMode, goal_observable_space, make_metaworld

MOUNTAIN_CAR = "MountainCarContinuous-v0"
"""Gymnasium id of the continuous Mountain Car task."""


def _metaworld_task_names() -> tuple[str, ...]:
    from metaworld.env_dict import MT50_V3

    return tuple(sorted(MT50_V3.keys()))


TASK_NAMES: tuple[str, ...] = _metaworld_task_names()
"""The 50 Meta-World task names, with their ``-v3`` suffix, sorted."""

ENV_NAMES: tuple[str, ...] = (*TASK_NAMES, MOUNTAIN_CAR)
"""Every canonical name (`make_env` also accepts Meta-World names without ``-v3``)."""

_CANONICAL = frozenset(ENV_NAMES)


def canonical_name(name: str) -> str:
    """Return the canonical env name: Meta-World tasks get their ``-v3`` suffix; a canonical name
    is returned as given (nothing to derive).

    Raises:
        ValueError: for an unknown name; the message lists every valid name.
    """
    if name in _CANONICAL:
        return name
    candidate = name if name.endswith("-v3") else f"{name}-v3"
    if candidate in TASK_NAMES:
        return candidate
    valid = ", ".join(t.removesuffix("-v3") for t in TASK_NAMES)
    raise ValueError(
        f"unknown environment {name!r}. Valid names: {MOUNTAIN_CAR}, or one of the 50 "
        f"Meta-World tasks (with or without '-v3'): {valid}"
    )


def require_canonical(name: str) -> str:
    """Return ``name``, a canonical env name (one of `ENV_NAMES`), as given.

    Inner code takes names its callers canonicalised where they entered; this check derives
    nothing.

    Raises:
        ValueError: for an unknown name (`canonical_name`'s message), or for a known name in
            another spelling (``reach`` for ``reach-v3``).
    """
    if name in _CANONICAL:
        return name
    canonical = canonical_name(name)  # raises for an unknown name
    raise ValueError(
        f"{name!r} is not a canonical environment name ({canonical!r} is): canonicalise names "
        "where they enter (canonical_name)"
    )


def config_name(name: str) -> str:
    """A name a command's config receives: `canonical_name`, or the name as given when it is
    unknown, for the command's check to refuse with its one-line error before any work (the
    config's constructor cannot: the command line parser would turn its error into a usage
    message)."""
    try:
        return canonical_name(name)
    except ValueError:
        return name


def short_task_name(name: str) -> str:
    """Meta-World name without its ``-v3`` suffix (``reach-v3`` -> ``reach``); takes a canonical
    name."""
    return require_canonical(name).removesuffix("-v3")


def is_metaworld(name: str) -> bool:
    """Whether the canonical name ``name`` is a Meta-World task."""
    return require_canonical(name) in TASK_NAMES


class SeededReset(gym.Wrapper):
    """Make ``reset`` seeding deterministic and observations float32.

    The first ``reset()`` without a seed uses the construction seed. For Meta-World, a
    ``reset(seed=s)`` reseeds the raw env (``env.unwrapped.seed(s)``): that RNG chooses the
    task's goal among Meta-World's 50 MT1 goals and seeds the action space, so the same seed
    gives the same initial observation. For other envs the seed is passed on as usual.
    """

    def __init__(self, env: gym.Env, seed: int, metaworld: bool):
        super().__init__(env)
        self._metaworld = metaworld
        self._pending_seed: int | None = seed
        if metaworld:
            self.observation_space = goal_observable_space(env)
        else:
            space = env.observation_space
            self.observation_space = gym.spaces.Box(
                low=space.low.astype(np.float32),
                high=space.high.astype(np.float32),
                shape=space.shape,
                dtype=np.float32,
            )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset; ``seed`` (or the construction seed on the first call) fixes the episode."""
        if seed is None:
            seed, self._pending_seed = self._pending_seed, None
        else:
            self._pending_seed = None
        if self._metaworld:
            if seed is not None:
                self.env.unwrapped.seed(int(seed))
            obs, info = self.env.reset(options=options)
        else:
            obs, info = self.env.reset(seed=seed, options=options)
        return np.asarray(obs, dtype=np.float32), info

    def step(self, action):
        """Step with ``action`` clipped to the action space; observation cast to float32."""
        action = np.clip(
            np.asarray(action, dtype=np.float32),
            self.action_space.low,
            self.action_space.high,
        )
        obs, reward, terminated, truncated, info = self.env.step(action)
        return (
            np.asarray(obs, dtype=np.float32),
            float(reward),
            terminated,
            truncated,
            info,
        )


def make_env(
    name: str,
    seed: int = 0,
    pixels: bool = False,
    image_size: int = 84,
    camera: str = "corner",
    fast_render: bool = True,
    keep_state: bool = True,
    max_episode_steps: int | None = None,
    goals: GoalMode = "mt1",
) -> gym.Env:
    """Build a seeded environment by name.

    Args:
        name: a Meta-World task (``"reach"`` or ``"reach-v3"``) or ``"MountainCarContinuous-v0"``.
        seed: seed of the first episode (later resets continue that RNG unless given a seed).
            For Meta-World it also seeds the benchmark's set of 50 goals for the task
            (``metaworld.MT1(task, seed)``); reset seeds then choose among those goals.
        pixels: replace the observation by an (image_size, image_size, 3) uint8 frame.
        image_size: frame height and width in pixels.
        camera: Meta-World camera name (``corner``, ``corner2``, ``corner3``, ``corner4``,
            ``topview``, ``behindGripper``, ``gripperPOV``).
        fast_render: switch off shadows, reflections and multisampling (about 10x faster).
        keep_state: with pixels, also return the state observation as ``info["state"]``.
        max_episode_steps: optional shorter time limit (Meta-World's own limit is 500 steps,
            Mountain Car's 999).
        goals: Meta-World goal protocol: ``"mt1"`` (the benchmark's 50 goals for ``seed``,
            one picked per reset) or ``"random"`` (a fresh goal per reset, cheaper to build);
            see `cvl_eval.envs.metaworld_tasks`.

    Returns:
        A gymnasium env. Close it explicitly (``env.close()``) when done, in particular with
        pixels: that releases its EGL context cleanly.

    Raises:
        ValueError: unknown name (lists valid names), or pixels requested for Mountain Car.
    """
    canonical = canonical_name(name)
    if canonical == MOUNTAIN_CAR:
        if pixels:
            raise ValueError("pixel observations are only implemented for Meta-World tasks")
        env = SeededReset(gym.make(MOUNTAIN_CAR, disable_env_checker=True), seed, False)
    else:
        env = SeededReset(make_metaworld(canonical, seed, goals), seed, True)
    if max_episode_steps is not None:
        env = gym.wrappers.TimeLimit(env, max_episode_steps=max_episode_steps)
    if pixels:
        from cvl_eval.envs.pixels import PixelObservation, RenderConfig

        config = RenderConfig(image_size=image_size, camera=camera, fast=fast_render)
        env = PixelObservation(env, config, keep_state=keep_state)
    return env


def check_camera(name: str, camera: str) -> None:
    """Refuse (`ValueError`, listing the names there are) a camera the MuJoCo model of Meta-World
    task ``name`` does not have; builds the state env only (nothing renders), so pixel commands
    can check their camera before any work; ``name`` is canonical."""
    import mujoco

    env = make_env(require_canonical(name), goals="random")
    try:
        model = env.unwrapped.model
        kind = mujoco.mjtObj.mjOBJ_CAMERA
        names = [mujoco.mj_id2name(model, kind, i) for i in range(model.ncam)]
    finally:
        env.close()
    if camera not in names:
        raise ValueError(f"unknown camera {camera!r}: the {name} model has {names}")
