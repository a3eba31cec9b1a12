"""CQL's update with hand-written gradients (``CQLConfig.manual_gradients``), for both torsos.

`ManualCQLUpdate` is `cvl_algos.sac_manual.ManualSACUpdate` (whose docstring has the notation,
the plain MLP's backward pass, the policy sample and SAC's actor and temperature steps) with
CQL's critic step, its BC warm start of the actor and its Lagrange step; it makes the update of
`cvl_algos.cql.CQLLearner.gradient_stages` (the same losses, random draws, clipped fused-Adam
steps and target averages), under ``torch.no_grad()``. Equal to autograd's up to float rounding.

Critic step (`cvl_algos.cql.cql_critic_loss`; CQL eq. 4, appendix F). The policy runs once on
``[s; s']``; the TD target's next action ``a' ~ pi(s')`` is drawn first, then the ``3 N``
proposals ``a_j`` (uniform, ``pi(s)``, ``pi(s')``) with log-densities ``log mu_j``
(`cvl_algos.cql_parts.cql_proposals`), in the autograd path's order. Each head ``Q_i`` scores
the ``M = 3N + 1`` actions (the proposals, then the data action ``a``) at ``s``, its first
layer's state columns once per state (``a_1 = a_j W_a^T + (s W_s^T + b_1)``,
`cvl_algos.cql_manual_torso.mlp_forward_shared`; the DenseNet's every layer's, as ``x`` feeds
them all, `dense_forward_shared`). With ``c`` the regulariser's weight (fixed
``cql_alpha`` or the Lagrange multiplier), temperature ``T`` and ``x_ij = (Q_i(s, a_j) - log
mu_j) / T`` (without importance sampling ``log mu_j = 0``)::

    L = sum_i [ mean_b (Q_i(s, a) - y)^2 + c (mean_b T logsumexp_j x_ij - mean_b Q_i(s, a)) ]
    dL/dQ_i(s, a_j) = (c / B) softmax_j(x_ij)                  (proposals)
    dL/dQ_i(s, a)   = 2 (Q_i(s, a) - y) / B - c / B              (data action)

back-propagated through the head with `mlp_backward_shared` (`dense_backward_shared`): a
layer's state columns' weight gradient is ``(sum_j G_j)^T s``, the action columns' ``G^T a``,
over all ``M B`` rows. Each
head runs forward and backward over ``STATE_CHUNK`` states (all their ``M`` actions: the
softmax is per state) at a time, its weight gradients summed over the chunks.

BC warm start (`cvl_algos.cql.bc_warmstart_actor_loss`, the first ``policy_eval_start``
updates): ``L = mean [alpha log pi(a~|s) - log pi(a|s)]``, ``a~`` the reparameterised sample
(SAC's actor step without the Q term: ``g_a = 0``) and ``a`` the data action, ``u_a =
atanh(clamp(a, -C, C))``, ``z = (u_a - mean) / std``; ``log pi(a|s) = sum [-z^2/2 - log_std -
log(2 pi)/2 - log(1 - tanh(u_a)^2)]`` gives ``d log pi(a|s)/d mean = z / std`` and ``d log
pi(a|s)/d log_std = z^2 - 1``, scaled by ``-1/B`` and added to the sample's gradients before
the log-std squash (`cvl_algos.sac_manual.policy_out_grad`'s ``extra``). One policy pass serves
both terms.

Lagrange step (``cql_lagrange``, `cvl_algos.cql.cql_lagrange_loss`): ``L' = -alpha' (R / 2 -
tau)``, ``alpha' = exp(log_alpha')``, so ``dL'/d log_alpha' = L'``; one clipped step of its
optimiser after the target average.

Either torso: the plain MLP or the DenseNet with LayerNorm (`cvl_algos.cql_manual_torso`,
its passes picked once, when the update is built). Pixels, ``compile`` and vectorised
seeds are refused as for SAC.
"""

from __future__ import annotations

import torch
from einops import rearrange

from cvl_algos.base import LearnerBase
from cvl_algos.common import assert_transition_batch
from cvl_algos.cql_manual_torso import shared_torso_functions
from cvl_algos.cql_parts import cql_proposals, cql_terms
from cvl_algos.sac import td_loss
from cvl_algos.sac_manual import SAC_METHODS, ManualSACUpdate, policy_dist, policy_out_grad
from cvl_models.policy import ACTION_CLIP, action_log_prob, sample_tanh_gaussian

__all__ = ["CQL_METHODS", "STATE_CHUNK", "ManualCQLUpdate", "cql_q_grad", "data_log_prob_grads"]

STATE_CHUNK = 64
"""States per pass of a critic head in the critic step: forward and backward over ``M = 31``
actions x 64 states (1984 rows) at a time keep the activations (2 MB each at 256 wide) in cache;
the weight gradients add up over the chunks. A head's pass at 31 x 512 rows, 256 x 256, one
CPU thread: 87 ms CPU in chunks of 64 states, 110 ms in one piece (32: 90, 128: 90, 256: 95;
2-core x86_64 AMD EPYC, load average 3.5 from other jobs, 2026-11-28)."""

CQL_METHODS = (
    *SAC_METHODS,
    "compute_warmstart_actor_loss",
    "actor_loss_fn_for_step",
    "_train_step",
    "_pretrain_step",
)
"""The methods of `cvl_algos.cql.CQLLearner` (or their absence) whose losses, stages and update
`ManualCQLUpdate` makes; a subclass overriding or adding one is refused (CQL+UDS adds its
zero-reward pretraining step)."""


def cql_q_grad(
    q: torch.Tensor,
    target: torch.Tensor,
    log_mu: torch.Tensor,
    weight: torch.Tensor | float,
    temperature: float,
    importance_sampling: bool,
    batch_size: int,
) -> torch.Tensor:
    """``dL/dQ`` (M, S) of one head's part of CQL's critic loss (module docstring) for its
    values ``q`` (M, S) at the ``3N`` proposals then the data action, the TD target (S,), the
    proposals' ``log_mu`` (3N, S) and the regulariser's ``weight``: ``S`` states of the
    batch of ``batch_size`` (the loss's means are over all of them)."""
    proposals = q[:-1]
    scores = proposals - log_mu if importance_sampling else proposals
    if temperature != 1.0:
        scores = scores / temperature
    grad_proposals = torch.softmax(scores, dim=0).mul_(weight / batch_size)
    grad_data = (q[-1] - target).mul_(2.0 / batch_size).sub_(weight / batch_size)
    return torch.cat([grad_proposals, rearrange(grad_data, "b -> 1 b")], dim=0)


def data_log_prob_grads(
    mean: torch.Tensor, log_std: torch.Tensor, action: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``log pi(a|s)`` (B,) of data actions ``a`` (B, A) (`cvl_models.policy.action_log_prob`)
    and ``scale`` times its gradients ``(d/d mean, d/d log_std) = (z / std, z^2 - 1)``, ``z =
    (atanh(clamp(a)) - mean) / std`` (module docstring, BC warm start)."""
    u = torch.atanh(torch.clamp(action.to(mean.dtype), -ACTION_CLIP, ACTION_CLIP))
    inv_std = torch.exp(-log_std)
    z = (u - mean).mul_(inv_std)
    grad_mean = (z * inv_std).mul_(scale)
    grad_log_std = z.square().sub_(1.0).mul_(scale)
    return action_log_prob(mean, log_std, action), grad_mean, grad_log_std


class ManualCQLUpdate(ManualSACUpdate):
    """`cvl_algos.cql.CQLLearner`'s update with hand-written gradients (module docstring), for a
    learner with either torso and state observations; ``cql_class`` is `CQLLearner`
    (passed in so that this module does not import it); ``state_chunk`` the states per pass
    of a critic head (`STATE_CHUNK`). `critic_grads`, `actor_grads` (the warm
    start's while ``step < policy_eval_start``) and `alpha_grads` compute one stage's gradients
    without stepping; `update` is the learner's whole update."""

    def __init__(
        self, learner: LearnerBase, cql_class: type, state_chunk: int = STATE_CHUNK
    ) -> None:
        super().__init__(learner, cql_class, CQL_METHODS)
        self.state_chunk = state_chunk
        self.shared = shared_torso_functions(learner.critic.q1.mlp)
        self.shared_cols = [self.shared.cols(c, self.obs_dim) for c in self.critics]

    @torch.no_grad()
    def critic_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """CQL's critic gradients (module docstring) into the critic's ``param.grad``; returns
        `cvl_algos.cql.cql_critic_loss`'s metrics."""
        learner, cfg = self.learner, self.learner.config
        batch_size = assert_transition_batch(batch)
        out = self.torso.forward(self.policy, torch.cat([batch.obs, batch.obs_next]), None)
        mean, log_std, _ = policy_dist(out, cfg.log_std_min, cfg.log_std_max)
        dist_obs = (mean[:batch_size], log_std[:batch_size])
        dist_next = (mean[batch_size:], log_std[batch_size:])
        target = self.td_target(batch, *sample_tanh_gaussian(*dist_next), alpha)
        actions, log_mu = cql_proposals(batch.action, dist_obs, dist_next, cfg.cql_num_samples)
        with_data = torch.cat([actions, rearrange(batch.action, "b a -> 1 b a")], dim=0)
        weight = learner.cql_weight
        chunks = [
            slice(start, start + self.state_chunk)
            for start in range(0, batch_size, self.state_chunk)
        ]
        qs = []
        for layers, cols, params in zip(
            self.critics, self.shared_cols, self.critic_params, strict=True
        ):
            grads = [p.grad for p in params]
            q_chunks = []
            for i, rows in enumerate(chunks):
                saved: list = []
                q = self.shared.forward(layers, cols, batch.obs[rows], with_data[:, rows], saved)
                q = rearrange(q, "(m b) 1 -> m b", m=with_data.shape[0])
                grad = cql_q_grad(
                    q,
                    target[rows],
                    log_mu[:, rows],
                    weight,
                    cfg.cql_temperature,
                    cfg.cql_importance_sampling,
                    batch_size,
                )
                grad = rearrange(grad, "m b -> (m b) 1")
                self.shared.backward(layers, saved, grad, grads, i > 0)
                q_chunks.append(q)
            qs.append(torch.cat(q_chunks, dim=1))
        return _critic_metrics(qs, target, log_mu, weight, cfg)

    @torch.no_grad()
    def actor_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The BC warm start's gradients while ``step < policy_eval_start``, SAC's after."""
        if self.learner.step < self.learner.config.policy_eval_start:
            return self.warmstart_grads(batch, alpha)
        return super().actor_grads(batch, alpha)

    @torch.no_grad()
    def warmstart_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The BC warm start's gradients (module docstring) into the policy's ``param.grad``;
        returns `cvl_algos.cql.bc_warmstart_actor_loss`'s metrics."""
        cfg = self.learner.config
        batch_size = assert_transition_batch(batch, require_reward=False)
        saved: list = []
        sample = self._sample(self.torso.forward(self.policy, batch.obs, saved))
        log_prob_data, grad_mean, grad_log_std = data_log_prob_grads(
            sample.mean, sample.log_std, batch.action, -1.0 / batch_size
        )
        loss = (alpha * sample.log_prob - log_prob_data).mean()
        grad_out = policy_out_grad(
            sample,
            torch.zeros_like(sample.action),
            alpha / batch_size,
            cfg.log_std_max - cfg.log_std_min,
            (grad_mean, grad_log_std),
        )
        self.torso.backward(self.policy, saved, grad_out, [p.grad for p in self.policy_params])
        return {
            "actor_loss": loss,
            "entropy": -sample.log_prob.mean(),
            "nll": -log_prob_data.mean(),
        }

    @torch.no_grad()
    def lagrange_grads(self, regularizer: torch.Tensor) -> dict[str, torch.Tensor]:
        """The Lagrange step's gradient ``dL'/d log_alpha' = L' = -alpha' (R / 2 - tau)`` into
        ``log_alpha_prime``'s ``.grad``; returns `cvl_algos.cql.cql_lagrange_loss`'s metrics."""
        log_alpha_prime = self.learner.log_alpha_prime.value
        alpha_prime = log_alpha_prime.exp()
        loss = -alpha_prime * (0.5 * regularizer - self.learner.config.cql_target_action_gap)
        log_alpha_prime.grad = loss.clone()
        return {"cql_alpha_prime": alpha_prime, "cql_lagrange_loss": loss}

    def final_steps(self, batch, metrics: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The Lagrange step (``cql_lagrange``), after the target average as in the stages."""
        learner = self.learner
        if not learner.config.cql_lagrange:
            return {}
        lagrange = self.lagrange_grads(metrics["cql_regularizer"])
        self._clipped_step(learner.alpha_prime_opt, learner.log_alpha_prime)
        return lagrange


def _critic_metrics(
    qs: list[torch.Tensor], target: torch.Tensor, log_mu: torch.Tensor, weight, cfg
) -> dict[str, torch.Tensor]:
    """`cvl_algos.cql.cql_critic_loss`'s metrics, in its order, from both heads' (M, B)
    values."""
    (q1, q2), n = qs, cfg.cql_num_samples
    q_data = (q1[-1], q2[-1])
    td, metrics = td_loss(*q_data, target)
    reg, reg_metrics = cql_terms(
        (q1[:-1], q2[:-1]), q_data, log_mu, n, cfg.cql_temperature, cfg.cql_importance_sampling
    )
    metrics["td_loss"] = metrics.pop("critic_loss")
    metrics.update(reg_metrics)
    metrics["critic_loss"] = td + weight * reg
    return metrics
