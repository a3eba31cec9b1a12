"""Per-seed throughput of K seeds in one `VectorisedLearner` against K separate learners.

Same data, sizes and thread count for both; each step of a seed is its own sampler's batch plus
one update (the vectorised learner: K batches, stacked, one vmapped update). "Separate" is K
ordinary learners stepped one after another in the same process and thread, i.e. what K
independent runs sharing that core get per seed; its per-seed rate is the single-learner rate
divided by K. Contenders alternate for ``rounds`` rounds of ``seconds`` each; the table shows
median per-seed steps/s and the ratio vectorised / separate (> 1: vectorising pays).

The ceiling column bounds that ratio on this machine: vectorising cannot remove a seed's matmul
FLOPs (each seed has its own weights), so per seed it is at best ``peak / flops`` steps/s, with
``flops`` one learner's update counted by ``FlopCounterMode`` and ``peak`` the best GEMM rate of
the networks' shapes at this thread count (`flop_bound`); ceiling = that bound / the separate
per-seed rate (both divided by K, so the same for every K). A learner already near its FLOP
bound alone has little to gain from vectorising on this CPU; a small, overhead-bound one has.

Default sizes are the `paper mixed` preset's (128 x 128, batch 256); ``--hidden 256 256
--batch 512`` gives the paper's. CQL is timed after its warm start (``policy_eval_start=0``),
CVL with uniform anchors (the preset's ``sampler_mode``). Run (repository root)::

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos \\
        python benchmarks/bench_seeds.py --dataset DIR [--ks 1 2 5 10] [--algo bc] [--device cuda]

``DIR`` is any cvl_data state dataset, e.g. ``python -m cvl_eval generate --tasks drawer-open
--kind mixture --episodes 100 --out-dir DIR``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from cvl_algos.malloc import retain_freed_memory
from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.flop_bound import gemm_flops_per_s, synchronize, update_flops  # noqa: E402


def separate(algo: str, dataset, k: int, overrides: dict, device: str) -> Callable[[], None]:
    """K ordinary learners (seeds 0..K-1), each with its own sampler: one step of each."""
    from cvl_algos import make_learner

    spec = dataset.spec
    learners = [
        make_learner(algo, spec.obs_shape, spec.action_shape[0], device, seed=s, **overrides)
        for s in range(k)
    ]
    samplers = [lr.make_sampler(dataset, device, s) for s, lr in enumerate(learners)]

    def step() -> None:
        for learner, sampler in zip(learners, samplers, strict=True):
            learner.update(sampler.sample())

    return step


def vectorised(
    algo: str, dataset, k: int, overrides: dict, device: str, compile: bool = False
) -> Callable[[], None]:
    """One `VectorisedLearner` of seeds 0..K-1, each seed with its own sampler."""
    from cvl_algos import make_learner
    from cvl_algos.vectorised import VectorisedLearner

    spec = dataset.spec
    learners = [
        make_learner(algo, spec.obs_shape, spec.action_shape[0], device, seed=s, **overrides)
        for s in range(k)
    ]
    samplers = [lr.make_sampler(dataset, device, s) for s, lr in enumerate(learners)]
    vector = VectorisedLearner(learners, compile=compile)

    def step() -> None:
        vector.update([sampler.sample() for sampler in samplers])

    return step


def flop_bound(algo: str, dataset, overrides: dict, device: str) -> tuple[float, float]:
    """(one update's GFLOP, steps/s at the FLOP bound) of one learner of ``algo``."""
    from cvl_algos import make_learner

    spec = dataset.spec
    learner = make_learner(algo, spec.obs_shape, spec.action_shape[0], device, **overrides)
    batch = learner.make_sampler(dataset, device, 0).sample()
    for _ in range(2):  # past lazy set-up (e.g. the first update's recording)
        learner.update(batch)
    flops = update_flops(lambda: learner.update(batch))
    hidden, rows = overrides["hidden"][0], overrides["batch_size"]
    peak = gemm_flops_per_s([(rows, hidden, hidden), (31 * rows, hidden, hidden)], device=device)
    return flops / 1e9, peak / flops


def rate(step: Callable[[], None], seconds: float, device: str) -> float:
    """Steps per second of ``step`` over about ``seconds`` (CUDA: until its queue is done)."""
    synchronize(device)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        count += 1
    synchronize(device)
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True, help="a cvl_data state dataset folder")
    parser.add_argument("--algo", default="bc", help="bc, cql, cvl, cvl_mc, ...")
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (data and learners)")
    parser.add_argument(
        "--compile", action="store_true", help="torch.compile the vectorised update (not timed)"
    )
    args = parser.parse_args()
    with process_settings(args.threads):  # threads, and malloc as training sets it
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark, under the process settings training uses (`cvl_algos.runtime`)."""
    from cvl_data import open_dataset

    dataset = open_dataset(args.dataset)
    overrides = {"hidden": tuple(args.hidden), "batch_size": args.batch}
    if args.algo.startswith("cql"):
        overrides["policy_eval_start"] = 0  # the CQL actor loss, not the BC warm start
    if args.algo.startswith("cvl"):
        overrides["sampler_mode"] = "uniform"  # as the paper-mixed preset
    print(
        f"torch {torch.__version__}, {args.device}, {args.threads} thread(s), {args.algo}, hidden "
        f"{tuple(args.hidden)}, batch {args.batch}, {args.rounds} rounds x {args.seconds} s, "
        f"vectorised update {'compiled' if args.compile else 'eager'}"
        f", malloc retains freed memory: {retain_freed_memory()}"
    )
    gflop, bound = flop_bound(args.algo, dataset, overrides, args.device)
    print(f"one update {gflop:.3f} GFLOP; FLOP bound {bound:.1f} steps/s per seed")
    print(f"{'K':>3} {'separate/seed':>14} {'vectorised/seed':>16} {'ratio':>7} {'ceiling':>8}")
    for k in args.ks:
        steps = {"separate": separate(args.algo, dataset, k, overrides, args.device)}
        steps["vectorised"] = vectorised(
            args.algo, dataset, k, overrides, args.device, args.compile
        )
        for step in steps.values():  # warm-up: the first vectorised update records its draws
            for _ in range(3):  # (and compiles, with --compile)
                step()
        rates: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(args.rounds):
            for name, step in steps.items():
                rates[name].append(rate(step, args.seconds, args.device))  # steps of every seed
        sep = statistics.median(rates["separate"])
        vec = statistics.median(rates["vectorised"])
        ceiling = bound / k / sep
        print(f"{k:>3} {sep:>14.1f} {vec:>16.1f} {vec / sep:>6.2f}x {ceiling:>7.2f}x")


if __name__ == "__main__":
    main()
