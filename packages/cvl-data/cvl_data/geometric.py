"""The truncated geometric offset distribution (paper def. 1; DESIGN.md sec. 2).

It is the law of ``Delta t ~ TruncGeom(1 - gamma, t, H)`` in the paper's OM-InfoNCE critic
objective (eq. 9-10 in DESIGN.md's numbering) and in ``Q_NCE`` (eq. 11).

For an anchor at step ``t`` of an episode with ``T`` steps, ``K = T - t >= 1`` future states
``s_{t+1} .. s_T`` exist. The offset ``k`` to the future state ``s_{t+k}`` has

    P(k) = (1 - g) g^(k-1) / (1 - g^K),   k = 1 .. K,   g = discount,

i.e. the discounted occupancy's geometric ``Geom(1 - gamma)`` truncated to the episode.
Sampling is by inverse CDF, vectorised over the batch:

    k = 1 + floor(log(1 - u (1 - g^K)) / log g),   u ~ U[0, 1),   clipped to [1, K].
"""

from __future__ import annotations

import math

import numpy as np
import torch


def check_discount(discount: float) -> float:
    discount = float(discount)
    if not 0.0 < discount < 1.0:
        raise ValueError(f"discount must be in (0, 1), got {discount}")
    return discount


def truncated_geometric_pmf(
    k: np.ndarray | int, K: np.ndarray | int, discount: float
) -> np.ndarray:
    """``P(k)`` of the truncated geometric on ``1..K`` (0 outside), broadcasting ``k`` and ``K``.

    Returns float64 (a numpy scalar for scalar inputs). Computed in log space so large ``K``
    (``g^K`` underflowing to 0) is exact to float64 precision.
    """
    g = check_discount(discount)
    k = np.asarray(k, dtype=np.int64)
    K = np.asarray(K, dtype=np.int64)
    if np.any(K < 1):
        raise ValueError("K (number of future states) must be >= 1")
    log_g = math.log(g)
    normaliser = np.expm1(log_g) / np.expm1(K * log_g)  # (1 - g) / (1 - g^K); exactly 1 at K = 1
    inside = (k >= 1) & (k <= K)
    pmf = normaliser * np.exp((np.maximum(k, 1) - 1) * log_g)
    return np.where(inside, pmf, 0.0)[()]


def sample_truncated_geometric(
    K: torch.Tensor, discount: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """One offset ``k ~ TruncGeom`` on ``1..K[i]`` per entry of ``K`` (int64, same shape/device).

    Args:
        K: integer tensor of future-state counts, every entry ``>= 1``.
        discount: ``g`` in ``(0, 1)``.
        generator: torch generator on ``K``'s device (seeded by the caller for reproducibility).
    """
    g = check_discount(discount)
    if K.dtype.is_floating_point or K.dtype == torch.bool:
        raise TypeError(f"K must be an integer tensor, got {K.dtype}")
    log_g = math.log(g)
    u = torch.rand(K.shape, generator=generator, device=K.device, dtype=torch.float64)
    mass = -torch.expm1(K.to(torch.float64) * log_g)  # 1 - g^K
    k = torch.floor(torch.log1p(-u * mass) / log_g).to(torch.int64) + 1
    return torch.minimum(k.clamp_(min=1), K.to(torch.int64))
