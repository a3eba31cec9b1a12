"""IMPALA CNN encoder (Espeholt et al. 2018), the paper's pixel encoder (appendix, table 1).

Architecture for an image of ``H x W x C`` (channel-last uint8, as the datasets store it)::

    x = rearrange(obs, "... h w c -> ... c h w") / 255
    for channels in (16, 32, 32):                       # three stages
        x = Conv3x3(channels, padding=1)(x)
        x = MaxPool(3, stride=2, padding=1)(x)          # H -> ceil(H / 2)
        x = x + Conv3x3(relu(Conv3x3(relu(x))))         # residual block 1
        x = x + Conv3x3(relu(Conv3x3(relu(x))))         # residual block 2
    x = relu(LayerNorm(Linear(flatten(relu(x)))))       # 256-unit dense head

The spatial size after the three stages is ``ceil(ceil(ceil(H/2)/2)/2)`` (84 -> 11, 64 -> 8,
32 -> 4), computed at construction, so any image size works (tested: 32 to 84, non-square too).
The LayerNorm in the head follows the appendix ("a LayerNorm layer in between each linear
layer"): the head's output feeds the first linear layer of a DenseNet MLP.

Parameter count (default ``out_dim=256``): conv stack ``97_168 + 144*C`` (97_600 for RGB)
plus head ``32*h*w*256 + 256 + 512`` where ``h x w`` is the final feature map:
84 x 84 x 3 -> 1_089_600 (head 992_000); 64 x 64 x 3 -> 622_656 (head 525_056);
32 x 32 x 3 -> 229_440 (head 131_840).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from einops import pack, rearrange, unpack
from torch import nn

from cvl_models._checks import check_trailing

__all__ = ["ImpalaEncoder", "ImpalaStage", "ResidualBlock"]

STAGE_CHANNELS = (16, 32, 32)


class ResidualBlock(nn.Module):
    """``x + conv(relu(conv(relu(x))))`` with 3x3 convs that keep the channel count."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv0(torch.relu(x))
        h = self.conv1(torch.relu(h))
        return x + h


class ImpalaStage(nn.Module):
    """Conv 3x3 -> max-pool 3x3 stride 2 -> two residual blocks."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.res0 = ResidualBlock(out_channels)
        self.res1 = ResidualBlock(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.res1(self.res0(self.pool(self.conv(x))))


class ImpalaEncoder(nn.Module):
    """IMPALA CNN: ``(*batch, H, W, C)`` uint8 images -> ``(*batch, out_dim)`` features.

    Args:
        obs_shape: ``(H, W, C)``, channel-last as stored by ``cvl_data``.
        out_dim: width of the dense head (paper: 256).
        channels: channels of the three stages (paper: 16, 32, 32).

    Inputs are scaled by ``1/255`` inside (uint8 in ``[0, 255]``; a float input is assumed to be
    on the same ``[0, 255]`` scale). Batch items are independent (no batch norm). Parameters for
    the defaults: 1_089_600 at 84 x 84 x 3, 622_656 at 64 x 64 x 3 (see module docstring).
    """

    def __init__(
        self,
        obs_shape: Sequence[int] = (84, 84, 3),
        out_dim: int = 256,
        channels: Sequence[int] = STAGE_CHANNELS,
    ) -> None:
        super().__init__()
        if len(obs_shape) != 3 or min(obs_shape) < 1:
            raise ValueError(f"ImpalaEncoder: obs_shape must be (H, W, C), got {obs_shape}")
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.out_dim = int(out_dim)
        height, width, in_channels = self.obs_shape
        stages = []
        for ch in channels:
            stages.append(ImpalaStage(in_channels, ch))
            in_channels = ch
            height, width = math.ceil(height / 2), math.ceil(width / 2)
        self.stages = nn.Sequential(*stages)
        self.feature_shape = (in_channels, height, width)
        self.head = nn.Linear(in_channels * height * width, self.out_dim)
        self.head_norm = nn.LayerNorm(self.out_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Encode ``(*batch, H, W, C)`` images to ``(*batch, out_dim)``."""
        check_trailing(obs, self.obs_shape, "ImpalaEncoder obs")
        flat, packed_shape = pack([obs], "* h w c")
        x = rearrange(flat, "n h w c -> n c h w").to(self.head.weight.dtype) / 255.0
        x = torch.relu(self.stages(x))
        x = rearrange(x, "n c h w -> n (c h w)")
        x = torch.relu(self.head_norm(self.head(x)))
        [out] = unpack(x, packed_shape, "* d")
        return out

    def extra_repr(self) -> str:
        return f"obs_shape={self.obs_shape}, out_dim={self.out_dim}"
