"""Pieces shared by every learner (BC, SAC, CQL, CQL+UDS, CVL): configs as JSON data, clipped
optimiser steps, polyak averaging, metrics as floats, frozen calls, batch checks, `Scalar`.

The learner protocol itself (`LearnerBase`) lives in `cvl_algos.base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from cvl_data.jsonio import to_json_data
from cvl_models import TanhGaussianPolicy

__all__ = [
    "Scalar",
    "assert_transition_batch",
    "clip_and_step",
    "clip_grad_norm",
    "config_from_dict",
    "config_to_dict",
    "detach_metrics",
    "make_adam",
    "frozen_call",
    "metrics_to_floats",
    "optimizer_step",
    "policy_from_config",
    "polyak_tensors",
    "polyak_update",
]


# ----------------------------------------------------------------------------- configs


def check_policy_ema_tau(tau: float) -> None:
    """A config's ``policy_ema_tau`` (`LearnerBase.acting_policy`) must lie in [0, 1]."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"policy_ema_tau must lie in [0, 1], got {tau}")


def config_to_dict(config: Any) -> dict[str, Any]:
    """A frozen config dataclass as a JSON-able dict (tuples become lists)."""
    return to_json_data(config)


def config_from_dict(config_cls: type, values: dict[str, Any]) -> Any:
    """Rebuild a config from :func:`config_to_dict` output; lists become tuples again.

    Unknown keys raise ``TypeError`` (the dataclass constructor does), so a checkpoint written by
    another config version fails loudly instead of silently dropping fields.
    """
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return config_cls(**fixed)


# ----------------------------------------------------------------------------- networks


def policy_from_config(obs_shape: tuple[int, ...], action_dim: int, config: Any) -> nn.Module:
    """The tanh-Gaussian policy of a learner config (fields ``hidden``, ``log_std_min``,
    ``log_std_max``, ``torso``), built on the CPU from the current global RNG."""
    return TanhGaussianPolicy(
        obs_shape,
        action_dim,
        config.hidden,
        config.log_std_min,
        config.log_std_max,
        config.torso,
    )


# ----------------------------------------------------------------------------- optimisation


def make_adam(params: Iterable[nn.Parameter], lr: float) -> torch.optim.Adam:
    """Every learner's Adam: the fused kernel (one pass over all parameters; torch's CPU and
    CUDA builds have it), equal to the default per-tensor loop within float rounding."""
    return torch.optim.Adam(params, lr=lr, fused=True)


def optimizer_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    params: Iterable[nn.Parameter],
    max_grad_norm: float | None,
) -> torch.Tensor:
    """Zero grads, backpropagate ``loss``, clip the global grad norm, step; return the norm.

    The returned norm is the one before clipping (``clip_grad_norm_``'s convention).
    """
    params = params if isinstance(params, list) else list(params)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    return clip_and_step(optimizer, params, max_grad_norm)


def clip_and_step(
    optimizer: torch.optim.Optimizer, params: list[nn.Parameter], max_grad_norm: float | None
) -> torch.Tensor:
    """Clip the global norm of the gradients already in ``params``' ``.grad`` (at
    ``max_grad_norm``; None or 0: no clip), step; return the norm before clipping."""
    if max_grad_norm is not None and max_grad_norm > 0:
        norm = clip_grad_norm(params, max_grad_norm)
    else:
        grads = [p.grad for p in params if p.grad is not None]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    optimizer.step()
    return norm.detach()


@torch.no_grad()
def clip_grad_norm(params: Sequence[nn.Parameter], max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_(params, max_norm)``, bit for bit, with less per-call work.

    Scales the gradients in place by ``min(max_norm / (||g|| + 1e-6), 1)`` and returns ``||g||``,
    the 2-norm of all gradients together. When every gradient shares one device and dtype (every
    learner here) it makes torch's own calls (``_foreach_norm``, ``stack``, ``vector_norm``,
    ``clamp``, ``_foreach_mul_``) without ``clip_grad_norm_``'s grouping by device and dtype:
    that bookkeeping took about half of its ~0.15-0.2 ms for a 20-tensor twin critic on one CPU
    thread, a few % of a SAC update at 128 x 128, batch 256. Other cases (several devices or
    dtypes, sparse gradients, devices other than CPU and CUDA) go to ``clip_grad_norm_`` itself.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.nn.utils.clip_grad_norm_(params, max_norm)
    device, dtype = grads[0].device, grads[0].dtype
    one_group = all(g.device == device and g.dtype == dtype and not g.is_sparse for g in grads)
    if not one_group or device.type not in ("cpu", "cuda"):  # where clip_grad_norm_ uses foreach
        return torch.nn.utils.clip_grad_norm_(params, max_norm)
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
    coef = torch.clamp(float(max_norm) / (total + 1e-6), max=1.0)
    torch._foreach_mul_(grads, coef)
    return total


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """EMA update ``target <- (1 - tau) * target + tau * source`` of parameters, in place.

    Floating buffers are averaged the same way; other buffers are copied.
    """
    target_params = list(target.parameters())
    source_params = list(source.parameters())
    assert len(target_params) == len(source_params), "polyak: modules differ"
    polyak_tensors(
        target_params, source_params, list(target.buffers()), list(source.buffers()), tau
    )


@torch.no_grad()
def polyak_tensors(
    target_params: list[torch.Tensor],
    source_params: list[torch.Tensor],
    target_buffers: list[torch.Tensor],
    source_buffers: list[torch.Tensor],
    tau: float,
) -> None:
    """`polyak_update` on given lists of two modules' parameters and buffers (in module order)."""
    if target_params:
        torch._foreach_lerp_(target_params, source_params, tau)
    for t_buf, s_buf in zip(target_buffers, source_buffers, strict=True):
        if t_buf.is_floating_point():
            t_buf.lerp_(s_buf, tau)
        else:
            t_buf.copy_(s_buf)


def detach_metrics(
    metrics: dict[str, torch.Tensor | float], device: torch.device
) -> dict[str, torch.Tensor]:
    """Metrics as detached 0-d float tensors on ``device``, without waiting for the device;
    python numbers become tensors (a copy to the device, never a read back)."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, torch.Tensor):
            out[key] = value.detach().reshape(())
        else:
            out[key] = torch.tensor(float(value), device=device)
    return out


def metrics_to_floats(metrics: dict[str, torch.Tensor | float]) -> dict[str, float]:
    """Detach scalar tensors to floats with one device-to-host transfer."""
    keys = [k for k, v in metrics.items() if isinstance(v, torch.Tensor)]
    out = {k: float(v) for k, v in metrics.items() if not isinstance(v, torch.Tensor)}
    if keys:
        stacked = torch.stack([metrics[k].detach().float().reshape(()) for k in keys])
        out.update(zip(keys, stacked.cpu().tolist(), strict=True))
    return out


def frozen_call(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """Call ``module`` with its parameters and buffers detached.

    Gradients still flow to the inputs (e.g. reparameterised actions) but never to the module's
    parameters: an actor loss evaluated through ``frozen_call(critic, ...)`` leaves the critic's
    ``.grad`` untouched, without toggling ``requires_grad`` on shared modules.
    """
    detached = {name: t.detach() for name, t in module.named_parameters()}
    detached.update({name: t for name, t in module.named_buffers()})
    return torch.func.functional_call(module, detached, args, kwargs)


def assert_transition_batch(batch: Any, require_reward: bool = True) -> int:
    """Check a ``TransitionBatch``'s shapes (obs, action, reward, obs_next, terminated); return B.

    Raises ``ValueError`` for a reward-free batch when ``require_reward`` (TD losses need rewards).
    """
    batch_size = batch.obs.shape[0]
    assert batch.obs_next.shape == batch.obs.shape, (batch.obs_next.shape, batch.obs.shape)
    assert batch.action.ndim == 2 and batch.action.shape[0] == batch_size, batch.action.shape
    if batch.reward is None:
        if require_reward:
            raise ValueError("this loss needs rewards; got a reward-free TransitionBatch")
    else:
        assert batch.reward.shape == (batch_size,), batch.reward.shape
    assert batch.terminated.shape == (batch_size,), batch.terminated.shape
    return batch_size


class Scalar(nn.Module):
    """A single learnable scalar (e.g. SAC's ``log_alpha``) as a module, so it checkpoints."""

    def __init__(self, init: float = 0.0) -> None:
        super().__init__()
        self.value = nn.Parameter(torch.tensor(float(init)))

    def forward(self) -> torch.Tensor:
        return self.value


def return_weight_options(config: Any) -> dict[str, Any]:
    """A config's return-weighted sampling settings as sampler arguments (`cvl_data.weighting`):
    ``return_weight_temperature`` when set, ``return_weight_baseline`` when not "none"."""
    options: dict[str, Any] = {}
    if config.return_weight_temperature is not None:
        options["return_weight_temperature"] = config.return_weight_temperature
    if config.return_weight_baseline != "none":
        options["return_weight_baseline"] = config.return_weight_baseline
    return options
