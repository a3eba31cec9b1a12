"""Environment throughput: steps/s (random actions) and pixel rendering fps.

Measured in one run, on the same machine state:

1. state steps/s, one env stepped in a loop with a policy call per step (baseline);
2. state steps/s, N envs stepped together with one batched policy call per step (what
   `cvl_eval.rollout.evaluate.evaluate_policy` does; one process);
3. state steps/s, gymnasium's AsyncVectorEnv over N worker processes (real CPU parallelism);
4. 84x84 render fps with shadows, reflections and 4x multisampling on (Meta-World's default) vs
   off (`cvl_eval.envs.pixels.RenderConfig(fast=True)`), and their ratio;
5. pixel env steps/s (step + render) in the fast mode.

Run:
    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval \\
        python benchmarks/bench_env.py --task drawer-open --out bench_env.json
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import time

import gymnasium as gym
import numpy as np

from cvl_eval.envs.make import make_env  # cvl_eval.envs chooses headless EGL (MUJOCO_GL)
from cvl_eval.envs.pixels import OffscreenRenderer, RenderConfig


def _random_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=(n, 4)).astype(np.float32)


def loop_steps_per_s(task: str, steps: int) -> float:
    """One env, one policy call per step."""
    env = make_env(task, seed=0, goals="random")
    rng = np.random.default_rng(0)
    env.reset()
    start = time.perf_counter()
    for _ in range(steps):
        action = _random_actions(rng, 1)[0]
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def batched_steps_per_s(task: str, steps: int, num_envs: int) -> float:
    """``num_envs`` envs in this process, one batched policy call per step."""
    envs = [make_env(task, seed=i, goals="random") for i in range(num_envs)]
    rng = np.random.default_rng(0)
    for env in envs:
        env.reset()
    rounds = max(1, steps // num_envs)
    start = time.perf_counter()
    for _ in range(rounds):
        actions = _random_actions(rng, num_envs)
        for env, action in zip(envs, actions, strict=True):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return rounds * num_envs / elapsed


def async_steps_per_s(task: str, steps: int, num_envs: int) -> float:
    """gymnasium AsyncVectorEnv: ``num_envs`` worker processes (autoreset on)."""
    fns = [functools.partial(make_env, task, seed=i, goals="random") for i in range(num_envs)]
    vec = gym.vector.AsyncVectorEnv(fns)
    rng = np.random.default_rng(0)
    vec.reset(seed=0)
    rounds = max(1, steps // num_envs)
    start = time.perf_counter()
    for _ in range(rounds):
        vec.step(_random_actions(rng, num_envs))
    elapsed = time.perf_counter() - start
    vec.close()
    return rounds * num_envs / elapsed


def render_fps(task: str, frames: int, size: int, fast: bool, camera: str) -> float:
    """Frames/s of `OffscreenRenderer` on a moving scene (stepping excluded from the timing)."""
    env = make_env(task, seed=0, goals="random")
    env.reset()
    renderer = OffscreenRenderer(env.unwrapped.model, RenderConfig(size, camera, fast=fast))
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(frames):
        env.step(_random_actions(rng, 1)[0])
        start = time.perf_counter()
        frame = renderer.render(env.unwrapped.data)
        total += time.perf_counter() - start
    assert frame.shape == (size, size, 3) and frame.std() > 1.0
    renderer.close()
    env.close()
    return frames / total


def pixel_env_steps_per_s(task: str, steps: int, size: int, camera: str) -> float:
    """Steps/s of the pixel env (step + fast render)."""
    env = make_env(task, seed=0, pixels=True, image_size=size, camera=camera, goals="random")
    rng = np.random.default_rng(0)
    env.reset()
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(_random_actions(rng, 1)[0])
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="drawer-open")
    parser.add_argument("--steps", type=int, default=5000, help="state steps per measurement")
    parser.add_argument("--num-envs", type=int, default=8, help="envs stepped together")
    parser.add_argument("--workers", type=int, default=2, help="AsyncVectorEnv processes")
    parser.add_argument("--frames", type=int, default=300, help="frames per render measurement")
    parser.add_argument("--slow-frames", type=int, default=40, help="frames, slow render mode")
    parser.add_argument("--image-size", type=int, default=84)
    parser.add_argument("--camera", default="corner")
    parser.add_argument("--out", default=None, help="write the numbers as JSON here")
    args = parser.parse_args()

    results: dict = {
        "task": args.task,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_at_start": os.getloadavg(),
    }
    results["loop_steps_per_s"] = loop_steps_per_s(args.task, args.steps)
    results["batched_steps_per_s"] = batched_steps_per_s(args.task, args.steps, args.num_envs)
    results["batched_num_envs"] = args.num_envs
    results["async_steps_per_s"] = async_steps_per_s(args.task, args.steps, args.workers)
    results["async_workers"] = args.workers
    size, camera = args.image_size, args.camera
    results["render_fps_default"] = render_fps(args.task, args.slow_frames, size, False, camera)
    results["render_fps_fast"] = render_fps(args.task, args.frames, size, True, camera)
    results["render_speedup"] = results["render_fps_fast"] / results["render_fps_default"]
    results["pixel_env_steps_per_s"] = pixel_env_steps_per_s(args.task, args.frames, size, camera)
    results["image_size"], results["camera"] = size, camera
    results["load_average_at_end"] = os.getloadavg()

    print(
        f"task {args.task}, {os.cpu_count()} CPUs, load at start {results['load_average_at_start']}"
    )
    print(f"state steps/s, one env loop (baseline):      {results['loop_steps_per_s']:8.0f}")
    print(
        f"state steps/s, {args.num_envs} envs batched (1 process):  "
        f"{results['batched_steps_per_s']:8.0f}  "
        f"({results['batched_steps_per_s'] / results['loop_steps_per_s']:.2f}x)"
    )
    print(
        f"state steps/s, AsyncVectorEnv {args.workers} workers:    "
        f"{results['async_steps_per_s']:8.0f}  "
        f"({results['async_steps_per_s'] / results['loop_steps_per_s']:.2f}x)"
    )
    print(
        f"render fps {size}x{size} '{camera}', shadows+reflections+MSAA: {results['render_fps_default']:7.1f}"
    )
    print(
        f"render fps {size}x{size} '{camera}', all off (fast):          {results['render_fps_fast']:7.1f}"
    )
    print(
        f"render speed-up (fast / default):                     {results['render_speedup']:7.1f}x"
    )
    print(
        f"pixel env steps/s (step + fast render):               {results['pixel_env_steps_per_s']:7.1f}"
    )
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
