"""Datasets of good and bad behaviour: the ``mixture``, ``curriculum``, ``noisy`` and ``stitch``
kinds.

Noisy-expert data is behaviour cloning's best case (zero-mean noise leaves the expert as BC's
mean). Offline RL earns its keep on data that mixes behaviour that solves the task with
behaviour that does not (DESIGN.md sec. 2, "Data where offline RL matters"). Four kinds:

- ``mixture``: whole episodes from named behaviour sources in given proportions, e.g. 25% the
  task's scripted expert with noise, 35% the scripted expert of *another* Meta-World task run in
  this task's environment (structured, wrong behaviour that still earns shaped reward), 20%
  another one, 20% uniform random. Sources are parsed by `parse_source`
  (`cvl_eval.datagen.sources`).
- ``curriculum``: a replay-like buffer: episode ``e`` of ``N`` acts as the task's expert with
  noise std and epsilon interpolated linearly from ``*_start`` (random) to ``*_end`` (expert)
  as ``e / (N - 1)`` goes from 0 to 1, as a learning agent's replay buffer fills.
- ``noisy``: OGBench's noisy expert (`noisy_plan`): a per-episode noise level.
- ``stitch``: a mixture whose sources change behaviour mid-episode or are recorded from
  mid-task on (``switch``/``start``, `cvl_eval.datagen.phases`), so that no episode solves the
  task while the episodes together cover it (default sources: `cvl_eval.datagen.hard_suite`).

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
from cvl_eval.datagen.phases import switching_actor
from cvl_eval.datagen.sources import (
    SOURCE_GRAMMAR,
    Behaviour,
    MixtureSource,
    behaviour_json,
    parse_source,
)
from cvl_eval.envs.make import canonical_name, is_metaworld

__all__ = [
    "SOURCE_GRAMMAR",
    "Behaviour",
    "BehaviourDataConfig",
    "MixtureSource",
    "format_source_table",
    "generate_behaviour_dataset",
    "parse_source",
    "source_table",
]


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


def noisy_plan(
    num_episodes: int, sigma_max: float, random_fraction: float, seed: int
) -> list[Behaviour]:
    """OGBench's noisy expert: episode ``e`` is the task's expert with Gaussian action noise of
    std ``xi_e ~ U(0, sigma_max)`` per dimension and a uniform-random action with probability
    ``random_fraction`` at each step; ``xi_e`` is drawn from its own seeded stream, so each
    episode's behaviour is a pure function of ``(seed, e)``."""
    plan = []
    for e in range(num_episodes):
        xi = float(np.random.default_rng([seed, 0x0915E, e]).uniform(0.0, sigma_max))
        plan.append(Behaviour(kind="expert", noise_sigma=xi, epsilon=random_fraction))
    return plan


def noise_label(behaviour: Behaviour, sigma_max: float, bins: int = 4) -> str:
    """A noisy-kind episode's source label: its noise std's bin, e.g. ``expert,sigma 0.25-0.5``
    (`source_table` then reports return and success per noise level)."""
    index = min(int(bins * behaviour.noise_sigma / sigma_max), bins - 1)
    low, high = sigma_max * index / bins, sigma_max * (index + 1) / bins
    return f"expert,sigma {low:.2g}-{high:.2g}"


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
        """``act(state) -> action`` of ``behaviour`` drawing its noise from ``rng`` (a fresh one
        per episode: a switching behaviour counts its steps)."""
        act = self._phase(behaviour, rng, action_dim)
        if behaviour.then is None:
            return act
        then = self._phase(behaviour.then, rng, action_dim)
        return switching_actor(act, then, behaviour.switch)

    def _phase(self, behaviour: Behaviour, rng: np.random.Generator, action_dim: int):
        from cvl_eval.datagen.scripted import noisy_expert

        if behaviour.kind == "random":

            def act(state: np.ndarray) -> np.ndarray:
                return rng.uniform(-1.0, 1.0, size=action_dim).astype(np.float32)

            return act
        policy = self._base_policy(behaviour)
        return noisy_expert(policy, behaviour.noise_sigma, behaviour.epsilon, rng)


DEFAULT_SOURCES = ("expert,weight=1",)


METAWORLD_EPISODE_STEPS = 500
"""Meta-World's own episode length (``max_path_length``)."""


@dataclass(frozen=True)
class BehaviourDataConfig(EpisodeEnvOptions):
    """A ``mixture``, ``curriculum``, ``noisy`` or ``stitch`` dataset of one Meta-World task (and,
    keyword-only, its env: `EpisodeEnvOptions`)."""

    task: str
    """Meta-World task (with or without ``-v3``; kept canonical): the environment every behaviour
    acts in."""
    kind: Literal["mixture", "curriculum", "noisy", "stitch"] = "mixture"
    """``mixture`` / ``stitch`` (episodes from ``sources``), ``curriculum`` (annealed noisy
    expert) or ``noisy`` (expert with a per-episode noise level, `noisy_plan`)."""
    num_episodes: int = 100
    """Episodes in the finished dataset."""
    sources: tuple[str, ...] = DEFAULT_SOURCES
    """mixture, stitch: behaviour sources with weights (`SOURCE_GRAMMAR`)."""
    sigma: tuple[float, float] = (1.0, 0.3)
    """curriculum: expert action-noise std at the first and the last episode."""
    epsilon: tuple[float, float] = (1.0, 0.1)
    """curriculum: random-action probability at the first and the last episode."""
    sigma_max: float = 1.0
    """noisy: each episode's action-noise std is drawn from U(0, sigma_max)."""
    random_fraction: float = 0.1
    """noisy: probability of a uniform-random action at each step."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", canonical_name(self.task))
        if not is_metaworld(self.task):
            raise ValueError(f"behaviour datasets exist for Meta-World tasks only, not {self.task}")
        if self.kind not in ("mixture", "curriculum", "noisy", "stitch"):
            raise ValueError(f"unknown behaviour dataset kind {self.kind!r}")
        if self.num_episodes < 1:
            raise ValueError(f"num_episodes must be >= 1, got {self.num_episodes}")
        if self.kind in ("mixture", "stitch"):
            if not self.sources:
                raise ValueError(f"a {self.kind} needs at least one source")
            # parsed once (raises on a bad one); not a field: provenance records the text
            object.__setattr__(self, "_parsed", tuple(parse_source(s) for s in self.sources))
            self._check_starts()
        for name in ("sigma", "epsilon"):
            pair = getattr(self, name)
            if len(pair) != 2 or min(pair) < 0:
                raise ValueError(f"{name} must be (start, end) with both >= 0, got {pair}")
        if max(self.epsilon) > 1:
            raise ValueError(f"epsilon values must lie in [0, 1], got {self.epsilon}")
        if not self.sigma_max > 0:
            raise ValueError(f"sigma_max must be > 0, got {self.sigma_max}")
        if not 0.0 <= self.random_fraction <= 1.0:
            raise ValueError(f"random_fraction must lie in [0, 1], got {self.random_fraction}")

    def _check_starts(self) -> None:
        """A recording start leaves steps to record."""
        limit = min(self.max_steps or METAWORLD_EPISODE_STEPS, METAWORLD_EPISODE_STEPS)
        for text, source in zip(self.sources, self._parsed, strict=True):
            start = source.behaviour.start
            if start is not None and start.steps >= limit:
                raise ValueError(
                    f"source {text!r}: its recording start's step limit {start.steps} leaves "
                    f"nothing of a {limit}-step episode; lower it"
                )

    def plan(self) -> list[Behaviour]:
        """The behaviour of every episode, in order (a pure function of the config)."""
        if self.kind == "curriculum":
            return curriculum_plan(self.num_episodes, self.sigma, self.epsilon)
        if self.kind == "noisy":
            return noisy_plan(self.num_episodes, self.sigma_max, self.random_fraction, self.seed)
        return mixture_plan(self._parsed, self.num_episodes, self.seed)

    def source_label(self, behaviour: Behaviour) -> str:
        """The label of an episode of ``behaviour`` in `source_table` (noisy: its noise bin)."""
        if self.kind == "noisy":
            return noise_label(behaviour, self.sigma_max)
        return behaviour.label(self.task)


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
    """Write (or resume, or just report) a behaviour dataset at ``path`` (any kind); ``on_episode``
    as in `cvl_eval.datagen.scripted.generate_scripted`.

    Returns a `cvl_eval.datagen.episodes.GenerationReport` of this call; per-source statistics of the
    whole dataset come from `source_table(open_dataset(path))`.
    """
    from cvl_eval.datagen.episodes import EpisodeGeneration, generate_episodes

    plan = config.plan()
    actors = Actors(config.task)

    def info(e: int, episode) -> dict:
        return {
            "source": config.source_label(plan[e]),
            "behaviour": behaviour_json(plan[e]),
            "return": episode.episode_return,
            "success": episode.success,
        }

    def actor(e: int, rng: np.random.Generator, action_dim: int):
        return actors.actor(plan[e], rng, action_dim)

    def start(e: int):
        return None if plan[e].start is None else plan[e].start.holds

    desc = f"{config.kind} {config.task}"
    provenance = partial(_provenance, config)
    generation = EpisodeGeneration(config, provenance, actor, info, desc, start)
    return generate_episodes(path, pixel_path, generation, progress, durable, on_episode)
