"""Conservative Q-Learning, CQL(H) (Kumar et al. 2020), built by wrapping SAC's losses.

Critic (CQL paper eq. 4, CQL(H), with the importance-sampled log-sum-exp of its appendix F and of
the reference implementation): for each Q head ``i``::

    R_i = E_s [ T * logsumexp_j ( (Q_i(s, a_j) - log mu(a_j)) / T ) ] - E_{(s,a)~D} Q_i(s, a)
    L_Q = L_Q^SAC + cql_alpha * (R_1 + R_2)

over ``3 N`` actions per state (N = 10): ``N`` uniform on ``[-1, 1]^A`` (``log mu = -A log 2``),
``N`` from ``pi(.|s)`` and ``N`` from ``pi(.|s')`` (all evaluated at ``s``, weighted by their
detached log-probabilities). The constant ``log 3N`` of a proper mean is omitted, as in the
reference code (it has no gradient). Without importance sampling the ``log mu`` terms are dropped.

Actor: SAC's loss, except during the first ``policy_eval_start`` updates where the reference
code trains it by behaviour cloning with SAC's entropy term,
``mean [alpha log pi(a~|s) - log pi(a|s)]`` (a ~ D). DESIGN.md sec. 2 reports a library CQL
(without this warm start) collapsing to the mean action on a noisy-expert Meta-World dataset;
the default keeps the reference's 40k and the ablation sets it to 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from einops import rearrange, repeat
from torch import nn

from cvl_algos import sac
from cvl_algos.common import Scalar, assert_transition_batch, make_adam
from cvl_algos.cql_manual import CQL_METHODS, ManualCQLUpdate
from cvl_algos.cql_parts import cql_proposals, cql_terms
from cvl_algos.sac_manual import check_manual_gradients
from cvl_algos.stages import GradientStage, Stage
from cvl_models.policy import sample_tanh_gaussian

__all__ = [
    "CQLConfig",
    "CQLLearner",
    "bc_warmstart_actor_loss",
    "cql_lagrange_loss",
    "cql_critic_loss",
    "cql_proposals",
    "cql_regularizer",
    "cql_terms",
]


@dataclass(frozen=True)
class CQLConfig(sac.SACConfig):
    """Hyperparameters of CQL(H): SAC's (:class:`~cvl_algos.sac.SACConfig`, paper table 1) plus
    the regulariser's; tables 1-2 of the paper's appendix where it gives a value.

    ``manual_gradients`` (SAC's field, off by default) makes CQL's whole update with
    hand-written gradients (`cvl_algos.cql_manual`: the critic over the 3N proposals and the data
    action, the BC warm start, SAC's actor and temperature steps, the Lagrange step), within
    float rounding of autograd's at the same seed, with either torso."""

    backup_entropy: bool = False
    """Soft backup ``-alpha log pi`` in the TD target; the reference CQL code's default is the
    deterministic backup (False)."""
    cql_alpha: float = 1.0
    """Weight of the CQL(H) regulariser (table 2: 1)."""
    cql_num_samples: int = 10
    """N actions per state from each of uniform, pi(s) and pi(s') (DESIGN.md: 10)."""
    cql_temperature: float = 1.0
    """Temperature T of the log-sum-exp (reference default 1)."""
    cql_importance_sampling: bool = True
    """Subtract the proposal log-densities inside the log-sum-exp (CQL appendix F)."""
    cql_lagrange: bool = False
    """Tune the regulariser's weight by dual gradient ascent instead of fixing it (the CQL paper's
    Lagrange variant, its eq. 5 with threshold ``cql_target_action_gap``): the weight
    ``exp(log_alpha_prime)`` grows while ``R_i`` exceeds the threshold and shrinks below it;
    ``cql_alpha`` is then its initial value."""
    cql_target_action_gap: float = 10.0
    """tau of the Lagrange variant: the tolerated ``R_i`` (reference code's default: 10)."""
    policy_eval_start: int = 40_000
    """Updates during which the actor is trained by BC (+ SAC entropy term) before switching to
    the SAC actor loss (reference CQL default 40k; not in the paper; 0 disables)."""


def _q_many(critic: nn.Module, obs: torch.Tensor, actions: torch.Tensor):
    """Both heads of ``critic`` at ``obs`` (B, ...) for ``actions`` (N, B, A) -> two (N, B).

    Uses ``critic.many`` (each state encoded once) when the critic has it, e.g. `TwinQ`.
    """
    if hasattr(critic, "many"):
        return critic.many(obs, actions)
    num = actions.shape[0]
    obs_rep = repeat(obs, "b ... -> (n b) ...", n=num)
    q1, q2 = critic(obs_rep, rearrange(actions, "n b a -> (n b) a"))
    return rearrange(q1, "(n b) -> n b", n=num), rearrange(q2, "(n b) -> n b", n=num)


def cql_regularizer(
    batch,
    critic: nn.Module,
    policy: nn.Module,
    num_samples: int = 10,
    temperature: float = 1.0,
    importance_sampling: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """CQL(H) regulariser ``R_1 + R_2`` (CQL eq. 4 / appendix F); gradients reach ``critic`` only.

    Uniform actions use the global torch RNG (the learner's, inside its ``rng_scope``) through
    `cvl_models.noise`.
    """
    assert_transition_batch(batch, require_reward=False)
    with torch.no_grad():
        actions, log_mu = cql_proposals(
            batch.action, policy(batch.obs), policy(batch.obs_next), num_samples
        )
    q1_many, q2_many = _q_many(critic, batch.obs, actions)
    q1_data, q2_data = critic(batch.obs, batch.action)
    return cql_terms(
        (q1_many, q2_many),
        (q1_data, q2_data),
        log_mu,
        num_samples,
        temperature,
        importance_sampling,
    )


def cql_critic_loss(
    batch,
    critic: nn.Module,
    critic_target: nn.Module,
    policy: nn.Module,
    alpha: torch.Tensor,
    discount: float,
    backup_entropy: bool = False,
    cql_alpha: float = 1.0,
    num_samples: int = 10,
    temperature: float = 1.0,
    importance_sampling: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """SAC's critic loss plus ``cql_alpha`` times :func:`cql_regularizer`, sharing the passes.

    Equals ``sac.critic_loss(...) + cql_alpha * cql_regularizer(...)`` drawing from the RNG in
    the same order (a test checks it), with each network run once: the policy at ``s`` and
    ``s'`` in one pass (the TD target's next action and the proposals come from it), the critic
    on the 3N proposals and the dataset action at ``s`` in one pass (SAC's ``Q(s, a)`` and the
    regulariser's are the same values).
    """
    assert_transition_batch(batch)
    with torch.no_grad():
        dist_obs, dist_next = _policy_at_obs_and_next(policy, batch.obs, batch.obs_next)
        action_next, log_prob_next = sample_tanh_gaussian(*dist_next)
        target = sac.td_target(
            batch, critic_target, action_next, log_prob_next, alpha, discount, backup_entropy
        )
        actions, log_mu = cql_proposals(batch.action, dist_obs, dist_next, num_samples)
    with_data = torch.cat([actions, rearrange(batch.action, "b a -> 1 b a")], dim=0)
    q1_all, q2_all = _q_many(critic, batch.obs, with_data)
    q_data = (q1_all[-1], q2_all[-1])
    td, metrics = sac.td_loss(*q_data, target)
    reg, reg_metrics = cql_terms(
        (q1_all[:-1], q2_all[:-1]), q_data, log_mu, num_samples, temperature, importance_sampling
    )
    loss = td + cql_alpha * reg
    metrics["td_loss"] = metrics.pop("critic_loss")
    metrics.update(reg_metrics)
    metrics["critic_loss"] = loss.detach()
    return loss, metrics


def _policy_at_obs_and_next(policy: nn.Module, obs: torch.Tensor, obs_next: torch.Tensor):
    """``(mean, log_std)`` of the policy at ``s`` and at ``s'``, from one network pass."""
    mean, log_std = policy(torch.cat([obs, obs_next], dim=0))
    half = obs.shape[0]
    return (mean[:half], log_std[:half]), (mean[half:], log_std[half:])


def cql_lagrange_loss(
    log_alpha_prime: torch.Tensor, regularizer: torch.Tensor, target_action_gap: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Dual loss of CQL's Lagrange variant: ``-alpha' (R_1 + R_2 - 2 tau) / 2``, ``alpha' =
    exp(log_alpha')``; gradients reach ``log_alpha'`` only (``regularizer`` is detached).

    Minimising it raises ``alpha'`` while the mean per-head regulariser exceeds ``tau``.
    """
    assert log_alpha_prime.shape == regularizer.shape == (), (
        log_alpha_prime.shape,
        regularizer.shape,
    )
    alpha_prime = log_alpha_prime.exp()
    loss = -alpha_prime * (0.5 * regularizer.detach() - target_action_gap)
    return loss, {"cql_alpha_prime": alpha_prime.detach(), "cql_lagrange_loss": loss.detach()}


def bc_warmstart_actor_loss(
    batch, policy: nn.Module, alpha: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Reference CQL's ``policy_eval_start`` actor loss: ``mean[alpha log pi(a~|s) - log pi(a|s)]``.

    ``a~ ~ pi(.|s)`` reparameterised, ``a`` the dataset action. Touches only the policy. Metrics
    carry ``entropy`` so the temperature keeps being tuned during the warm start.
    """
    batch_size = assert_transition_batch(batch, require_reward=False)
    _, log_prob_sample = policy.sample(batch.obs)
    log_prob_data = policy.log_prob(batch.obs, batch.action)
    assert log_prob_data.shape == log_prob_sample.shape == (batch_size,)
    loss = (alpha.detach() * log_prob_sample - log_prob_data).mean()
    metrics = {
        "actor_loss": loss.detach(),
        "entropy": -log_prob_sample.mean().detach(),
        "nll": -log_prob_data.mean().detach(),
    }
    return loss, metrics


class CQLLearner(sac.SACLearner):
    """CQL(H) learner: SAC's networks and update order with the wrapped critic loss and the BC
    warm start of the actor for the first ``policy_eval_start`` updates."""

    name = "cql"
    config_cls = CQLConfig
    offline = True

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        self._warmstart_loss_fn = self.maybe_compile(self.compute_warmstart_actor_loss)
        self.log_alpha_prime = Scalar(math.log(max(self.config.cql_alpha, 1e-8))).to(self.device)
        self.alpha_prime_opt = make_adam(self.log_alpha_prime.parameters(), self.config.lr)

    def check_manual_gradients(self) -> None:
        check_manual_gradients(self, CQLLearner, CQL_METHODS)

    def make_manual_update(self) -> ManualCQLUpdate:
        return ManualCQLUpdate(self, CQLLearner)

    def state_modules(self) -> dict[str, nn.Module]:
        modules = super().state_modules()
        if self.config.cql_lagrange:
            modules["log_alpha_prime"] = self.log_alpha_prime
        return modules

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizers = super().state_optimizers()
        if self.config.cql_lagrange:
            optimizers["alpha_prime"] = self.alpha_prime_opt
        return optimizers

    @property
    def cql_weight(self) -> torch.Tensor | float:
        """The regulariser's weight: fixed ``cql_alpha``, or the Lagrange multiplier."""
        if self.config.cql_lagrange:
            return self.log_alpha_prime().detach().exp().clamp(max=1e6)
        return self.config.cql_alpha

    def gradient_stages(self) -> tuple[Stage, ...]:
        """SAC's stages, then (Lagrange variant) the dual step on the regulariser's weight."""
        stages = super().gradient_stages()
        if not self.config.cql_lagrange:
            return stages
        lagrange = GradientStage(
            "log_alpha_prime", "alpha_prime", self._lagrange_loss, None, key="lagrange"
        )
        return (*stages, lagrange)

    def _lagrange_loss(self, batch, carry) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return cql_lagrange_loss(
            self.log_alpha_prime(), carry["cql_regularizer"], self.config.cql_target_action_gap
        )

    def compute_critic_loss(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg = self.config
        return cql_critic_loss(
            batch,
            self.critic,
            self.critic_target,
            self.policy,
            self.alpha,
            cfg.discount,
            cfg.backup_entropy,
            self.cql_weight,
            cfg.cql_num_samples,
            cfg.cql_temperature,
            cfg.cql_importance_sampling,
        )

    def compute_warmstart_actor_loss(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return bc_warmstart_actor_loss(batch, self.policy, self.alpha)

    def actor_loss_fn_for_step(self):
        if self.step < self.config.policy_eval_start:
            return self._warmstart_loss_fn
        return self._actor_loss_fn
