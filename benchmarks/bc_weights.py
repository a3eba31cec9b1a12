"""Where an advantage-weighted behaviour term puts its weight, by behaviour phase of the data
(`cvl_eval.analysis.bc_weights`): per phase (an episode's approach before its switch, the wrong
behaviour after it, the expert recorded from mid-task, or the episode's source) the share of the
anchors, their mean weight ``B softmax_b(beta z_b)`` and the share of the term's total weight.

Run (CVL run folders or checkpoint folders; the weights are computed for the given ``--beta`` and
``--baseline`` whatever the run was trained with, so runs with and without the weighting can be
compared on the same data):

    ./pants run benchmarks/bc_weights.py -- --run runs/cvl_mc/door-open-v3/seed_0 \\
        --dataset data/door-open-v3 --beta 1 --baseline mode --out weights.json

or ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval
python benchmarks/bc_weights.py ...``. ``--out`` gets ``{run: result}`` as JSON, written
atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from cvl_data.jsonio import write_json_atomic


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, nargs="+", required=True, metavar="DIR")
    parser.add_argument("--dataset", type=Path, required=True, metavar="DIR")
    parser.add_argument("--beta", type=float, default=1.0, help="the weights' inverse temperature")
    parser.add_argument("--baseline", choices=("none", "mode"), default="mode")
    parser.add_argument("--num-batches", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=256, help="the runs' training batch")
    parser.add_argument("--num-futures", type=int, default=4096, help="futures of eq. 11's Q")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.json")
    args = parser.parse_args()
    for flag in ("beta", "num_batches", "batch_size", "num_futures"):
        if not getattr(args, flag) > 0:
            parser.error(f"--{flag.replace('_', '-')} must be > 0, got {getattr(args, flag)}")
    return args


def main() -> None:
    from cvl_algos import load_learner
    from cvl_data import open_dataset
    from cvl_eval.analysis.bc_weights import behaviour_phases, behaviour_weights, weights_by_phase
    from cvl_eval.analysis.critic_diagnostics import q_function, resolve_checkpoint

    args = parse_args()
    torch.set_num_threads(args.threads)
    dataset = open_dataset(args.dataset)
    phases = behaviour_phases(dataset)
    results = {}
    for run in args.run:
        checkpoint = resolve_checkpoint(run)
        learner = load_learner(checkpoint, device="cpu", restore_global_rng=False)
        q = q_function(learner, dataset, args.num_futures, args.seed)
        index, weights = behaviour_weights(
            learner,
            q,
            dataset,
            args.num_batches,
            args.batch_size,
            args.beta,
            args.baseline,
            args.seed,
        )
        table = weights_by_phase(phases, index, weights)
        print(f"{checkpoint} (beta {args.beta}, baseline {args.baseline}, {len(index)} anchors)")
        print(f"  {'phase':36s} {'anchors':>8s} {'mean weight':>12s} {'weight share':>13s}")
        for label, row in table.items():
            print(
                f"  {label:36s} {row['anchor_share']:8.3f} {row['mean_weight']:12.3f} "
                f"{row['weight_share']:13.3f}"
            )
        results[str(run)] = {
            "checkpoint": str(checkpoint),
            "dataset": str(args.dataset),
            "beta": args.beta,
            "baseline": args.baseline,
            "anchors": len(index),
            "phases": table,
        }
    if args.out is not None:
        print(f"wrote {write_json_atomic(args.out, results, durable=False)}")


if __name__ == "__main__":
    main()
