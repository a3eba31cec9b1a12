"""The quickstart: one Meta-World task, a small mixed-quality dataset, CVL vs BC vs random, on CPU.

`quickstart(QuickstartConfig())` (``./pants run experiments:quickstart``):

1. generates a mixed-quality dataset on the task (`cvl_eval.datagen.behaviours`: the task's
   default mixture from `cvl_eval.datagen.mixed_suite`, a quarter of the episodes from the noisy
   scripted expert, the rest from other tasks' experts and random actions, so cloning the data
   fails and the rewards have to be used); ``data="scripted"`` gives the former noisy-expert
   dataset (`cvl_eval.datagen.scripted`), BC's best case;
2. trains CVL and BC on it (`cvl_eval.training`: progress bars, TensorBoard/CSV logs, periodic
   evaluation, checkpoints);
3. evaluates a uniform-random policy on the same evaluation episodes;
4. writes the report (`cvl_eval.analysis.report`): per-task tables, learning curves, the rliable
   interval plot (over evaluation episodes: one seed each) and ``summary.json``; prints a
   summary.

Everything lands in ``out_dir``; running it again continues (finished stages are skipped).
Measured numbers: docs/results.md, "The quickstart"; see `QUICKSTART_CVL_OVERRIDES` and
`QUICKSTART_MIXED_OVERRIDES` for the CVL settings.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.envs.make import config_name, is_metaworld, require_canonical
from cvl_eval.errors import ConfigError
from cvl_eval.runs.folder import RunFolder
from cvl_eval.runs.index import write_policy_run
from cvl_eval.training.checks import check_run_folder, learner_overrides
from cvl_eval.training.config import TrainConfig

__all__ = [
    "QUICKSTART_CVL_OVERRIDES",
    "QUICKSTART_MIXED_OVERRIDES",
    "QuickstartConfig",
    "format_summary",
    "quickstart",
]

QUICKSTART_CVL_OVERRIDES: tuple[str, ...] = (
    'sampler_mode="uniform"',
    "normalize_q=true",
    "num_action_samples=4",
    "num_rff_features=512",
)
"""CVL settings of the quickstart (the rest, lambda_BC = 0.1 included, are the paper's
`cvl_algos.CVLConfig`), chosen by measurement on drawer-open (20 noisy-expert episodes, CPU,
128 x 128 networks, batch 256, lr 1e-3):

- Q normalised per batch in the policy loss (TD3+BC style; a switch DESIGN.md sec. 2 allows).
  The paper's raw Q_NCE is ~1e3 here and dwarfs the BC term: after 8000 steps that run was at
  return 380 and 0% success (random: ~590, 0%), while the normalised one reached 100% success
  by step 3000 and held 80-100% to step 8000;
- uniform batches (as BC's) instead of one whole episode per batch;
- 4 action samples (paper: 10) and 512 random features (default 1024) make a step cheaper.
"""

QUICKSTART_MIXED_OVERRIDES: dict[str, tuple[str, ...]] = {
    "cvl_mc": (
        "temperature=0.1",
        "self_normalized=true",
        "policy_extraction=ddpgbc",
        "bc_alpha=0.3",
        "policy_ema_tau=0.001",
        "action_contrast_weight=1.0",
        "action_contrast_negatives=8",
        'action_contrast_source="policy_uniform"',
        "return_weight_temperature=0.3",
        'return_weight_baseline="start_state"',
        "bc_q_cap=true",
        "bc_q_cap_neighbours=8",
    ),
    "cvl": (
        "temperature=0.1",
        "self_normalized=true",
        'rff_kind="positive"',
        "num_rff_features=4096",
        "policy_extraction=ddpgbc",
        "bc_alpha=0.3",
        "policy_ema_tau=0.001",
    ),
}
"""Applied before ``cvl_overrides`` on mixed-quality data, as in the ``mixed`` paper preset
(`cvl_eval.pipelines.preset_settings.MIXED_OVERRIDES`, which documents the measurements): the
self-normalised Q estimate, a critic at temperature 0.1 (paper: 1) and DDPG+BC extraction at
alpha 0.3 (paper: the KL form) acting with the polyak average of the policy (tau 0.001;
paper: the trained policy) for both CVL estimators, for CVL with RFF 4096 positive random
features (FAVOR+; paper: trigonometric), and for CVL without RFF a critic term that tells the
data's action apart from 8 others at the same state and future: the policy's mode, 3 of its
samples and 4 uniform actions (paper: no such term; `CVLConfig.action_contrast_source`
"policy_uniform"; each CVL update 1.85x as costly as without the term; with it 100% / 100% / 100%
success on seeds 0 / 1 / 2, each at 100% from 4k steps, against 100% / 90% / 100% and 80% reached
at 6k / 7k / 5k with 8 uniform actions, "uniform", the source before 2026-12-07), with anchors
drawn by their episode's return advantage over the start (T = 0.3) and DDPG+BC's Q term capped
at the best Q of the data at the 8 nearest states of other episodes (paper: uniform anchors, no
cap; with them and uniform negatives 100% / 90% / 100% success on seeds 0 / 1 / 2, 80% reached
at 6k / 7k / 5k steps, 1-3k later than with the term alone; the presets' sharper T = 0.2,
`preset_settings.PRESET_RETURN_WEIGHT_TEMPERATURE`, ends this mixture's 8k steps at 80% / 30% /
50%, so the quickstart keeps 0.3). On the quickstart's own mixture (seeds 0 / 1 / 2, final 10 episodes): DDPG+BC at 0.3 with the average 100% / 100% / 100% success, without it 100% /
100% / 80%, the KL form 20% / 80% / 80%, the flow policy 70% / 100% / 100%, DDPG+BC at 0.1
0% / 80% / 70%; BC 0% on every seed."""


@dataclass(frozen=True)
class QuickstartConfig:
    """The quickstart's knobs; the defaults are the measured CPU budget (docs/results.md, "The
    quickstart")."""

    task: str = "drawer-open"
    """Meta-World task (with or without ``-v3``; kept canonical, with it)."""
    out_dir: str = "runs/quickstart"
    """Everything goes here: ``data/``, ``runs/``, ``report/``, ``summary.json``."""
    data: Literal["mixture", "scripted"] = "mixture"
    """``mixture``: the task's mixed-quality dataset (`cvl_eval.datagen.mixed_suite`; ``sources``
    to choose your own); ``scripted``: the noisy scripted expert alone (BC's best case)."""
    episodes: int = 40
    """Episodes of the dataset (500 steps each)."""
    sources: tuple[str, ...] = ()
    """mixture: behaviour sources (``expert,weight=0.25 expert:drawer-close,weight=0.75``...);
    empty: the task's default mixture."""
    noise_sigma: float = 0.3
    """scripted: std of the Gaussian noise added to the expert's actions."""
    epsilon: float = 0.1
    """scripted: probability of a uniform-random action instead of the expert's."""
    cvl_algorithm: Literal["cvl", "cvl_mc"] = "cvl_mc"
    """Which CVL: ``cvl_mc`` (Q by the direct Monte-Carlo estimate, Eq. 11) or ``cvl`` (random
    Fourier features, Eq. 12)."""
    steps: int = 8000
    """Gradient steps of CVL and of BC."""
    hidden: tuple[int, ...] = (128, 128)
    """Hidden widths of every network (paper: 256 x 256)."""
    batch_size: int = 256
    """Batch size of CVL and BC (paper: 512; CVL 500)."""
    lr: float = 1e-3
    """Adam learning rate of CVL and BC (paper: 3e-4)."""
    cvl_overrides: tuple[str, ...] = QUICKSTART_CVL_OVERRIDES
    """CVL config overrides (``key=value``); see `QUICKSTART_CVL_OVERRIDES`."""
    eval_every: int = 1000
    """Evaluation interval (gradient steps) for the learning curves."""
    eval_episodes: int = 10
    """Episodes per evaluation (the same episode seeds for every policy)."""
    eval_max_steps: int | None = None
    """Optional episode step limit of evaluations (tests); the task's own is 500."""
    seed: int = 0
    """Seeds the dataset, the learners and the random policy."""
    threads: int = 1
    """torch CPU threads. 1 by default: on a quiet 2-core machine 2 threads were only ~8% faster
    (201 s vs 217 s in total), but when the other core is busy 2 threads were 20-30x slower than 1
    (measured 2 vs 52 steps/s for CVL)."""
    bootstrap_reps: int = 2000
    """Bootstrap replications of the rliable intervals."""
    progress: bool = True
    """Progress bars."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", config_name(self.task))


def _check(config: QuickstartConfig) -> str:
    try:
        task = require_canonical(config.task)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if not is_metaworld(task):
        raise ConfigError(f"the quickstart runs on Meta-World tasks, not {task}")
    for name in ("episodes", "steps", "eval_episodes", "threads", "batch_size"):
        if getattr(config, name) < 1:
            raise ConfigError(f"{name} must be >= 1, got {getattr(config, name)}")
    if config.seed < 0:
        raise ConfigError(f"seed must be >= 0, got {config.seed}")
    if config.cvl_algorithm not in QUICKSTART_MIXED_OVERRIDES:
        raise ConfigError(f"cvl_algorithm must be 'cvl' or 'cvl_mc', got {config.cvl_algorithm!r}")
    if config.data not in ("mixture", "scripted"):
        raise ConfigError(f"data must be 'mixture' or 'scripted', got {config.data!r}")
    from cvl_eval.datagen.dispatch import check_generate

    check_generate(_generate_config(config, task))
    return task


def _check_neighbours(config: QuickstartConfig, overrides: dict[str, Any]) -> None:
    """The dataset will have ``bc_q_cap_neighbours`` steps outside any one episode (its episodes
    are Meta-World's 500 steps each), where CVL caps its policy step's Q at each state's nearest
    steps of other episodes."""
    from cvl_eval.datagen.behaviours import METAWORLD_EPISODE_STEPS

    k = overrides.get("bc_q_cap_neighbours") or 0
    others = (config.episodes - 1) * METAWORLD_EPISODE_STEPS
    if k > others:
        least = 1 + -(-k // METAWORLD_EPISODE_STEPS)
        raise ConfigError(
            f"episodes must be >= {least} with CVL's bc_q_cap_neighbours={k} (the cap searches "
            f"the {k} nearest steps of other episodes), got {config.episodes}; or add "
            "bc_q_cap_neighbours=0 to cvl_overrides"
        )


def _train_config(config: QuickstartConfig, task: str, algorithm: str, root: Path) -> TrainConfig:
    return TrainConfig(
        dataset=str(root / "data" / task),
        out_dir=str(root / "runs" / algorithm),
        algorithm=algorithm,
        seed=config.seed,
        steps=config.steps,
        hidden=config.hidden,
        batch_size=config.batch_size,
        overrides=(f"lr={config.lr}", *_cvl_overrides(config, algorithm)),
        log_every=100,
        eval_every=config.eval_every,
        eval_episodes=config.eval_episodes,
        eval_max_steps=config.eval_max_steps,
        checkpoint_every=1000,
        resume=True,
        progress=config.progress,
    )


def quickstart(config: QuickstartConfig = QuickstartConfig()) -> dict[str, Any]:  # noqa: B008
    """Run the quickstart; returns (and writes to ``summary.json``) the numbers and file paths."""
    import torch

    task = _check(config)
    root = Path(config.out_dir)
    algorithms = (config.cvl_algorithm, "bc")
    for algorithm in algorithms:  # bad learner flags or a changed config: fail before work
        train_config = _train_config(config, task, algorithm, root)
        _check_neighbours(config, learner_overrides(train_config))
        check_run_folder(train_config, RunFolder(train_config.out_dir))
    torch.set_num_threads(config.threads)
    stages = _Stages(time.monotonic())
    with stages.stage(
        "dataset_s", f"1/4 {_data_name(config)}: {config.episodes} episodes of {task}"
    ):
        generation = _dataset(config, task, root)
    results = {}
    for index, algorithm in enumerate(algorithms):
        title = f"{2 + index}/4 training {algorithm.upper()}: {config.steps} steps on CPU"
        with stages.stage(f"{algorithm}_s", title):
            results["cvl" if algorithm.startswith("cvl") else algorithm] = _train(
                config, task, algorithm, root
            )
    with stages.stage("random_and_report_s", "4/4 random policy, report"):
        summary_report = _random_and_report(config, task, root)
    stages.timings["total_s"] = time.monotonic() - stages.started
    summary = _summary(config, task, root, generation, results, summary_report, stages.timings)
    write_json_atomic(root / "summary.json", summary)
    print(format_summary(summary), flush=True)
    return summary


class _Stages:
    """Timed, announced stages of the quickstart."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, key: str, title: str) -> Iterator[None]:
        print(f"\n[{time.monotonic() - self.started:6.1f}s] {title}", flush=True)
        tick = time.monotonic()
        yield
        self.timings[key] = time.monotonic() - tick


def _cvl_overrides(config: QuickstartConfig, algorithm: str) -> tuple[str, ...]:
    """CVL's overrides: the mixed-data settings (on a mixture), then ``cvl_overrides``."""
    if not algorithm.startswith("cvl"):
        return ()
    mixed = QUICKSTART_MIXED_OVERRIDES[algorithm] if config.data == "mixture" else ()
    return (*mixed, *config.cvl_overrides)


def _data_name(config: QuickstartConfig) -> str:
    return "mixed-quality dataset" if config.data == "mixture" else "noisy-expert dataset"


def _generate_config(config: QuickstartConfig, task: str):
    """The quickstart's dataset as a `cvl_eval.datagen.dispatch.GenerateConfig`."""
    from cvl_eval.datagen.dispatch import GenerateConfig

    return GenerateConfig(
        tasks=(task,),
        kind=config.data,
        episodes=config.episodes,
        sources=config.sources,
        noise_sigma=config.noise_sigma,
        epsilon=config.epsilon,
        seed=config.seed,
        progress=config.progress,
    )


def _dataset(config: QuickstartConfig, task: str, root: Path):
    from cvl_eval.datagen.dispatch import generate_task

    return generate_task(_generate_config(config, task), task, root / "data" / task)


def _train(config: QuickstartConfig, task: str, algorithm: str, root: Path) -> dict[str, Any]:
    from cvl_eval.training.loop import train
    from cvl_eval.training.plan import validate

    train_config = _train_config(config, task, algorithm, root)
    validate(train_config)  # fails now, before any training, on a bad flag
    return train(train_config)


def _random_and_report(config: QuickstartConfig, task: str, root: Path) -> dict[str, Any]:
    """The random policy's run folder (same evaluation episodes), then the report of all three."""
    from cvl_eval.analysis.report import ReportConfig, report
    from cvl_eval.rollout.evaluate import evaluate_policy, random_policy

    action_dim = 4
    random_result = evaluate_policy(
        task,
        random_policy(action_dim, seed=config.seed),
        config.eval_episodes,
        seed=TrainConfig.eval_seed,
        max_steps=config.eval_max_steps,
    )
    write_policy_run(
        root / "runs" / "random", "random", task, random_result, config.seed, "uniform actions"
    )
    return report(
        ReportConfig(
            runs=(str(root / "runs"),),
            out_dir=str(root / "report"),
            algorithms=(config.cvl_algorithm, "bc", "random"),
            bootstrap_reps=config.bootstrap_reps,
            episodes_as_runs=True,
            title=f"Quickstart: CVL vs BC vs random on {task}",
        )
    )


def _summary(config, task, root, generation, results, summary_report, timings) -> dict[str, Any]:
    """What ``summary.json`` holds: the dataset, each policy's final numbers, timings, files."""
    policies = {
        "cvl": results["cvl"]["final_eval"],
        "bc": results["bc"]["final_eval"],
        "random": RunFolder(root / "runs" / "random").read_results()["final_eval"],
    }
    files = summary_report["files"]
    return {
        "task": task,
        "dataset": _dataset_summary(config, root / "data" / task, generation),
        "cvl_algorithm": config.cvl_algorithm,
        "steps": config.steps,
        "policies": {
            name: {
                "return": e["mean_return"],
                "return_std": e["std_return"],
                "success": e["success_rate"],
                "normalized": e["mean_normalized_return"],
                "episodes": len(e["returns"]),
            }
            for name, e in policies.items()
        },
        "cvl_beats_random": bool(
            policies["cvl"]["mean_return"] > policies["random"]["mean_return"]
        ),
        "cvl_beats_bc": bool(policies["cvl"]["mean_return"] > policies["bc"]["mean_return"]),
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "files": {
            "summary": str(root / "summary.json"),
            "learning_curves": files.get("learning_curves_png"),
            "rliable_intervals": files["rliable_aggregates_png"],
            "table": files["table_md"],
            "report": files["report_md"],
            "runs": str(root / "runs"),
            "tensorboard": f"tensorboard --logdir {root / 'runs'}",
        },
        "config": to_json_data(config),
    }


def _dataset_summary(config: QuickstartConfig, path: Path, generation) -> dict[str, Any]:
    out = {
        "path": str(path),
        "kind": config.data,
        "episodes": generation.num_episodes,
        "transitions": generation.num_steps,
    }
    if config.data == "mixture":
        from cvl_data import open_dataset
        from cvl_eval.datagen.behaviours import source_table

        out["sources"] = source_table(open_dataset(path))
    else:
        out.update(noise_sigma=config.noise_sigma, epsilon=config.epsilon)
    return out


def format_summary(summary: dict[str, Any]) -> str:
    """The short text summary the quickstart prints."""
    data = summary["dataset"]
    lines = [
        "",
        f"Quickstart on {summary['task']}: {data['episodes']} episodes of "
        f"{'mixed-quality' if data.get('kind') == 'mixture' else 'noisy-expert'} data "
        f"({data['transitions']} transitions), {summary['steps']} gradient steps, "
        f"{summary['timings_s']['total_s']:.0f} s in total",
        "",
        *_source_lines(data),
        f"  {'policy':<8}{'return':>16}{'success':>10}{'normalized':>12}",
    ]
    for name, p in summary["policies"].items():
        ret = f"{p['return']:.0f} ± {p['return_std']:.0f}"
        norm = "-" if p["normalized"] is None else f"{p['normalized']:.2f}"
        label = summary.get("cvl_algorithm", "cvl") if name == "cvl" else name
        lines.append(f"  {label.upper():<8}{ret:>16}{p['success']:>10.0%}{norm:>12}")
    cvl = summary["policies"]["cvl"]
    lines.append("")
    for other, key in (("random", "cvl_beats_random"), ("bc", "cvl_beats_bc")):
        rival = summary["policies"][other]
        verdict = "beats" if summary.get(key) else "does NOT beat"
        lines.append(
            f"CVL {verdict} {other.upper()} on return: {cvl['return']:.0f} vs "
            f"{rival['return']:.0f}, success {cvl['success']:.0%} vs {rival['success']:.0%} "
            f"({cvl['episodes']} evaluation episodes each)."
        )
    lines += ["", "Files:"]
    for key in ("summary", "report", "table", "learning_curves", "rliable_intervals", "runs"):
        if summary["files"].get(key):
            lines.append(f"  {key:<18} {summary['files'][key]}")
    lines.append(f"  {'tensorboard':<18} {summary['files']['tensorboard']}")
    return "\n".join(lines)


def _source_lines(data: dict[str, Any]) -> list[str]:
    """The dataset's per-source table (mixtures), then a blank line."""
    if not data.get("sources"):
        return []
    from cvl_eval.datagen.behaviours import format_source_table

    return ["Dataset by source:", format_source_table(data["sources"]), ""]
