"""Where a frame of SAC data collection spends its time: phases, then the update's ATen ops.

The collection is `bench_sac_vs_sb3`'s ``ours`` (or ``ours_mlp``): Meta-World drawer-open,
256 x 256, batch 512 by default (``--hidden``, ``--batch-size``), 1 torch thread, one update
per frame. One warm-up episode of
random actions fills the buffer; then ``frames`` steady frames (policy actions, one update each)
run under ``torch.profiler``, each phase inside a ``record_function`` scope:

- ``env.step``: the Meta-World step (MuJoCo, outside torch);
- ``act``: ``learner.act`` (the policy's sample for one state, to numpy);
- ``sample``: ``buffer.sample`` (the batch's indices and gathers);
- ``update``: ``learner.update`` (losses, backward, clipping, Adam, polyak);
- ``store``: ``buffer.add``;
- ``loop``: the rest of the frame (episode bookkeeping in `run_sac_episode`).

The update's ATen self time is bucketed as in `profile_update` (matmul, optimizer, norm+clip,
layernorm, elementwise/other); its python/dispatch overhead is the update phase's wall time
minus that sum (the profiler's own cost inflates it; unprofiled frames/s is printed too).

Run: ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval
python benchmarks/profile_sac_collect.py [--torso ours|ours_mlp] [--frames 200]
[--hidden 128 128] [--batch-size 256]``
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.bench_sac_vs_sb3 import BATCH, HIDDEN, WARMUP, our_collection  # noqa: E402
from benchmarks.profile_update import bucket  # noqa: E402

PHASES = ("env.step", "act", "sample", "update", "store")


def timed(phase: str, fn, totals: dict[str, float]):
    """``fn`` inside a ``record_function(phase)`` scope, its wall time added to ``totals``."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        with record_function(phase):
            out = fn(*args, **kwargs)
        totals[phase] += time.perf_counter() - start
        return out

    return wrapper


def instrument(env, learner, buffer, totals: dict[str, float]) -> None:
    """Wrap each phase's callable of this collection (instance attributes shadow the methods)."""
    env.step = timed("env.step", env.step, totals)
    learner.act = timed("act", learner.act, totals)
    learner.update = timed("update", learner.update, totals)
    buffer.sample = timed("sample", buffer.sample, totals)
    buffer.add = timed("store", buffer.add, totals)


def phase_of(event) -> str | None:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name in PHASES:
            return parent.name
        parent = parent.cpu_parent
    return None


def collect(env, learner, buffer, config, episode: int, frames: int, budget: int):
    """Run episode ``episode`` from ``frames`` until its end or ``budget`` frames in all;
    returns the new frame count and the wall seconds."""
    from cvl_eval.datagen.sac.episode import run_sac_episode

    config = dataclasses.replace(config, frames=budget)
    start = time.perf_counter()
    _, frames = run_sac_episode(env, learner, buffer, config, episode, frames, None, lambda: None)
    return frames, time.perf_counter() - start


def profile_collection(
    name: str, frames: int, hidden: tuple[int, ...] = HIDDEN, batch_size: int = BATCH
) -> dict:
    env, learner, buffer, config = our_collection(
        name, WARMUP + 2 * frames, episode_steps=None, hidden=hidden, batch_size=batch_size
    )
    done, _ = collect(env, learner, buffer, config, 0, 0, WARMUP)  # warm-up: random actions
    done, plain_s = collect(env, learner, buffer, config, 1, done, WARMUP + frames)
    totals: dict[str, float] = defaultdict(float)
    instrument(env, learner, buffer, totals)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _, wall_s = collect(env, learner, buffer, config, 2, done, WARMUP + 2 * frames)
    buckets: dict[str, float] = defaultdict(float)
    ops: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.name.startswith("aten::") and phase_of(event) == "update":
            buckets[bucket(event)] += event.self_cpu_time_total / 1e6
            ops[event.name] += event.self_cpu_time_total / 1e6
    totals["loop"] = wall_s - sum(totals.values())
    return {
        "plain_fps": frames / plain_s,
        "wall": wall_s,
        "phases": totals,
        "update_buckets": buckets,
        "update_ops": ops,
    }


def markdown(name: str, result: dict, frames: int, top: int = 10) -> str:
    wall, per = result["wall"], 1e3 / frames
    lines = [
        f"### {name}",
        "",
        f"{result['plain_fps']:.1f} frames/s unprofiled, {frames / wall:.1f} profiled.",
        "",
        "| phase | ms/frame | share |",
        "|---|---:|---:|",
    ]
    phases = sorted(result["phases"].items(), key=lambda kv: -kv[1])
    lines += [f"| {key} | {s * per:.2f} | {100 * s / wall:.0f}% |" for key, s in phases]
    update_s = result["phases"]["update"]
    buckets = sorted(result["update_buckets"].items(), key=lambda kv: -kv[1])
    buckets.append(("python/dispatch overhead", update_s - sum(dict(buckets).values())))
    ops = sorted(result["update_ops"].items(), key=lambda kv: -kv[1])[:top]
    for title, rows in (("bucket", buckets), ("op", ops)):
        lines += ["", f"| update: {title} | ms/frame | share of update |", "|---|---:|---:|"]
        lines += [f"| {key} | {s * per:.2f} | {100 * s / update_s:.0f}% |" for key, s in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torso", nargs="+", default=["ours"], choices=["ours", "ours_mlp"])
    parser.add_argument("--frames", type=int, default=200, help="profiled steady frames")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--hidden", type=int, nargs="+", default=list(HIDDEN))
    parser.add_argument("--batch-size", type=int, default=BATCH)
    args = parser.parse_args()
    hidden = tuple(args.hidden)
    with process_settings(args.threads):
        print(
            f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), hidden {hidden}, "
            f"batch {args.batch_size}, {args.frames} profiled frames after {args.frames} "
            "unprofiled\n"
        )
        for name in args.torso:
            result = profile_collection(name, args.frames, hidden, args.batch_size)
            print(markdown(name, result, args.frames))


if __name__ == "__main__":
    main()
