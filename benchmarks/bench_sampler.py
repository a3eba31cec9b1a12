"""Throughput of `cvl_data.ContrastiveSampler` against a naive per-sample Python reference.

Both draw the same thing: an anchor step uniform over all transitions, a truncated-geometric
offset ``k`` inside its episode (DESIGN.md sec. 2), and the batch ``obs_t, action_t, reward_t,
obs_next, done, obs_future, reward_future`` as torch tensors. The reference loops over samples
in Python (numpy indexing per sample, stacked at the end); the sampler gathers on tensors.

Run (one CPU core, as the target is stated):

    PYTHONPATH=packages/cvl-data python benchmarks/bench_sampler.py

Prints, per dataset and batch size, future samples per second of both (per wall-clock second
and per CPU second of this process) and their ratio (CPU-based).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from cvl_data import ContrastiveSampler, DatasetSpec, DatasetWriter, open_dataset


def make_dataset(
    folder: Path, episodes: int, steps: int, obs_shape: tuple[int, ...], pixels: bool
) -> Path:
    """A synthetic dataset on disk (random observations, actions, rewards)."""
    spec = DatasetSpec(
        env_id="Meta-World/MT1",
        task="drawer-open-v3",
        obs_kind="pixels" if pixels else "state",
        obs_shape=obs_shape,
        obs_dtype="uint8" if pixels else "float32",
        action_shape=(4,),
        action_low=-1.0,
        action_high=1.0,
        has_rewards=True,
        provenance={"generator": "benchmarks/bench_sampler.py"},
    )
    rng = np.random.default_rng(0)
    path = folder / ("pixels" if pixels else "state")
    with DatasetWriter(path, spec, durable=False) as writer:
        for _ in range(episodes):
            if pixels:
                obs = rng.integers(0, 256, (steps + 1, *obs_shape), dtype=np.uint8)
            else:
                obs = rng.standard_normal((steps + 1, *obs_shape), dtype=np.float32)
            writer.add_episode(
                obs,
                rng.uniform(-1, 1, (steps, 4)).astype(np.float32),
                rng.uniform(0, 10, steps).astype(np.float32),
                terminated=np.zeros(steps, bool),
                truncated=np.arange(steps) == steps - 1,
            )
    return path


class NaiveSampler:
    """The per-sample reference: one Python iteration per (anchor, future) pair."""

    def __init__(self, dataset, batch_size: int, discount: float, seed: int = 0):
        self.observations = np.asarray(dataset.observations)
        self.actions = np.asarray(dataset.actions)
        self.rewards = np.asarray(dataset.rewards)
        self.terminated = np.asarray(dataset.terminated)
        self.offsets = dataset.episode_offsets.tolist()
        self.batch_size, self.discount = batch_size, discount
        self.rng = np.random.default_rng(seed)

    def sample(self) -> dict[str, torch.Tensor]:
        import bisect

        g, log_g = self.discount, math.log(self.discount)
        num_steps = self.offsets[-1]
        out: dict[str, list] = {k: [] for k in ("obs_t", "obs_next", "obs_future", "action_t")}
        out.update(reward_t=[], reward_future=[], done=[], offset=[])
        for _ in range(self.batch_size):
            t = int(self.rng.integers(num_steps))
            e = bisect.bisect_right(self.offsets, t) - 1
            K = self.offsets[e + 1] - t
            u = self.rng.random()
            k = min(max(1 + math.floor(math.log(1 - u * (1 - g**K)) / log_g), 1), K)
            row = t + e
            out["obs_t"].append(self.observations[row])
            out["obs_next"].append(self.observations[row + 1])
            out["obs_future"].append(self.observations[row + k])
            out["action_t"].append(self.actions[t])
            out["reward_t"].append(self.rewards[t])
            out["reward_future"].append(self.rewards[t + k - 1])
            out["done"].append(float(self.terminated[t]))
            out["offset"].append(k)
        return {name: torch.as_tensor(np.stack(values)) for name, values in out.items()}


def rate(sample: Callable[[], object], batch_size: int, seconds: float) -> tuple[float, float]:
    """Future samples per wall-clock second and per CPU second of this process.

    Runs for at least ``seconds`` after two warm-up batches. On a shared machine the CPU rate is
    the steadier one (it does not count time spent waiting for a core).
    """
    sample()
    sample()
    batches, wall0, cpu0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - wall0 < seconds or batches < 3:
        sample()
        batches += 1
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return batches * batch_size / wall, batches * batch_size / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--state-episodes", type=int, default=200)
    parser.add_argument("--state-steps", type=int, default=500)
    parser.add_argument("--pixel-episodes", type=int, default=20)
    parser.add_argument("--pixel-steps", type=int, default=200)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--seconds", type=float, default=2.0, help="timing window per row")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {args.device}")
    header = (
        f"{'data':<40} {'batch':>6} {'sampler/s wall':>15} {'sampler/s cpu':>14} "
        f"{'naive/s cpu':>12} {'ratio':>7}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            (
                f"state 39-d f32, {args.state_episodes}x{args.state_steps}",
                make_dataset(Path(tmp), args.state_episodes, args.state_steps, (39,), False),
            ),
            (
                f"pixels 84x84x3 u8, {args.pixel_episodes}x{args.pixel_steps}",
                make_dataset(Path(tmp), args.pixel_episodes, args.pixel_steps, (84, 84, 3), True),
            ),
        ]
        for name, path in cases:
            dataset = open_dataset(path, verify=False)
            for batch_size in args.batch_sizes:
                fast = ContrastiveSampler(dataset, batch_size, device=args.device, seed=0)
                naive = NaiveSampler(dataset, batch_size, 0.99)
                fast_wall, fast_cpu = rate(fast.sample, batch_size, args.seconds)
                _, naive_cpu = rate(naive.sample, batch_size, args.seconds / 2)
                print(
                    f"{name:<40} {batch_size:>6} {fast_wall:>15,.0f} {fast_cpu:>14,.0f} "
                    f"{naive_cpu:>12,.0f} {fast_cpu / naive_cpu:>6.1f}x"
                )
            steps = int(dataset.episode_offsets[1])
            episode = ContrastiveSampler(dataset, steps, device=args.device, mode="episode")
            episode_wall, episode_cpu = rate(episode.sample, steps, args.seconds)
            print(
                f"{name + ' (episode mode)':<40} {steps:>6} {episode_wall:>15,.0f} "
                f"{episode_cpu:>14,.0f}"
            )


if __name__ == "__main__":
    main()
