"""The torso helpers of `cvl_algos.sac_manual`: forward pass, parameter backward pass and input
gradient of the plain MLP (`cvl_models.mlp.PlainMLP`, ``mlp_*``) and of the paper's DenseNet
with LayerNorm (`cvl_models.mlp.DenseMLP`, ``dense_*``), under one signature each, so that
`ManualSACUpdate` picks a torso's set once (`torso_functions`) and has one update.

The equations are in `cvl_algos.sac_manual`'s docstring. Every function here runs under the
caller's ``torch.no_grad()``; ``layers`` is what the torso's ``*_layers`` returned for one
network (its parameters and weight views, made once: the optimisers, the polyak averages and
checkpoint loading update parameters in place, so the views stay current); ``saved`` is the
list a ``*_forward`` call filled, ``grads`` the network's ``.grad`` buffers in the module's
parameter order (the order of ``*_params``). CQL's critic passes over 3N + 1 actions per state
(`cvl_algos.cql_manual_torso`) build on the ``*_above_first`` parts and `layer_norm_backward`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from cvl_models.mlp import DenseMLP, PlainMLP

__all__ = [
    "DenseLayers",
    "Layer",
    "TorsoFunctions",
    "dense_backward",
    "dense_forward",
    "dense_input_cols",
    "dense_input_grad",
    "dense_layers",
    "dense_params",
    "bias_grad",
    "layer_norm_backward",
    "mlp_backward",
    "mlp_backward_above_first",
    "mlp_forward",
    "mlp_forward_above_first",
    "mlp_input_cols",
    "mlp_input_grad",
    "mlp_layers",
    "mlp_params",
    "threshold_backward",
    "torso_functions",
]

Layer = tuple[nn.Parameter, nn.Parameter, torch.Tensor]
"""A linear layer as ``(weight, bias, weight.t())``; the transposed view is made once."""

threshold_backward = torch.ops.aten.threshold_backward
_native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward


def _linear_layer(linear: nn.Linear) -> Layer:
    return (linear.weight, linear.bias, linear.weight.t())


# -- plain MLP ------------------------------------------------------------------------------------


def mlp_layers(net: nn.Module) -> list[Layer]:
    """The linear layers of a `PlainMLP`, output layer last."""
    if not isinstance(net, PlainMLP):
        raise ValueError(f'manual_gradients needs torso="mlp" (PlainMLP), got {type(net).__name__}')
    with torch.no_grad():
        return [_linear_layer(lin) for lin in (*net.linears, net.out)]


def mlp_params(layers: list[Layer]) -> list[nn.Parameter]:
    """The parameters of `mlp_layers`, in `PlainMLP`'s order."""
    return [p for weight, bias, _ in layers for p in (weight, bias)]


def mlp_input_cols(layers: list[Layer], start: int) -> torch.Tensor:
    """The first layer's weight columns ``W_1[:, start:]`` (for `mlp_input_grad`)."""
    with torch.no_grad():
        return layers[0][0][:, start:]


def mlp_forward(layers: list[Layer], x: torch.Tensor, saved: list | None) -> torch.Tensor:
    """``PlainMLP.forward`` of a (B, in) input, ``a_k = h_{k-1} W_k^T + b_k``, ``h_k =
    relu(a_k)``; appends each layer's input ``h_{k-1}`` to ``saved`` (when given)."""
    h = x.to(layers[0][0].dtype)
    if saved is not None:
        saved.append(h)
    _, bias, weight_t = layers[0]
    return mlp_forward_above_first(layers, torch.addmm(bias, h, weight_t), saved)


def mlp_forward_above_first(
    layers: list[Layer], pre: torch.Tensor, saved: list | None
) -> torch.Tensor:
    """The layers ``k >= 2`` of `mlp_forward` from the first layer's output ``a_1``."""
    for _, bias, weight_t in layers[1:]:
        h = pre.relu_()
        if saved is not None:
            saved.append(h)
        pre = torch.addmm(bias, h, weight_t)
    return pre


def mlp_backward(
    layers: list[Layer], saved: list[torch.Tensor], grad: torch.Tensor, grads: list[torch.Tensor]
) -> None:
    """Parameter gradients of a `mlp_forward` pass for ``grad = dLoss/d out``: ``dW_k = G^T
    h_{k-1}``, ``db_k = sum_b G``, ``G <- (G W_k) [h_{k-1} > 0]``, written into ``grads``
    (``[dW_1, db_1, ..., dW_{L+1}, db_{L+1}]``, the module's parameter order)."""
    grad = mlp_backward_above_first(layers, saved, grad, grads)
    torch.mm(grad.t(), saved[0], out=grads[0])
    torch.sum(grad, 0, out=grads[1])


def mlp_backward_above_first(
    layers: list[Layer],
    saved: list,
    grad: torch.Tensor,
    grads: list[torch.Tensor],
    accumulate: bool = False,
) -> torch.Tensor:
    """The layers ``k >= 2`` of `mlp_backward` (gradients written, or added with
    ``accumulate``); returns ``G`` at the first layer's output."""
    for k in range(len(layers) - 1, 0, -1):
        h_in = saved[k]
        if accumulate:
            grads[2 * k].addmm_(grad.t(), h_in)
        else:
            torch.mm(grad.t(), h_in, out=grads[2 * k])
        bias_grad(grads[2 * k + 1], grad, accumulate)
        grad = threshold_backward(torch.mm(grad, layers[k][0]), h_in, 0)
    return grad


def bias_grad(out: torch.Tensor, grad: torch.Tensor, accumulate: bool) -> None:
    """``db = sum_b G`` into ``out``, or added to it."""
    if accumulate:
        out.add_(grad.sum(0))
    else:
        torch.sum(grad, 0, out=out)


def mlp_input_grad(
    layers: list[Layer], saved: list[torch.Tensor], grad: torch.Tensor, cols: torch.Tensor
) -> torch.Tensor:
    """``dLoss/d input[:, start:]`` of a `mlp_forward` pass, ``cols`` from `mlp_input_cols`
    (no parameter gradients)."""
    for k in range(len(layers) - 1, 0, -1):
        grad = threshold_backward(torch.mm(grad, layers[k][0]), saved[k], 0)
    return torch.mm(grad, cols)


# -- DenseNet with LayerNorm ----------------------------------------------------------------------


class DenseLayers(NamedTuple):
    """A `DenseMLP`'s parameters and weight views (`dense_layers`)."""

    linears: list[Layer]
    """The linear layers, output layer last (``L + 1``)."""
    norms: list[tuple[nn.Parameter, nn.Parameter, float]]
    """The LayerNorms' ``(gamma, beta, eps)`` (``L``)."""
    z_cols: list[torch.Tensor]
    """``W_{k+1}[:, :h_k]``, the next linear layer's columns that see ``z_k`` (``L``)."""


def dense_layers(net: nn.Module) -> DenseLayers:
    """The layers of a `DenseMLP` (its LayerNorms affine, over the last dim)."""
    if not isinstance(net, DenseMLP):
        raise ValueError(
            f'manual_gradients needs torso="densenet" (DenseMLP), got {type(net).__name__}'
        )
    with torch.no_grad():
        linears = [_linear_layer(lin) for lin in (*net.linears, net.out)]
        norms = []
        for norm, width in zip(net.norms, net.hidden, strict=True):
            assert norm.normalized_shape == (width,) and norm.elementwise_affine
            norms.append((norm.weight, norm.bias, float(norm.eps)))
        z_cols = [linears[k + 1][0][:, :width] for k, width in enumerate(net.hidden)]
    return DenseLayers(linears, norms, z_cols)


def dense_params(layers: DenseLayers) -> list[nn.Parameter]:
    """The parameters of `dense_layers`, in `DenseMLP`'s order: hidden linears, norms, out."""
    hidden = [p for weight, bias, _ in layers.linears[:-1] for p in (weight, bias)]
    norms = [p for gamma, beta, _ in layers.norms for p in (gamma, beta)]
    return [*hidden, *norms, layers.linears[-1][0], layers.linears[-1][1]]


def dense_input_cols(layers: DenseLayers, start: int) -> list[torch.Tensor]:
    """Every linear layer's columns that see ``x[:, start:]``: ``W_k[:, h_{k-1} + start:]``
    (``h_0 = 0``), output layer last (for `dense_input_grad`)."""
    widths = [0, *(z.shape[1] for z in layers.z_cols)]
    with torch.no_grad():
        return [lin[0][:, w + start :] for lin, w in zip(layers.linears, widths, strict=True)]


def dense_forward(layers: DenseLayers, x: torch.Tensor, saved: list | None) -> torch.Tensor:
    """``DenseMLP.forward`` of a (B, in) input: ``a_k = h_{k-1} W_k^T + b_k``, ``z_k =
    relu(LayerNorm(a_k))``, ``h_k = [z_k, x]`` (``h_0 = x``). Appends ``(h_{k-1}, a_k, mu_k,
    1/sigma_k, z_k)`` for each hidden layer, then ``h_L``, to ``saved`` (when given)."""
    x = x.to(layers.linears[0][0].dtype)
    h = x
    for (_, bias, weight_t), (gamma, beta, eps) in zip(
        layers.linears[:-1], layers.norms, strict=True
    ):
        a = torch.addmm(bias, h, weight_t)
        if saved is None:
            z = F.layer_norm(a, (a.shape[1],), gamma, beta, eps).relu_()
        else:
            normed, mean, rstd = torch.native_layer_norm(a, (a.shape[1],), gamma, beta, eps)
            z = normed.relu_()
            saved.append((h, a, mean, rstd, z))
        h = torch.cat([z, x], dim=1)
    _, bias, weight_t = layers.linears[-1]
    if saved is not None:
        saved.append(h)
    return torch.addmm(bias, h, weight_t)


def layer_norm_backward(
    grad: torch.Tensor,
    saved: tuple[torch.Tensor, ...],
    norm: tuple[torch.Tensor, torch.Tensor, float],
    grad_gamma: torch.Tensor | None = None,
    grad_beta: torch.Tensor | None = None,
    accumulate: bool = False,
) -> torch.Tensor:
    """``dLoss/da`` of ``y = gamma xhat + beta``, ``xhat = (a - mu)/sigma``, for ``grad =
    dLoss/dy``: ``(1/sigma) (gh - mean(gh) - xhat mean(gh xhat))``, ``gh = g gamma``, means over
    features; also ``dgamma = sum_b g xhat`` and ``dbeta = sum_b g`` into ``grad_gamma`` and
    ``grad_beta`` (when given; added to them with ``accumulate``). Computed by torch's fused
    kernel (``aten.native_layer_norm_backward``, the one autograd calls) from the forward pass's
    ``mu`` and ``1/sigma``: one op in place of about ten. ``saved`` is `dense_forward`'s entry
    for the layer, ``norm`` its ``(gamma, beta, eps)``."""
    _, a, mean, rstd, _ = saved
    gamma, beta, _ = norm
    params = grad_gamma is not None
    grad_a, dgamma, dbeta = _native_layer_norm_backward(
        grad, a, (a.shape[1],), mean, rstd, gamma, beta, [True, params, params]
    )
    if params and accumulate:
        grad_gamma.add_(dgamma)
        grad_beta.add_(dbeta)
    elif params:
        grad_gamma.copy_(dgamma)
        grad_beta.copy_(dbeta)
    return grad_a


def dense_backward(
    layers: DenseLayers, saved: list, grad: torch.Tensor, grads: list[torch.Tensor]
) -> None:
    """Parameter gradients of a `dense_forward` pass for ``grad = dLoss/d out``, written into
    ``grads`` (`dense_params`'s order): ``dW_k = G^T h_{k-1}``, ``db_k = sum_b G``, then down
    a layer through ``h_{k-1}``'s ``z`` columns, the ReLU mask and the LayerNorm."""
    depth = len(layers.norms)
    h_in = saved[depth]
    torch.mm(grad.t(), h_in, out=grads[4 * depth])
    torch.sum(grad, 0, out=grads[4 * depth + 1])
    for k in range(depth - 1, -1, -1):
        entry = saved[k]
        grad = threshold_backward(torch.mm(grad, layers.z_cols[k]), entry[4], 0)
        grad_gamma, grad_beta = grads[2 * depth + 2 * k], grads[2 * depth + 2 * k + 1]
        grad = layer_norm_backward(grad, entry, layers.norms[k], grad_gamma, grad_beta)
        torch.mm(grad.t(), entry[0], out=grads[2 * k])
        torch.sum(grad, 0, out=grads[2 * k + 1])


def dense_input_grad(
    layers: DenseLayers, saved: list, grad: torch.Tensor, cols: list[torch.Tensor]
) -> torch.Tensor:
    """``dLoss/d x[:, start:]`` of a `dense_forward` pass, ``cols`` from `dense_input_cols`:
    ``x`` feeds every layer, so ``sum_k G_k W_k[:, h_{k-1} + start:]`` over the gradients
    ``G_k`` at each linear layer's output (no parameter gradients)."""
    depth = len(layers.norms)
    grad_x = torch.mm(grad, cols[depth])
    for k in range(depth - 1, -1, -1):
        entry = saved[k]
        grad = threshold_backward(torch.mm(grad, layers.z_cols[k]), entry[4], 0)
        grad = layer_norm_backward(grad, entry, layers.norms[k])
        grad_x.addmm_(grad, cols[k])
    return grad_x


# -- choice ---------------------------------------------------------------------------------------


class TorsoFunctions(NamedTuple):
    """One torso's helpers (module docstring), chosen once by `torso_functions`."""

    layers: Callable[[nn.Module], Any]
    params: Callable[[Any], list[nn.Parameter]]
    input_cols: Callable[[Any, int], Any]
    forward: Callable[[Any, torch.Tensor, list | None], torch.Tensor]
    backward: Callable[[Any, list, torch.Tensor, list[torch.Tensor]], None]
    input_grad: Callable[[Any, list, torch.Tensor, Any], torch.Tensor]


MLP_FUNCTIONS = TorsoFunctions(
    mlp_layers, mlp_params, mlp_input_cols, mlp_forward, mlp_backward, mlp_input_grad
)
DENSE_FUNCTIONS = TorsoFunctions(
    dense_layers, dense_params, dense_input_cols, dense_forward, dense_backward, dense_input_grad
)


def torso_functions(net: nn.Module) -> TorsoFunctions:
    """The helpers of ``net``'s torso: `PlainMLP` or `DenseMLP`; anything else is refused."""
    if isinstance(net, PlainMLP):
        return MLP_FUNCTIONS
    if isinstance(net, DenseMLP):
        return DENSE_FUNCTIONS
    raise ValueError(f"manual_gradients needs a PlainMLP or DenseMLP torso, got {type(net)}")
