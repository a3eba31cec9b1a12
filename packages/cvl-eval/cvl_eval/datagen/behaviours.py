"""Datasets that mix good and bad behaviour: the ``mixture`` and ``curriculum`` kinds.

Noisy-expert data is behaviour cloning's best case (zero-mean noise leaves the expert as BC's
mean). Offline RL earns its keep on data that mixes behaviour that solves the task with
behaviour that does not (DESIGN.md sec. 2, "Data where offline RL matters"). Two kinds:

- ``mixture``: whole episodes from named behaviour sources in given proportions, e.g. 25% the
  task's scripted expert with noise, 35% the scripted expert of *another* Meta-World task run in
  this task's environment (structured, wrong behaviour that still earns shaped reward), 20%
  another one, 20% uniform random. Sources are parsed by `parse_source`.
- ``curriculum``: a replay-like buffer: episode ``e`` of ``N`` acts as the task's expert with
  noise std and epsilon interpolated linearly from ``*_start`` (random) to ``*_end`` (expert)
  as ``e / (N - 1)`` goes from 0 to 1, as a learning agent's replay buffer fills.

Each episode is a pure function of the config and its index (behaviour, reset seed, noise
stream), so an interrupted generation resumes to the identical dataset. Every episode's
behaviour label, return and success are stored in the dataset (``Dataset.episode_info``), so
`source_table` reports per-source return and success for the whole dataset.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np

from cvl_data.jsonio import package_versions, to_json_data
from cvl_eval.datagen.episodes import EpisodeEnvOptions
from cvl_eval.envs.make import canonical_name, is_metaworld

SourceKind = Literal["expert", "random", "checkpoint"]


@dataclass(frozen=True)
class Behaviour:
    """One behaviour that acts in the environment.

    Attributes:
        kind: ``expert`` (a Meta-World scripted expert), ``random`` (uniform actions) or
            ``checkpoint`` (a saved learner's deterministic policy).
        task: expert: whose scripted expert (None: the dataset's own task).
        checkpoint: checkpoint: the folder ``learner.save`` wrote.
        noise_sigma: std of Gaussian noise added to the action (expert, checkpoint).
        epsilon: probability of a uniform-random action at each step (expert, checkpoint).
    """

    kind: SourceKind
    task: str | None = None
    checkpoint: str | None = None
    noise_sigma: float = 0.0
    epsilon: float = 0.0

    def label(self, own_task: str) -> str:
        """Short name used in reports: ``expert``, ``expert:drawer-close``, ``random``, ...
        (``own_task`` and the behaviour's task are canonical)."""
        if self.kind == "expert":
            task = self.task or own_task
            return "expert" if task == own_task else f"expert:{task[:-3]}"
        if self.kind == "checkpoint":
            return f"checkpoint:{self.checkpoint}"
        return "random"


@dataclass(frozen=True)
class MixtureSource:
    """A behaviour and its share of the episodes."""

    behaviour: Behaviour
    weight: float


SOURCE_GRAMMAR = (
    "KIND[:ARG][,sigma=S][,eps=E][,weight=W] with KIND expert (ARG: another task's expert, "
    "default the dataset's task), random, or checkpoint (ARG: checkpoint folder); "
    "e.g. 'expert,weight=0.25', 'expert:drawer-close,sigma=0.3,weight=0.5', 'random,weight=0.25'"
)


def parse_source(text: str, default_sigma: float = 0.3) -> MixtureSource:
    """Parse one mixture source (see `SOURCE_GRAMMAR`); raises ``ValueError`` naming the text.

    Experts and checkpoints get ``sigma=default_sigma`` unless given; ``weight`` defaults to 1.
    """
    head, *options = (part.strip() for part in text.split(","))
    kind, _, arg = head.partition(":")
    if kind not in ("expert", "random", "checkpoint"):
        raise ValueError(f"source {text!r}: unknown kind {kind!r}; grammar: {SOURCE_GRAMMAR}")
    values = {"sigma": default_sigma if kind != "random" else 0.0, "eps": 0.0, "weight": 1.0}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in values:
            raise ValueError(f"source {text!r}: bad option {option!r}; grammar: {SOURCE_GRAMMAR}")
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"source {text!r}: {key}={value!r} is not a number") from None
    if kind == "checkpoint" and not arg:
        raise ValueError(f"source {text!r}: a checkpoint source needs its folder (checkpoint:DIR)")
    if kind == "random" and arg:
        raise ValueError(f"source {text!r}: random takes no argument")
    if values["weight"] <= 0 or values["sigma"] < 0 or not 0.0 <= values["eps"] <= 1.0:
        raise ValueError(f"source {text!r}: need weight > 0, sigma >= 0 and 0 <= eps <= 1")
    if kind == "expert" and arg:  # a name enters here, in the source's text
        arg = canonical_name(arg)
        if not is_metaworld(arg):
            raise ValueError(f"source {text!r}: scripted experts exist for Meta-World tasks only")
    behaviour = Behaviour(
        kind=kind,  # type: ignore[arg-type]
        task=(arg or None) if kind == "expert" else None,
        checkpoint=arg if kind == "checkpoint" else None,
        noise_sigma=values["sigma"],
        epsilon=values["eps"],
    )
    return MixtureSource(behaviour, values["weight"])


def episode_counts(weights: Sequence[float], num_episodes: int) -> list[int]:
    """Episodes per source: ``num_episodes * w / sum(w)`` rounded by largest remainder.

    The counts sum to ``num_episodes`` exactly and each differs from its share by less than 1.
    """
    total = float(sum(weights))
    shares = [num_episodes * w / total for w in weights]
    counts = [int(np.floor(s)) for s in shares]
    order = sorted(range(len(shares)), key=lambda i: (counts[i] - shares[i], i))
    for i in order[: num_episodes - sum(counts)]:
        counts[i] += 1
    return counts


def mixture_plan(sources: Sequence[MixtureSource], num_episodes: int, seed: int) -> list[Behaviour]:
    """Behaviour of each episode: `episode_counts` of each source, in a seeded random order."""
    counts = episode_counts([s.weight for s in sources], num_episodes)
    plan = [s.behaviour for s, n in zip(sources, counts, strict=True) for _ in range(n)]
    order = np.random.default_rng([seed, 0xB3]).permutation(num_episodes)
    return [plan[i] for i in order]


def curriculum_plan(
    num_episodes: int,
    sigma: tuple[float, float],
    epsilon: tuple[float, float],
) -> list[Behaviour]:
    """Expert behaviour whose noise std and epsilon move linearly from ``[0]`` to ``[1]``."""
    plan = []
    for e in range(num_episodes):
        p = e / (num_episodes - 1) if num_episodes > 1 else 1.0
        plan.append(
            Behaviour(
                kind="expert",
                noise_sigma=sigma[0] + (sigma[1] - sigma[0]) * p,
                epsilon=epsilon[0] + (epsilon[1] - epsilon[0]) * p,
            )
        )
    return plan


class Actors:
    """Builds ``act(state)`` for a behaviour; scripted experts and checkpoints load once."""

    def __init__(self, own_task: str) -> None:
        self.own_task = own_task
        self._policies: dict[tuple[str, str], Callable[[np.ndarray], np.ndarray]] = {}

    def _base_policy(self, behaviour: Behaviour) -> Callable[[np.ndarray], np.ndarray]:
        key = (behaviour.kind, behaviour.task or behaviour.checkpoint or "")
        if key not in self._policies:
            if behaviour.kind == "expert":
                from cvl_eval.envs.experts import ScriptedExpert

                policy = ScriptedExpert(behaviour.task or self.own_task).act_one
            else:
                from cvl_algos import load_learner

                learner = load_learner(behaviour.checkpoint, restore_global_rng=False)
                policy = learner.act
            self._policies[key] = policy
        return self._policies[key]

    def actor(self, behaviour: Behaviour, rng: np.random.Generator, action_dim: int):
        """``act(state) -> action`` of ``behaviour`` drawing its noise from ``rng``."""
        from cvl_eval.datagen.scripted import noisy_expert

        if behaviour.kind == "random":

            def act(state: np.ndarray) -> np.ndarray:
                return rng.uniform(-1.0, 1.0, size=action_dim).astype(np.float32)

            return act
        policy = self._base_policy(behaviour)
        return noisy_expert(policy, behaviour.noise_sigma, behaviour.epsilon, rng)


def behaviour_json(behaviour: Behaviour) -> dict:
    """A behaviour as JSON data (drops empty fields)."""
    return {k: v for k, v in to_json_data(behaviour).items() if v is not None}


DEFAULT_SOURCES = ("expert,weight=1",)


@dataclass(frozen=True)
class BehaviourDataConfig(EpisodeEnvOptions):
    """A ``mixture`` or ``curriculum`` dataset of one Meta-World task (and, keyword-only, its
    env: `EpisodeEnvOptions`)."""

    task: str
    """Meta-World task (with or without ``-v3``; kept canonical): the environment every behaviour
    acts in."""
    kind: Literal["mixture", "curriculum"] = "mixture"
    """``mixture`` (episodes from ``sources``) or ``curriculum`` (annealed noisy expert)."""
    num_episodes: int = 100
    """Episodes in the finished dataset."""
    sources: tuple[str, ...] = DEFAULT_SOURCES
    """mixture: behaviour sources with weights (`SOURCE_GRAMMAR`)."""
    sigma: tuple[float, float] = (1.0, 0.3)
    """curriculum: expert action-noise std at the first and the last episode."""
    epsilon: tuple[float, float] = (1.0, 0.1)
    """curriculum: random-action probability at the first and the last episode."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", canonical_name(self.task))
        if not is_metaworld(self.task):
            raise ValueError(f"behaviour datasets exist for Meta-World tasks only, not {self.task}")
        if self.kind not in ("mixture", "curriculum"):
            raise ValueError(f"kind must be 'mixture' or 'curriculum', got {self.kind!r}")
        if self.num_episodes < 1:
            raise ValueError(f"num_episodes must be >= 1, got {self.num_episodes}")
        if self.kind == "mixture":
            if not self.sources:
                raise ValueError("a mixture needs at least one source")
            # parsed once (raises on a bad one); not a field: provenance records the text
            object.__setattr__(self, "_parsed", tuple(parse_source(s) for s in self.sources))
        for name in ("sigma", "epsilon"):
            pair = getattr(self, name)
            if len(pair) != 2 or min(pair) < 0:
                raise ValueError(f"{name} must be (start, end) with both >= 0, got {pair}")
        if max(self.epsilon) > 1:
            raise ValueError(f"epsilon values must lie in [0, 1], got {self.epsilon}")

    def plan(self) -> list[Behaviour]:
        """The behaviour of every episode, in order (a pure function of the config)."""
        if self.kind == "curriculum":
            return curriculum_plan(self.num_episodes, self.sigma, self.epsilon)
        return mixture_plan(self._parsed, self.num_episodes, self.seed)


def source_table(dataset) -> dict[str, dict[str, float]]:
    """Per-source episodes, mean return and success rate of a dataset written here.

    Reads ``dataset.episode_info`` (``source``, ``return``, ``success`` per episode); episodes
    without a label count under ``"unlabelled"``.
    """
    rows: dict[str, list[tuple[float, bool]]] = {}
    for info in dataset.episode_info:
        rows.setdefault(info.get("source", "unlabelled"), []).append(
            (float(info.get("return", np.nan)), bool(info.get("success", False)))
        )
    return {
        label: {
            "episodes": len(values),
            "mean_return": float(np.mean([r for r, _ in values])),
            "success_rate": float(np.mean([s for _, s in values])),
        }
        for label, values in sorted(rows.items())
    }


def format_source_table(table: dict[str, dict[str, float]]) -> str:
    """`source_table` as aligned text lines."""
    lines = [f"  {'source':28s} {'episodes':>8s} {'return':>8s} {'success':>8s}"]
    for label, row in table.items():
        lines.append(
            f"  {label:28s} {row['episodes']:8d} {row['mean_return']:8.0f} "
            f"{row['success_rate']:8.0%}"
        )
    return "\n".join(lines)


def _provenance(config: BehaviourDataConfig, obs_kind: str) -> dict:
    versions = package_versions(("cvl_eval", "metaworld"))
    return {
        "generator": "cvl_eval.datagen.behaviours.generate_behaviour_dataset",
        "policy": f"{config.kind} of behaviours (see config and episode_info)",
        "config": to_json_data(config),
        "obs_kind": obs_kind,
        "cvl_eval_version": versions["cvl_eval"],
        "metaworld_version": versions["metaworld"],
    }


def generate_behaviour_dataset(
    path,
    config: BehaviourDataConfig,
    pixel_path=None,
    progress: bool = True,
    durable: bool = True,
    on_episode=None,
):
    """Write (or resume, or just report) a mixture/curriculum dataset at ``path``; ``on_episode``
    as in `cvl_eval.datagen.scripted.generate_scripted`.

    Returns a `cvl_eval.datagen.episodes.GenerationReport` of this call; per-source statistics of the
    whole dataset come from `source_table(open_dataset(path))`.
    """
    from cvl_eval.datagen.episodes import EpisodeGeneration, generate_episodes

    plan = config.plan()
    actors = Actors(config.task)

    def info(e: int, episode) -> dict:
        return {
            "source": plan[e].label(config.task),
            "behaviour": behaviour_json(plan[e]),
            "return": episode.episode_return,
            "success": episode.success,
        }

    def actor(e: int, rng: np.random.Generator, action_dim: int):
        return actors.actor(plan[e], rng, action_dim)

    desc = f"{config.kind} {config.task}"
    generation = EpisodeGeneration(config, partial(_provenance, config), actor, info, desc)
    return generate_episodes(path, pixel_path, generation, progress, durable, on_episode)
