"""Moments inside an episode, for behaviours that change or start mid-task (the ``stitch`` kind).

A `Switch` is a condition on the step count and the state: "after ``steps`` steps, or once the
hand is within ``near`` of the object, whichever comes first". Two uses
(`cvl_eval.datagen.behaviours.Behaviour`):

- ``switch``: a behaviour hands over to another one (``then``) at the switch, e.g. the task's
  expert approaches the object, then another task's expert or random actions take over;
- ``start``: the episode is recorded from the switch on; the steps before it are taken by the
  same behaviour but not recorded (`cvl_eval.rollout.episode.run_episode`'s ``start``), e.g. the
  expert's episode seen only from the moment its hand reached the object.

Meta-World's state layout (39 dims, goal-observable): hand position ``[0:3]``, gripper opening
``[3]``, first object's position ``[4:7]`` (drawer-open: the handle; door-open: the door handle;
faucet-open: the faucet handle), ..., goal ``[36:39]``.

Text form (`parse_switch`): ``near`` (hand within `NEAR_DISTANCE` of the object), ``near0.03``
(within 0.03), ``40`` (after 40 steps), ``near+150`` (near, or after 150 steps at the latest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["NEAR_DISTANCE", "Switch", "hand_object_distance", "parse_switch", "switching_actor"]

NEAR_DISTANCE = 0.05
"""Hand-object distance (m) of ``near``. Measured on the scripted experts (seed 0, 3 episodes):
the hand starts 0.17-0.27 from the object and comes within 0.05 at step 53-57 (drawer-open),
27-31 (door-open), 39-40 (faucet-open), before success at step 85-90, 73-84 and 56-63."""

SWITCH_GRAMMAR = (
    "COND: 'near' (hand within 0.05 of the object), 'nearD' (within D, e.g. near0.03), "
    "'N' (after N steps) or 'near+N' / 'nearD+N' (near, or after N steps at the latest)"
)


def hand_object_distance(state: np.ndarray) -> float:
    """Distance between the hand (``state[0:3]``) and the object (``state[4:7]``) of a
    Meta-World state."""
    state = np.asarray(state)
    return float(np.linalg.norm(state[0:3] - state[4:7]))


@dataclass(frozen=True)
class Switch:
    """A moment of an episode: the first step ``t`` with ``t >= steps`` or with the hand within
    ``near`` of the object (either condition may be None, not both).

    Attributes:
        steps: after this many steps (counted from the reset).
        near: once the hand-object distance (`hand_object_distance`) is below this.
    """

    steps: int | None = None
    near: float | None = None

    def __post_init__(self) -> None:
        if self.steps is None and self.near is None:
            raise ValueError("a switch needs steps or near")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"switch steps must be >= 1, got {self.steps}")
        if self.near is not None and not self.near > 0:
            raise ValueError(f"switch distance must be > 0, got {self.near}")

    def holds(self, state: np.ndarray, step: int) -> bool:
        """Whether the switch has come at ``step`` (steps taken so far) in ``state``."""
        if self.steps is not None and step >= self.steps:
            return True
        return self.near is not None and hand_object_distance(state) < self.near

    def label(self) -> str:
        """The text form (`parse_switch` reads it back)."""
        near = ""
        if self.near is not None:
            near = "near" if self.near == NEAR_DISTANCE else f"near{self.near:g}"
        steps = "" if self.steps is None else str(self.steps)
        return "+".join(part for part in (near, steps) if part)


def parse_switch(text: str) -> Switch:
    """A `Switch` from its text form (`SWITCH_GRAMMAR`); ``ValueError`` naming the text."""
    values: dict[str, float | int] = {}
    try:
        for part in text.strip().split("+"):
            if part.startswith("near") and "near" not in values:
                values["near"] = float(part[4:]) if part[4:] else NEAR_DISTANCE
            elif part.isdigit() and "steps" not in values:
                values["steps"] = int(part)
            else:
                raise ValueError(part)
        return Switch(**values)  # type: ignore[arg-type]
    except ValueError:
        raise ValueError(f"condition {text!r}: {SWITCH_GRAMMAR}") from None


def switching_actor(
    first: Callable[[np.ndarray], np.ndarray],
    then: Callable[[np.ndarray], np.ndarray],
    switch: Switch,
) -> Callable[[np.ndarray], np.ndarray]:
    """``act(state)``: ``first`` until ``switch`` holds, ``then`` from that step on (for good).

    Steps are counted by the calls of ``act`` (one per environment step since the reset), so a
    fresh actor is built per episode.
    """
    step = 0
    switched = False

    def act(state: np.ndarray) -> np.ndarray:
        nonlocal step, switched
        switched = switched or switch.holds(state, step)
        step += 1
        return then(state) if switched else first(state)

    return act
