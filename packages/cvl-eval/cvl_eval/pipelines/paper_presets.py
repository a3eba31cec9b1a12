"""The paper's experiments as named presets (data, not code): `PRESETS`, their budgets, and
`resolve`, which applies a `PaperConfig`'s choices to one; `cvl_eval.pipelines.paper` runs them.

Each preset has a default budget (a subset sized for 2 CPU cores: 128 x 128 networks, batch
256, lr 1e-3, 5k steps, the quickstart's CVL settings `CPU_OVERRIDES`) and the paper's budget
behind ``full=True`` (256 x 256, the learners' own batch sizes and hyperparameters, 100k steps);
any field of `PaperConfig` set explicitly overrides the preset, and ``overrides`` are applied
after the budget's. The paper does not state its number of gradient steps; ``full`` uses 100k.
Per-environment settings (Mountain Car's held SAC warm-up actions and lambda_BC = 0) are not
restated here: data generation and sweeps take them from `cvl_eval.envs.defaults`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cvl_eval.datagen.hard_suite import HARD_SUITE_KINDS, HARD_SUITE_TASKS
from cvl_eval.datagen.mixed_suite import MIXED_SUITE_TASKS
from cvl_eval.envs.make import MOUNTAIN_CAR, TASK_NAMES, config_name, require_canonical
from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.preset_settings import (
    CPU_OVERRIDES,
    MIXED_OVERRIDES,
    PIXEL_OVERRIDES,
    PLAIN_CRITIC_OVERRIDES,
)
from cvl_eval.pipelines.preset_tasks import (
    PIXEL_TASKS,
    PRETRAINING_TASKS,
    PRETRAINING_TASKS_CPU,
    REPLAY_TASKS,
)

__all__ = ["CPU_OVERRIDES", "PRESETS", "Budget", "PaperConfig", "Preset", "resolve"]

DataKind = Literal["scripted", "sac", "mixture", "curriculum", "noisy", "stitch"]
"""A dataset kind of `cvl_eval.datagen.dispatch.GenerateConfig`."""


@dataclass(frozen=True)
class Budget:
    """Tasks, seeds, data and steps of one budget of a preset."""

    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    data_kind: DataKind
    task_kinds: tuple[tuple[str, DataKind], ...] = ()
    """``(task, kind)`` pairs: the data kind of the tasks listed (the others: ``data_kind``)."""
    episodes: int = 100
    frames: int = 500_000
    steps: int = 100_000
    eval_every: int = 10_000
    pretrain_steps: int | None = None
    hidden: tuple[int, ...] | None = None
    """Hidden widths (None: the learners' own, the paper's 256 x 256)."""
    batch_size: int | None = None
    """Batch size of every learner (None: the learners' own, the paper's)."""
    overrides: tuple[str, ...] = ()
    """Learner overrides of this budget (``algo:key=value``), before the preset's and the user's."""
    last_evals: int = 1
    """Evaluations each run is scored by in the report: the pooled episodes of its last
    ``last_evals`` evaluations (`cvl_eval.analysis.report.ReportConfig.last_evals`)."""
    related_kind: DataKind | None = None
    """Data kind of the related tasks' datasets (presets with related data; None: as the
    target's, `kind_of`)."""
    related_episodes: int | None = None
    """Episodes of each related task's dataset (None: ``episodes``)."""
    sac_hidden: tuple[int, ...] | None = None
    """Hidden widths of the SAC that generates ``sac`` data (None: SAC's own, the paper's)."""
    sac_batch_size: int | None = None
    """Batch size of the SAC that generates ``sac`` data (None: SAC's own, the paper's 512)."""

    def __post_init__(self) -> None:  # presets name tasks short; they are canonical from here
        object.__setattr__(self, "tasks", tuple(config_name(t) for t in self.tasks))
        kinds = tuple((config_name(t), kind) for t, kind in self.task_kinds)
        object.__setattr__(self, "task_kinds", kinds)

    def kind_of(self, task: str) -> str:
        """The data kind of the canonical ``task`` (`task_kinds`, else `data_kind`)."""
        return dict(self.task_kinds).get(task, self.data_kind)

    def data_of(self, task: str) -> tuple[str, int]:
        """(kind, episodes) of the canonical ``task``'s dataset: a task of the budget's own
        (`kind_of`, ``episodes``), or a related task's (``related_kind``, ``related_episodes``
        where set)."""
        if task in self.tasks:
            return self.kind_of(task), self.episodes
        return self.related_kind or self.kind_of(task), self.related_episodes or self.episodes


def _cpu_budget(tasks, seeds, **fields) -> Budget:
    """A default budget: 128 x 128 networks, batch 256, 5k steps, `CPU_OVERRIDES`."""
    values = {
        "data_kind": "scripted",
        "episodes": 50,
        "steps": 5_000,
        "eval_every": 1_000,
        "hidden": (128, 128),
        "batch_size": 256,
        "overrides": CPU_OVERRIDES,
    }
    values.update(fields)
    return Budget(tuple(tasks), tuple(seeds), **values)


def _suite_budget(tasks, **fields) -> Budget:
    """A default budget of the settled suites: `_cpu_budget` at 3 seeds, 100 episodes, 10k steps,
    evaluations every 2.5k (10 Meta-World episodes cost ~20 s of CPU, as much as 1k CVL updates),
    each run scored by its last 3 evaluations pooled (30 episodes): at 5k steps every
    critic-based method was still learning while filtered BC had finished (docs/results.md)."""
    values = {"episodes": 100, "steps": 10_000, "eval_every": 2_500, "last_evals": 3}
    return _cpu_budget(tasks, (0, 1, 2), **{**values, **fields})


MIXED_BUDGET = _suite_budget(MIXED_SUITE_TASKS, data_kind="mixture")
"""The mixed-quality suite's default budget (`mixed`; `rff_ablation` and `metaworld_states` run
on the same data; `metaworld_states` with the same settings, so the runs they share are the
same; `rff_ablation` without CVL's action-contrast term, `PLAIN_CRITIC_OVERRIDES`)."""


@dataclass(frozen=True)
class Preset:
    """One paper experiment."""

    description: str
    algorithms: tuple[str, ...]
    default: Budget
    full: Budget
    pixels: bool = False
    related_data: bool = False
    overrides: tuple[str, ...] = ()
    mountain_car: bool = False


SEEDS5 = (0, 1, 2, 3, 4)
SUITE_ALGORITHMS = ("cvl", "cvl_mc", "bc", "filtered_bc", "weighted_bc", "cql", "iql", "fql")
"""The learners of the `mixed` and `hard` presets (the same methods on both suites)."""

PRESETS: dict[str, Preset] = {
    "mixed": Preset(
        "Mixed-quality Meta-World data (25% the task's noisy expert, 55% other tasks' experts, 20% "
        "random): BC, filtered BC, weighted BC, CQL, IQL, FQL, CVL, CVL without RFF; per-task "
        "table, rliable IQM and probability of improvement.",
        SUITE_ALGORITHMS,
        # `MIXED_BUDGET` (`_suite_budget`); wall time on 2 cores: docs/reproducing.md.
        default=MIXED_BUDGET,
        full=Budget(MIXED_SUITE_TASKS, SEEDS5, "mixture", episodes=1000, last_evals=3),
        overrides=MIXED_OVERRIDES,
    ),
    "hard": Preset(
        "Data where return filtering is not enough: stitch datasets of drawer-open and "
        "door-open (no episode solves the task: the expert's approach then wrong behaviour, and "
        "the expert recorded from mid-task on; filtered BC fails) and noisy-expert datasets of "
        "faucet-open and reach (a per-episode noise level; cloning's best case, the control): "
        "BC, filtered BC, weighted BC, CQL, IQL, FQL, CVL, CVL without RFF; per-task table, "
        "rliable IQM and probability of improvement.",
        SUITE_ALGORITHMS,
        # The mixed preset's budget and settings, on the hard suite's data.
        default=_suite_budget(
            HARD_SUITE_TASKS,
            data_kind="stitch",
            task_kinds=HARD_SUITE_KINDS,
        ),
        full=Budget(
            HARD_SUITE_TASKS, SEEDS5, "stitch", HARD_SUITE_KINDS, episodes=1000, last_evals=3
        ),
        overrides=MIXED_OVERRIDES,
    ),
    "replay": Preset(
        "The paper's data kind: SAC trained online for 100k frames (1/5 of the paper's 500k), "
        "its whole replay buffer the dataset, on tasks SAC learns within that budget: BC, "
        "filtered BC, CQL, CQL+UDS, IQL, CVL and CVL pretrained on reward-free data; per-task "
        "table, rliable IQM and probability of improvement (paper table 3's data).",
        ("bc", "filtered_bc", "cql", "cql_uds", "iql", "cvl_mc", "cvl_mc_pretrained"),
        # The mixed preset's learners and settings without CVL's action-contrast term (not
        # measured on replay data, `PLAIN_CRITIC_OVERRIDES`); SAC at the learners' CPU sizes
        # (128 x 128, batch 256; the paper's DenseNet torso): 100k frames in about 25 min on one
        # core (docs/reproducing.md).
        default=_suite_budget(
            REPLAY_TASKS,
            data_kind="sac",
            frames=100_000,
            pretrain_steps=3_000,
            sac_hidden=(128, 128),
            sac_batch_size=256,
        ),
        full=Budget(REPLAY_TASKS, SEEDS5, "sac", last_evals=3),
        overrides=PLAIN_CRITIC_OVERRIDES,
    ),
    "metaworld_states": Preset(
        "Meta-World from states: BC, CQL, CQL+UDS, CVL (the presets' default, without RFF; "
        "the RFF ablation runs both); per-task table, rliable aggregates and performance "
        "profile (paper fig. 2, table 3).",
        ("bc", "cql", "cql_uds", "cvl_mc"),
        # The mixed preset's data, budget and settings (its BC, CQL and CVL runs are this
        # preset's); CQL+UDS pretrains its critic at reward 0 for 1k updates.
        default=dataclasses.replace(MIXED_BUDGET, pretrain_steps=1_000),
        full=Budget(("__all__",), SEEDS5, "sac"),
        overrides=MIXED_OVERRIDES,
    ),
    "metaworld_pixels": Preset(
        "Meta-World from pixels (84x84, IMPALA encoder): BC, CQL, CVL (the presets' default, "
        "without RFF) on door-close, door-open, drawer-close, drawer-open (paper table 4).",
        ("bc", "cql", "cvl_mc"),
        # Noisy-expert data: the paper's closing tasks have no clean mixture (the reach expert
        # closes the door 100% of the time; `cvl_eval.datagen.mixed_suite`). Measured cost of
        # both budgets: docs/reproducing.md.
        default=_cpu_budget(PIXEL_TASKS, (0,), episodes=20, steps=2_000, batch_size=64),
        full=Budget(PIXEL_TASKS, SEEDS5, "sac"),
        pixels=True,
        # The settled learner settings of the state presets (an image only changes the encoder),
        # acting with the trained policy: the policy's average is for budgets of 10k steps.
        overrides=PIXEL_OVERRIDES,
    ),
    "pretraining": Preset(
        "CVL pretrained on its domain's reward-free data vs tabula rasa with scarce labels: 10 "
        "labelled episodes of the target's mixture, 200 reward-free noisy-expert episodes of "
        "each related task of its domain; learning curves (paper fig. 4, sec. 5.2).",
        ("cvl_mc", "cvl_mc_pretrained"),
        # Labels scarce, reward-free data plentiful: where the paper's claim (pretraining speeds
        # up learning) can show; with 25k labelled expert-like transitions per task nothing was
        # left for reward-free data to add (docs/results.md, "Pretraining").
        default=_suite_budget(
            PRETRAINING_TASKS_CPU,
            data_kind="mixture",
            episodes=10,
            related_kind="scripted",
            related_episodes=200,
            eval_every=2_000,
            pretrain_steps=5_000,
        ),
        full=Budget(PRETRAINING_TASKS, SEEDS5, "sac", eval_every=5_000, pretrain_steps=50_000),
        related_data=True,
        overrides=PLAIN_CRITIC_OVERRIDES,
    ),
    "rff_ablation": Preset(
        "CVL with random features (eq. 12) vs the direct Monte-Carlo Q (eq. 11).",
        ("cvl", "cvl_mc"),
        # The mixed preset's data and budget; both estimators on the paper's critic objective
        # (`PLAIN_CRITIC_OVERRIDES`: no action-contrast term, measured without RFF only).
        default=MIXED_BUDGET,
        full=Budget(PRETRAINING_TASKS, SEEDS5, "sac"),
        overrides=PLAIN_CRITIC_OVERRIDES,
    ),
    "mountain_car": Preset(
        "Mountain Car: CVL (lambda_BC = 0) on SAC's replay buffer; normalised log Q_NCE vs SAC's Q "
        "heatmaps and their Spearman correlation (paper fig. 5).",
        ("cvl",),
        default=Budget(
            (MOUNTAIN_CAR,),
            (0,),
            "sac",
            frames=50_000,
            steps=5_000,
            eval_every=1_000,
            hidden=(128, 128),
            batch_size=256,
            sac_hidden=(128, 128),
            sac_batch_size=256,
            # Anchors uniform over the buffer: with the learner's default one-episode batches
            # the critic orders the states by position alone (docs/results.md, "Mountain Car").
            overrides=("cvl:sampler_mode=uniform",),
        ),
        full=Budget((MOUNTAIN_CAR,), (0,), "sac", frames=500_000),
        mountain_car=True,
    ),
}
"""The paper's experiments by name."""


@dataclass(frozen=True)
class PaperConfig:
    """One paper experiment; None fields take the preset's value (``full`` picks its budget)."""

    experiment: Literal[
        "mixed",
        "hard",
        "replay",
        "metaworld_states",
        "metaworld_pixels",
        "pretraining",
        "rff_ablation",
        "mountain_car",
    ] = "metaworld_states"
    """Which experiment (`PRESETS`)."""
    out_dir: str | None = None
    """Experiment folder; default ``experiments_out/<experiment>``."""
    full: bool = False
    """The paper's budget (all tasks / 5 seeds / SAC 500k-frame datasets / 100k steps)."""
    tasks: tuple[str, ...] | None = None
    """Override the preset's tasks."""
    seeds: tuple[int, ...] | None = None
    """Override the preset's seeds."""
    algorithms: tuple[str, ...] | None = None
    """Run only these of the preset's learners (e.g. ``cvl_mc``), with the preset's settings;
    the report covers the runs in the experiment's folder of the learners listed."""
    steps: int | None = None
    """Override the gradient steps per run."""
    data_kind: DataKind | None = None
    """Override the dataset kind of every task (mixed-quality suite, scripted noisy expert, SAC
    replay, ...; `cvl_eval.datagen.dispatch`)."""
    episodes: int | None = None
    """Override the episodes per task (scripted and behaviour kinds)."""
    related_episodes: int | None = None
    """Override the episodes of each related task's dataset (presets with related data)."""
    frames: int | None = None
    """Override the SAC frames per task."""
    sac_hidden: tuple[int, ...] | None = None
    """Override the hidden widths of the SAC that generates ``sac`` data."""
    sac_batch_size: int | None = None
    """Override the batch size of the SAC that generates ``sac`` data."""
    eval_every: int | None = None
    """Override the evaluation interval."""
    last_evals: int | None = None
    """Override the evaluations pooled per run in the report (the last ``last_evals``)."""
    eval_episodes: int = 10
    """Episodes per evaluation."""
    eval_max_steps: int | None = None
    """Optional evaluation episode step limit (tests)."""
    final_episodes: int | None = None
    """Also score every run by this many episodes of its final policy: after the sweep each run
    of the preset's learners is evaluated (`cvl_eval.rollout.checkpoint`, its evaluation seed;
    skipped where ``final/eval_<N>ep_seed<S>.json`` exists) and a second report is written to
    ``report_final<N>/`` (`cvl_eval.analysis.report.ReportConfig.final_episodes`). About 1 s
    per episode on a CPU."""
    pretrain_steps: int | None = None
    """Override the pretraining updates."""
    hidden: tuple[int, ...] | None = None
    """Override the budget's hidden widths (default budgets 128 x 128; ``full`` 256 x 256)."""
    batch_size: int | None = None
    """Override the budget's batch size (default budgets 256; ``full`` the learners' own)."""
    overrides: tuple[str, ...] = ()
    """Extra learner overrides (``key=value`` or ``algo:key=value``)."""
    workers: int = 2
    """Runs in parallel."""
    threads_per_run: int = 1
    """torch threads per run."""
    device: str = "cpu"
    """Training device (``cuda`` for a GPU)."""
    backend: Literal["local", "ray"] = "local"
    """Where the sweep's runs train: local processes, or Ray tasks (docs/cluster.md, "Sweeps on
    Ray"; data generation and the report stay on this machine)."""
    ray_address: str | None = None
    """With ``backend="ray"``: a running cluster (``auto``, ``ray://host:port``); None starts a
    local instance."""
    num_cpus: float | None = None
    """With ``backend="ray"``: CPUs per run (None: ``threads_per_run``)."""
    num_gpus: float = 0.0
    """With ``backend="ray"``: GPUs per run."""
    wandb: bool = False
    """Also log every run to Weights & Biases."""
    vectorise_seeds: bool = False
    """Train each (algorithm, task)'s seeds together in one process (`SweepConfig.vectorise_seeds`;
    local backend)."""
    bootstrap_reps: int = 2000
    """Bootstrap replications of the rliable intervals."""
    progress: bool = True
    """Progress bars."""

    def __post_init__(self) -> None:
        if self.tasks is not None:
            object.__setattr__(self, "tasks", tuple(config_name(t) for t in self.tasks))


def _check_scoring(budget: Budget) -> None:
    """The report's ``last_evals`` evaluations exist in every run of ``budget``: a run evaluates
    every ``eval_every`` steps and at its end (`cvl_eval.training.loop`)."""
    evaluations = -(-budget.steps // budget.eval_every) if budget.eval_every > 0 else 1
    if not 1 <= budget.last_evals <= evaluations:
        raise ConfigError(
            f"--last-evals must be between 1 and the {evaluations} evaluation(s) of a run "
            f"(--steps {budget.steps}, --eval-every {budget.eval_every}), got "
            f"{budget.last_evals}; pass --last-evals to score by fewer"
        )


def _with_algorithms(preset: Preset, algorithms: tuple[str, ...] | None) -> Preset:
    """``preset`` running only ``algorithms`` (None: all of its learners), each one it runs."""
    if algorithms is None:
        return preset
    unknown = [name for name in algorithms if name not in preset.algorithms]
    if unknown or not algorithms or len(set(algorithms)) != len(algorithms):
        raise ConfigError(
            f"--algorithms must name distinct learners of this experiment, "
            f"{list(preset.algorithms)}; got {list(algorithms)}"
        )
    return dataclasses.replace(preset, algorithms=tuple(algorithms))


def resolve(config: PaperConfig) -> dict[str, Any]:
    """The preset with the budget and explicit overrides applied (what will run)."""
    if config.experiment not in PRESETS:
        raise ConfigError(f"unknown experiment {config.experiment!r}; choose from {list(PRESETS)}")
    preset = _with_algorithms(PRESETS[config.experiment], config.algorithms)
    budget = preset.full if config.full else preset.default
    changes = {
        k: getattr(config, k)
        for k in (
            "tasks",
            "seeds",
            "steps",
            "data_kind",
            "episodes",
            "frames",
            "eval_every",
            "hidden",
            "batch_size",
            "last_evals",
            "sac_hidden",
            "sac_batch_size",
            "related_episodes",
        )
        if getattr(config, k) is not None
    }
    if config.pretrain_steps is not None:
        changes["pretrain_steps"] = config.pretrain_steps
    if config.data_kind is not None:
        changes["task_kinds"] = ()  # one kind for every task, the related tasks' too
        changes["related_kind"] = None
    budget = dataclasses.replace(budget, **changes)
    _check_scoring(budget)
    if config.final_episodes is not None and config.final_episodes < 1:
        raise ConfigError(f"--final-episodes must be >= 1, got {config.final_episodes}")
    if budget.tasks == ("__all__",):
        budget = dataclasses.replace(budget, tasks=TASK_NAMES)
    try:
        tasks = tuple(require_canonical(t) for t in budget.tasks)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    data_tasks = list(tasks)
    if preset.related_data:
        from cvl_data import related_tasks

        for task in tasks:
            data_tasks += [t for t in related_tasks(task, TASK_NAMES) if t not in data_tasks]
    out = Path(config.out_dir or f"experiments_out/{config.experiment}")
    return {
        "preset": preset,
        "budget": dataclasses.replace(budget, tasks=tasks),
        "data_tasks": tuple(data_tasks),
        "out": out,
    }
