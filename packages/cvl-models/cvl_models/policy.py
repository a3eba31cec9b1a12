"""Tanh-Gaussian policy (paper eq. 13-15; appendix: "a diagonal Gaussian policy with a Tanh
bijector").

``u ~ N(mean(s), diag(std(s)^2))``, ``a = tanh(u)``, and by the change of variables::

    log pi(a|s) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) ]
    log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u))        # stable for large |u|

The network is an encoder (identity for states, IMPALA for pixels) followed by a DenseNet MLP
whose ``2 * action_dim`` outputs are the mean head and the log-std head. The log-std is bounded
smoothly: ``log_std = lo + (hi - lo) * (tanh(raw) + 1) / 2`` in ``[log_std_min, log_std_max]``.

Parameter count for the default ``hidden=(256, 256)`` and state observations of width ``d``:
``DenseMLP(d, 2A)`` = ``67_072 + 512 d + (257 + d) 2A``; Meta-World (``d = 39, A = 4``):
89_408; Mountain Car (``d = 2, A = 1``): 68_614. Pixels add an IMPALA encoder
(1_089_600 at 84 x 84 x 3) and use ``d = 256``: 1_089_600 + 202_248 = 1_291_848 for ``A = 4``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from cvl_models._checks import check_trailing
from cvl_models.encoder import make_encoder
from cvl_models.mlp import Torso, make_mlp
from cvl_models.noise import standard_normal

__all__ = [
    "TanhGaussianPolicy",
    "action_log_prob",
    "sample_tanh_gaussian",
    "tanh_gaussian_log_prob",
    "tanh_log_det_jacobian",
]

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Dataset actions are clipped to [-ACTION_CLIP, ACTION_CLIP] before atanh; 1 - 1e-6 rounds to a
# float32 strictly below 1 (atanh ~ 7.25), so log-probabilities at +-1 stay finite.
ACTION_CLIP = 1.0 - 1e-6


def tanh_log_det_jacobian(u: torch.Tensor) -> torch.Tensor:
    """``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``, elementwise and stable."""
    return 2.0 * (LOG_2 - u - F.softplus(-2.0 * u))


def tanh_gaussian_log_prob(
    mean: torch.Tensor, log_std: torch.Tensor, u: torch.Tensor
) -> torch.Tensor:
    """``log pi(tanh(u))`` for a diagonal Gaussian of ``mean, log_std``: sums the last dim."""
    z = (u - mean) * torch.exp(-log_std)
    gauss = -0.5 * z.square() - log_std - HALF_LOG_2PI
    return (gauss - tanh_log_det_jacobian(u)).sum(dim=-1)


def sample_tanh_gaussian(
    mean: torch.Tensor, log_std: torch.Tensor, num_samples: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised ``(action, log_prob)`` from given ``mean, log_std`` (``(*B, A)`` each).

    Lets a loss reuse one network pass for samples, data log-probs and entropy. Shapes as in
    :meth:`TanhGaussianPolicy.sample`.
    """
    shape = mean.shape if num_samples is None else (int(num_samples), *mean.shape)
    eps = standard_normal(shape, dtype=mean.dtype, device=mean.device)
    u = mean + torch.exp(log_std) * eps
    log_prob = tanh_gaussian_log_prob(mean, log_std, u)
    action = torch.clamp(torch.tanh(u), -ACTION_CLIP, ACTION_CLIP)
    return action, log_prob


def action_log_prob(
    mean: torch.Tensor, log_std: torch.Tensor, action: torch.Tensor
) -> torch.Tensor:
    """``log pi(a)`` of given actions, clipped to ``[-1+1e-6, 1-1e-6]`` before ``atanh``."""
    u = torch.atanh(torch.clamp(action.to(mean.dtype), -ACTION_CLIP, ACTION_CLIP))
    return tanh_gaussian_log_prob(mean, log_std, u)


class TanhGaussianPolicy(nn.Module):
    """``pi(a|s)``: tanh of a diagonal Gaussian whose mean and log-std come from a DenseNet.

    Args:
        obs_shape: ``(d,)`` for states or ``(H, W, C)`` for uint8 pixels.
        action_dim: ``A``; actions lie in ``(-1, 1)^A``.
        hidden: DenseNet widths (paper: 256 x 256).
        log_std_min, log_std_max: bounds of the log-std (smooth tanh rescale).
        torso: ``"densenet"`` (the paper's, default) or ``"mlp"`` (plain Linear+ReLU,
            `cvl_models.mlp.make_mlp`).

    Shapes (``B`` may be any batch shape): ``forward(obs) -> (mean, log_std)`` each ``(B, A)``;
    ``sample(obs) -> (B, A), (B,)``; ``sample(obs, N) -> (N, B, A), (N, B)``;
    ``log_prob(obs, action) -> (B,)``; ``entropy(obs) -> (B,)``; ``deterministic(obs) -> (B, A)``.

    Parameters (default sizes): 89_408 for Meta-World states (39 -> 4), 68_614 for Mountain Car
    (2 -> 1), 1_291_848 for 84 x 84 x 3 pixels with 4 actions (see module docstring).
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        hidden: Sequence[int] = (256, 256),
        log_std_min: float = -5.0,
        log_std_max: float = 2.0,
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        if action_dim < 1:
            raise ValueError(f"TanhGaussianPolicy: action_dim must be >= 1, got {action_dim}")
        if not log_std_min < log_std_max:
            raise ValueError(f"TanhGaussianPolicy: need {log_std_min=} < {log_std_max=}")
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.log_std_min = float(log_std_min)
        self.log_std_max = float(log_std_max)
        self.encoder = make_encoder(self.obs_shape)
        self.net = make_mlp(self.encoder.out_dim, 2 * self.action_dim, hidden, torso)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and bounded log-std of the pre-tanh Gaussian, each ``(*batch, A)``."""
        check_trailing(obs, self.obs_shape, "TanhGaussianPolicy obs")
        out = self.net(self.encoder(obs))
        mean, raw = rearrange(out, "... (two a) -> two ... a", two=2)
        span = self.log_std_max - self.log_std_min
        log_std = self.log_std_min + 0.5 * span * (torch.tanh(raw) + 1.0)
        return mean, log_std

    def sample(
        self, obs: torch.Tensor, num_samples: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised samples and their log-probabilities (paper eq. 13-14, ``N_a``).

        Returns ``(B, A), (B,)``, or ``(N, B, A), (N, B)`` with ``num_samples=N``. The
        log-probability is computed from the pre-tanh sample ``u`` (exact even where
        ``tanh(u)`` rounds to +-1); the returned action is clamped to ``[-1 + 1e-6, 1 - 1e-6]``
        so that it always lies in the open interval (where clamping bites, ``tanh' < 1e-6``
        anyway). Uses the global torch RNG of the device. To share one network pass between
        sampling, data log-probs and entropy, call ``self(obs)`` once and use
        :func:`sample_tanh_gaussian` and :func:`action_log_prob`.
        """
        mean, log_std = self(obs)
        return sample_tanh_gaussian(mean, log_std, num_samples)

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``log pi(a|s)`` of given (dataset) actions, clipped to ``[-1+1e-6, 1-1e-6]`` first.

        ``obs`` is ``(*batch, *obs_shape)``; ``action`` is ``(*batch, A)`` or, with leading
        sample dims, ``(*extra, *batch, A)``. Returns ``(*batch,)`` (resp. ``(*extra, *batch)``).
        Finite for actions at exactly +-1.
        """
        obs_batch = check_trailing(obs, self.obs_shape, "TanhGaussianPolicy obs")
        act_batch = check_trailing(action, (self.action_dim,), "TanhGaussianPolicy action")
        if act_batch[len(act_batch) - len(obs_batch) :] != obs_batch:
            raise ValueError(
                f"TanhGaussianPolicy.log_prob: action batch {act_batch} does not end with "
                f"obs batch {obs_batch}"
            )
        mean, log_std = self(obs)
        return action_log_prob(mean, log_std, action)

    def entropy(self, obs: torch.Tensor, num_samples: int = 10) -> torch.Tensor:
        """Monte-Carlo entropy estimate ``-mean_n log pi(a_n|s)``, ``a_n ~ pi(.|s)``: ``(B,)``.

        The tanh-Gaussian has no closed-form entropy; this estimator is unbiased and, being
        built from reparameterised samples, differentiable (used by the BC term, DESIGN.md
        sec. 2: ``L_BC = -E log pi(a|s) - tau_BC H``). ``num_samples`` defaults to 10 (the
        paper's ``N_a``); the encoder and MLP run once whatever ``num_samples`` is.
        """
        _, log_prob = self.sample(obs, num_samples=num_samples)
        return -log_prob.mean(dim=0)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action ``tanh(mean)``: ``(B, A)``."""
        mean, _ = self(obs)
        return torch.tanh(mean)

    def extra_repr(self) -> str:
        return (
            f"obs_shape={self.obs_shape}, action_dim={self.action_dim}, "
            f"log_std=[{self.log_std_min}, {self.log_std_max}]"
        )
