"""The commands of cvl-eval: one function per command, behind every way of calling it.

``cvl-train``, ``cvl-generate``, ... (console scripts of the pip-installed package,
``[project.scripts]`` in pyproject.toml), ``python -m cvl_eval <command>`` (`cvl_eval.__main__`)
and ``./pants run experiments:<command>`` (``experiments/<command>.py``, one line each) all call
the functions below. Each parses its flags into its config with `cvl_eval.cli.run` (tyro; the
function's docstring is the ``--help`` text), does the work and returns the exit code: 0, 1 for a
failed sweep, 2 for a `ConfigError`, 130 for a stopped run. The work is imported on call, so a
command loads only what it runs.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Sequence

from cvl_eval.cli import run

__all__ = [
    "COMMANDS",
    "convert",
    "evaluate",
    "generate",
    "paper",
    "quickstart",
    "report",
    "sweep",
    "train",
]

Argv = Sequence[str] | None


def _doc(command: Callable) -> str:
    return inspect.cleandoc(command.__doc__ or "")


def train(argv: Argv = None) -> int:
    """`cvl-train --dataset data/drawer-open-v3 --out-dir runs/cvl --algorithm cvl`.

    Trains one offline algorithm (bc, cql, cql_uds, cvl, cvl_mc; CVL pretrained on reward-free
    related-task data with `--pretrain-datasets`) on a state or pixel dataset, with a progress
    bar, TensorBoard and CSV logs, periodic evaluation and checkpoints in the run folder.
    `--resume` continues a stopped run exactly (Ctrl-C stops gracefully after a checkpoint).
    Learner hyperparameters: `--hidden`, `--batch-size`, `--overrides key=value ...` (each value
    read as its field's type). Prints a JSON summary of the run.
    """
    from cvl_eval.training.config import TrainConfig
    from cvl_eval.training.loop import train as train_run

    def work(config: TrainConfig) -> str:
        results = train_run(config)
        summary = {k: results[k] for k in ("label", "task", "seed", "steps", "wall_time_s")}
        summary.update({k: results["final_eval"][k] for k in ("mean_return", "success_rate")})
        return json.dumps({**summary, "run": config.out_dir})

    return run(TrainConfig, work, argv, _doc(train))


def generate(argv: Argv = None) -> int:
    """`cvl-generate --tasks drawer-open reach --out-dir data`: datasets.

    Kinds (`--kind`): `scripted` (Meta-World's scripted expert with Gaussian noise and
    epsilon-random actions; quick), `mixture` (whole episodes from several behaviours: the
    task's noisy expert, other tasks' experts in this task's environment, random actions, saved
    checkpoints; `--sources 'expert,weight=0.25' 'expert:drawer-close,weight=0.5'
    'random,weight=0.25'`, default the task's mixture of the mixed-quality suite; the per-source
    return and success are printed and kept in `generation.json`), `curriculum` (a replay-like
    buffer: the task's expert with noise and epsilon annealed from `--curriculum-sigma 1.0 0.3`
    / `--curriculum-epsilon 1.0 0.1`, random to expert, across the episodes), `noisy` (OGBench's
    noisy expert: per episode a noise std drawn from U(0, `--sigma-max`), and uniform-random
    actions with probability `--random-fraction`), `stitch` (no episode solves the task: the
    expert's approach then wrong behaviour, and the expert recorded from mid-task on; sources
    with `switch=COND>...` / `start=COND`, default `cvl_eval.datagen.hard_suite`) and `sac` (the
    paper's protocol: SAC trained online for `--frames` steps, its whole replay buffer is the
    dataset; Meta-World tasks and MountainCarContinuous-v0). `--pixels` also writes 84x84 frames
    (same episodes) to `<out-dir>/pixels/<task>`. Datasets land in `<out-dir>/<task>` (the
    `--data-root` of sweeps); an interrupted generation resumes when the command is run again
    with the same flags (other flags are refused: choose another `--out-dir`).
    """
    from cvl_eval.datagen.dispatch import GenerateConfig, generate_datasets

    return run(
        GenerateConfig, lambda c: json.dumps(generate_datasets(c), indent=1), argv, _doc(generate)
    )


def evaluate(argv: Argv = None) -> int:
    """`cvl-evaluate --checkpoint runs/cvl --episodes 20`: evaluate a learner.

    Loads a run folder's final checkpoint (or any `learner.save` folder; give `--task` when it is
    not inside a run folder), runs N episodes with fixed seeds on its task and writes the
    per-episode returns, successes and lengths as JSON (`--out`; default inside the checkpoint).
    """
    from cvl_eval.rollout.checkpoint import EvaluateConfig, evaluate_checkpoint, format_result

    return run(
        EvaluateConfig, lambda c: format_result(evaluate_checkpoint(c)), argv, _doc(evaluate)
    )


def sweep(argv: Argv = None) -> int:
    """`cvl-sweep --data-root data --out-dir runs/sweep --algorithms bc cvl --tasks drawer-open
    reach --seeds 0 1 2 --workers 2`: algorithms x tasks x seeds.

    Runs are parallel local processes (`--workers`), one folder each
    (`<out-dir>/<algorithm>/<task>/seed_<k>`); finished runs are skipped and interrupted ones
    resume when the command is run again; `index.json` / `index.csv` list the results at the end.
    `cvl_pretrained` pretrains CVL on the reward-free data of related tasks found in the data
    root. Exits 1 when some runs failed (the others complete; see their `train.log`).
    """
    from cvl_eval.pipelines.sweep import SweepConfig
    from cvl_eval.pipelines.sweep import sweep as run_sweep

    def work(config: SweepConfig) -> str:
        record = run_sweep(config)
        return (
            f"{record['runs']} runs: {len(record['skipped_finished'])} already finished, "
            f"{len(record['completed'])} completed; index: {record['index_csv']}"
        )

    return run(SweepConfig, work, argv, _doc(sweep), failure=RuntimeError)


def report(argv: Argv = None) -> int:
    """`cvl-report --runs runs/sweep --out-dir runs/sweep/report`.

    From run folders (or folders above them) to the per-task tables (Markdown + CSV, best in
    bold), learning curves and the rliable figures (aggregate intervals, performance profiles,
    probability of improvement, sample efficiency).
    """
    from cvl_eval.analysis.report import ReportConfig
    from cvl_eval.analysis.report import report as write_report

    def work(config: ReportConfig) -> str:
        files = write_report(config)["files"]
        return "\n".join(f"{name:<28} {path}" for name, path in files.items())

    return run(ReportConfig, work, argv, _doc(report))


def convert(argv: Argv = None) -> int:
    """`cvl-convert --from minari:<id or folder> --to data/<task>`: datasets in and out of ours.

    Endpoints: `minari:<id or folder>` (a local Minari dataset; as a target, an id written under
    `MINARI_DATASETS_PATH`, default `~/.minari/datasets`), a D4RL-style `<file>.npz` (both ways)
    or `<file>.hdf5` (source), and our dataset folder (one side is always ours), e.g.
    `--from data/reach-v3 --to reach.npz`, `--from hopper.hdf5 --to data/hopper --task Hopper-v5
    --env-id Hopper-v5 --action-low -1 --action-high 1`. Minari needs
    `pip install 'cvl-data[minari]'`. Prints a JSON summary (`cvl_data.convert`).
    """
    from cvl_eval.convert_args import ConvertArgs, run_convert

    return run(ConvertArgs, run_convert, argv, _doc(convert))


def quickstart(argv: Argv = None) -> int:
    """`cvl-quickstart`: CVL vs BC vs a random policy on one Meta-World task, on CPU.

    Generates a small dataset (default: drawer-open, 40 episodes of its mixed-quality mixture),
    trains CVL and BC on it, evaluates both and a random policy on the same episodes, and writes
    a run folder with metrics JSON, learning curves, an rliable interval plot and a per-task
    table; prints a summary. A few minutes on a 2-core CPU. Flags choose the task, the budget and
    the output folder, e.g. `cvl-quickstart --task reach --steps 2000 --out-dir runs/qs-reach`.
    Running it again in the same folder continues (finished stages are skipped).
    """
    from cvl_eval.pipelines.quickstart import QuickstartConfig
    from cvl_eval.pipelines.quickstart import quickstart as run_quickstart

    def work(config: QuickstartConfig) -> None:
        run_quickstart(config)  # prints its own summary

    return run(QuickstartConfig, work, argv, _doc(quickstart))


def paper(argv: Argv = None) -> int:
    """`cvl-paper <experiment> [--full]`: the paper's experiments.

    Experiments: `metaworld-states` (BC, CQL, CQL+UDS, CVL; table 3 and the rliable figures),
    `metaworld-pixels` (BC, CQL, CVL on four tasks from 84x84 images), `pretraining` (CVL
    pretrained on related tasks' reward-free data vs tabula rasa, learning curves),
    `rff-ablation` (CVL with vs without random Fourier features), `mountain-car` (Q_NCE vs SAC's
    Q heatmaps), `mixed` (every method on mixed-quality data), `hard` (every method on data
    where return filtering is not enough: stitch and noisy-expert datasets), `replay` (every
    method on SAC's whole replay buffer after 100k frames, the paper's data kind). Each runs data
    generation, a sweep and the report in `experiments_out/<experiment>` and resumes when
    re-run. The default budget is a CPU-sized subset; `--full` is the paper's (all tasks, 5
    seeds, SAC 500k-frame datasets, 100k steps). Presets and budgets:
    `cvl_eval.pipelines.paper_presets.PRESETS`.
    """
    from cvl_eval.pipelines.paper import run_paper_experiment

    def work(config) -> str:
        result = run_paper_experiment(config)
        for warning in result["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
        return json.dumps(result["report"], indent=1)

    return run(_paper_subcommands(), work, argv, _doc(paper))


def _paper_subcommands():
    """`PaperConfig` as one tyro subcommand per preset (``metaworld-states``, ...)."""
    from typing import Annotated, Union

    import tyro

    from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig

    return Union[  # noqa: UP007 - tyro's subcommands: one per preset
        tuple(
            Annotated[
                PaperConfig,
                tyro.conf.subcommand(
                    name.replace("_", "-"),
                    default=PaperConfig(experiment=name),
                    description=preset.description,
                ),
            ]
            for name, preset in PRESETS.items()
        )
    ]


COMMANDS: dict[str, Callable[[Argv], int]] = {
    "train": train,
    "generate": generate,
    "evaluate": evaluate,
    "sweep": sweep,
    "report": report,
    "quickstart": quickstart,
    "paper": paper,
    "convert": convert,
}
"""Every command by name (``python -m cvl_eval <name>``; console script ``cvl-<name>``)."""
