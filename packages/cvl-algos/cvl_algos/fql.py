"""Flow Q-Learning (Park, Li, Levine 2025): a TD critic and FQL's flow-distilled one-step policy.

The same policy extraction as CVL's ``policy_extraction="flow"``
(`cvl_algos.cvl.extraction.fql_policy_loss`) on a twin-Q critic learned by temporal differences
instead of CVL's contrastive critic: the baseline that tells whether a gain of CVL with flow
extraction comes from the extraction or from the critic.

Losses (pure; each returns ``(loss, metrics)``):

- critic (FQL sec. 4, "critic loss"): ``y = r + gamma (1 - terminated) agg_i Qbar_i(s', a')``
  with ``a' = clip(mu(s', z))``, ``z ~ N(0, I)``, ``agg`` the mean of the twin heads (FQL's
  default for offline data) or their minimum; ``L_Q = sum_i mean (Q_i(s, a) - y)^2``.
- actor: `fql_policy_loss` with ``Q = agg_i Q_i`` (critic frozen), normalised by its detached
  batch mean ``|Q|`` (``normalize_q``; FQL's ``normalize_q_loss``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import torch
from einops import rearrange, repeat
from torch import Tensor, nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import (
    assert_transition_batch,
    check_policy_ema_tau,
    frozen_call,
    make_adam,
)
from cvl_algos.cvl.extraction import fql_policy_loss
from cvl_algos.sac import td_loss
from cvl_algos.stages import GradientStage, PolyakStage, Stage
from cvl_models import Torso, TwinQ
from cvl_models.flow import FlowPolicy

__all__ = ["FQLConfig", "FQLLearner", "fql_critic_loss", "twin_q_fn"]


@dataclass(frozen=True)
class FQLConfig:
    """Hyperparameters of FQL (its ``get_config`` where it gives a value; the networks and the
    optimisation are the paper's table 1, like every other learner here)."""

    lr: float = 3e-4
    """Adam learning rate of the critic and both policy networks."""
    batch_size: int = 512
    """Transitions per update (table 1; FQL uses 256)."""
    discount: float = 0.99
    """gamma of the TD target."""
    max_grad_norm: float = 100.0
    """Global gradient-norm clip of every optimiser step (table 1; FQL clips nothing)."""
    hidden: tuple[int, ...] = (256, 256)
    """DenseNet widths of the Q networks and the flow networks (table 1; FQL: 4 x 512 MLPs)."""
    torso: Torso = "densenet"
    """MLP of every network: ``"densenet"`` (the paper's DenseNet with LayerNorm) or ``"mlp"``
    (plain Linear+ReLU; `cvl_models.mlp.make_mlp`)."""
    tau: float = 0.005
    """Polyak rate of the target critic (FQL: 0.005)."""
    alpha: float = 1.0
    """Weight of the distillation term (FQL's alpha, tuned per task; with the normalised Q term
    it is on the same scale as CVL's ``bc_alpha``)."""
    flow_steps: int = 10
    """Euler steps of the behaviour flow (FQL: 10)."""
    q_agg: Literal["mean", "min"] = "mean"
    """Aggregation of the twin heads in the target and the actor loss (FQL: mean)."""
    normalize_q: bool = True
    """Divide the actor's Q term by its detached batch mean ``|Q|`` (FQL's ``normalize_q_loss``,
    default off there; on here so that ``alpha`` means what CVL's ``bc_alpha`` means)."""
    policy_ema_tau: float = 0.0
    """Evaluation acting: 0 acts with the trained policy. tau in (0, 1] acts (deterministically)
    with a polyak average of its parameters, ``policy_ema <- (1 - tau) policy_ema + tau policy``
    after each update (`LearnerBase.acting_policy`; not in the paper). Training, and actions
    sampled with ``deterministic=False``, use the trained policy."""
    compile: bool = False
    """Wrap the losses in ``torch.compile`` (not measured for FQL; off)."""

    def __post_init__(self) -> None:
        check_policy_ema_tau(self.policy_ema_tau)
        if self.q_agg not in ("mean", "min"):
            raise ValueError(f"q_agg must be 'mean' or 'min', got {self.q_agg!r}")
        if self.alpha < 0.0 or self.flow_steps < 1:
            raise ValueError("alpha must be >= 0 and flow_steps >= 1")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must lie in (0, 1], got {self.tau}")


def _aggregate(q1: Tensor, q2: Tensor, how: str) -> Tensor:
    return torch.minimum(q1, q2) if how == "min" else 0.5 * (q1 + q2)


def fql_critic_loss(
    batch, critic: nn.Module, critic_target: nn.Module, policy: nn.Module, discount: float, q_agg
) -> tuple[Tensor, dict[str, Tensor]]:
    """TD loss of FQL's critic (module docstring); gradients reach ``critic`` only."""
    assert_transition_batch(batch)
    with torch.no_grad():
        action_next, _ = policy.sample(batch.obs_next)
        q1_next, q2_next = critic_target(batch.obs_next, action_next)
        value_next = _aggregate(q1_next, q2_next, q_agg)
        target = batch.reward + discount * (1.0 - batch.terminated) * value_next
    q1, q2 = critic(batch.obs, batch.action)
    return td_loss(q1, q2, target)


def twin_q_fn(critic: nn.Module, q_agg: str):
    """``q_fn(obs_t (B, ...), actions (N, B, A)) -> (N, B)`` of the aggregated twin heads, the
    critic's parameters frozen (`frozen_call`): gradients reach only the actions."""

    def q_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        n = actions.shape[0]
        obs_rep = repeat(obs_t, "b ... -> (n b) ...", n=n)
        q1, q2 = frozen_call(critic, obs_rep, rearrange(actions, "n b a -> (n b) a"))
        return rearrange(_aggregate(q1, q2, q_agg), "(n b) -> n b", n=n)

    return q_fn


class FQLLearner(LearnerBase):
    """FQL: ``update(TransitionBatch)`` does one critic step, one policy step (flow matching,
    distillation and Q together, FQL's single actor loss) and the target critic's average."""

    name = "fql"
    config_cls = FQLConfig
    progress_metrics = ("critic_loss", "policy_loss")

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg: FQLConfig = self.config
        with self.rng_scope():
            self.policy = FlowPolicy(self.obs_shape, self.action_dim, cfg.hidden, cfg.torso)
            self.policy = self.policy.to(self.device)
            self.critic = TwinQ(self.obs_shape, self.action_dim, cfg.hidden, cfg.torso)
            self.critic = self.critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.init_policy_ema()
        self.critic_opt = make_adam(self.critic.parameters(), cfg.lr)
        self.policy_opt = make_adam(self.policy.parameters(), cfg.lr)
        self._critic_loss = self.maybe_compile(fql_critic_loss)
        self._policy_loss = self.maybe_compile(fql_policy_loss)

    def state_modules(self) -> dict[str, nn.Module]:
        return {
            "policy": self.policy,
            "critic": self.critic,
            "critic_target": self.critic_target,
            **self.policy_ema_modules(),
        }

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"critic": self.critic_opt, "policy": self.policy_opt}

    def gradient_stages(self) -> tuple[Stage, ...]:
        return (
            GradientStage("critic", "critic", self._critic_step, "critic_grad_norm", "critic"),
            GradientStage("policy", "policy", self._policy_step, "policy_grad_norm", "policy"),
            PolyakStage("critic_target", "critic", self.config.tau),
        )

    def _critic_step(self, batch, carry) -> tuple[Tensor, dict[str, Tensor]]:
        cfg: FQLConfig = self.config
        return self._critic_loss(
            batch, self.critic, self.critic_target, self.policy, cfg.discount, cfg.q_agg
        )

    def _policy_step(self, batch, carry) -> tuple[Tensor, dict[str, Tensor]]:
        cfg: FQLConfig = self.config
        return self._policy_loss(
            self.policy,
            twin_q_fn(self.critic, cfg.q_agg),
            batch.obs,
            batch.action,
            alpha=cfg.alpha,
            flow_steps=cfg.flow_steps,
            normalize_q=cfg.normalize_q,
        )
