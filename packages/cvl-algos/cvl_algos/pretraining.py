"""One pretraining mechanism for every learner that has a pretraining phase (CVL, CQL+UDS).

`PretrainingLearner` is the learner side: the ``pretrain_steps`` counter travels with the
checkpoint, ``pretrain_update(batch)`` (one ``_pretrain_step`` in the learner's RNG scope; it
advances ``pretrain_steps``, never ``step``, so ``step`` counts labelled updates only), and the
data of its phases (`LearnerBase.training_data`) for ``pretraining = "related_tasks"``: related
tasks' data, and optionally the target's own, with rewards hidden (paper sec. 5.2). Its config
has a ``pretrain_steps`` field: the phase's default length.

`run_phases` is the loop side, the one schedule of both phases that the offline trainer
(cvl-eval) and `pretrain_then_finetune` follow: pretraining updates until
``learner.pretrain_steps`` reaches its budget, then labelled updates until ``learner.step``
reaches its own. It continues from the learner's counters, so a learner loaded from a checkpoint
taken in either phase resumes where it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from cvl_algos.base import LearnerBase, PretrainingKind, TrainingData
from cvl_algos.common import detach_metrics

__all__ = [
    "PhaseUpdate",
    "PretrainingLearner",
    "has_pretraining_phase",
    "pretrain_then_finetune",
    "pretrained_label",
    "run_phases",
]


def has_pretraining_phase(kind: PretrainingKind, related_data: bool) -> bool:
    """Whether a learner of pretraining ``kind`` pretrains, with or without related tasks' data:
    ``"related_tasks"`` with it, ``"self"`` without it (with it, the data is shared instead)."""
    return (kind == "related_tasks" and related_data) or (kind == "self" and not related_data)


def pretrained_label(name: str) -> str:
    """Report label of algorithm ``name`` pretrained on related tasks' data (``cvl_pretrained``)."""
    return f"{name}_pretrained"


class PretrainingLearner(LearnerBase):
    """A learner with a critic-only pretraining phase; see the module docstring.

    A subclass implements ``_pretrain_step(batch) -> dict[str, Tensor]`` and sets
    ``pretraining`` (default ``"related_tasks"``); its config has ``pretrain_steps``.
    """

    pretraining: ClassVar[PretrainingKind] = "related_tasks"

    def _pretrain_step(self, batch: Any) -> dict[str, torch.Tensor]:
        """One pretraining gradient step on ``batch``; returns scalar tensor metrics."""
        raise NotImplementedError

    def pretrain_update(self, batch: Any) -> dict[str, torch.Tensor]:
        """One pretraining update (``pretrain_steps`` advances, ``step`` does not); metrics as
        in `LearnerBase.update` (detached 0-d tensors)."""
        with self.rng_scope():
            metrics = self._pretrain_step(batch)
        self.pretrain_steps += 1
        return detach_metrics(metrics, self.device)

    def extra_state(self) -> dict[str, Any]:
        return {**super().extra_state(), "pretrain_steps": self.pretrain_steps}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        super().load_extra_state(state)
        self.pretrain_steps = int(state.get("pretrain_steps", 0))

    def training_data(
        self, target: Any, related: Sequence[Any] = (), include_target: bool = True
    ) -> TrainingData:
        """Related tasks' data (and the target's own unless ``include_target`` is False) with
        rewards hidden for the pretraining phase; the labelled target for finetuning."""
        from cvl_data import concat_datasets, reward_free

        train = self.training_source(target)
        if not related:
            return TrainingData(train=train, pretrain=None)
        parts = ([target] if include_target else []) + list(related)
        return TrainingData(train=train, pretrain=concat_datasets([reward_free(p) for p in parts]))


@dataclass(frozen=True)
class PhaseUpdate:
    """What `run_phases` yields after each update."""

    phase: str
    """"pretrain" or "train"."""
    metrics: dict[str, torch.Tensor]
    """The metrics this update returned (detached 0-d tensors)."""
    phase_end: bool
    """This update was the last of the pretraining phase."""


def run_phases(
    learner: LearnerBase,
    pretrain_sampler: Any | None,
    train_sampler: Any | None,
    steps: int,
    pretrain_steps: int = 0,
) -> Iterator[PhaseUpdate]:
    """Pretraining updates until ``learner.pretrain_steps == pretrain_steps``, then labelled
    updates until ``learner.step == steps``; yields a `PhaseUpdate` after each.

    Samplers have ``.sample()``; the pretraining one may yield reward-free batches. A learner
    without a pretraining phase takes ``pretrain_steps = 0``.

    Raises:
        ValueError: negative budgets, or pretraining asked of a learner that already finetuned.
    """
    if pretrain_steps < 0 or steps < 0:
        raise ValueError("step counts must be non-negative")
    done = learner.pretrain_steps
    if done < pretrain_steps and learner.step > 0:
        raise ValueError("the learner has finetuned already; pretraining cannot follow finetuning")
    while done < pretrain_steps:
        metrics = learner.pretrain_update(pretrain_sampler.sample())
        done = learner.pretrain_steps
        yield PhaseUpdate("pretrain", metrics, done == pretrain_steps)
    while learner.step < steps:
        yield PhaseUpdate("train", learner.update(train_sampler.sample()), False)


Callback = Callable[[str, int, dict[str, torch.Tensor]], None]
"""``callback(phase, step_in_phase, metrics)`` after each update; phase "pretrain" or "finetune"."""


def pretrain_then_finetune(
    learner: PretrainingLearner,
    pretrain_sampler: Any,
    finetune_sampler: Any | None,
    finetune_steps: int,
    pretrain_steps: int | None = None,
    callback: Callback | None = None,
) -> dict[str, torch.Tensor]:
    """`run_phases` to the end: pretraining (default length ``learner.config.pretrain_steps``),
    then ``finetune_steps`` labelled updates; ``callback`` sees every update.

    Returns:
        The metrics of the last update (empty if nothing was left to do).
    """
    total = learner.config.pretrain_steps if pretrain_steps is None else pretrain_steps
    metrics: dict[str, torch.Tensor] = {}
    for update in run_phases(learner, pretrain_sampler, finetune_sampler, finetune_steps, total):
        metrics = update.metrics
        if callback is not None:
            if update.phase == "pretrain":
                callback("pretrain", learner.pretrain_steps, metrics)
            else:
                callback("finetune", learner.step, metrics)
    return metrics
