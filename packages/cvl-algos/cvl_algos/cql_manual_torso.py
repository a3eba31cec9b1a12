"""The shared-input torso passes of `cvl_algos.cql_manual`: forward and parameter backward of the
plain MLP (``mlp_*``) and of the DenseNet with LayerNorm (``dense_*``) on ``[s_b, x_nb]``, a
state ``s_b`` shared by ``N`` items ``x_nb`` (CQL's critic over 3N + 1 actions per state), with
the state's columns of every layer that sees the input computed once per state, as
`cvl_models.mlp.PlainMLP.forward_shared` and `DenseMLP.forward_shared` compute them; under one
signature each (`SharedTorsoFunctions`), chosen once by `shared_torso_functions`.

Built on `cvl_algos.sac_manual_torso` (whose docstring and `cvl_algos.sac_manual`'s have the
equations, the ``layers`` and ``saved`` conventions): a layer's weight gradient is taken by
column block, the state columns' from the per-state sums of the output gradient, ``dW_s =
(sum_n G_n)^T s``. The backward passes can add to the ``.grad`` buffers (``accumulate``), so
that a caller may run them over chunks of states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from einops import rearrange, reduce
from torch import nn

from cvl_algos.sac_manual_torso import (
    DenseLayers,
    Layer,
    bias_grad,
    layer_norm_backward,
    mlp_backward_above_first,
    mlp_forward_above_first,
    threshold_backward,
)
from cvl_models.mlp import DenseMLP, PlainMLP

__all__ = [
    "DenseSharedCols",
    "SharedTorsoFunctions",
    "dense_backward_shared",
    "dense_forward_shared",
    "dense_shared_cols",
    "mlp_backward_shared",
    "mlp_forward_shared",
    "mlp_shared_cols",
    "shared_torso_functions",
]


# -- plain MLP ------------------------------------------------------------------------------------


def mlp_shared_cols(layers: list[Layer], split: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first layer's transposed column blocks ``(W_1[:, :split]^T, W_1[:, split:]^T)``, the
    shared and the per-item input's (for `mlp_forward_shared`)."""
    with torch.no_grad():
        weight_t = layers[0][2]
        return weight_t[:split], weight_t[split:]


def mlp_forward_shared(
    layers: list[Layer],
    cols: tuple[torch.Tensor, torch.Tensor],
    shared: torch.Tensor,
    per_item: torch.Tensor,
    saved: list | None,
) -> torch.Tensor:
    """``PlainMLP.forward_shared``: the `mlp_forward` of ``[s_b, x_nb]`` for ``shared`` (B, d_s)
    and ``per_item`` (N, B, d_p), with the first layer's ``s W_s^T + b_1`` computed once per
    state: ``a_1 = x_nb W_x^T + (s_b W_s^T + b_1)``; ``cols`` from `mlp_shared_cols`. Returns
    (N B, out) (item-major rows); ``saved`` gets ``(s, x)`` (x as (N B, d_p)) for the first
    layer, then each later layer's input, as `mlp_forward`'s."""
    dtype = layers[0][0].dtype
    shared, per_item = shared.to(dtype), per_item.to(dtype).contiguous()
    if saved is not None:
        saved.append((shared, rearrange(per_item, "n b d -> (n b) d")))
    cols_shared, cols_item = cols
    first = torch.addmm(layers[0][1], shared, cols_shared)
    num, width = per_item.shape[0], first.shape[1]
    # one batched product onto the per-state part broadcast over items (beta = 1): 1.7x a
    # product then an in-place broadcast add at 31 x 512 rows, 4 -> 256 (one CPU thread)
    pre = torch.baddbmm(first.expand(num, *first.shape), per_item, cols_item.expand(num, -1, width))
    return mlp_forward_above_first(layers, rearrange(pre, "n b h -> (n b) h"), saved)


def mlp_backward_shared(
    layers: list[Layer],
    saved: list,
    grad: torch.Tensor,
    grads: list[torch.Tensor],
    accumulate: bool = False,
) -> None:
    """Parameter gradients of a `mlp_forward_shared` pass for ``grad = dLoss/d out`` (N B, out):
    as `mlp_backward`, except the first layer's state columns, ``dW_s = (sum_n G_1n)^T s``
    (the state's row fed every item), and ``dW_x = G_1^T x``, ``db_1 = sum G_1``. With
    ``accumulate`` they are added to ``grads`` (a pass over a further chunk of states)."""
    grad = mlp_backward_above_first(layers, saved, grad, grads, accumulate)
    _shared_linear_grads(grad, None, saved[0], grads[0], grads[1], accumulate)


def _shared_linear_grads(
    grad: torch.Tensor,
    z: torch.Tensor | None,
    inputs: tuple[torch.Tensor, torch.Tensor],
    grad_weight: torch.Tensor,
    grad_bias: torch.Tensor,
    accumulate: bool,
) -> None:
    """Weight and bias gradients of a linear layer of a ``*_forward_shared`` pass whose input
    is ``[z, s_b, x_nb]`` (``z`` the previous layer's output, None for a first layer), for
    ``grad`` (N B, out) at its output: ``dW_z = G^T z``, ``dW_s = (sum_n G_n)^T s``, ``dW_x =
    G^T x``, ``db = sum G``, written into (or, with ``accumulate``, added to) the column blocks
    of ``grad_weight``. ``inputs`` is ``(s, x)``, x as (N B, d_x)."""
    shared, per_item = inputs
    start = 0 if z is None else z.shape[1]
    split = start + shared.shape[1]
    per_state = reduce(grad, "(n b) h -> b h", "sum", b=shared.shape[0])
    # y^T G, then transposed into the column block: G^T x into it (out= a strided view) ran
    # 5x slower at 31 x 512 rows, 4 columns (one CPU thread)
    values = [torch.mm(shared.t(), per_state), torch.mm(per_item.t(), grad)]
    blocks = [grad_weight[:, start:split], grad_weight[:, split:]]
    if z is not None:
        values.append(torch.mm(z.t(), grad))
        blocks.append(grad_weight[:, :start])
    for block, value in zip(blocks, values, strict=True):
        block.add_(value.t()) if accumulate else block.copy_(value.t())
    bias_grad(grad_bias, per_state, accumulate)


# -- DenseNet with LayerNorm ----------------------------------------------------------------------


class DenseSharedCols(NamedTuple):
    """A `DenseMLP`'s transposed weight column blocks for `dense_forward_shared`."""

    shared: list[torch.Tensor]
    """``W_k[:, w_{k-1} : w_{k-1} + d_s]^T`` of every linear layer (``L + 1``)."""
    item: list[torch.Tensor]
    """``W_k[:, w_{k-1} + d_s :]^T`` of every linear layer (``L + 1``)."""
    z: list[torch.Tensor]
    """``W_k[:, :w_{k-1}]^T`` of the layers ``k >= 2`` (``L``)."""


def dense_shared_cols(layers: DenseLayers, split: int) -> DenseSharedCols:
    """The column blocks of `DenseSharedCols`, for a shared input of width ``split``."""
    widths = [0, *(z.shape[1] for z in layers.z_cols)]
    with torch.no_grad():
        pairs = [(lin[2], w) for lin, w in zip(layers.linears, widths, strict=True)]
        return DenseSharedCols(
            [wt[w : w + split] for wt, w in pairs],
            [wt[w + split :] for wt, w in pairs],
            [wt[:w] for wt, w in pairs[1:]],
        )


def dense_forward_shared(
    layers: DenseLayers,
    cols: DenseSharedCols,
    shared: torch.Tensor,
    per_item: torch.Tensor,
    saved: list | None,
) -> torch.Tensor:
    """``DenseMLP.forward_shared``: the `dense_forward` of ``[s_b, x_nb]`` for ``shared`` (B,
    d_s) and ``per_item`` (N, B, d_p), every layer's ``s W_s^T + b`` computed once per state
    (``a_k = z_{k-1} W_z^T + x W_x^T + (s W_s^T + b_k)``); ``cols`` from `dense_shared_cols`.
    Returns (N B, out); ``saved`` gets ``(s, x)`` (x as (N B, d_p)), then ``(None, a_k, mu_k,
    1/sigma_k, z_k)`` for each hidden layer (`dense_forward`'s entries without ``h_{k-1}``)."""
    dtype = layers.linears[0][0].dtype
    shared, per_item = shared.to(dtype), per_item.to(dtype).contiguous()
    if saved is not None:
        saved.append((shared, rearrange(per_item, "n b d -> (n b) d")))
    z = None
    for k, (gamma, beta, eps) in enumerate(layers.norms):
        a = _dense_shared_pre(layers, cols, k, shared, per_item, z)
        normed, mean, rstd = torch.native_layer_norm(a, (a.shape[1],), gamma, beta, eps)
        z = normed.relu_()
        if saved is not None:
            saved.append((None, a, mean, rstd, z))
    return _dense_shared_pre(layers, cols, len(layers.norms), shared, per_item, z)


def _dense_shared_pre(
    layers: DenseLayers,
    cols: DenseSharedCols,
    k: int,
    shared: torch.Tensor,
    per_item: torch.Tensor,
    z: torch.Tensor | None,
) -> torch.Tensor:
    """Linear layer ``k``'s output (N B, w) in `dense_forward_shared`: one batched product of
    the items onto the per-state part (as `mlp_forward_shared`), plus ``z W_z^T``."""
    state = torch.addmm(layers.linears[k][1], shared, cols.shared[k])
    num, width = per_item.shape[0], state.shape[1]
    pre = torch.baddbmm(
        state.expand(num, *state.shape), per_item, cols.item[k].expand(num, -1, width)
    )
    pre = rearrange(pre, "n b h -> (n b) h")
    return pre if z is None else pre.addmm_(z, cols.z[k - 1])


def dense_backward_shared(
    layers: DenseLayers,
    saved: list,
    grad: torch.Tensor,
    grads: list[torch.Tensor],
    accumulate: bool = False,
) -> None:
    """Parameter gradients of a `dense_forward_shared` pass for ``grad = dLoss/d out`` (N B,
    out), written into (or, with ``accumulate``, added to) ``grads`` (`dense_params`'s order):
    `dense_backward`'s, each linear layer's weight gradient by column block
    (`_shared_linear_grads`: the state columns' from the per-state sums)."""
    depth = len(layers.norms)
    inputs, entries = saved[0], saved[1:]
    for k in range(depth, -1, -1):
        z = entries[k - 1][4] if k else None
        index = 4 * depth if k == depth else 2 * k
        _shared_linear_grads(grad, z, inputs, grads[index], grads[index + 1], accumulate)
        if k:
            grad = threshold_backward(torch.mm(grad, layers.z_cols[k - 1]), z, 0)
            norm_grads = grads[2 * depth + 2 * (k - 1)], grads[2 * depth + 2 * (k - 1) + 1]
            grad = layer_norm_backward(
                grad, entries[k - 1], layers.norms[k - 1], *norm_grads, accumulate
            )


# -- choice ---------------------------------------------------------------------------------------


class SharedTorsoFunctions(NamedTuple):
    """One torso's shared-input passes (module docstring), chosen by `shared_torso_functions`."""

    cols: Callable[[Any, int], Any]
    forward: Callable[[Any, Any, torch.Tensor, torch.Tensor, list | None], torch.Tensor]
    backward: Callable[[Any, list, torch.Tensor, list[torch.Tensor], bool], None]


MLP_SHARED = SharedTorsoFunctions(mlp_shared_cols, mlp_forward_shared, mlp_backward_shared)
DENSE_SHARED = SharedTorsoFunctions(dense_shared_cols, dense_forward_shared, dense_backward_shared)


def shared_torso_functions(net: nn.Module) -> SharedTorsoFunctions:
    """The shared-input passes of ``net``'s torso: `PlainMLP` or `DenseMLP`."""
    if isinstance(net, PlainMLP):
        return MLP_SHARED
    if isinstance(net, DenseMLP):
        return DENSE_SHARED
    raise ValueError(f"manual_gradients needs a PlainMLP or DenseMLP torso, got {type(net)}")
