"""Implicit Q-Learning, IQL (Kostrikov, Nair, Levine 2021): expectile value, AWR extraction.

IQL never evaluates Q at actions outside the dataset. Losses (pure; each returns
``(loss, metrics)``; IQL paper eq. 5-7):

- value (eq. 5): ``L_V = E_{(s,a)~D} L_2^tau(Qbar(s, a) - V(s))`` with the expectile loss
  ``L_2^tau(u) = |tau - 1(u < 0)| u^2`` and ``Qbar = min_i Qbar_i`` the target twin Q;
- critic (eq. 6): ``L_Q = sum_i E (r + gamma (1 - terminated) V(s') - Q_i(s, a))^2``;
- policy (eq. 7, advantage-weighted regression):
  ``L_pi = -E_{(s,a)~D} [min(exp(beta (Qbar(s, a) - V(s))), max_weight) log pi(a|s)]``.

Update order as in the reference code: value, critic, policy, then the polyak target update.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import (
    assert_transition_batch,
    check_policy_ema_tau,
    make_adam,
    policy_from_config,
    polyak_update,
    return_weight_options,
)
from cvl_data.weighting import check_return_weight_baseline, check_return_weight_temperature
from cvl_models import Torso, TwinQ, ValueNetwork

__all__ = [
    "IQLConfig",
    "IQLLearner",
    "awr_policy_loss",
    "expectile_loss",
    "iql_critic_loss",
    "iql_value_loss",
]


@dataclass(frozen=True)
class IQLConfig:
    """Hyperparameters of IQL; the IQL paper's locomotion settings where it gives a value."""

    lr: float = 3e-4
    """Adam learning rate of value, critic and policy (IQL paper: 3e-4)."""
    batch_size: int = 512
    """Transitions per update (this project's shared batch size; IQL paper: 256)."""
    discount: float = 0.99
    """gamma of the TD target."""
    max_grad_norm: float = 100.0
    """Global gradient-norm clip of every optimiser step (this project's shared value)."""
    hidden: tuple[int, ...] = (256, 256)
    """DenseNet widths of V, the twin Q and the policy."""
    torso: Torso = "densenet"
    """MLP torso of V, the twin Q and the policy: ``"densenet"``, the paper's DenseNet with LayerNorm (table 1), or
    ``"mlp"``, plain Linear+ReLU layers of the same widths (SB3's and d3rlpy's architecture, for
    comparisons at equal architecture; `cvl_models.mlp.make_mlp`)."""
    expectile: float = 0.7
    """tau of the expectile value loss (IQL paper, locomotion: 0.7)."""
    beta: float = 3.0
    """Inverse temperature of the advantage weights (IQL paper, locomotion: 3)."""
    max_weight: float = 100.0
    """Clip of the advantage weights exp(beta A) (IQL reference code: 100)."""
    tau: float = 0.005
    """Polyak rate of the target twin Q (IQL paper: 0.005)."""
    log_std_min: float = -5.0
    """Lower clamp of the policy's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the policy's log standard deviation."""
    policy_ema_tau: float = 0.0
    """Evaluation acting: 0 acts with the trained policy. tau in (0, 1] acts (deterministically)
    with a polyak average of its parameters, ``policy_ema <- (1 - tau) policy_ema + tau policy``
    after each update (`LearnerBase.acting_policy`; not in the paper). Training, and actions
    sampled with ``deterministic=False``, use the trained policy."""
    return_weight_temperature: float | None = None
    """None: transitions uniform over the data (the paper). T > 0: each drawn in proportion to
    ``exp(G~ / T)``, G~ its episode's min-max normalised return (return-weighted sampling, "RW"
    of Hong et al. 2023, who apply it to IQL; `cvl_data.weighting`; not in the IQL paper)."""
    return_weight_baseline: str = "none"
    """With ``return_weight_temperature``: "none" weighs each episode by its return; "start_state"
    by its advantage over the start, ``G - V(s_0)``, V the least-squares linear fit of the returns
    on the episodes' first observations ("AW" of Hong et al. 2023; state observations only), so
    episodes that start where the return is high anyway (stitched data's starts next to the
    object) weigh no more for their start (not in the paper)."""
    compile: bool = False
    """Wrap the loss computations in ``torch.compile``."""

    def __post_init__(self) -> None:
        check_policy_ema_tau(self.policy_ema_tau)
        check_return_weight_temperature(self.return_weight_temperature)
        check_return_weight_baseline(self.return_weight_baseline, self.return_weight_temperature)
        if not 0.0 < self.expectile < 1.0:
            raise ValueError(f"expectile must lie in (0, 1), got {self.expectile}")
        if self.beta < 0 or self.max_weight <= 0:
            raise ValueError(
                f"need beta >= 0 and max_weight > 0, got {self.beta}, {self.max_weight}"
            )


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """``|tau - 1(u < 0)| u^2`` elementwise (IQL eq. 5); tau = 0.5 is half the squared error."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return weight * diff.square()


def iql_value_loss(
    batch, value: nn.Module, critic_target: nn.Module, expectile: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Expectile regression of V towards the target twin-Q minimum (IQL eq. 5); grads reach V."""
    batch_size = assert_transition_batch(batch, require_reward=False)
    with torch.no_grad():
        q1, q2 = critic_target(batch.obs, batch.action)
        q_target = torch.minimum(q1, q2)
    v = value(batch.obs)
    assert v.shape == q_target.shape == (batch_size,), (v.shape, q_target.shape)
    loss = expectile_loss(q_target - v, expectile).mean()
    metrics = {"value_loss": loss.detach(), "v_data": v.mean().detach()}
    return loss, metrics


def iql_critic_loss(
    batch, critic: nn.Module, value: nn.Module, discount: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """TD regression of both Q heads towards ``r + gamma (1 - d) V(s')`` (IQL eq. 6)."""
    batch_size = assert_transition_batch(batch)
    with torch.no_grad():
        target = batch.reward + discount * (1.0 - batch.terminated) * value(batch.obs_next)
    q1, q2 = critic(batch.obs, batch.action)
    assert q1.shape == q2.shape == target.shape == (batch_size,), (q1.shape, target.shape)
    loss = (q1 - target).square().mean() + (q2 - target).square().mean()
    metrics = {"critic_loss": loss.detach(), "q_data": (0.5 * (q1 + q2)).mean().detach()}
    return loss, metrics


def awr_policy_loss(
    batch,
    policy: nn.Module,
    critic_target: nn.Module,
    value: nn.Module,
    beta: float,
    max_weight: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Advantage-weighted regression (IQL eq. 7): ``-mean w log pi(a|s)``, ``w`` detached.

    ``w = min(exp(beta (min_i Qbar_i(s, a) - V(s))), max_weight)``; only the policy gets grads.
    """
    batch_size = assert_transition_batch(batch, require_reward=False)
    with torch.no_grad():
        q1, q2 = critic_target(batch.obs, batch.action)
        advantage = torch.minimum(q1, q2) - value(batch.obs)
        weight = torch.exp(beta * advantage).clamp(max=max_weight)
    log_prob = policy.log_prob(batch.obs, batch.action)
    assert log_prob.shape == weight.shape == (batch_size,), (log_prob.shape, weight.shape)
    loss = -(weight * log_prob).mean()
    metrics = {
        "policy_loss": loss.detach(),
        "advantage": advantage.mean(),
        "weight_mean": weight.mean(),
        "weight_clipped": (weight >= max_weight).float().mean(),
        "nll": -log_prob.detach().mean(),
    }
    return loss, metrics


class IQLLearner(LearnerBase):
    """IQL learner: ``update(TransitionBatch)`` does one value, critic and policy step."""

    name = "iql"
    progress_metrics = ("critic_loss", "value_loss", "policy_loss")
    config_cls = IQLConfig
    sampler_kind = "transition"

    @property
    def sampler_options(self) -> dict[str, Any]:
        """``return_weight_temperature`` and ``return_weight_baseline`` for return-weighted
        transitions (default: none)."""
        return return_weight_options(self.config)

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg: IQLConfig = self.config
        with self.rng_scope():
            self.policy = policy_from_config(self.obs_shape, self.action_dim, cfg)
            self.policy = self.policy.to(self.device)
            self.critic = TwinQ(self.obs_shape, self.action_dim, cfg.hidden, cfg.torso)
            self.critic = self.critic.to(self.device)
            self.value = ValueNetwork(self.obs_shape, cfg.hidden, cfg.torso).to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.init_policy_ema()
        self.value_opt = make_adam(self.value.parameters(), cfg.lr)
        self.critic_opt = make_adam(self.critic.parameters(), cfg.lr)
        self.policy_opt = make_adam(self.policy.parameters(), cfg.lr)
        self._value_loss = self.maybe_compile(iql_value_loss)
        self._critic_loss = self.maybe_compile(iql_critic_loss)
        self._policy_loss = self.maybe_compile(awr_policy_loss)

    def state_modules(self) -> dict[str, nn.Module]:
        return {
            "policy": self.policy,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "value": self.value,
            **self.policy_ema_modules(),
        }

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"value": self.value_opt, "critic": self.critic_opt, "policy": self.policy_opt}

    def _train_step(self, batch) -> dict[str, torch.Tensor]:
        cfg: IQLConfig = self.config
        loss_v, metrics = self._value_loss(batch, self.value, self.critic_target, cfg.expectile)
        metrics["value_grad_norm"] = self.clip_and_step(self.value_opt, loss_v, self.value)
        loss_q, critic_metrics = self._critic_loss(batch, self.critic, self.value, cfg.discount)
        metrics.update(critic_metrics)
        metrics["critic_grad_norm"] = self.clip_and_step(self.critic_opt, loss_q, self.critic)
        loss_pi, policy_metrics = self._policy_loss(
            batch, self.policy, self.critic_target, self.value, cfg.beta, cfg.max_weight
        )
        metrics.update(policy_metrics)
        metrics["policy_grad_norm"] = self.clip_and_step(self.policy_opt, loss_pi, self.policy)
        polyak_update(self.critic_target, self.critic, cfg.tau)
        if self.policy_ema is not None:
            self.run_stages(self.policy_ema_stages(), batch)
        return metrics
