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
"""``callback(phase, step, metrics)`` with phase "pretrain" or "finetune"."""


def pretrain_then_finetune(
    learner: CVLLearner,
    pretrain_sampler: Any,
    finetune_sampler: Any,
    pretrain_steps: int,
    finetune_steps: int,
    callback: Callback | None = None,
) -> CVLLearner:
    """Run ``pretrain_steps`` critic-only updates, then ``finetune_steps`` full updates.

    Both samplers are ``ContrastiveSampler``-like (``.sample() -> ContrastiveBatch``); the
    pretraining one may yield reward-free batches, the finetuning one must carry rewards.
    The loop continues from the learner's counters (``pretrain_steps`` and ``step``), so a
    learner restored from a checkpoint taken mid-way resumes in the right phase; continuing
    the same batch stream is the samplers' business (their seeds/states).

    Returns the same learner, trained in place.
    """
    if pretrain_steps < 0 or finetune_steps < 0:
        raise ValueError("step counts must be non-negative")
    if learner.pretrain_steps > pretrain_steps:
        raise ValueError(
            f"learner already has {learner.pretrain_steps} pretraining steps > {pretrain_steps}"
        )
    if learner.pretrain_steps < pretrain_steps and learner.step > learner.pretrain_steps:
        raise ValueError("learner has finetuned already; pretraining cannot resume after that")
    while learner.pretrain_steps < pretrain_steps:
        metrics = learner.pretrain_update(pretrain_sampler.sample())
        if callback is not None:
            callback("pretrain", learner.step, metrics)
    while learner.step - learner.pretrain_steps < finetune_steps:
        metrics = learner.update(finetune_sampler.sample())
        if callback is not None:
            callback("finetune", learner.step, metrics)
    return learner
