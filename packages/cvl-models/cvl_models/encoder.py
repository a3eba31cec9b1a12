"""State encoders: ``make_encoder(obs_shape)`` picks identity for states, IMPALA for pixels.

The paper's appendix: "an encoder (IMPALA for image data and two layer DenseNet MLP for
full-states) generated state features". For states the DenseNet MLP that follows the encoder
is that MLP, so the state encoder itself is a flatten/identity (0 parameters).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from cvl_models._checks import check_trailing
from cvl_models.impala import ImpalaEncoder

__all__ = ["FlatEncoder", "make_encoder"]


class FlatEncoder(nn.Module):
    """Identity encoder for 1-D states: ``(*batch, d) -> (*batch, d)``. 0 parameters.

    Floating inputs pass through unchanged (the MLP that follows casts to its own dtype);
    integer inputs become float32.
    """

    def __init__(self, obs_shape: Sequence[int]) -> None:
        super().__init__()
        if len(obs_shape) != 1 or obs_shape[0] < 1:
            raise ValueError(f"FlatEncoder: obs_shape must be (d,), got {obs_shape}")
        self.obs_shape = (int(obs_shape[0]),)
        self.out_dim = self.obs_shape[0]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        check_trailing(obs, self.obs_shape, "FlatEncoder obs")
        return obs if obs.is_floating_point() else obs.float()

    def extra_repr(self) -> str:
        return f"obs_shape={self.obs_shape}"


def make_encoder(obs_shape: Sequence[int], out_dim: int = 256) -> nn.Module:
    """Encoder for observations of ``obs_shape``; the returned module has ``.out_dim``.

    ``(d,)`` -> :class:`FlatEncoder` (``out_dim = d``); ``(H, W, C)`` -> :class:`ImpalaEncoder`
    (``out_dim`` features, default 256). Each call builds a fresh module with its own weights.
    """
    obs_shape = tuple(int(s) for s in obs_shape)
    if len(obs_shape) == 1:
        return FlatEncoder(obs_shape)
    if len(obs_shape) == 3:
        return ImpalaEncoder(obs_shape, out_dim=out_dim)
    raise ValueError(f"make_encoder: obs_shape must be (d,) or (H, W, C), got {obs_shape}")
