"""The CQL(H) regulariser's parts that the autograd loss (`cvl_algos.cql.cql_critic_loss`) and the
hand-written update (`cvl_algos.cql_manual`) share: the proposal actions with their
log-densities, and the regulariser's value with its metrics from the critic's Q-values. The
equations are in `cvl_algos.cql`'s docstring.
"""

from __future__ import annotations

import math

import torch

from cvl_models.noise import uniform_actions
from cvl_models.policy import sample_tanh_gaussian

__all__ = ["cql_proposals", "cql_terms"]


def cql_proposals(
    action: torch.Tensor,
    dist_obs: tuple[torch.Tensor, torch.Tensor],
    dist_next: tuple[torch.Tensor, torch.Tensor],
    num_samples: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``3 N`` proposal actions per state (N, B, A) each of uniform, ``pi(s)``, ``pi(s')``,
    stacked (3N, B, A), and their log-densities (3N, B), in that RNG order.

    ``dist_obs`` / ``dist_next`` are the policy's ``(mean, log_std)`` at ``s`` and ``s'``;
    ``action`` (B, A) gives the shape and device.
    """
    shape = (num_samples, *action.shape)
    action_uniform = uniform_actions(shape, device=action.device)
    log_mu_uniform = torch.full(shape[:2], -action.shape[1] * math.log(2.0), device=action.device)
    action_pi, log_pi = sample_tanh_gaussian(*dist_obs, num_samples)
    action_pi_next, log_pi_next = sample_tanh_gaussian(*dist_next, num_samples)
    actions = torch.cat([action_uniform, action_pi, action_pi_next], dim=0)
    log_mu = torch.cat([log_mu_uniform, log_pi, log_pi_next], dim=0)
    return actions, log_mu


def cql_terms(
    q_many: tuple[torch.Tensor, torch.Tensor],
    q_data: tuple[torch.Tensor, torch.Tensor],
    log_mu: torch.Tensor,
    num_samples: int,
    temperature: float,
    importance_sampling: bool,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``R_1 + R_2`` from both heads' Q of the proposals (3N, B) and of the data (B,)."""
    terms = []
    for q_proposals, q_dataset in zip(q_many, q_data, strict=True):
        scores = q_proposals - log_mu if importance_sampling else q_proposals
        pushed_down = temperature * torch.logsumexp(scores / temperature, dim=0)
        terms.append(pushed_down.mean() - q_dataset.mean())
    reg = terms[0] + terms[1]
    (q1_many, q2_many), (q1_data, q2_data) = q_many, q_data
    n = num_samples
    q_uniform = 0.5 * (q1_many[:n] + q2_many[:n])
    q_pi = 0.5 * (q1_many[n : 2 * n] + q2_many[n : 2 * n])
    metrics = {
        "cql_regularizer": reg.detach(),
        "q_uniform": q_uniform.mean().detach(),
        "q_pi_samples": q_pi.mean().detach(),
        "cql_gap": (0.5 * (q1_data + q2_data)).mean().detach() - q_uniform.mean().detach(),
    }
    return reg, metrics
