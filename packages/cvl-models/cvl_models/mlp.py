"""DenseNet MLP of the paper's appendix (table 1: "256 x 256 DenseNet", LayerNorm between layers).

Architecture (for ``hidden=(h_1, ..., h_L)``, input ``x`` of width ``in_dim``)::

    z_1 = relu(LayerNorm(Linear(x)))                      # in_dim          -> h_1
    z_k = relu(LayerNorm(Linear(concat[z_{k-1}, x])))     # h_{k-1}+in_dim  -> h_k
    out = Linear(concat[z_L, x])                          # h_L+in_dim      -> out_dim

Every layer after the first sees the previous layer's output concatenated with the block input
(the DenseNet connectivity of Huang et al. 2017 as used by the paper's MLPs), a LayerNorm sits
between consecutive linear layers, and the output layer has neither norm nor activation.

Activation: the appendix does not name one; we use ReLU, the default of the MLPs in the
contrastive-RL code base of the paper's co-authors (Eysenbach et al. 2022). Because LayerNorm
precedes it, units are centred and about half of them are active, so dead ReLUs are not an issue.

Parameter count for the default ``hidden=(256, 256)``::

    (in_dim*256 + 256) + 512 + ((256+in_dim)*256 + 256) + 512 + ((256+in_dim)*out_dim + out_dim)
    = 67_072 + 512*in_dim + (257+in_dim)*out_dim

e.g. ``DenseMLP(43, 64)`` (Meta-World state 39 + action 4 -> latent 64): 108_288 parameters;
``DenseMLP(39, 8)`` (policy net for 4 actions): 89_408 parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from cvl_models._checks import check_trailing

__all__ = ["DenseMLP"]


class DenseMLP(nn.Module):
    """DenseNet MLP: ``(*batch, in_dim) -> (*batch, out_dim)``.

    Args:
        in_dim: width of the input.
        out_dim: width of the output (linear, no norm or activation).
        hidden: widths of the hidden layers (default 256 x 256, paper table 1). May be empty,
            in which case the module is a single linear layer.

    Inputs are cast to the parameters' dtype. Each item of the batch is processed independently
    (LayerNorm normalises per item), so the output of item ``i`` never depends on other items.
    Parameter counts: see the module docstring (``67_072 + 512*in_dim + (257+in_dim)*out_dim``
    for the default widths).
    """

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        if in_dim < 1 or out_dim < 1 or any(h < 1 for h in hidden):
            raise ValueError(f"DenseMLP: bad sizes in_dim={in_dim} out_dim={out_dim} {hidden=}")
        self.in_dim = int(in_dim)
        self.out_dim = int(out_dim)
        self.hidden = tuple(int(h) for h in hidden)
        self.linears = nn.ModuleList()
        self.norms = nn.ModuleList()
        prev = 0  # width of the previous layer's output (0: the first layer sees only the input)
        for width in self.hidden:
            self.linears.append(nn.Linear(prev + self.in_dim, width))
            self.norms.append(nn.LayerNorm(width))
            prev = width
        self.out = nn.Linear(prev + self.in_dim, self.out_dim)
        # in place on the LayerNorm's fresh output (its backward needs its input, not its output):
        # saves allocating a second activation-sized tensor (a CPU microbenchmark of CQL's
        # 31-action critic pass: 10-20% faster; within noise for a whole update)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(*batch, in_dim)`` to ``(*batch, out_dim)``."""
        check_trailing(x, (self.in_dim,), "DenseMLP input")
        x = x.to(self.out.weight.dtype)  # e.g. float64 states into a float32 net
        h = x
        for linear, norm in zip(self.linears, self.norms, strict=True):
            z = self.act(norm(linear(h)))
            h = torch.cat([z, x], dim=-1)
        return self.out(h)

    def forward_shared(self, shared: torch.Tensor, per_item: torch.Tensor) -> torch.Tensor:
        """``forward(concat[shared, per_item])`` with ``shared`` broadcast over leading item dims,
        computing the shared columns' products once.

        ``shared`` is ``(*batch, d_s)``, ``per_item`` ``(*items, *batch, d_p)`` with
        ``d_s + d_p = in_dim`` -> ``(*items, *batch, out_dim)``. Every linear layer sees ``x``
        (the first directly, the others through the dense skip), and ``W [z; s; a] = W_z z +
        W_s s + W_a a``: the ``W_s s`` term (and the bias) is one product per state instead of one
        per item. CQL scores 31 actions per state, where this removes ~20% of the critic's
        matmul FLOPs; equal to ``forward`` on the broadcast concatenation within float rounding
        (a test checks it).
        """
        d_s = shared.shape[-1]
        if d_s < 1 or d_s + per_item.shape[-1] != self.in_dim:
            raise ValueError(
                f"DenseMLP.forward_shared: widths {d_s} + {per_item.shape[-1]} must make "
                f"in_dim={self.in_dim} (each >= 1)"
            )
        dtype = self.out.weight.dtype
        shared, per_item = shared.to(dtype), per_item.to(dtype)
        z = None
        for linear, norm in zip(self.linears, self.norms, strict=True):
            z = self.act(norm(_split_linear(linear, z, shared, per_item)))
        return _split_linear(self.out, z, shared, per_item)

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, out_dim={self.out_dim}, hidden={self.hidden}"


def _split_linear(
    linear: nn.Linear, z: torch.Tensor | None, shared: torch.Tensor, per_item: torch.Tensor
) -> torch.Tensor:
    """``linear(concat[z, shared, per_item])`` from column blocks of its weight (``z`` is the
    previous layer's output, None for the first layer); ``shared`` broadcasts over items."""
    weight = linear.weight
    start = 0 if z is None else z.shape[-1]
    end = start + shared.shape[-1]
    out = F.linear(per_item, weight[:, end:])
    out.add_(F.linear(shared, weight[:, start:end], linear.bias))  # in place: no second copy
    if z is not None:
        out.add_(F.linear(z, weight[:, :start]))
    return out
