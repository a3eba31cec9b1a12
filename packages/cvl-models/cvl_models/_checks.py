"""Small shape-checking helpers shared by the modules (house style: assert shapes at entry)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def check_trailing(
    x: torch.Tensor, trailing: Sequence[int], name: str, min_batch_dims: int = 1
) -> tuple[int, ...]:
    """Check that ``x`` ends in ``trailing`` dims after at least ``min_batch_dims`` batch dims.

    Returns the leading (batch) shape.
    """
    trailing = tuple(int(t) for t in trailing)
    k = len(trailing)
    if x.dim() < k + min_batch_dims or tuple(x.shape[x.dim() - k :]) != trailing:
        raise ValueError(
            f"{name}: expected shape (*batch, {', '.join(map(str, trailing))}) with at least "
            f"{min_batch_dims} batch dim(s), got {tuple(x.shape)}"
        )
    return tuple(x.shape[: x.dim() - k])


def check_same_batch(a: tuple[int, ...], b: tuple[int, ...], names: str) -> None:
    """Check that two batch shapes agree."""
    if a != b:
        raise ValueError(f"{names}: batch shapes differ: {a} vs {b}")
