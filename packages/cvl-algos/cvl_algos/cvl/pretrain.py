"""Reward-free critic pretraining followed by finetuning (paper sec. 5.2, appendix).

The critic is first trained on unlabelled data of the related tasks (same domain; e.g.
``cvl_data.reward_free`` of ``related_tasks``), with critic-only updates
(:meth:`CVLLearner.pretrain_update`: no ``xi``, no policy); then critic, ``xi`` and policy are
finetuned with ordinary :meth:`CVLLearner.update` steps on the reward-labelled target task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cvl_algos.cvl.learner import CVLLearner

Callback = Callable[[str, int, dict[str, float]], None]
"""``callback(phase, step_in_phase, metrics)`` after each update; phase "pretrain" or "finetune"."""


def pretrain_then_finetune(
    learner: CVLLearner,
    pretrain_sampler: Any,
    finetune_sampler: Any,
    finetune_steps: int,
    pretrain_steps: int | None = None,
    callback: Callback | None = None,
) -> dict[str, float]:
    """Run critic-only pretraining until ``learner.pretrain_steps == pretrain_steps``, then full
    updates until ``learner.step == finetune_steps``.

    Both samplers are ``ContrastiveSampler``-like (``.sample() -> ContrastiveBatch``); the
    pretraining one may yield reward-free batches (rewards are ignored), the finetuning one
    must carry rewards. ``pretrain_steps`` defaults to ``learner.config.pretrain_steps``.
    The loop continues from the learner's counters, so a learner loaded from a checkpoint taken
    in either phase resumes where it was; continuing the same batch stream is the samplers'
    business (their generators).

    Returns:
        The metrics of the last update (empty if nothing was left to do).
    """
    total_pretrain = learner.config.pretrain_steps if pretrain_steps is None else pretrain_steps
    if total_pretrain < 0 or finetune_steps < 0:
        raise ValueError("step counts must be non-negative")
    if learner.pretrain_steps < total_pretrain and learner.step > 0:
        raise ValueError("the learner has finetuned already; pretraining cannot follow finetuning")
    metrics: dict[str, float] = {}
    while learner.pretrain_steps < total_pretrain:
        metrics = learner.pretrain_update(pretrain_sampler.sample())
        if callback is not None:
            callback("pretrain", learner.pretrain_steps, metrics)
    while learner.step < finetune_steps:
        metrics = learner.update(finetune_sampler.sample())
        if callback is not None:
            callback("finetune", learner.step, metrics)
    return metrics
