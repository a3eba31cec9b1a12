"""Soft Actor-Critic (Haarnoja et al. 2018): twin Q, target networks, automatic entropy tuning.

SAC is the online learner that generates the paper's datasets (appendix, "Dataset composition":
SAC trained for 500k frames, its replay buffer is the offline dataset); the environment loop that
feeds it lives in cvl-eval. Its losses are also the base that CQL wraps (:mod:`cvl_algos.cql`).

Losses (pure: no optimizer step; each returns ``(loss, metrics)``):

- critic (SAC eq. 5 with clipped double Q, Fujimoto et al. 2018):
  ``y = r + gamma (1 - terminated) [min_i Qbar_i(s', a') - alpha log pi(a'|s')]``, ``a' ~ pi(s')``;
  ``L_Q = sum_i mean (Q_i(s, a) - y)^2``.
- actor (SAC eq. 7): ``L_pi = mean [alpha log pi(a~|s) - min_i Q_i(s, a~)]``, ``a~ ~ pi(s)``
  reparameterised; Q's parameters are frozen in this loss.
- temperature (SAC eq. 18 on ``log alpha``): ``L_alpha = log_alpha * (H(pi) - H_target)`` with
  ``H(pi) = -mean log pi(a~|s)``; minimising raises alpha while the entropy is below target.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import (
    Scalar,
    assert_transition_batch,
    check_policy_ema_tau,
    frozen_call,
    make_adam,
    policy_from_config,
)
from cvl_algos.sac_manual import ManualSACUpdate, check_manual_gradients
from cvl_algos.stages import ComputeStage, GradientStage, PolyakStage, Stage
from cvl_models import Torso, TwinQ

__all__ = [
    "SACConfig",
    "SACLearner",
    "actor_loss",
    "alpha_loss",
    "critic_loss",
    "td_loss",
    "td_target",
]


@dataclass(frozen=True)
class SACConfig:
    """Hyperparameters of SAC; table 1 of the paper's appendix where it gives a value."""

    lr: float = 3e-4
    """Adam learning rate of critic, actor and temperature (table 1)."""
    batch_size: int = 512
    """Transitions per update (table 1); read by whoever builds the sampler."""
    discount: float = 0.99
    """gamma of the TD target (table 1)."""
    max_grad_norm: float = 100.0
    """Global gradient-norm clip of every optimiser step (table 1)."""
    hidden: tuple[int, ...] = (256, 256)
    """DenseNet widths of the Q networks and the policy (table 1)."""
    torso: Torso = "densenet"
    """MLP torso of the Q networks and the policy: ``"densenet"``, the paper's DenseNet with LayerNorm (table 1), or
    ``"mlp"``, plain Linear+ReLU layers of the same widths (SB3's and d3rlpy's architecture, for
    comparisons at equal architecture; `cvl_models.mlp.make_mlp`)."""
    tau: float = 0.005
    """Polyak rate of the target Q networks (SAC's default; not in the paper)."""
    init_alpha: float = 1.0
    """Initial entropy temperature alpha (SAC's default)."""
    auto_alpha: bool = True
    """Tune alpha towards ``target_entropy`` (SAC sec. 5); False keeps ``init_alpha``."""
    target_entropy: float | None = None
    """Target policy entropy; None means ``-action_dim`` (SAC's heuristic)."""
    backup_entropy: bool = True
    """Subtract ``alpha log pi(a'|s')`` in the TD target (soft backup)."""
    log_std_min: float = -5.0
    """Lower clamp of the policy's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the policy's log standard deviation."""
    policy_ema_tau: float = 0.0
    """Evaluation acting: 0 acts with the trained policy. tau in (0, 1] acts (deterministically)
    with a polyak average of its parameters, ``policy_ema <- (1 - tau) policy_ema + tau policy``
    after each update (`LearnerBase.acting_policy`; not in the paper). Training, and actions
    sampled with ``deterministic=False``, use the trained policy."""
    compile: bool = False
    """Wrap the loss computations in ``torch.compile`` (inductor compiles their backward too; the
    optimiser step stays eager; random draws stay eager's, `LearnerBase.maybe_compile`). On one
    CPU thread: CQL at the paper's sizes 0.4x the eager rate, SAC at 256 x 256 no gain, SAC at
    128 x 128, batch 256 1.19x per update after ~10-50 s of compilation
    (docs/performance.md)."""
    manual_gradients: bool = False
    """Compute the update's gradients with hand-written backward passes instead of autograd
    (`cvl_algos.sac_manual`: explicit matrix products on the forward pass's saved activations,
    under ``no_grad``; the same losses, random draws, clipped Adam steps and target averages).
    Either torso: the plain MLP (about half the dispatched ops per update: 1.4-1.6x faster per
    update at 128 x 128, batch 256, 1.1-1.2x at 256 x 256, batch 512, on one CPU thread,
    bench_sac_update_variants.py ``manual_mlp``) or the DenseNet with LayerNorm (``manual_dense``
    there). CQL takes it too, either torso (`cvl_algos.cql_manual`: its critic, BC warm start
    and Lagrange steps). Needs state (1-D) observations,
    ``compile=False``, SAC's or CQL's own losses (not a subclass's, e.g. CQL+UDS) and no
    vectorised seeds; anything else is refused when the config or learner is built. Its
    results equal autograd's up to float rounding (sums in another order), not bit for bit."""

    def __post_init__(self) -> None:
        check_policy_ema_tau(self.policy_ema_tau)
        if self.manual_gradients and self.compile:
            raise ValueError("manual_gradients needs compile=False, got compile=True")


def critic_loss(
    batch,
    critic: nn.Module,
    critic_target: nn.Module,
    policy: nn.Module,
    alpha: torch.Tensor,
    discount: float,
    backup_entropy: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped double-Q soft TD loss (SAC eq. 5); gradients reach ``critic`` only.

    Args:
        batch: a ``TransitionBatch`` (obs, action, reward, obs_next, terminated), not mutated.
        critic, critic_target: ``TwinQ``-like modules, ``(obs, action) -> (q1, q2)`` each (B,).
        policy: tanh-Gaussian policy sampling the next action (no gradient to it).
        alpha: entropy temperature (treated as a constant).
        discount: gamma.
        backup_entropy: include ``-alpha log pi(a'|s')`` in the target.
    """
    assert_transition_batch(batch)
    with torch.no_grad():
        action_next, log_prob_next = policy.sample(batch.obs_next)
    target = td_target(
        batch, critic_target, action_next, log_prob_next, alpha, discount, backup_entropy
    )
    q1, q2 = critic(batch.obs, batch.action)
    return td_loss(q1, q2, target)


@torch.no_grad()
def td_target(
    batch,
    critic_target: nn.Module,
    action_next: torch.Tensor,
    log_prob_next: torch.Tensor,
    alpha: torch.Tensor,
    discount: float,
    backup_entropy: bool,
) -> torch.Tensor:
    """``y = r + gamma (1 - terminated) [min_i Qbar_i(s', a') - alpha log pi(a'|s')]`` (B,) for
    given next actions ``a' ~ pi(s')`` and their log-probabilities (SAC eq. 5's target)."""
    q1_next, q2_next = critic_target(batch.obs_next, action_next)
    value_next = torch.minimum(q1_next, q2_next)
    if backup_entropy:
        value_next = value_next - alpha.detach() * log_prob_next
    return batch.reward + discount * (1.0 - batch.terminated) * value_next


def td_loss(
    q1: torch.Tensor, q2: torch.Tensor, target: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``sum_i mean (Q_i(s, a) - y)^2`` of both heads' (B,) values against the target."""
    assert q1.shape == q2.shape == target.shape and q1.ndim == 1, (q1.shape, target.shape)
    loss = (q1 - target).square().mean() + (q2 - target).square().mean()
    metrics = {
        "critic_loss": loss.detach(),
        "q_data": (0.5 * (q1 + q2)).mean().detach(),
        "q_target": target.mean(),
    }
    return loss, metrics


def actor_loss(
    batch, policy: nn.Module, critic: nn.Module, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Reparameterised SAC policy loss (SAC eq. 7); ``critic``'s parameters get no gradient.

    Metrics include ``entropy`` (= ``-mean log pi(a~|s)``, detached) for :func:`alpha_loss`.
    """
    assert_transition_batch(batch, require_reward=False)
    action, log_prob = policy.sample(batch.obs)
    q1, q2 = frozen_call(critic, batch.obs, action)
    q = torch.minimum(q1, q2)
    loss = (alpha.detach() * log_prob - q).mean()
    metrics = {
        "actor_loss": loss.detach(),
        "entropy": -log_prob.mean().detach(),
        "q_policy": q.mean().detach(),
    }
    return loss, metrics


def alpha_loss(
    log_alpha: torch.Tensor, entropy: torch.Tensor, target_entropy: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Temperature loss (SAC eq. 18 in log space): ``log_alpha * (H(pi) - H_target)``.

    ``entropy`` is the detached batch entropy estimate from :func:`actor_loss`.
    """
    assert log_alpha.shape == () and entropy.shape == (), (log_alpha.shape, entropy.shape)
    loss = log_alpha * (entropy.detach() - target_entropy)
    return loss, {"alpha_loss": loss.detach(), "alpha": log_alpha.detach().exp()}


class SACLearner(LearnerBase):
    """SAC learner: ``update(TransitionBatch)`` does one critic, actor and temperature step.

    Subclasses change the losses through :meth:`compute_critic_loss` / :meth:`compute_actor_loss`
    (CQL wraps the critic loss of this module rather than re-implementing it). The update runs
    `gradient_stages` with autograd, or with ``config.manual_gradients`` `ManualSACUpdate`'s
    hand-written gradients of the same losses (`_train_step` decides).
    """

    name = "sac"
    config_cls = SACConfig
    offline = False  # online: it generates the datasets (cvl-eval)
    progress_metrics = ("critic_loss", "actor_loss")

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg = self.config
        if cfg.manual_gradients:
            self.check_manual_gradients()  # before building networks
        with self.rng_scope():
            self.policy = policy_from_config(self.obs_shape, self.action_dim, cfg)
            self.policy = self.policy.to(self.device)
            self.critic = TwinQ(self.obs_shape, self.action_dim, cfg.hidden, cfg.torso)
            self.critic = self.critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.init_policy_ema()
        self.log_alpha = Scalar(torch.log(torch.tensor(cfg.init_alpha)).item()).to(self.device)
        self.target_entropy = (
            -float(self.action_dim) if cfg.target_entropy is None else float(cfg.target_entropy)
        )
        self.critic_opt = make_adam(self.critic.parameters(), cfg.lr)
        self.actor_opt = make_adam(self.policy.parameters(), cfg.lr)
        self.alpha_opt = make_adam(self.log_alpha.parameters(), cfg.lr)
        self._critic_loss_fn = self.maybe_compile(self.compute_critic_loss)
        self._actor_loss_fn = self.maybe_compile(self.compute_actor_loss)
        # the hand-written update (config.manual_gradients), else None: the stages' (autograd)
        self.manual_update = self.make_manual_update() if cfg.manual_gradients else None

    def check_manual_gradients(self) -> None:
        """Refuse (``ValueError``) what `make_manual_update`'s update cannot run, before the
        networks are built (`cvl_algos.sac_manual.check_manual_gradients`)."""
        check_manual_gradients(self, SACLearner)

    def make_manual_update(self) -> ManualSACUpdate:
        """The hand-written update of this learner's losses (``config.manual_gradients``)."""
        return ManualSACUpdate(self, SACLearner)

    def state_modules(self) -> dict[str, nn.Module]:
        return {
            "policy": self.policy,
            "critic": self.critic,
            "critic_target": self.critic_target,
            "log_alpha": self.log_alpha,
            **self.policy_ema_modules(),
        }

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"critic": self.critic_opt, "actor": self.actor_opt, "alpha": self.alpha_opt}

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha().detach().exp()

    def compute_critic_loss(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg = self.config
        return critic_loss(
            batch,
            self.critic,
            self.critic_target,
            self.policy,
            self.alpha,
            cfg.discount,
            cfg.backup_entropy,
        )

    def compute_actor_loss(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return actor_loss(batch, self.policy, self.critic, self.alpha)

    def actor_loss_fn_for_step(self):
        """The (possibly compiled) actor loss used at ``self.step``; chosen outside compiled code."""
        return self._actor_loss_fn

    def gradient_stages(self) -> tuple[Stage, ...]:
        """Critic step, actor step, temperature step (``auto_alpha``; it reads the actor step's
        entropy), the temperature as a metric, then the target critic's polyak average."""
        critic_fn, actor_fn = self._critic_loss_fn, self.actor_loss_fn_for_step()
        stages: list[Stage] = [
            GradientStage(
                "critic", "critic", lambda b, _: critic_fn(b), "critic_grad_norm", key="critic"
            ),
            GradientStage(
                "policy", "actor", lambda b, _: actor_fn(b), "actor_grad_norm", key=actor_fn
            ),
        ]
        if self.config.auto_alpha:
            stages.append(GradientStage("log_alpha", "alpha", self._alpha_loss, None, "alpha"))
        stages.append(ComputeStage(lambda b, _: ({}, {"alpha": self.alpha})))
        stages.append(PolyakStage("critic_target", "critic", self.config.tau))
        return tuple(stages)

    def _train_step(self, batch) -> dict[str, torch.Tensor]:
        """The stages' update (autograd), or the hand-written one with ``manual_gradients``."""
        if self.manual_update is not None:
            return self.manual_update.update(batch)
        return super()._train_step(batch)

    def _alpha_loss(self, batch, carry) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return alpha_loss(self.log_alpha(), carry["entropy"], self.target_entropy)
