"""Twin Q network for SAC and CQL (DESIGN.md sec. 2 "Baselines": SAC with twin Q; CQL(H)).

Each Q is its own encoder (identity for states, IMPALA for pixels) followed by a DenseNet MLP
on ``concat[encoder(s), a]`` with one output (appendix: all methods share the architecture).
The two networks share nothing, so the clipped double-Q minimum uses independent estimates.

Parameter count for the default ``hidden=(256, 256)``, states of width ``d`` and ``A``
actions: ``2 * DenseMLP(d + A, 1) = 2 * (67_329 + 513 (d + A))``;
Meta-World (39, 4): 2 * 89_388 = 178_776; Mountain Car (2, 1): 2 * 68_868 = 137_736;
84 x 84 x 3 pixels with 4 actions: 2 * (1_089_600 + 200_709) = 2_580_618.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from einops import rearrange
from torch import nn

from cvl_models._checks import check_same_batch, check_trailing
from cvl_models.encoder import make_encoder
from cvl_models.mlp import Torso, make_mlp

__all__ = ["QNetwork", "TwinQ", "ValueNetwork"]


class QNetwork(nn.Module):
    """``Q(s, a)``: ``(*batch, *obs_shape), (*batch, A) -> (*batch,)``."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        hidden: Sequence[int] = (256, 256),
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.encoder = make_encoder(self.obs_shape)
        self.mlp = make_mlp(self.encoder.out_dim + self.action_dim, 1, hidden, torso)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        obs_batch = check_trailing(obs, self.obs_shape, "Q obs")
        act_batch = check_trailing(action, (self.action_dim,), "Q action")
        check_same_batch(obs_batch, act_batch, "Q(obs, action)")
        encoded = self.encoder(obs)
        features = torch.cat([encoded, action.to(encoded.dtype)], dim=-1)
        return rearrange(self.mlp(features), "... 1 -> ...")

    def many(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``Q(s_b, a_nb)`` for N actions per state: ``(B, *obs_shape), (N, B, A) -> (N, B)``.

        Equals ``forward`` on the states repeated N times within float rounding, but encodes
        each state once (one IMPALA pass per image instead of N; CQL's regulariser scores 3 x 10
        actions per state) and computes the state's columns of every dense layer once
        (`DenseMLP.forward_shared`).
        """
        obs_batch = check_trailing(obs, self.obs_shape, "Q obs")
        if len(obs_batch) != 1:
            raise ValueError(f"Q.many: obs must be (B, *obs_shape), got {tuple(obs.shape)}")
        if actions.ndim != 3 or tuple(actions.shape[1:]) != (obs_batch[0], self.action_dim):
            raise ValueError(
                f"Q.many: actions must be (N, {obs_batch[0]}, {self.action_dim}), "
                f"got {tuple(actions.shape)}"
            )
        encoded = self.encoder(obs)
        return rearrange(self.mlp.forward_shared(encoded, actions), "n b 1 -> n b")


class TwinQ(nn.Module):
    """Two independent Q networks: ``forward(obs, action) -> (q1, q2)``, each ``(B,)``.

    Args:
        obs_shape: ``(d,)`` for states or ``(H, W, C)`` for uint8 pixels.
        action_dim: ``A``.
        hidden: DenseNet widths (paper: 256 x 256).
        torso: ``"densenet"`` (the paper's, default) or ``"mlp"`` (`cvl_models.mlp.make_mlp`).

    Parameters (defaults): 178_776 for Meta-World states (39, 4 actions), 137_736 for
    Mountain Car, 2_580_618 for 84 x 84 x 3 pixels (module docstring).
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        hidden: Sequence[int] = (256, 256),
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        if action_dim < 1:
            raise ValueError(f"TwinQ: action_dim must be >= 1, got {action_dim}")
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.q1 = QNetwork(self.obs_shape, self.action_dim, hidden, torso)
        self.q2 = QNetwork(self.obs_shape, self.action_dim, hidden, torso)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both Q-values, each ``(B,)`` (any batch shape ``B``)."""
        return self.q1(obs, action), self.q2(obs, action)

    def many(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both heads for N actions per state, each ``(N, B)`` (`QNetwork.many`)."""
        return self.q1.many(obs, actions), self.q2.many(obs, actions)


class ValueNetwork(nn.Module):
    """State value ``V(s)``: ``(*batch, *obs_shape) -> (*batch,)`` (IQL's expectile value).

    An encoder (identity for states, IMPALA for pixels) and an MLP of ``torso`` (default the
    DenseNet) with one output, the same architecture as a `QNetwork` without the action input.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        hidden: Sequence[int] = (256, 256),
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.encoder = make_encoder(self.obs_shape)
        self.mlp = make_mlp(self.encoder.out_dim, 1, hidden, torso)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        check_trailing(obs, self.obs_shape, "V obs")
        return rearrange(self.mlp(self.encoder(obs)), "... 1 -> ...")
