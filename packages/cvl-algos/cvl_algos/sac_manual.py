"""SAC's update with hand-written gradients (``SACConfig.manual_gradients``), for both torsos.

`ManualSACUpdate` makes the update of `SACLearner.gradient_stages` (`cvl_algos.sac`): critic
step, actor step, temperature step, the ``alpha`` metric, the target critics' polyak average
(then the policy EMA's, when there is one), with the learner's own clipped fused-Adam steps and
random draws, but computes the gradients with explicit matrix products on activations saved in
the forward pass, under ``torch.no_grad()``: no autograd graph, fewer ATen ops
(`benchmarks/bench_sac_update_variants.py`, variants ``manual_mlp`` and ``manual_dense``). At
SAC's small sizes dispatch and autograd bookkeeping, not the products, take most of an update.
The result equals autograd's up to float rounding (the sums run in another order), not bit for
bit. One update serves both torsos: the torso's forward pass, parameter backward pass and input
gradient (`cvl_algos.sac_manual_torso`, ``mlp_*`` and ``dense_*``) are chosen once, when the
update is built (`torso_functions`).

Notation: batch ``B``, action width ``A``, ``1/B sum_b`` written ``mean``. A plain MLP
(`cvl_models.mlp.PlainMLP`) with layers ``k = 1..L+1`` (the last one linear, no activation) is,
for an input ``h_0``::

    a_k = h_{k-1} W_k^T + b_k,   h_k = relu(a_k) (k <= L),   out = a_{L+1}

and, given ``G = dLoss/d out`` (B, out), its backward pass is, for ``k = L+1 .. 1``::

    dW_k = G^T h_{k-1},   db_k = sum_b G,   G <- (G W_k) * [h_{k-1} > 0]   (next k)

(the ReLU mask from the saved output ``h_{k-1}``, as autograd's in-place ReLU;
``threshold_backward``). At ``k = 1`` the input gradient ``G W_1`` is only needed for the
critic's action columns (the actor loss), ``G W_1[:, d:]`` with ``d`` the observation width.

The DenseNet (`cvl_models.mlp.DenseMLP`, ``torso="densenet"``, the default) feeds its input
``x`` (cast to the parameters' dtype) to every layer, with a LayerNorm (affine ``gamma_k``,
``beta_k``; ``eps`` the module's) before each ReLU::

    h_0 = x,   a_k = h_{k-1} W_k^T + b_k,   z_k = relu(n_k),   n_k = gamma_k xhat_k + beta_k,
    xhat_k = (a_k - mu_k) / sigma_k,   h_k = [z_k, x] (k <= L),   out = h_L W_{L+1}^T + b_{L+1}

with ``mu_k``, ``sigma_k^2 + eps`` the mean and biased variance (plus ``eps``) of ``a_k``'s row
over its ``w_k`` features (``w_k`` the hidden widths, ``w_0 = 0``), as torch's ``layer_norm``
computes them (saved from ``native_layer_norm``: ``mu_k`` and ``1/sigma_k``). Its backward
pass, given ``G = dLoss/d out``, for ``k = L+1 .. 1`` (the last three lines for ``k >= 2``)::

    dW_k = G^T h_{k-1},   db_k = sum_b G,
    g = (G W_k[:, :w_{k-1}]) * [z_{k-1} > 0]          (the concatenation's z columns)
    dgamma_{k-1} = sum_b g xhat_{k-1},   dbeta_{k-1} = sum_b g,   gh = g gamma_{k-1},
    G <- (1/sigma_{k-1}) (gh - mean_f(gh) - xhat_{k-1} mean_f(gh xhat_{k-1}))   (next k)

(``mean_f`` over the features, per row; the ReLU mask from the saved in-place output, as
autograd's; the LayerNorm line is torch's fused ``native_layer_norm_backward``, the kernel
autograd calls, fed the saved ``mu`` and ``1/sigma``). The concatenation's other part, ``G W_k[:, w_{k-1}:]``, is the gradient to ``x``
through layer ``k``; since ``x`` feeds every layer, the input gradient sums over all of them:
for the critic's action columns ``dLoss/da = sum_{k=1..L+1} G_k W_k[:, w_{k-1} + d:]`` (``G_k``
the gradient at layer ``k``'s linear output, as above).

Critic step (SAC eq. 5, `cvl_algos.sac.critic_loss`): with ``a' = tanh(u')`` drawn from the
policy at ``s'`` (no gradient), ``y = r + gamma (1 - terminated) [min_i Qbar_i(s', a') - alpha
log pi(a'|s')]`` and ``L_Q = sum_i mean (Q_i(s, a) - y)^2``, so ``dL_Q/dQ_i = 2 (Q_i - y) / B``,
back-propagated through each Q network's layers (input ``[s, a]``).

Policy sample (`cvl_models.policy`, paper eq. 13-14): the MLP's output splits into ``mean``
(first A columns) and ``raw`` (last A); ``log_std = lo + (hi - lo)/2 (tanh(raw) + 1)``,
``std = exp(log_std)``, ``eps ~ N(0, 1)`` (`cvl_models.noise.standard_normal`, in the learner's
order: the next-state draw in the critic step, then the actor's), ``u = mean + std eps``,
``a = clamp(tanh(u), -C, C)`` (``C = 1 - 1e-6``) and::

    log pi = sum_j [ -eps_j^2 / 2 - log_std_j - log(2 pi)/2 - 2 (log 2 - u_j - softplus(-2 u_j)) ]

(``(u - mean) / std`` is ``eps``; autograd differentiates it through ``u``, ``mean`` and
``log_std`` and gets 0 and ``eps - eps``: the same gradient up to rounding).

Actor step (SAC eq. 7, `cvl_algos.sac.actor_loss`), with the critic as updated by the critic
step and frozen: ``L_pi = mean [alpha log pi(a|s) - min(Q_1, Q_2)(s, a)]``. With
``k = alpha / B``:

- ``dL/dQ_1 = -(1/B) w``, ``dL/dQ_2 = -(1/B)(1 - w)``, ``w = [Q_1 < Q_2] + [Q_1 = Q_2]/2``
  (``torch.minimum``'s backward splits ties);
- ``g_a = sum_i dL/dQ_i dQ_i/da``: each Q network's backward pass down to its action columns;
- ``dL/du = g_a (1 - tanh(u)^2) [clamp did not bite] + k d log pi/du``, where
  ``d log pi/du_j = 2 tanh(u_j)`` (the derivative of ``-log(1 - tanh(u)^2)``; the Gaussian term
  ``-eps^2/2`` does not depend on ``u`` at fixed ``eps``);
- ``dL/d mean = dL/du``; ``dL/d log_std = dL/du std eps - k`` (``d log pi/d log_std = -1``);
- ``dL/d raw = dL/d log_std (hi - lo)/2 (1 - tanh(raw)^2)``;
- ``G = [dL/d mean, dL/d raw]`` (B, 2A) back-propagated through the policy's layers.

Temperature step (SAC eq. 18, `cvl_algos.sac.alpha_loss`):
``L_alpha = log_alpha (H - H_target)`` with ``H = -mean log pi`` (the actor step's), so
``dL_alpha/d log_alpha = H - H_target``.

Each gradient goes into ``param.grad`` (persistent buffers, written with ``out=``), then the
learner's clip (`cvl_algos.common.clip_grad_norm` at ``max_grad_norm``) and optimiser step run.
The transposed weight views (and the DenseNet's column blocks) are made once: the optimisers,
the polyak averages and checkpoint loading all update parameters in place, so the views stay
current. Only for state observations (identity encoder), ``compile=False`` and SAC's own losses
(`check_manual_gradients`); `cvl_algos.cql_manual.ManualCQLUpdate` extends it to CQL's.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from einops import rearrange
from torch import nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import assert_transition_batch, clip_and_step, polyak_tensors
from cvl_algos.sac_manual_torso import torso_functions
from cvl_models.encoder import FlatEncoder
from cvl_models.noise import standard_normal
from cvl_models.policy import ACTION_CLIP, HALF_LOG_2PI, LOG_2

__all__ = [
    "SAC_METHODS",
    "ManualSACUpdate",
    "PolicySample",
    "check_manual_gradients",
    "policy_dist",
    "policy_out_grad",
    "sample_policy",
]


SAC_METHODS = ("compute_critic_loss", "compute_actor_loss", "gradient_stages")
"""The methods of `cvl_algos.sac.SACLearner` whose losses and stages `ManualSACUpdate` makes."""


def check_manual_gradients(
    learner: LearnerBase, sac_class: type, methods: tuple[str, ...] = SAC_METHODS
) -> None:
    """Raise ``ValueError`` (one line: the field and what it needs) when ``learner`` cannot run
    `ManualSACUpdate`: observations other than 1-D states, or a subclass of ``sac_class`` (the
    class whose losses the update reproduces, `cvl_algos.sac.SACLearner` or
    `cvl_algos.cql.CQLLearner`, passed in so that this module does not import it) that overrides
    one of ``methods`` (its losses, stages or update) or defines one that ``sac_class`` has not.
    The torso and ``compile`` are checked by the config itself."""
    if len(learner.obs_shape) != 1:
        raise ValueError(
            f"manual_gradients needs state observations (a 1-D obs_shape), got {learner.obs_shape}"
        )
    cls = type(learner)
    for method in methods:
        if getattr(cls, method, None) is not getattr(sac_class, method, None):
            raise ValueError(
                f"manual_gradients needs {sac_class.__name__.removesuffix('Learner')}'s own "
                f"losses, got {cls.__name__}, which overrides {method}"
            )


class PolicySample(NamedTuple):
    """A reparameterised policy sample and what its backward pass (`policy_out_grad`) needs."""

    action: torch.Tensor
    """``clamp(tanh(u), -C, C)`` (B, A)."""
    log_prob: torch.Tensor
    """``log pi(a|s)`` (B,)."""
    tanh_raw: torch.Tensor
    """``tanh(raw)`` of the log-std head (B, A)."""
    std_eps: torch.Tensor
    """``std * eps`` (B, A)."""
    tanh_u: torch.Tensor
    """``tanh(u)`` (B, A)."""
    unclamped: torch.Tensor
    """``[clamp did not bite]`` (B, A), bool."""
    mean: torch.Tensor
    """The Gaussian's mean (B, A)."""
    log_std: torch.Tensor
    """Its bounded log standard deviation (B, A)."""


def policy_dist(
    out: torch.Tensor, log_std_min: float, log_std_max: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(mean, log_std, tanh(raw))`` (each (B, A)) from the policy MLP's (B, 2A) output, as
    `cvl_models.policy.TanhGaussianPolicy.forward` computes them (the same values, bit for
    bit): ``log_std = lo + (hi - lo)/2 (tanh(raw) + 1)``."""
    mean, raw = rearrange(out, "b (two a) -> two b a", two=2)
    tanh_raw = torch.tanh(raw)
    log_std = (tanh_raw + 1.0).mul_(0.5 * (log_std_max - log_std_min)).add_(log_std_min)
    return mean, log_std, tanh_raw


def sample_policy(out: torch.Tensor, log_std_min: float, log_std_max: float) -> PolicySample:
    """The tanh-Gaussian sample (paper eq. 13-14; module docstring) from the policy MLP's
    (B, 2A) output, ``eps`` drawn by `standard_normal` as `sample_tanh_gaussian` draws it."""
    mean, log_std, tanh_raw = policy_dist(out, log_std_min, log_std_max)
    eps = standard_normal(mean.shape, dtype=mean.dtype, device=mean.device)
    std_eps = torch.exp(log_std).mul_(eps)
    u = mean + std_eps
    tanh_u = torch.tanh(u)
    action = torch.clamp(tanh_u, -ACTION_CLIP, ACTION_CLIP)
    # -eps^2/2 - log_std - log(2 pi)/2 - 2 (log 2 - u - softplus(-2u)), summed over actions
    log_det = torch.nn.functional.softplus(u * -2.0).add_(u).sub_(LOG_2).mul_(2.0)
    log_prob = log_det.sub_(log_std).sub_(eps.square().mul_(0.5)).sum(-1)
    log_prob -= HALF_LOG_2PI * mean.shape[1]
    return PolicySample(
        action, log_prob, tanh_raw, std_eps, tanh_u, action == tanh_u, mean, log_std
    )


def policy_out_grad(
    sample: PolicySample,
    grad_action: torch.Tensor,
    k: torch.Tensor,
    span: float,
    extra: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """``G = [dL/d mean, dL/d raw]`` (B, 2A) of ``L = mean [alpha log pi - Q]`` for ``g_a =
    grad_action`` and ``k = alpha / B`` (module docstring, actor step); ``span = hi - lo``.
    ``extra``: further gradients ``(dL/d mean, dL/d log_std)`` of the same Gaussian from
    another term of the loss, added before the log-std squash (CQL's warm start,
    `cvl_algos.cql_manual`). Consumes ``grad_action``."""
    # dL/du = g_a (1 - tanh(u)^2) [unclamped] + k 2 tanh(u)
    grad_u = grad_action.mul_(1.0 - sample.tanh_u.square()).mul_(sample.unclamped)
    grad_u.addcmul_(sample.tanh_u, 2.0 * k)
    # dL/d log_std = dL/du std eps - k; dL/d raw = dL/d log_std (hi - lo)/2 (1 - tanh(raw)^2)
    grad_raw = (grad_u * sample.std_eps).sub_(k)
    if extra is not None:
        grad_u.add_(extra[0])
        grad_raw.add_(extra[1])
    grad_raw.mul_((1.0 - sample.tanh_raw.square()).mul_(0.5 * span))
    return torch.cat([grad_u, grad_raw], dim=1)


def min_q_grads(
    q1: torch.Tensor, q2: torch.Tensor, batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``dL/dQ_1 = -w/B`` and ``dL/dQ_2 = -(1 - w)/B`` of ``L = -mean min(Q_1, Q_2)``,
    ``w = [Q_1 < Q_2] + [Q_1 = Q_2]/2`` (``torch.minimum``'s backward splits ties)."""
    weight = torch.lt(q1, q2).to(q1.dtype).add_(torch.eq(q1, q2).to(q1.dtype), alpha=0.5)
    return weight * (-1.0 / batch_size), (weight - 1.0).mul_(1.0 / batch_size)


class ManualSACUpdate:
    """`SACLearner`'s update with hand-written gradients (module docstring), built for one
    learner (state observations, `check_manual_gradients` against ``sac_class``, the
    `SACLearner` whose losses it reproduces; either torso, whose helpers `torso_functions` picks
    here once). `critic_grads`, `actor_grads` and `alpha_grads` compute
    one stage's gradients into ``param.grad`` without stepping; `update` is the learner's whole
    update."""

    def __init__(
        self, learner: LearnerBase, sac_class: type, methods: tuple[str, ...] = SAC_METHODS
    ) -> None:
        check_manual_gradients(learner, sac_class, methods)
        self.learner = learner
        critic, target = learner.critic, learner.critic_target
        nets = (learner.policy, critic.q1, critic.q2)
        assert all(isinstance(n.encoder, FlatEncoder) for n in nets), "not an identity encoder"
        self.obs_dim = learner.obs_shape[0]
        self.torso = fns = torso_functions(learner.policy.net)
        self.policy = fns.layers(learner.policy.net)
        self.critics = [fns.layers(q.mlp) for q in (critic.q1, critic.q2)]
        self.targets = [fns.layers(q.mlp) for q in (target.q1, target.q2)]
        self.action_cols = [fns.input_cols(layers, self.obs_dim) for layers in self.critics]
        self.critic_params = [fns.params(layers) for layers in self.critics]
        self.policy_params = fns.params(self.policy)
        for module, per_net in (
            (critic, self.critic_params),
            (learner.policy, [self.policy_params]),
        ):
            params = learner.module_tensors(module)[0]
            flat = [p for net_params in per_net for p in net_params]
            assert len(flat) == len(params) and all(a is b for a, b in zip(flat, params))
            for p in params:  # persistent gradient buffers, written with out=
                p.grad = torch.zeros_like(p)
        learner.log_alpha.value.grad = torch.zeros_like(learner.log_alpha.value)

    def _sample(self, out: torch.Tensor) -> PolicySample:
        cfg = self.learner.config
        return sample_policy(out, cfg.log_std_min, cfg.log_std_max)

    @torch.no_grad()
    def critic_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The critic step's gradients (SAC eq. 5, ``dL_Q/dQ_i = 2 (Q_i - y) / B``) into the
        critic's ``param.grad``; returns `cvl_algos.sac.td_loss`'s metrics."""
        assert_transition_batch(batch)
        forward = self.torso.forward
        sample = self._sample(forward(self.policy, batch.obs_next, None))
        target = self.td_target(batch, sample.action, sample.log_prob, alpha)
        x = torch.cat([batch.obs, batch.action.to(batch.obs.dtype)], dim=1)
        qs, losses = [], []
        for layers, params in zip(self.critics, self.critic_params, strict=True):
            saved: list = []
            q = rearrange(forward(layers, x, saved), "b 1 -> b")
            diff = q - target
            losses.append(diff.square().mean())
            grad_out = rearrange(diff.mul_(2.0 / diff.shape[0]), "b -> b 1")
            self.torso.backward(layers, saved, grad_out, [p.grad for p in params])
            qs.append(q)
        return {
            "critic_loss": losses[0] + losses[1],
            "q_data": (0.5 * (qs[0] + qs[1])).mean(),
            "q_target": target.mean(),
        }

    @torch.no_grad()
    def td_target(
        self,
        batch,
        action_next: torch.Tensor,
        log_prob_next: torch.Tensor,
        alpha: torch.Tensor,
    ) -> torch.Tensor:
        """SAC eq. 5's target ``y = r + gamma (1 - terminated) [min_i Qbar_i(s', a') - alpha
        log pi(a'|s')]`` (B,) from the target critics (the log-probability term with
        ``backup_entropy``), as `cvl_algos.sac.td_target`."""
        cfg = self.learner.config
        x_next = torch.cat([batch.obs_next, action_next], dim=1)
        forward = self.torso.forward
        q1_next, q2_next = (rearrange(forward(t, x_next, None), "b 1 -> b") for t in self.targets)
        value_next = torch.minimum(q1_next, q2_next)
        if cfg.backup_entropy:
            value_next = value_next - alpha * log_prob_next
        return batch.reward + cfg.discount * (1.0 - batch.terminated) * value_next

    @torch.no_grad()
    def actor_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The actor step's gradients (SAC eq. 7; the critic as it is now, frozen) into the
        policy's ``param.grad``; returns `cvl_algos.sac.actor_loss`'s metrics (``entropy`` for
        the temperature step)."""
        assert_transition_batch(batch, require_reward=False)
        batch_size = batch.obs.shape[0]
        torso = self.torso
        saved_pi: list = []
        sample = self._sample(torso.forward(self.policy, batch.obs, saved_pi))
        x = torch.cat([batch.obs, sample.action], dim=1)
        saved_q: list[list] = [[], []]
        q1, q2 = (torso.forward(c, x, s) for c, s in zip(self.critics, saved_q, strict=True))
        q = rearrange(torch.minimum(q1, q2), "b 1 -> b")
        loss = (alpha * sample.log_prob - q).mean()
        grad_q = min_q_grads(q1, q2, batch_size)
        critics, cols = self.critics, self.action_cols
        grad_action = torso.input_grad(critics[0], saved_q[0], grad_q[0], cols[0])
        grad_action += torso.input_grad(critics[1], saved_q[1], grad_q[1], cols[1])
        cfg = self.learner.config
        grad_out = policy_out_grad(
            sample, grad_action, alpha / batch_size, cfg.log_std_max - cfg.log_std_min
        )
        torso.backward(self.policy, saved_pi, grad_out, [p.grad for p in self.policy_params])
        return {"actor_loss": loss, "entropy": -sample.log_prob.mean(), "q_policy": q.mean()}

    @torch.no_grad()
    def alpha_grads(self, entropy: torch.Tensor) -> dict[str, torch.Tensor]:
        """The temperature step's gradient (SAC eq. 18, ``dL_alpha/d log_alpha = H -
        H_target``) into ``log_alpha``'s ``.grad``; returns ``alpha_loss``."""
        log_alpha = self.learner.log_alpha.value
        gap = entropy - self.learner.target_entropy
        log_alpha.grad.copy_(gap)
        return {"alpha_loss": log_alpha * gap}

    def _clipped_step(self, optimizer: torch.optim.Optimizer, module: nn.Module) -> torch.Tensor:
        """`cvl_algos.common.clip_and_step` on ``module``'s gradients, already in ``param.grad``:
        clip at ``max_grad_norm``, step; returns the norm before clipping."""
        params = self.learner.module_tensors(module)[0]
        return clip_and_step(optimizer, params, self.learner.config.max_grad_norm)

    def final_steps(self, batch, metrics: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Steps after the target average, before the policy EMA's, given the update's
        ``metrics`` so far; returns their metrics. SAC has none (CQL's Lagrange step)."""
        return {}

    def update(self, batch) -> dict[str, torch.Tensor]:
        """One update, as `SACLearner.update_stages` make it: critic, actor and temperature
        steps, the ``alpha`` metric, the target polyak average, the policy EMA's."""
        learner = self.learner
        learner.check_update_batch(batch)
        alpha = learner.alpha  # the temperature before this update's step, as the stages read it
        metrics = self.critic_grads(batch, alpha)
        metrics["critic_grad_norm"] = self._clipped_step(learner.critic_opt, learner.critic)
        metrics.update(self.actor_grads(batch, alpha))
        metrics["actor_grad_norm"] = self._clipped_step(learner.actor_opt, learner.policy)
        if learner.config.auto_alpha:
            metrics.update(self.alpha_grads(metrics["entropy"]))
            self._clipped_step(learner.alpha_opt, learner.log_alpha)
        metrics["alpha"] = learner.alpha
        target = learner.module_tensors(learner.critic_target)
        source = learner.module_tensors(learner.critic)
        polyak_tensors(target[0], source[0], target[1], source[1], learner.config.tau)
        metrics.update(self.final_steps(batch, metrics))
        if learner.policy_ema is not None:
            learner.run_stages(learner.policy_ema_stages(), batch)
        return metrics
