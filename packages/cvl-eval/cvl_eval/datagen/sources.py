"""Behaviour sources: what acts in an episode (`Behaviour`) and its text form (`parse_source`).

A behaviour is a scripted expert (the task's own or another task's, run in this task's
environment), uniform random actions, or a saved learner, with Gaussian action noise and
epsilon-random steps; optionally it hands over to another behaviour at a `Switch` (``switch`` /
``then``) or is recorded only from a `Switch` on (``start``: an episode that begins mid-task),
`cvl_eval.datagen.phases`. `cvl_eval.datagen.behaviours` plans and records datasets of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cvl_data.jsonio import to_json_data
from cvl_eval.datagen.phases import SWITCH_GRAMMAR, Switch, parse_switch
from cvl_eval.envs.make import canonical_name, is_metaworld

__all__ = ["SOURCE_GRAMMAR", "Behaviour", "MixtureSource", "behaviour_json", "parse_source"]

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
        switch: when ``then`` takes over (`cvl_eval.datagen.phases.Switch`); None: never.
        then: the behaviour from ``switch`` on (one phase: no switch or start of its own).
        start: the episode is recorded from this moment on (it needs a step limit); the steps
            before it are this behaviour's, unrecorded: an episode that begins mid-task.
    """

    kind: SourceKind
    task: str | None = None
    checkpoint: str | None = None
    noise_sigma: float = 0.0
    epsilon: float = 0.0
    switch: Switch | None = None
    then: Behaviour | None = None
    start: Switch | None = None

    def __post_init__(self) -> None:
        if (self.switch is None) != (self.then is None):
            raise ValueError("a behaviour that changes needs both switch and then")
        if self.then is not None and (self.then.then is not None or self.then.start is not None):
            raise ValueError("the behaviour after a switch has one phase (no switch or start)")
        if self.start is not None and self.start.steps is None:
            raise ValueError("a recording start needs a step limit (e.g. near+150)")

    def label(self, own_task: str) -> str:
        """Short name used in reports: ``expert``, ``expert:drawer-close``, ``random``, ...;
        ``expert>random`` (a switch to random), ``expert@near+150`` (recorded from that start);
        ``own_task`` and the behaviour's task are canonical."""
        if self.kind == "expert":
            task = self.task or own_task
            text = "expert" if task == own_task else f"expert:{task[:-3]}"
        elif self.kind == "checkpoint":
            text = f"checkpoint:{self.checkpoint}"
        else:
            text = "random"
        if self.then is not None:
            text += f">{self.then.label(own_task)}"
        return text if self.start is None else f"{text}@{self.start.label()}"


@dataclass(frozen=True)
class MixtureSource:
    """A behaviour and its share of the episodes."""

    behaviour: Behaviour
    weight: float


SOURCE_GRAMMAR = (
    "KIND[:ARG][,sigma=S][,eps=E][,weight=W][,start=COND][,switch=COND>KIND[:ARG][,sigma=S]"
    "[,eps=E]] with KIND expert (ARG: another task's expert, default the dataset's task), random, "
    "or checkpoint (ARG: checkpoint folder); switch=COND>...: the behaviour after '>' takes over "
    "at COND; start=COND: the episode is recorded from COND on (COND needs a step limit); "
    f"{SWITCH_GRAMMAR}; e.g. 'expert,weight=0.25', 'expert:drawer-close,sigma=0.3,weight=0.5', "
    "'random,weight=0.25', 'expert,switch=near>random', 'expert,start=near+150'"
)


def parse_source(text: str, default_sigma: float = 0.3) -> MixtureSource:
    """Parse one mixture source (see `SOURCE_GRAMMAR`); raises ``ValueError`` naming the text.

    Experts and checkpoints get ``sigma=default_sigma`` unless given (also after a switch);
    ``weight`` defaults to 1.
    """
    first, arrow, second = text.partition(">")
    fields, options = _parse_phase(text, first, default_sigma, ("weight", "switch", "start"))
    weight = _number(text, "weight", options.get("weight", "1"))
    if weight <= 0:
        raise ValueError(f"source {text!r}: need weight > 0, sigma >= 0 and 0 <= eps <= 1")
    try:
        for key in ("switch", "start"):
            if key in options:
                fields[key] = parse_switch(options[key])
        if ("switch" in fields) != bool(arrow):
            raise ValueError("'switch=COND' and '>BEHAVIOUR' go together")
        if arrow:
            fields["then"] = Behaviour(**_parse_phase(text, second, default_sigma, ())[0])
        return MixtureSource(Behaviour(**fields), weight)
    except ValueError as error:
        raise ValueError(f"source {text!r}: {error}") from None


def _parse_phase(
    text: str, phase: str, default_sigma: float, extra: tuple[str, ...]
) -> tuple[dict, dict[str, str]]:
    """`Behaviour` fields of one phase of source ``text``, and its ``extra`` options as text."""
    head, *options = (part.strip() for part in phase.split(","))
    kind, _, arg = head.partition(":")
    if kind not in ("expert", "random", "checkpoint"):
        raise ValueError(f"source {text!r}: unknown kind {kind!r}; grammar: {SOURCE_GRAMMAR}")
    values = {"sigma": default_sigma if kind != "random" else 0.0, "eps": 0.0}
    found: dict[str, str] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in (*values, *extra):
            raise ValueError(f"source {text!r}: bad option {option!r}; grammar: {SOURCE_GRAMMAR}")
        if key in values:
            values[key] = _number(text, key, value)
        else:
            found[key] = value
    if kind == "checkpoint" and not arg:
        raise ValueError(f"source {text!r}: a checkpoint source needs its folder (checkpoint:DIR)")
    if kind == "random" and arg:
        raise ValueError(f"source {text!r}: random takes no argument")
    if values["sigma"] < 0 or not 0.0 <= values["eps"] <= 1.0:
        raise ValueError(f"source {text!r}: need weight > 0, sigma >= 0 and 0 <= eps <= 1")
    if kind == "expert" and arg:
        arg = canonical_name(arg)
        if not is_metaworld(arg):
            raise ValueError(f"source {text!r}: scripted experts exist for Meta-World tasks only")
    fields = {
        "kind": kind,
        "task": (arg or None) if kind == "expert" else None,
        "checkpoint": arg if kind == "checkpoint" else None,
        "noise_sigma": values["sigma"],
        "epsilon": values["eps"],
    }
    return fields, found


def _number(text: str, key: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"source {text!r}: {key}={value!r} is not a number") from None


def behaviour_json(behaviour: Behaviour) -> dict:
    """A behaviour as JSON data (drops empty fields)."""
    return {k: v for k, v in to_json_data(behaviour).items() if v is not None}
