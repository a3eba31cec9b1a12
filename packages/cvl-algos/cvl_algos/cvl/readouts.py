"""What a trained CVL critic says about given (state, action) pairs: Q (eq. 11 or 12) and the
log density ratio D, for diagnostics (`cvl_eval.analysis`) and tests; no gradients, no state
changed. A mixin of `cvl_algos.cvl.learner.CVLLearner`, which holds the networks it reads."""

from __future__ import annotations

import torch
from torch import Tensor

from cvl_algos.cvl.q import (
    log_density_ratio_from_latents,
    q_direct_from_latents,
    q_rff,
    reduce_critics,
)

__all__ = ["CriticReadouts"]


class CriticReadouts:
    """`q_values` and `log_density_ratio` of a `CVLLearner` (its ``critics``, ``psi_targets``,
    ``rff``, ``xi_state`` and config)."""

    @torch.no_grad()
    def q_values(
        self,
        obs: Tensor,
        action: Tensor,
        obs_future: Tensor | None = None,
        reward_future: Tensor | None = None,
        estimator: str | None = None,
    ) -> Tensor:
        """Q_NCE of (obs, action) pairs, (B,): "rff" uses the learned ``xi`` (eq. 12, the first
        critic's features); "mc" weighs the given future states' arrival rewards with each
        critic's psi_target (eq. 11), the minimum (or mean, ``critic_reduction``) over the
        critics when there are several (the Q the policy maximises). ``estimator`` defaults to the config's.
        """
        estimator = estimator or self.config.q_estimator
        if estimator not in ("rff", "mc"):
            raise ValueError(f"estimator must be 'rff' or 'mc', got {estimator!r}")
        obs, action = (
            self.obs_tensor(obs),
            torch.as_tensor(action, device=self.device).float(),
        )
        if action.shape[-1] != self.chunk_dim:
            raise ValueError(
                f"q_values: actions must have {self.chunk_dim} entries (action_chunk "
                f"{self.config.action_chunk} x {self.action_dim}), got shape {tuple(action.shape)}"
            )
        if estimator == "rff":
            return q_rff(
                self.rff,
                self.critic.phi(obs, action),
                self.xi_state.xi,
                self.config.discount,
                self.xi_state.zeta,
            )
        if obs_future is None or reward_future is None:
            raise ValueError("the direct estimator needs obs_future and reward_future")
        obs_future = self.obs_tensor(obs_future)
        reward_future = torch.as_tensor(reward_future, device=self.device).float()
        tau_q = self.config.q_temperature  # None: the critic's own (a learned one too)
        values = [
            q_direct_from_latents(
                critic.phi(obs, action),
                psi_target(obs_future),
                reward_future,
                self.config.discount,
                critic.temperature if tau_q is None else tau_q,
                self.config.self_normalized,
                self.config.q_expectile,
                critic.kernel,
            )
            for critic, psi_target in zip(self.critics, self.psi_targets, strict=True)
        ]
        return reduce_critics(values, self.config.critic_reduction)

    @torch.no_grad()
    def log_density_ratio(self, obs: Tensor, action: Tensor, obs_future: Tensor) -> Tensor:
        """D of (obs, action) pairs over the given future states, (B,): the log of eq. 11's
        normaliser with psi_target, as the policy's support term reads it
        (`cvl_algos.cvl.q.log_density_ratio_from_latents`; with the action-contrast term,
        log p(a | s) / p(a)); the first critic's."""
        phi_t = self.critic.phi(
            self.obs_tensor(obs), torch.as_tensor(action, device=self.device).float()
        )
        psi_future = self.psi_target(self.obs_tensor(obs_future))
        return log_density_ratio_from_latents(
            phi_t, psi_future, self.critic.temperature, self.critic.kernel
        )
