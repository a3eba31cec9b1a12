"""Flow-matching policies: a multimodal behaviour model and a one-step policy distilled from it.

Flow Q-Learning (Park, Li, Levine 2025, "Flow Q-Learning", sec. 4) represents the data's action
distribution by a velocity field ``v(s, x, t)`` trained by flow matching (Lipman et al. 2023):
with ``x_0 ~ N(0, I)``, ``x_1 = a`` a dataset action and ``x_t = (1 - t) x_0 + t x_1``,
``v`` regresses ``x_1 - x_0``. Integrating ``dx/dt = v(s, x, t)`` from ``t = 0`` to ``1``
(Euler, ``steps`` steps) maps noise to actions; unlike a Gaussian it can hold several modes.

A one-step policy ``mu(s, z)`` maps the same noise ``z`` to an action in one network pass; FQL
trains it to stay close to the flow's action for that noise while maximising Q
(`cvl_algos.cvl.extraction.fql_policy_loss`). Acting samples ``z ~ N(0, I)``; deterministic
acting uses ``z = 0``, the noise distribution's mode.

Actions live in ``[-1, 1]^A``: the networks' outputs are not squashed (as in FQL); integrated
and acting actions are clipped.

Shapes: ``obs`` ``(*batch, *obs_shape)``, actions and noise ``(*extra, *batch, A)`` (several per
state: the state's features are computed once and broadcast), ``t`` like the actions with
width 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from cvl_models._checks import check_trailing
from cvl_models.encoder import make_encoder
from cvl_models.mlp import Torso, make_mlp
from cvl_models.noise import standard_normal

__all__ = ["FlowPolicy", "OneStepPolicy", "VelocityField", "euler_integrate", "flow_samples"]


class VelocityField(nn.Module):
    """``v(s, x_t, t)``: encoder, then an MLP (``torso``, default DenseNet) on ``[enc(s), x_t, t]`` -> ``(*batch, A)``."""

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
        self.net = make_mlp(
            self.encoder.out_dim + self.action_dim + 1, self.action_dim, hidden, torso
        )

    def forward(self, obs: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        check_trailing(x_t, (self.action_dim,), "VelocityField x_t")
        check_trailing(t, (1,), "VelocityField t")
        features = _broadcast(self.encoder(obs), x_t)
        return self.net(torch.cat([features, x_t, t.to(x_t.dtype)], dim=-1))


class OneStepPolicy(nn.Module):
    """``mu(s, z)``: encoder, then an MLP (``torso``, default DenseNet) on ``[enc(s), z]`` -> ``(*batch, A)``."""

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
        self.net = make_mlp(self.encoder.out_dim + self.action_dim, self.action_dim, hidden, torso)

    def forward(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        check_trailing(noise, (self.action_dim,), "OneStepPolicy noise")
        return self.net(torch.cat([_broadcast(self.encoder(obs), noise), noise], dim=-1))


def _broadcast(features: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """State features ``(*batch, F)`` broadcast to ``like``'s leading dims ``(*extra, *batch)``
    and dtype (several actions or noises per state)."""
    return features.to(like.dtype).expand(*like.shape[:-1], features.shape[-1])


def euler_integrate(
    velocity: nn.Module, obs: torch.Tensor, noise: torch.Tensor, steps: int
) -> torch.Tensor:
    """Actions of the flow for given noise: ``x <- x + v(s, x, i / steps) / steps`` for
    ``i = 0 .. steps - 1`` from ``x = noise``, clipped to ``[-1, 1]``: ``(*batch, A)``.

    ``obs`` may have fewer leading dims than ``noise`` (several noises per state): the state's
    features are computed once and broadcast.
    """
    if steps < 1:
        raise ValueError(f"euler_integrate: steps must be >= 1, got {steps}")
    features = _broadcast(velocity.encoder(obs), noise)
    x = noise
    for i in range(steps):
        t = torch.full((*noise.shape[:-1], 1), i / steps, dtype=noise.dtype, device=noise.device)
        x = x + velocity.net(torch.cat([features, x, t], dim=-1)) / steps
    return x.clamp(-1.0, 1.0)


def flow_samples(
    velocity: VelocityField,
    obs: torch.Tensor,
    num_samples: int,
    steps: int,
    noise_scale: float = 1.0,
) -> torch.Tensor:
    """``num_samples`` actions of the flow ``velocity`` per state: ``(N, *batch, A)``, each
    integrated (`euler_integrate`) from ``noise_scale * z``, ``z ~ N(0, I)`` drawn through
    `cvl_models.noise` (1: the flow's own distribution; below 1 a sampling temperature that
    draws the samples toward the flow's modes)."""
    batch = check_trailing(obs, velocity.obs_shape, "flow_samples obs")
    dtype = next(velocity.parameters()).dtype
    shape = (int(num_samples), *batch, velocity.action_dim)
    noise = noise_scale * standard_normal(shape, dtype, obs.device)
    return euler_integrate(velocity, obs, noise, steps)


class FlowPolicy(nn.Module):
    """The behaviour flow ``velocity`` and the one-step policy ``onestep`` of FQL, one module.

    ``deterministic(obs)`` is ``clip(mu(s, 0))``; ``sample(obs[, N])`` draws ``z ~ N(0, I)``
    (through `cvl_models.noise`) and returns ``(clip(mu(s, z)), None)``: the one-step policy has
    no tractable density. ``behaviour_samples(obs, N, steps[, noise_scale])`` integrates the flow
    for ``N`` noises per state: ``(N, *batch, A)``.
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
            raise ValueError(f"FlowPolicy: action_dim must be >= 1, got {action_dim}")
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.velocity = VelocityField(self.obs_shape, self.action_dim, hidden, torso)
        self.onestep = OneStepPolicy(self.obs_shape, self.action_dim, hidden, torso)

    def _noise_shape(self, obs: torch.Tensor, num_samples: int | None) -> tuple[int, ...]:
        batch = check_trailing(obs, self.obs_shape, "FlowPolicy obs")
        lead = () if num_samples is None else (int(num_samples),)
        return (*lead, *batch, self.action_dim)

    def _noise(self, obs: torch.Tensor, num_samples: int | None) -> torch.Tensor:
        dtype = next(self.onestep.parameters()).dtype
        return standard_normal(self._noise_shape(obs, num_samples), dtype, obs.device)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """``clip(mu(s, 0))``: ``(*batch, A)``."""
        dtype = next(self.onestep.parameters()).dtype
        noise = torch.zeros(self._noise_shape(obs, None), dtype=dtype, device=obs.device)
        return self.onestep(obs, noise).clamp(-1.0, 1.0)

    def sample(
        self, obs: torch.Tensor, num_samples: int | None = None
    ) -> tuple[torch.Tensor, None]:
        """``(clip(mu(s, z)), None)`` with ``z ~ N(0, I)``: ``(*batch, A)`` or ``(N, *batch, A)``."""
        noise = self._noise(obs, num_samples)
        return self.onestep(obs, noise).clamp(-1.0, 1.0), None

    def behaviour_samples(
        self, obs: torch.Tensor, num_samples: int, steps: int, noise_scale: float = 1.0
    ) -> torch.Tensor:
        """``N`` actions of the behaviour flow per state: ``(N, *batch, A)`` (`flow_samples`)."""
        return flow_samples(self.velocity, obs, num_samples, steps, noise_scale)
