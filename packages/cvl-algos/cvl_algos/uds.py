"""CQL+UDS: CQL on labelled target data united with unlabelled shared data at reward 0.

UDS ("unlabeled data sharing", Yu et al. 2022) as the paper uses it (sec. 5.1 footnote, appendix
"Pretraining setup"):

- with related tasks (same Meta-World domain, e.g. ``drawer-open`` / ``drawer-close``), CQL is
  trained on the union of the target task's labelled data and the related tasks' data with
  every reward set to 0 (``cvl_data.union_with_shared``);
- without related tasks, the critic is first pretrained on the target task's own data with all
  rewards 0 ("we perform TD updates with all rewards equal to 0"), then CQL trains on the
  labelled target data.

The pretraining phase runs CQL's critic update (TD with zero rewards plus the CQL(H)
regulariser) and the target-network EMA only; the policy and the temperature are not trained
(the TD target samples ``a' ~ pi(s')`` from the policy at its initialisation). Pretraining steps
are counted separately from ``step``, so ``policy_eval_start`` counts finetuning updates only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from cvl_algos.common import metrics_to_floats, polyak_update
from cvl_algos.cql import CQLConfig, CQLLearner
from cvl_data import union_with_shared, zero_reward

__all__ = [
    "CQLUDSConfig",
    "CQLUDSLearner",
    "UDSData",
    "pretrain_critic",
    "uds_datasets",
    "zero_reward_batch",
]


@dataclass(frozen=True)
class CQLUDSConfig(CQLConfig):
    """CQL's hyperparameters (see :class:`~cvl_algos.cql.CQLConfig`) plus the pretraining length."""

    pretrain_steps: int = 50_000
    """Critic-only zero-reward updates when there are no related tasks (not in the paper;
    our choice, applied by :func:`pretrain_critic`)."""


@dataclass(frozen=True)
class UDSData:
    """What CQL+UDS trains on: ``train`` (labelled target, or its union with zero-reward shared
    data) and ``pretrain`` (the target at reward 0 when there is no shared data, else None)."""

    train: Any
    pretrain: Any | None


def uds_datasets(target: Any, shared: Any | Sequence[Any] = ()) -> UDSData:
    """Build the UDS data views from a labelled ``target`` dataset and ``shared`` datasets.

    Args:
        target: the target task's labelled ``Dataset`` (any ``cvl_data`` episode source).
        shared: related tasks' datasets (labelled or reward-free); empty for none.

    Returns:
        ``UDSData(train=union_with_shared(target, shared), pretrain=None)`` with shared data,
        ``UDSData(train=target, pretrain=zero_reward(target))`` without.
    """
    shared_list = [shared] if hasattr(shared, "spec") else list(shared)
    if shared_list:
        return UDSData(train=union_with_shared(target, shared_list), pretrain=None)
    if not target.spec.has_rewards:
        raise ValueError(f"uds_datasets: target {target.spec.task!r} has no rewards")
    return UDSData(train=target, pretrain=zero_reward(target))


def zero_reward_batch(batch: Any) -> Any:
    """A copy of a ``TransitionBatch`` whose rewards are all 0 (the input is not modified)."""
    reward = torch.zeros(batch.obs.shape[0], device=batch.action.device, dtype=torch.float32)
    return dataclasses.replace(batch, reward=reward)


class CQLUDSLearner(CQLLearner):
    """CQL+UDS: a CQL learner plus :meth:`pretrain_update`, the zero-reward critic pretraining."""

    name = "cql_uds"
    config_cls = CQLUDSConfig
    sampler_kind = "transition"

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        self.pretrain_steps = 0

    def extra_state(self) -> dict[str, Any]:
        return {"pretrain_steps": self.pretrain_steps}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.pretrain_steps = int(state.get("pretrain_steps", 0))

    def _pretrain_step(self, batch) -> dict[str, torch.Tensor]:
        loss, metrics = self._critic_loss_fn(zero_reward_batch(batch))
        metrics["critic_grad_norm"] = self.clip_and_step(self.critic_opt, loss, self.critic)
        polyak_update(self.critic_target, self.critic, self.config.tau)
        return metrics

    def pretrain_update(self, batch) -> dict[str, float]:
        """One critic-only CQL update with all rewards set to 0 (``step`` is not advanced)."""
        with self.rng_scope():
            metrics = self._pretrain_step(batch)
        self.pretrain_steps += 1
        return metrics_to_floats(metrics)


def pretrain_critic(
    learner: CQLUDSLearner,
    sample: Callable[[], Any],
    num_steps: int | None = None,
    callback: Callable[[int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """Run zero-reward critic pretraining until ``learner.pretrain_steps == num_steps``.

    Resumable: a learner loaded from a checkpoint continues from its saved ``pretrain_steps``.

    Args:
        learner: a :class:`CQLUDSLearner`.
        sample: returns the next ``TransitionBatch`` (e.g. ``TransitionSampler(...).sample``
            over ``uds_datasets(...).pretrain``).
        num_steps: total pretraining updates; defaults to ``learner.config.pretrain_steps``.
        callback: called as ``callback(pretrain_step, metrics)`` after every update.

    Returns:
        The metrics of the last update (empty if nothing was left to do).
    """
    total = learner.config.pretrain_steps if num_steps is None else int(num_steps)
    metrics: dict[str, float] = {}
    while learner.pretrain_steps < total:
        metrics = learner.pretrain_update(sample())
        if callback is not None:
            callback(learner.pretrain_steps, metrics)
    return metrics
