"""The MLP torsos: the paper's DenseNet (default) and a plain Linear+ReLU MLP; `make_mlp` builds
either, and every network of `cvl_models` builds its MLP through it (``torso`` argument).

DenseNet MLP of the paper's appendix (table 1: "256 x 256 DenseNet", LayerNorm between layers).

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

Plain MLP (``torso="mlp"``, `PlainMLP`): the architecture of Stable-Baselines3, d3rlpy and most
papers, for comparisons at equal architecture::

    z_1 = relu(Linear(x)); z_k = relu(Linear(z_{k-1})); out = Linear(z_L)

with ``sum_k (h_{k-1} + 1) h_k + (h_L + 1) out_dim`` parameters (``h_0 = in_dim``); for
``hidden=(256, 256)``: ``66_048 + 256*in_dim + 257*out_dim``, e.g. ``PlainMLP(43, 1)``: 77_313.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from cvl_models._checks import check_trailing

__all__ = ["TORSOS", "DenseMLP", "PlainMLP", "Torso", "make_mlp"]

Torso = Literal["densenet", "mlp"]
"""The MLP torso of a network: the paper's DenseNet with LayerNorm, or a plain Linear+ReLU MLP."""
TORSOS: tuple[str, ...] = ("densenet", "mlp")


def make_mlp(
    in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256), torso: Torso = "densenet"
) -> DenseMLP | PlainMLP:
    """The MLP ``(*batch, in_dim) -> (*batch, out_dim)`` of torso ``torso``: `DenseMLP` (the
    paper's, default) or `PlainMLP`. Both have ``forward`` and ``forward_shared``."""
    if torso == "densenet":
        return DenseMLP(in_dim, out_dim, hidden)
    if torso == "mlp":
        return PlainMLP(in_dim, out_dim, hidden)
    raise ValueError(f"unknown torso {torso!r}; known: {TORSOS}")


def _check_sizes(name: str, in_dim: int, out_dim: int, hidden: Sequence[int]) -> None:
    if in_dim < 1 or out_dim < 1 or any(h < 1 for h in hidden):
        raise ValueError(f"{name}: bad sizes in_dim={in_dim} out_dim={out_dim} {hidden=}")


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
        _check_sizes("DenseMLP", in_dim, out_dim, hidden)
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
        _check_shared_widths("DenseMLP", self.in_dim, shared, per_item)
        dtype = self.out.weight.dtype
        shared, per_item = shared.to(dtype), per_item.to(dtype)
        z = None
        for linear, norm in zip(self.linears, self.norms, strict=True):
            z = self.act(norm(_split_linear(linear, z, shared, per_item)))
        return _split_linear(self.out, z, shared, per_item)

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, out_dim={self.out_dim}, hidden={self.hidden}"


class PlainMLP(nn.Module):
    """Plain MLP: ``(*batch, in_dim) -> (*batch, out_dim)``, Linear+ReLU hidden layers and a
    linear output (no norm, no skip connections; SB3's and d3rlpy's architecture).

    Args: as `DenseMLP`'s. Parameter count: see the module docstring (``66_048 + 256*in_dim +
    257*out_dim`` for the default widths).
    """

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        _check_sizes("PlainMLP", in_dim, out_dim, hidden)
        self.in_dim = int(in_dim)
        self.out_dim = int(out_dim)
        self.hidden = tuple(int(h) for h in hidden)
        widths = (self.in_dim, *self.hidden)
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.out = nn.Linear(widths[-1], self.out_dim)
        self.act = nn.ReLU(inplace=True)  # on the linear's fresh output: its backward needs inputs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(*batch, in_dim)`` to ``(*batch, out_dim)``."""
        check_trailing(x, (self.in_dim,), "PlainMLP input")
        h = x.to(self.out.weight.dtype)
        for linear in self.linears:
            h = self.act(linear(h))
        return self.out(h)

    def forward_shared(self, shared: torch.Tensor, per_item: torch.Tensor) -> torch.Tensor:
        """``forward(concat[shared, per_item])`` with ``shared`` broadcast over leading item dims
        (as `DenseMLP.forward_shared`): only the first layer sees the input, so only its
        ``W_s s`` product (and bias) is computed once per state."""
        _check_shared_widths("PlainMLP", self.in_dim, shared, per_item)
        dtype = self.out.weight.dtype
        layers = [*self.linears, self.out]
        h = _split_linear(layers[0], None, shared.to(dtype), per_item.to(dtype))
        for linear in layers[1:]:
            h = linear(self.act(h))
        return h

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, out_dim={self.out_dim}, hidden={self.hidden}"


def _check_shared_widths(
    name: str, in_dim: int, shared: torch.Tensor, per_item: torch.Tensor
) -> None:
    d_s, d_p = shared.shape[-1], per_item.shape[-1]
    if d_s < 1 or d_p < 1 or d_s + d_p != in_dim:
        raise ValueError(
            f"{name}.forward_shared: widths {d_s} + {d_p} must make in_dim={in_dim} (each >= 1)"
        )


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
