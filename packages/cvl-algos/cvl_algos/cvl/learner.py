"""The CVL learner: contrastive critic, psi_target EMA, xi EMA and policy (paper algorithm 1).

One ``update(batch)`` on a reward-labelled ``ContrastiveBatch``:

1. critic step on the InfoNCE + partition loss (eq. 9-10);
2. ``psi_target <- (1 - tau) psi_target + tau psi`` (polyak);
3. (RFF estimator) ``xi <- beta xi + (1 - beta) mean_j F(psi_target(s+_j)) r_j`` (eq. 12);
4. policy step on eq. 13-15 with Q from eq. 12 (RFF) or eq. 11 (direct, over this batch's
   future states encoded by ``psi_target``).

``pretrain_update(batch)`` runs steps 1-2 only, on reward-free batches (paper sec. 5.2): ``xi``
only ever sees labelled rewards and the policy is trained during finetuning only.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

from cvl_algos.common import LearnerBase, metrics_to_floats, polyak_update
from cvl_algos.cvl.config import CVLConfig, CVLMCConfig
from cvl_algos.cvl.losses import awr_policy_loss, contrastive_critic_loss, policy_loss
from cvl_algos.cvl.q import (
    direct_q_fn,
    q_direct_from_latents,
    q_rff,
    rff_q_fn,
    xi_ema,
    xi_estimate,
)
from cvl_models import ContrastiveCritic, RandomFourierFeatures, TanhGaussianPolicy

__all__ = ["CVLLearner", "CVLMCLearner", "XiState"]


class XiState(nn.Module):
    """Buffers of the RFF estimator: ``xi`` (D,) and how many labelled batches it has seen.

    The first labelled batch sets ``xi`` to its own estimate (an EMA started from zeros would
    scale Q by ``1 - beta^n`` during its first ~1/(1-beta) updates); later batches average in
    with weight ``1 - beta_xi``.
    """

    xi: Tensor
    count: Tensor

    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.register_buffer("xi", torch.zeros(num_features))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))


class CVLLearner(LearnerBase):
    """Contrastive Value Learning (Mazoure et al.), Q from random Fourier features by default.

    Networks: ``critic`` (phi and psi encoders), ``psi_target`` (polyak EMA copy of
    ``critic.psi_net``, which encodes future states for both Q estimators), ``policy``
    (tanh-Gaussian), ``rff`` (fixed random features, seeded by the learner's seed) and
    ``xi_state``.
    """

    name = "cvl"
    config_cls = CVLConfig
    sampler_kind = "contrastive"

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action_dim: int,
        config: CVLConfig | None = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
    ) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg: CVLConfig = self.config
        self.pretrain_steps = 0
        with self.rng_scope():
            self.critic = ContrastiveCritic(
                self.obs_shape,
                self.action_dim,
                latent_dim=cfg.latent_dim,
                hidden=cfg.hidden,
                normalize=cfg.normalize,
                temperature=cfg.temperature,
            ).to(self.device)
            self.psi_target = copy.deepcopy(self.critic.psi_net).requires_grad_(False)
            self.policy = TanhGaussianPolicy(
                self.obs_shape,
                self.action_dim,
                hidden=cfg.hidden,
                log_std_min=cfg.log_std_min,
                log_std_max=cfg.log_std_max,
            ).to(self.device)
        self.rff = RandomFourierFeatures(
            cfg.latent_dim,
            cfg.num_rff_features,
            temperature=cfg.temperature,
            seed=self.seed,
        ).to(self.device)
        self.xi_state = XiState(cfg.num_rff_features).to(self.device)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.lr)
        self.policy_opt = torch.optim.Adam(self.policy.parameters(), lr=cfg.lr)
        self._critic_loss = self.maybe_compile(contrastive_critic_loss)
        self._policy_loss = self.maybe_compile(policy_loss)
        self._awr_loss = self.maybe_compile(awr_policy_loss)

    # -- checkpoint contents ----------------------------------------------------------------------

    def state_modules(self) -> dict[str, nn.Module]:
        return {
            "critic": self.critic,
            "psi_target": self.psi_target,
            "policy": self.policy,
            "rff": self.rff,
            "xi_state": self.xi_state,
        }

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"critic": self.critic_opt, "policy": self.policy_opt}

    def extra_state(self) -> dict[str, Any]:
        return {"pretrain_steps": self.pretrain_steps}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.pretrain_steps = int(state.get("pretrain_steps", 0))

    # -- pieces of an update ----------------------------------------------------------------------

    def _critic_step(self, batch: Any) -> dict[str, Tensor]:
        """Critic gradient step (eq. 10) followed by the psi_target polyak update."""
        loss, metrics = self._critic_loss(self.critic, batch, self.config.lambda_partition)
        metrics["critic_grad_norm"] = self.clip_and_step(self.critic_opt, loss, self.critic)
        polyak_update(self.psi_target, self.critic.psi_net, self.config.psi_target_tau)
        return metrics

    @torch.no_grad()
    def _xi_step(self, psi_future: Tensor, reward_future: Tensor) -> dict[str, Tensor]:
        """xi EMA of eq. 12 from this batch's psi_target features and arrival rewards."""
        state = self.xi_state
        estimate = xi_estimate(self.rff, psi_future, reward_future)
        averaged = xi_ema(state.xi, estimate, self.config.beta_xi)
        state.xi.copy_(torch.where(state.count == 0, estimate, averaged))
        state.count.add_(1)
        return {"xi_norm": torch.linalg.vector_norm(state.xi)}

    def _policy_step(self, batch: Any, psi_future: Tensor) -> dict[str, Tensor]:
        cfg: CVLConfig = self.config
        if cfg.q_estimator == "rff":
            q_fn = rff_q_fn(self.critic, self.rff, self.xi_state.xi, cfg.discount)
        else:
            q_fn = direct_q_fn(self.critic, psi_future, batch.reward_future, cfg.discount)
        if cfg.policy_extraction == "awr":
            loss, metrics = self._awr_loss(
                self.policy,
                q_fn,
                batch,
                num_action_samples=cfg.num_action_samples,
                beta=cfg.awr_beta,
                max_weight=cfg.awr_max_weight,
            )
        else:
            loss, metrics = self._policy_loss(
                self.policy,
                q_fn,
                batch,
                num_action_samples=cfg.num_action_samples,
                alpha=cfg.alpha,
                lambda_bc=cfg.lambda_bc,
                tau_bc=cfg.tau_bc,
                normalize_q=cfg.normalize_q,
            )
        metrics["policy_grad_norm"] = self.clip_and_step(self.policy_opt, loss, self.policy)
        return metrics

    def _train_step(self, batch: Any) -> dict[str, Tensor]:
        if batch.reward_future is None:
            raise ValueError(
                "CVLLearner.update needs reward-labelled batches; use pretrain_update for "
                "reward-free data"
            )
        metrics = self._critic_step(batch)
        with torch.no_grad():
            psi_future = self.psi_target(batch.obs_future)
        if self.config.q_estimator == "rff":
            metrics.update(self._xi_step(psi_future, batch.reward_future))
        metrics.update(self._policy_step(batch, psi_future))
        return metrics

    # -- the protocol and its pretraining mode ----------------------------------------------------

    def pretrain_update(self, batch: Any) -> dict[str, float]:
        """Critic-only step (no xi, no policy) for reward-free pretraining (paper sec. 5.2).

        Rewards in ``batch`` are ignored if present. Advances ``pretrain_steps``, not ``step``
        (which counts labelled updates, as for CQL+UDS).
        """
        with self.rng_scope():
            metrics = self._critic_step(batch)
        self.pretrain_steps += 1
        return metrics_to_floats(metrics)

    @torch.no_grad()
    def q_values(
        self,
        obs: Tensor,
        action: Tensor,
        obs_future: Tensor | None = None,
        reward_future: Tensor | None = None,
        estimator: str | None = None,
    ) -> Tensor:
        """Q_NCE of (obs, action) pairs, (B,): "rff" uses the learned ``xi`` (eq. 12); "mc"
        averages over the given future states and arrival rewards with psi_target (eq. 11).
        ``estimator`` defaults to the config's."""
        estimator = estimator or self.config.q_estimator
        if estimator not in ("rff", "mc"):
            raise ValueError(f"estimator must be 'rff' or 'mc', got {estimator!r}")
        obs, action = (
            self.obs_tensor(obs),
            torch.as_tensor(action, device=self.device).float(),
        )
        phi_t = self.critic.phi(obs, action)
        if estimator == "rff":
            return q_rff(self.rff, phi_t, self.xi_state.xi, self.config.discount)
        if obs_future is None or reward_future is None:
            raise ValueError("the direct estimator needs obs_future and reward_future")
        psi_future = self.psi_target(self.obs_tensor(obs_future))
        reward_future = torch.as_tensor(reward_future, device=self.device).float()
        return q_direct_from_latents(
            phi_t,
            psi_future,
            reward_future,
            self.config.discount,
            self.critic.temperature,
        )


class CVLMCLearner(CVLLearner):
    """CVL with the direct Monte-Carlo Q_NCE of eq. 11 (no random features) by default."""

    name = "cvl_mc"
    config_cls = CVLMCConfig
