"""Critic diagnostics of trained runs on a mixture dataset: Spearman rho of Q with the
discounted return-to-go of the data, and P(Q(s, a_expert) > Q(s, a_source)) at the states of the
own expert's successful episodes (`cvl_eval.analysis.critic_diagnostics`).

Run (any number of run folders or checkpoint folders; runs without a critic, BC and filtered BC,
are skipped with a message):

    ./pants run benchmarks/critic_diagnostics.py -- \\
        --run runs/cvl/drawer-open-v3/seed_0 runs/cql/drawer-open-v3/seed_0 \\
        --dataset data/drawer-open-v3 --out diagnostics.json [--rollouts 3]

or ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval
python benchmarks/critic_diagnostics.py ...``. Prints one table per run; ``--out`` gets
``{run: result}`` as JSON (``{"skipped": reason}`` for a run without a critic), written
atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.critic_diagnostics import EARLY_STEPS, diagnose, format_diagnostics


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run",
        type=Path,
        nargs="+",
        required=True,
        metavar="DIR",
        help="run folder(s) (their final/ or latest checkpoint) or checkpoint folder(s)",
    )
    parser.add_argument(
        "--dataset",
        type=Path,
        required=True,
        metavar="DIR",
        help="the mixture dataset the runs were trained on",
    )
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.json")
    parser.add_argument(
        "--num-samples",
        type=int,
        default=4000,
        help="data transitions for the correlation with the return-to-go",
    )
    parser.add_argument(
        "--num-states", type=int, default=1500, help="expert states for the counterfactual ranking"
    )
    parser.add_argument(
        "--num-futures",
        type=int,
        default=4096,
        help="future states of CVL's direct (Monte-Carlo) estimator",
    )
    parser.add_argument(
        "--rollouts",
        type=int,
        default=0,
        help="also roll out the policy for this many episodes and compare, at its own states, "
        "Q of its action with Q of the scripted expert's and of uniform actions "
        "(cvl_eval.analysis.on_policy_critic)",
    )
    parser.add_argument("--early-steps", type=int, default=EARLY_STEPS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    results: dict[str, dict] = {}
    for run in args.run:
        try:
            result = diagnose(
                run,
                args.dataset,
                args.num_samples,
                args.num_states,
                args.num_futures,
                args.seed,
                args.early_steps,
                args.device,
                args.rollouts,
            )
        except ValueError as error:  # no critic (BC), or no successful expert episode
            print(f"{run}: skipped: {error}\n")
            results[str(run)] = {"skipped": str(error)}
            continue
        print(format_diagnostics(result) + "\n")
        results[str(run)] = result
    if args.out is not None:
        print(f"wrote {write_json_atomic(args.out, results, durable=False)}")


if __name__ == "__main__":
    main()
