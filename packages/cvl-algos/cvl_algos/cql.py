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
from cvl_algos.common import Scalar, assert_transition_batch

__all__ = [
    "CQLConfig",
    "CQLLearner",
    "bc_warmstart_actor_loss",
    "cql_lagrange_loss",
    "cql_critic_loss",
    "cql_regularizer",
]


@dataclass(frozen=True)
class CQLConfig(sac.SACConfig):
    """Hyperparameters of CQL(H): SAC's (:class:`~cvl_algos.sac.SACConfig`, paper table 1) plus
    the regulariser's; tables 1-2 of the paper's appendix where it gives a value."""

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

    Uniform actions use the global torch RNG (the learner's, inside its ``rng_scope``).
    """
    batch_size = assert_transition_batch(batch, require_reward=False)
    action_dim = batch.action.shape[1]
    obs = batch.obs
    with torch.no_grad():
        shape = (num_samples, batch_size, action_dim)
        action_uniform = torch.rand(shape, device=batch.action.device) * 2.0 - 1.0
        log_mu_uniform = torch.full(
            (num_samples, batch_size),
            -action_dim * math.log(2.0),
            device=batch.action.device,
        )
        action_pi, log_pi = policy.sample(obs, num_samples)
        action_pi_next, log_pi_next = policy.sample(batch.obs_next, num_samples)
    actions = torch.cat([action_uniform, action_pi, action_pi_next], dim=0)
    log_mu = torch.cat([log_mu_uniform, log_pi, log_pi_next], dim=0)
    q1_many, q2_many = _q_many(critic, obs, actions)
    q1_data, q2_data = critic(obs, batch.action)
    terms = []
    for q_many, q_data in ((q1_many, q1_data), (q2_many, q2_data)):
        scores = q_many - log_mu if importance_sampling else q_many
        pushed_down = temperature * torch.logsumexp(scores / temperature, dim=0)
        terms.append(pushed_down.mean() - q_data.mean())
    reg = terms[0] + terms[1]
    q_uniform = 0.5 * (q1_many[:num_samples] + q2_many[:num_samples])
    q_pi = 0.5 * (q1_many[num_samples : 2 * num_samples] + q2_many[num_samples : 2 * num_samples])
    metrics = {
        "cql_regularizer": reg.detach(),
        "q_uniform": q_uniform.mean().detach(),
        "q_pi_samples": q_pi.mean().detach(),
        "cql_gap": (0.5 * (q1_data + q2_data)).mean().detach() - q_uniform.mean().detach(),
    }
    return reg, metrics


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
    """SAC's critic loss plus ``cql_alpha`` times :func:`cql_regularizer` (wraps, not copies)."""
    td, metrics = sac.critic_loss(
        batch, critic, critic_target, policy, alpha, discount, backup_entropy
    )
    reg, reg_metrics = cql_regularizer(
        batch, critic, policy, num_samples, temperature, importance_sampling
    )
    loss = td + cql_alpha * reg
    metrics["td_loss"] = metrics.pop("critic_loss")
    metrics.update(reg_metrics)
    metrics["critic_loss"] = loss.detach()
    return loss, metrics


def cql_lagrange_loss(
    log_alpha_prime: torch.Tensor, regularizer: torch.Tensor, target_action_gap: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Dual loss of CQL's Lagrange variant: ``-alpha' (R_1 + R_2 - 2 tau) / 2``, ``alpha' =
    exp(log_alpha')``; gradients reach ``log_alpha'`` only (``regularizer`` is detached).

    Minimising it raises ``alpha'`` while the mean per-head regulariser exceeds ``tau``.
    """
    assert log_alpha_prime.shape == regularizer.shape == (), (log_alpha_prime.shape, regularizer.shape)
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
    sampler_kind = "transition"

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        self._warmstart_loss_fn = self.maybe_compile(self.compute_warmstart_actor_loss)
        self.log_alpha_prime = Scalar(math.log(max(self.config.cql_alpha, 1e-8))).to(self.device)
        self.alpha_prime_opt = torch.optim.Adam(self.log_alpha_prime.parameters(), lr=self.config.lr)

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

    def _train_step(self, batch) -> dict[str, torch.Tensor]:
        metrics = super()._train_step(batch)
        if self.config.cql_lagrange:
            loss, lagrange_metrics = cql_lagrange_loss(
                self.log_alpha_prime(),
                metrics["cql_regularizer"],
                self.config.cql_target_action_gap,
            )
            self.clip_and_step(self.alpha_prime_opt, loss, self.log_alpha_prime)
            metrics.update(lagrange_metrics)
        return metrics

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
