"""Same-run microbenchmark of SAC update variants: ms per update (sampling included), interleaved.

Setup: synthetic Meta-World-sized transitions (obs 39, actions 4) in a `ReplayBuffer` of 5000,
1 torch thread, `process_settings` as SAC generation sets it, each variant its own learner
(seed 0) and sampler generator. Each round runs ``updates`` updates of every variant in turn;
the table gives the median ms/update over the rounds (the first round, untimed, warms up) and
each variant's speed against ``reference``. Times are the thread's CPU time
(``time.thread_time``): on a shared machine, time spent waiting for a core is not counted, so
neighbours' load moves the numbers much less than wall time (cache sharing still counts).
Variants (`benchmarks/sac_update_variants.py`): ``current``, ``reference``, ``no_cat``,
``compiled``, ``current_mlp``, ``manual_mlp``, ``fused_mlp``, ``manual_dense``.

It also prints each variant's largest critic-parameter difference from the first variant of the
same torso after all rounds (0 where the arithmetic is the same) and ``ops``, the ATen operators
one update dispatches (`flop_bound.dispatched_ops`; the batch's sampling not included).

``--check`` instead runs `benchmarks/sac_update_checks.py` (no timing): the manual variants'
and the fused variant's gradients and steps against their autograd counterparts; status 1 when
a gradient is off.

Run from the repository root:

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos \\
        python benchmarks/bench_sac_update_variants.py [--hidden 128 128] [--batch-size 256] \\
        [--rounds 15] [--variants current reference no_cat] [--check]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.flop_bound import dispatched_ops  # noqa: E402
from benchmarks.sac_update_checks import run_checks  # noqa: E402
from benchmarks.sac_update_variants import (
    VARIANTS,
    make_buffer,
    make_variant,
    patched,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds")
    parser.add_argument("--updates", type=int, default=30, help="updates per variant per round")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS[:3]), choices=VARIANTS)
    parser.add_argument(
        "--check",
        action="store_true",
        help="check manual_mlp's, manual_dense's and fused_mlp's gradients and steps, no timing",
    )
    parser.add_argument("--check-updates", type=int, default=100, help="updates --check runs")
    args = parser.parse_args()
    hidden, batch = tuple(args.hidden), args.batch_size
    if args.check:
        with process_settings(1):
            passed = run_checks(hidden, batch, args.check_updates)
        sys.exit(0 if passed else 1)
    with process_settings(1):
        buffer = make_buffer()
        learners = {name: make_variant(name, hidden, batch) for name in args.variants}
        generators = {name: torch.Generator().manual_seed(1) for name in args.variants}
        seconds: dict[str, list[float]] = {name: [] for name in args.variants}
        for round_ in range(args.rounds + 1):
            for name, learner in learners.items():
                with patched(name):
                    start = time.thread_time()
                    for _ in range(args.updates):
                        learner.update(buffer.sample(batch, generators[name]))
                    if round_:
                        seconds[name].append((time.thread_time() - start) / args.updates)
        params = {
            n: torch.cat([p.detach().flatten() for p in learners[n].critic.parameters()])
            for n in args.variants
        }
        one_batch = buffer.sample(batch, torch.Generator().manual_seed(2))
        ops = {}
        for name, learner in learners.items():
            with patched(name):
                ops[name] = dispatched_ops(lambda learner=learner: learner.update(one_batch))
    print(
        f"torch {torch.__version__}, 1 thread, SAC hidden {hidden}, batch {batch}, "
        f"{args.rounds} rounds x {args.updates} updates per variant (+1 untimed round)\n"
    )
    base = statistics.median(seconds.get("reference", seconds[args.variants[0]]))
    print(
        f"{'variant':<12}{'CPU ms/update':>14}{'min':>8}{'max':>8}{'speed':>8}{'max |dparam|':>14}"
        f"{'ops':>6}"
    )
    for name in args.variants:
        values = seconds[name]
        same = [n for n in args.variants if params[n].shape == params[name].shape][0]
        diff = (params[name] - params[same]).abs().max().item()  # against the first same torso
        print(
            f"{name:<12}{1e3 * statistics.median(values):>14.3f}{1e3 * min(values):>8.3f}"
            f"{1e3 * max(values):>8.3f}{base / statistics.median(values):>7.3f}x{diff:>14.2e}"
            f"{ops[name]:>6}"
        )


if __name__ == "__main__":
    main()
