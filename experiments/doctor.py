"""`./pants run experiments:doctor`: is this machine ready to run CVL?

Prints the versions of our four packages and of the libraries they stand on (torch and its
device, gymnasium, metaworld, mujoco, rliable), then checks that a Meta-World env steps and
renders one 84x84 frame headless (MUJOCO_GL=egl). Each failed check says what is wrong and
how to fix it; the exit code is the number of failed checks.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Callable

# Headless rendering must be chosen before mujoco is first imported: cvl_eval.envs does it (the
# one place that sets MUJOCO_GL); without cvl-eval the checks below report what is missing.
with contextlib.suppress(ImportError):
    import cvl_eval.envs  # noqa: F401

OURS = ("cvl_data", "cvl_models", "cvl_algos", "cvl_eval")
THEIRS = ("torch", "gymnasium", "metaworld", "mujoco", "rliable", "numpy", "pandas")
TASK = "drawer-open-v3"


def _version(module_name: str) -> str:
    module = importlib.import_module(module_name)
    version = getattr(module, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version(module_name)
    return str(version)


def _check_versions() -> list[str]:
    problems = []
    for name in OURS + THEIRS:
        try:
            print(f"  {name:<12} {_version(name)}")
        except Exception as exc:  # noqa: BLE001 - report every failure, keep going
            print(f"  {name:<12} MISSING ({type(exc).__name__}: {exc})")
            problems.append(f"cannot import {name}: install it (see README) or check the lockfile")
    return problems


def _check_torch() -> list[str]:
    import torch

    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "cpu"
    print(f"  torch device: {device} (cuda available: {cuda}, threads: {torch.get_num_threads()})")
    x = torch.randn(64, 64)
    if not torch.allclose(x @ torch.eye(64), x):
        return ["torch matrix multiply gave a wrong answer"]
    return []


def _check_env_step() -> list[str]:
    import gymnasium as gym
    import metaworld  # noqa: F401 - registers the Meta-World/* env ids
    import numpy as np

    env = gym.make("Meta-World/MT1", env_name=TASK, seed=0, disable_env_checker=True)
    try:
        obs, _ = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    finally:
        env.close()
    print(
        f"  {TASK}: obs {np.shape(obs)}, reward {float(reward):.3f}, "
        f"success {info.get('success')}, action space {env.action_space}"
    )
    if np.shape(obs) != (39,):
        return [f"Meta-World {TASK} observation has shape {np.shape(obs)}, expected (39,)"]
    return []


def _check_render() -> list[str]:
    import gymnasium as gym
    import metaworld  # noqa: F401
    import numpy as np

    env = gym.make(
        "Meta-World/MT1",
        env_name=TASK,
        seed=0,
        render_mode="rgb_array",
        disable_env_checker=True,
        width=84,
        height=84,
    )
    try:
        env.reset(seed=0)
        frame = env.render()
    finally:
        env.close()
    frame = np.asarray(frame)
    print(
        f"  rendered frame {frame.shape} {frame.dtype} with MUJOCO_GL={os.environ['MUJOCO_GL']}, "
        f"mean pixel {frame.mean():.1f}, std {frame.std():.1f}"
    )
    if frame.shape != (84, 84, 3) or frame.dtype != np.uint8:
        return [f"rendered frame has shape {frame.shape} {frame.dtype}, expected (84, 84, 3) uint8"]
    if frame.std() < 1.0:
        return ["rendered frame is blank: headless EGL rendering is not working"]
    return []


RENDER_HINT = (
    "headless rendering failed: set MUJOCO_GL=egl and install an EGL driver "
    "(Debian: apt-get install libegl1 libgl1 libegl-mesa0)"
)


def main() -> int:
    checks: list[tuple[str, Callable[[], list[str]], str]] = [
        ("versions", _check_versions, ""),
        ("torch", _check_torch, "torch is broken: reinstall torch==2.13.0"),
        ("Meta-World step", _check_env_step, "Meta-World cannot step: reinstall metaworld"),
        ("headless render 84x84", _check_render, RENDER_HINT),
    ]
    problems: list[str] = []
    print(f"cvl doctor (python {sys.version.split()[0]})")
    for title, check, hint in checks:
        print(f"[{title}]")
        try:
            problems += check()
        except Exception as exc:  # noqa: BLE001 - a doctor reports, it does not crash
            traceback.print_exc(limit=2)
            problems.append(f"{hint or title} ({type(exc).__name__}: {exc})")
    print()
    if problems:
        print(f"{len(problems)} problem(s):")
        for problem in problems:
            print(f"  - {problem}")
    else:
        print("all checks passed: this machine can run CVL")
    return len(problems)


if __name__ == "__main__":
    sys.exit(main())
