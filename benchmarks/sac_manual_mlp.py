"""SAC with the plain MLP torso (``torso="mlp"``) and hand-written backward passes: no autograd.

A benchmark-only experiment (`bench_sac_update_variants.py`, variant ``manual_mlp``): does an
update that dispatches far fewer ATen ops than autograd's pay at SAC's small sizes, where
dispatch and autograd bookkeeping, not the matrix products, take most of an update
(docs/performance/profile-sac.md)? `ManualMLPSAC` is a `SACLearner` (same networks, optimisers,
random draws, checkpoints) whose ``_train_step`` makes the same update as `SACLearner`'s stages
(`cvl_algos.sac`): critic step, actor step, temperature step, target polyak average, with the
same clipped fused-Adam steps, but computes the gradients with explicit matrix products on
activations saved in the forward pass. Everything runs under ``torch.no_grad()``.

Notation: batch ``B``, action width ``A``, ``1/B sum_b`` written ``mean``. A plain MLP with layers
``k = 1..L+1`` (the last one linear, no activation) is, for an input ``h_0``::

    a_k = h_{k-1} W_k^T + b_k,   h_k = relu(a_k) (k <= L),   out = a_{L+1}

and, given ``G = dLoss/d out`` (B, out), its backward pass is, for ``k = L+1 .. 1``::

    dW_k = G^T h_{k-1},   db_k = sum_b G,   G <- (G W_k) * [h_{k-1} > 0]   (next k)

(the ReLU mask from the saved output ``h_{k-1}``, as autograd's in-place ReLU;
``threshold_backward``). At ``k = 1`` the input gradient ``G W_1`` is only needed for the
critic's action columns (the actor loss), ``G W_1[:, d:]`` with ``d`` the observation width.

Critic step (SAC eq. 5, `cvl_algos.sac.critic_loss`): with ``a' = tanh(u')`` drawn from the
policy at ``s'`` (no gradient), ``y = r + gamma (1 - terminated) [min_i Qbar_i(s', a') - alpha
log pi(a'|s')]`` and ``L_Q = sum_i mean (Q_i(s, a) - y)^2``, so ``dL_Q/dQ_i = 2 (Q_i - y) / B``,
back-propagated through each Q network's layers (input ``[s, a]``).

Policy sample (`cvl_models.policy`): the MLP's output splits into ``mean`` (first A columns) and
``raw`` (last A); ``log_std = lo + (hi - lo)/2 (tanh(raw) + 1)``, ``std = exp(log_std)``,
``eps ~ N(0, 1)`` (the learner's generator, `cvl_models.noise.standard_normal`, in the same order
as `SACLearner`: the next-state draw in the critic step, then the actor's),
``u = mean + std eps``, ``a = clamp(tanh(u), -C, C)`` (``C = 1 - 1e-6``) and::

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
``dL_alpha/d log_alpha = H - H_target``. Then the ``alpha`` metric (after the step) and the
target critics' polyak average, as `SACLearner.gradient_stages`.

Each gradient goes into ``param.grad`` (persistent buffers, written with ``out=``), then the
learner's own clip (`cvl_algos.common.clip_grad_norm` at ``max_grad_norm``) and optimiser step
run. The transposed weight views are made once: the optimisers and the polyak average update
parameters in place, so the views stay current. Only for state observations (identity encoder),
``torso="mlp"`` and ``compile=False``.

Measured (`bench_sac_update_variants.py --variants current_mlp manual_mlp`, thread CPU time, 1
thread, 2-core machine loaded by two other jobs): 464 -> 261 dispatched ATen ops per update
(the same 45 matrix products); at 128 x 128, batch 256, 8.6-9.7 -> 5.5-6.2 ms per update
(1.56-1.58x); at 256 x 256, batch 512, 24.7-24.9 -> 20.1-21.5 ms (1.16-1.23x). Gradients at
equal parameters agree with autograd's within 2.4e-7 relative (``--check``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cvl_algos.common import assert_transition_batch, clip_grad_norm, polyak_tensors
from cvl_algos.sac import SACLearner
from cvl_models.encoder import FlatEncoder
from cvl_models.mlp import PlainMLP
from cvl_models.noise import standard_normal
from cvl_models.policy import ACTION_CLIP

__all__ = ["ManualMLPSAC", "mlp_backward", "mlp_forward"]

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

Layer = tuple[nn.Parameter, nn.Parameter, torch.Tensor]
"""A linear layer as ``(weight, bias, weight.t())``; the transposed view is made once."""


def mlp_layers(net: PlainMLP) -> list[Layer]:
    """The linear layers of a `PlainMLP`, output layer last."""
    if not isinstance(net, PlainMLP):
        raise TypeError(f"ManualMLPSAC needs torso='mlp' (PlainMLP), got {type(net).__name__}")
    return [(lin.weight, lin.bias, lin.weight.t()) for lin in (*net.linears, net.out)]


def mlp_forward(layers: list[Layer], x: torch.Tensor, saved: list | None) -> torch.Tensor:
    """``PlainMLP.forward`` of a (B, in) input; appends each layer's input to ``saved``."""
    h = x
    for _, bias, weight_t in layers[:-1]:
        if saved is not None:
            saved.append(h)
        h = torch.addmm(bias, h, weight_t).relu_()
    _, bias, weight_t = layers[-1]
    if saved is not None:
        saved.append(h)
    return torch.addmm(bias, h, weight_t)


def mlp_backward(
    layers: list[Layer], saved: list[torch.Tensor], grad: torch.Tensor, grads: list[torch.Tensor]
) -> None:
    """Parameter gradients of a `mlp_forward` pass for ``grad = dLoss/d out``, written into
    ``grads`` (``[dW_1, db_1, ..., dW_{L+1}, db_{L+1}]``, the module's parameter order)."""
    for k in range(len(layers) - 1, -1, -1):
        weight = layers[k][0]
        h_in = saved[k]
        torch.mm(grad.t(), h_in, out=grads[2 * k])
        torch.sum(grad, 0, out=grads[2 * k + 1])
        if k:
            grad = torch.ops.aten.threshold_backward(torch.mm(grad, weight), h_in, 0)


def mlp_input_grad(
    layers: list[Layer], saved: list[torch.Tensor], grad: torch.Tensor, first_cols: torch.Tensor
) -> torch.Tensor:
    """``dLoss/d input[:, cols]`` of a `mlp_forward` pass, ``first_cols`` the first layer's
    weight columns ``W_1[:, cols]`` (no parameter gradients)."""
    for k in range(len(layers) - 1, 0, -1):
        grad = torch.ops.aten.threshold_backward(torch.mm(grad, layers[k][0]), saved[k], 0)
    return torch.mm(grad, first_cols)


class ManualMLPSAC(SACLearner):
    """`SACLearner` (``torso="mlp"``, state observations) whose update computes its gradients by
    hand (module docstring); `critic_grads` and `actor_grads` compute one stage's gradients
    into ``param.grad`` without stepping (the correctness check compares them with autograd's)."""

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg = self.config
        if cfg.torso != "mlp" or cfg.compile or len(self.obs_shape) != 1:
            raise ValueError("ManualMLPSAC: torso='mlp', compile=False, state observations only")
        nets = (self.policy, self.critic.q1, self.critic.q2)
        if not all(isinstance(n.encoder, FlatEncoder) for n in nets):
            raise ValueError("ManualMLPSAC: state observations (identity encoder) only")
        self.obs_dim = self.obs_shape[0]
        self._policy = mlp_layers(self.policy.net)
        self._critics = [mlp_layers(q.mlp) for q in (self.critic.q1, self.critic.q2)]
        self._targets = [mlp_layers(q.mlp) for q in (self.critic_target.q1, self.critic_target.q2)]
        self._action_cols = [layers[0][0][:, self.obs_dim :] for layers in self._critics]
        for module, layer_lists in ((self.critic, self._critics), (self.policy, [self._policy])):
            flat = [p for layers in layer_lists for w, b, _ in layers for p in (w, b)]
            params = self.module_tensors(module)[0]
            assert len(flat) == len(params) and all(a is b for a, b in zip(flat, params))
            for p in params:  # persistent gradient buffers, written with out=
                p.grad = torch.zeros_like(p)
        self.log_alpha.value.grad = torch.zeros_like(self.log_alpha.value)
        self.span = cfg.log_std_max - cfg.log_std_min

    # -- the policy's reparameterised sample, with what its backward pass needs -----------------

    def _sample(self, out: torch.Tensor):
        """``(action, log_prob, saved)`` from the policy MLP's (B, 2A) output (module docstring);
        ``saved = (tanh(raw), std * eps, tanh(u), clamp mask)`` for `actor_grads`."""
        a = self.action_dim
        mean, raw = out[:, :a], out[:, a:]
        tanh_raw = torch.tanh(raw)
        log_std = (tanh_raw + 1.0).mul_(0.5 * self.span).add_(self.config.log_std_min)
        eps = standard_normal(mean.shape, dtype=mean.dtype, device=mean.device)
        std_eps = torch.exp(log_std).mul_(eps)
        u = mean + std_eps
        tanh_u = torch.tanh(u)
        action = torch.clamp(tanh_u, -ACTION_CLIP, ACTION_CLIP)
        # -eps^2/2 - log_std - log(2 pi)/2 - 2 (log 2 - u - softplus(-2u)), summed over actions
        log_det = torch.nn.functional.softplus(u * -2.0).add_(u).sub_(LOG_2).mul_(2.0)
        log_prob = log_det.sub_(log_std).sub_(eps.square().mul_(0.5)).sum(-1) - HALF_LOG_2PI * a
        return action, log_prob, (tanh_raw, std_eps, tanh_u, action == tanh_u)

    # -- one stage's gradients -----------------------------------------------------------------

    @torch.no_grad()
    def critic_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The critic step's gradients into the critic's ``param.grad``; returns its metrics."""
        cfg = self.config
        assert_transition_batch(batch)
        action_next, log_prob_next, _ = self._sample(
            mlp_forward(self._policy, batch.obs_next, None)
        )
        x_next = torch.cat([batch.obs_next, action_next], dim=1)
        q1_next, q2_next = (mlp_forward(t, x_next, None).view(-1) for t in self._targets)
        value_next = torch.minimum(q1_next, q2_next)
        if cfg.backup_entropy:
            value_next = value_next - alpha * log_prob_next
        target = batch.reward + cfg.discount * (1.0 - batch.terminated) * value_next
        x = torch.cat([batch.obs, batch.action.to(batch.obs.dtype)], dim=1)
        params = self.module_tensors(self.critic)[0]
        qs, losses = [], []
        for q_index, layers in enumerate(self._critics):
            saved: list[torch.Tensor] = []
            q = mlp_forward(layers, x, saved).view(-1)
            diff = q - target
            losses.append(diff.square().mean())
            grad_out = diff.mul_(2.0 / diff.shape[0]).view(-1, 1)  # dL_Q/dQ_i = 2 (Q_i - y) / B
            n = 2 * len(layers)
            mlp_backward(layers, saved, grad_out, [p.grad for p in params[n * q_index :][:n]])
            qs.append(q)
        return {
            "critic_loss": losses[0] + losses[1],
            "q_data": (0.5 * (qs[0] + qs[1])).mean(),
            "q_target": target.mean(),
        }

    @torch.no_grad()
    def actor_grads(self, batch, alpha: torch.Tensor) -> dict[str, torch.Tensor]:
        """The actor step's gradients into the policy's ``param.grad`` (the critic as it is now,
        frozen); returns its metrics (``entropy`` for the temperature step)."""
        batch_size = batch.obs.shape[0]
        saved_pi: list[torch.Tensor] = []
        out = mlp_forward(self._policy, batch.obs, saved_pi)
        action, log_prob, (tanh_raw, std_eps, tanh_u, unclamped) = self._sample(out)
        x = torch.cat([batch.obs, action], dim=1)
        saved_q: list[list[torch.Tensor]] = [[], []]
        q1, q2 = (mlp_forward(c, x, s) for c, s in zip(self._critics, saved_q))
        q = torch.minimum(q1, q2).view(-1)
        loss = (alpha * log_prob - q).mean()
        # dL/dQ_1 = -w/B, dL/dQ_2 = -(1 - w)/B, w = [Q_1 < Q_2] + [Q_1 = Q_2]/2
        weight = torch.lt(q1, q2).to(q1.dtype).add_(torch.eq(q1, q2).to(q1.dtype), alpha=0.5)
        grad_q1 = weight * (-1.0 / batch_size)
        grad_q2 = (weight - 1.0).mul_(1.0 / batch_size)
        grad_action = mlp_input_grad(self._critics[0], saved_q[0], grad_q1, self._action_cols[0])
        grad_action += mlp_input_grad(self._critics[1], saved_q[1], grad_q2, self._action_cols[1])
        k = alpha / batch_size
        # dL/du = g_a (1 - tanh(u)^2) [unclamped] + k 2 tanh(u)
        grad_u = grad_action.mul_(1.0 - tanh_u.square()).mul_(unclamped)
        grad_u.addcmul_(tanh_u, 2.0 * k)
        # dL/d log_std = dL/du std eps - k; dL/d raw = dL/d log_std (hi - lo)/2 (1 - tanh(raw)^2)
        grad_raw = (grad_u * std_eps).sub_(k).mul_((1.0 - tanh_raw.square()).mul_(0.5 * self.span))
        grad_out = torch.cat([grad_u, grad_raw], dim=1)
        grads = [p.grad for p in self.module_tensors(self.policy)[0]]
        mlp_backward(self._policy, saved_pi, grad_out, grads)
        return {"actor_loss": loss, "entropy": -log_prob.mean(), "q_policy": q.mean()}

    # -- the update ------------------------------------------------------------------------------

    def _clipped_step(self, optimizer: torch.optim.Optimizer, module: nn.Module) -> torch.Tensor:
        """`cvl_algos.common.optimizer_step` after its backward: clip the gradients already in
        ``param.grad`` at ``max_grad_norm``, step; returns the norm before clipping."""
        params = self.module_tensors(module)[0]
        max_norm = self.config.max_grad_norm
        if max_norm is not None and max_norm > 0:
            norm = clip_grad_norm(params, max_norm)
        else:
            norm = torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(p.grad) for p in params])
            )
        optimizer.step()
        return norm

    def _train_step(self, batch) -> dict[str, torch.Tensor]:
        self.check_update_batch(batch)
        alpha = self.alpha  # the temperature before this update's step, as the stages read it
        metrics = self.critic_grads(batch, alpha)
        metrics["critic_grad_norm"] = self._clipped_step(self.critic_opt, self.critic)
        metrics.update(self.actor_grads(batch, alpha))
        metrics["actor_grad_norm"] = self._clipped_step(self.actor_opt, self.policy)
        if self.config.auto_alpha:
            log_alpha = self.log_alpha.value
            with torch.no_grad():
                gap = metrics["entropy"] - self.target_entropy
                log_alpha.grad.copy_(gap)
                metrics["alpha_loss"] = log_alpha * gap
            self._clipped_step(self.alpha_opt, self.log_alpha)
        metrics["alpha"] = self.alpha
        target, source = self.module_tensors(self.critic_target), self.module_tensors(self.critic)
        polyak_tensors(target[0], source[0], target[1], source[1], self.config.tau)
        if self.policy_ema is not None:
            self.run_stages(self.policy_ema_stages(), batch)
        return metrics
