"""A trained run's policy against acting by its critic among the data's own actions.

For a run folder (its ``final/`` checkpoint and ``config.json``) and its dataset, evaluates on
the same seeded episodes:

- ``policy``: the learner's own acting (`learner.act`, the policy's average where trained so);
- ``nearest``: the action of the nearest data state (one-nearest-neighbour cloning of all the
  data, no critic);
- ``q<k>``: the best by Q of the actions at the ``k`` nearest data states
  (`cvl_eval.analysis.neighbour_selection`), Q from the run's critic (CVL: the direct estimator
  over ``--num-futures`` data futures; CQL and IQL: the twin Q; BC and filtered BC have no
  critic and get the first two rules only);
- ``pq<k>`` (with ``--with-policy``): the same, with the learner's own action as one more
  candidate that wins ties (a search that keeps the policy's action unless the critic ranks a
  nearby data action higher).

Prints success, mean return and mean expert-normalised return per rule, and writes them (with
every episode) to ``--out`` as JSON. ``--summarise`` reads such files (one per task and seed)
instead and writes rliable's aggregates of the normalised return per rule, and P(rule >
policy), with stratified-bootstrap CIs. Run:

    ./pants run benchmarks/neighbour_selection.py -- --run runs/cvl_mc/handle-pull-v3/seed_0 \\
        --k 4 16 64 --episodes 30 --out selection.json
    ./pants run benchmarks/neighbour_selection.py -- --summarise selection_*.json --out summary.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.critic_diagnostics import q_function
from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.analysis.neighbour_selection import NeighbourIndex, neighbour_policy
from cvl_eval.rollout.evaluate import evaluate_policy


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="run folder (config.json, final/)")
    parser.add_argument("--summarise", type=Path, nargs="+", help="this script's output files")
    parser.add_argument("--dataset", type=Path, help="dataset folder (default: the run's own)")
    parser.add_argument("--k", type=int, nargs="+", default=[16], help="neighbour counts")
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--eval-seed", type=int, default=100)
    parser.add_argument("--num-futures", type=int, default=1024, help="CVL's eq. 11 futures")
    parser.add_argument(
        "--critic-runs",
        type=Path,
        nargs="+",
        help="score the candidates by the mean Q of these runs' critics (an ensemble, e.g. the "
        "other seeds on the same data) instead of the run's own",
    )
    parser.add_argument(
        "--with-policy",
        action="store_true",
        help="also the pq<k> rules: the learner's own action joins the k neighbours' actions",
    )
    parser.add_argument("--rules", nargs="+", help="evaluate only these rules (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="JSON output file")
    args = parser.parse_args()
    if (args.run is None) == (args.summarise is None):
        parser.error("give either --run (evaluate one run) or --summarise (aggregate outputs)")
    if args.summarise:
        missing = [str(path) for path in args.summarise if not path.is_file()]
        if missing:
            parser.error(f"--summarise: no such file: {missing[0]}")
        return args
    if not (args.run / "final" / "state.json").is_file():
        parser.error(f"--run: {args.run / 'final'} is not a checkpoint folder (no state.json)")
    if not (args.run / "config.json").is_file():
        parser.error(f"--run: {args.run} has no config.json (the task and dataset are read there)")
    for run in args.critic_runs or []:
        if not (run / "final" / "state.json").is_file():
            parser.error(f"--critic-runs: {run / 'final'} is not a checkpoint folder")
    if min(args.k) < 1 or args.episodes < 1 or args.num_futures < 1:
        parser.error("--k, --episodes and --num-futures must be positive")
    return args


def mean_q(runs: list[Path], dataset, num_futures: int, seed: int):
    """The mean of several runs' Q functions (`q_function` of each final checkpoint)."""
    learners = [load_learner(r / "final", device="cpu", restore_global_rng=False) for r in runs]
    functions = [q_function(learner, dataset, num_futures, seed) for learner in learners]
    return lambda obs, action: np.mean([q(obs, action) for q in functions], axis=0)


def summarise(paths: list[Path]) -> dict:
    """rliable aggregates of each rule's mean normalised return over (seeds, tasks)."""
    documents = [json.loads(path.read_text()) for path in paths]
    tasks = sorted({d["task"] for d in documents})
    rules = list(documents[0]["rules"])
    by_task = {t: [d for d in documents if d["task"] == t] for t in tasks}
    seeds = {len(runs) for runs in by_task.values()}
    if len(seeds) != 1 or any(list(d["rules"]) != rules for d in documents):
        raise SystemExit(
            f"--summarise: every task needs the same number of runs and rules, got "
            f"{ {t: len(runs) for t, runs in by_task.items()} } runs per task"
        )
    scores = {
        rule: np.array([[d["rules"][rule]["mean_normalized"] for d in by_task[t]] for t in tasks]).T
        for rule in rules
    }
    pairs = [(rule, "policy") for rule in rules if rule != "policy"]
    aggregates = aggregate_scores(scores)
    improvement = probability_of_improvement(scores, pairs=pairs)
    print(f"{'rule':>8s} {'IQM [95% CI]':>20s} {'P(rule > policy)':>20s}")
    for rule in rules:
        iqm, p = aggregates[rule]["IQM"], improvement.get(f"{rule},policy")
        ptxt = "-" if p is None else f"{p['point']:.2f} [{p['low']:.2f}, {p['high']:.2f}]"
        print(f"{rule:>8s} {iqm['point']:8.2f} [{iqm['low']:.2f}, {iqm['high']:.2f}] {ptxt:>20s}")
    return {
        "files": [str(path) for path in paths],
        "tasks": tasks,
        "scores": {rule: matrix.tolist() for rule, matrix in scores.items()},
        "aggregates": aggregates,
        "probability_of_improvement": improvement,
    }


def main() -> None:
    args = parse_args()
    if args.summarise:
        write_json_atomic(args.out, summarise(args.summarise))
        return
    torch.set_num_threads(1)
    run_config = json.loads((args.run / "config.json").read_text())
    train_config = run_config["train_config"]
    dataset = open_dataset(args.dataset or train_config["dataset"])
    learner = load_learner(args.run / "final", device="cpu", restore_global_rng=False)
    index = NeighbourIndex.from_dataset(dataset)
    rules = {"policy": learner.act, "nearest": neighbour_policy(index, 1, None)}
    try:
        if args.critic_runs:
            q = mean_q(args.critic_runs, dataset, args.num_futures, args.eval_seed)
        else:
            q = q_function(learner, dataset, num_futures=args.num_futures, seed=args.eval_seed)
        rules.update({f"q{k}": neighbour_policy(index, k, q) for k in args.k})
        if args.with_policy:
            rules.update({f"pq{k}": neighbour_policy(index, k, q, learner.act) for k in args.k})
    except ValueError as error:  # BC and filtered BC: no critic to choose with
        print(f"no Q rules: {error}")
    if args.rules:
        unknown = sorted(set(args.rules) - set(rules))
        if unknown:
            raise SystemExit(f"--rules: no rule {unknown[0]!r} for this run; have {list(rules)}")
        rules = {name: rules[name] for name in args.rules}
    task = run_config["task"]  # the run's resolved task (train_config's is None when inferred)
    results = {}
    print(f"{args.run} ({task}, {args.episodes} episodes, evaluation seed {args.eval_seed})")
    print(f"{'rule':>8s} {'success':>8s} {'return':>8s} {'normalised':>11s}")
    for name, act in rules.items():
        result = evaluate_policy(task, act, args.episodes, seed=args.eval_seed)
        normalised = result.normalized_returns()
        results[name] = {
            "success": result.success_rate,
            "mean_return": result.mean_return,
            "mean_normalized": None if normalised is None else sum(normalised) / len(normalised),
            "episodes": result.to_dict(),
        }
        row = results[name]
        norm = "-" if row["mean_normalized"] is None else f"{row['mean_normalized']:.3f}"
        print(f"{name:>8s} {row['success']:8.2f} {row['mean_return']:8.1f} {norm:>11s}", flush=True)
    document = {"run": str(args.run), "task": task, "episodes": args.episodes, "rules": results}
    if args.critic_runs:
        document["critic_runs"] = [str(run) for run in args.critic_runs]
    write_json_atomic(args.out, document)


if __name__ == "__main__":
    main()
