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
(the TD target samples ``a' ~ pi(s')`` from the policy at its initialisation). It is the shared
pretraining mechanism (`cvl_algos.pretraining`, kind ``"self"``): pretraining steps are counted
separately from ``step``, so ``policy_eval_start`` counts finetuning updates only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from cvl_algos.base import TrainingData
from cvl_algos.common import polyak_update
from cvl_algos.cql import CQLConfig, CQLLearner
from cvl_algos.pretraining import PretrainingLearner
from cvl_data import union_with_shared, zero_reward

__all__ = ["CQLUDSConfig", "CQLUDSLearner", "uds_datasets", "zero_reward_batch"]


@dataclass(frozen=True)
class CQLUDSConfig(CQLConfig):
    """CQL's hyperparameters (see :class:`~cvl_algos.cql.CQLConfig`) plus the pretraining length."""

    pretrain_steps: int = 50_000
    """Critic-only zero-reward updates when there are no related tasks (not in the paper;
    our choice; the length of the pretraining phase, `cvl_algos.pretraining`)."""


def uds_datasets(target: Any, shared: Any | Sequence[Any] = ()) -> TrainingData:
    """Build the UDS data views from a labelled ``target`` dataset and ``shared`` datasets.

    Args:
        target: the target task's labelled ``Dataset`` (any ``cvl_data`` episode source).
        shared: related tasks' datasets (labelled or reward-free); empty for none.

    Returns:
        ``TrainingData(train=union_with_shared(target, shared), pretrain=None)`` with shared
        data, ``TrainingData(train=target, pretrain=zero_reward(target))`` without.
    """
    shared_list = [shared] if hasattr(shared, "spec") else list(shared)
    if shared_list:
        return TrainingData(train=union_with_shared(target, shared_list), pretrain=None)
    if not target.spec.has_rewards:
        raise ValueError(f"uds_datasets: target {target.spec.task!r} has no rewards")
    return TrainingData(train=target, pretrain=zero_reward(target))


def zero_reward_batch(batch: Any) -> Any:
    """A copy of a ``TransitionBatch`` whose rewards are all 0 (the input is not modified)."""
    reward = torch.zeros(batch.obs.shape[0], device=batch.action.device, dtype=torch.float32)
    return dataclasses.replace(batch, reward=reward)


class CQLUDSLearner(PretrainingLearner, CQLLearner):
    """CQL+UDS: a CQL learner whose pretraining phase is the zero-reward critic update."""

    name = "cql_uds"
    config_cls = CQLUDSConfig
    pretraining = "self"

    def _pretrain_step(self, batch) -> dict[str, torch.Tensor]:
        """One critic-only CQL update with all rewards set to 0 (the target EMA too)."""
        loss, metrics = self._critic_loss_fn(zero_reward_batch(batch))
        metrics["critic_grad_norm"] = self.clip_and_step(self.critic_opt, loss, self.critic)
        polyak_update(self.critic_target, self.critic, self.config.tau)
        return metrics

    def training_data(
        self, target: Any, related: Sequence[Any] = (), include_target: bool = True
    ) -> TrainingData:
        """`uds_datasets` of `training_source` of the target (always part of UDS's data)."""
        return uds_datasets(self.training_source(target), related)
