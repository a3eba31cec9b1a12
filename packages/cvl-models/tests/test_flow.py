"""Flow-matching policy networks: Euler integration against a per-sample loop, shapes, noise."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from cvl_models.flow import FlowPolicy, OneStepPolicy, VelocityField, euler_integrate

OBS_DIM, ACTION_DIM = 5, 3
SETTINGS = settings(max_examples=15, deadline=None)


def naive_euler(velocity: VelocityField, obs: torch.Tensor, noise: torch.Tensor, steps: int):
    """One state and one noise at a time, each Euler step a separate call of the module."""
    out = []
    for n in range(noise.shape[0]):
        row = []
        for b in range(obs.shape[0]):
            x = noise[n, b : b + 1]
            for i in range(steps):
                t = torch.tensor([[i / steps]])
                x = x + velocity(obs[b : b + 1], x, t) / steps
            row.append(x.clamp(-1, 1)[0])
        out.append(torch.stack(row))
    return torch.stack(out)


@SETTINGS
@given(steps=st.integers(1, 6), samples=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_euler_integrate_matches_per_sample_loop(steps: int, samples: int, seed: int) -> None:
    torch.manual_seed(seed)
    velocity = VelocityField((OBS_DIM,), ACTION_DIM, hidden=(8, 8)).double()
    obs = torch.randn(4, OBS_DIM, dtype=torch.float64)
    noise = torch.randn(samples, 4, ACTION_DIM, dtype=torch.float64)
    fast = euler_integrate(velocity, obs, noise, steps)
    torch.testing.assert_close(fast, naive_euler(velocity, obs, noise, steps))


class ConstantVelocity(nn.Module):
    """``v = c`` everywhere: the flow moves every noise by exactly ``c``."""

    def __init__(self, c: torch.Tensor) -> None:
        super().__init__()
        self.c = c
        self.encoder = nn.Identity()

    def net(self, x: torch.Tensor) -> torch.Tensor:
        return self.c.expand(*x.shape[:-1], self.c.shape[0])


def test_constant_velocity_translates_the_noise() -> None:
    c = torch.tensor([0.5, -0.25, 2.0])
    noise = torch.randn(2, 6, 3) * 0.3
    out = euler_integrate(ConstantVelocity(c), torch.zeros(6, OBS_DIM), noise, steps=7)
    torch.testing.assert_close(out, (noise + c).clamp(-1, 1))
    with pytest.raises(ValueError, match="steps"):
        euler_integrate(ConstantVelocity(c), torch.zeros(6, OBS_DIM), noise, steps=0)


def test_flow_policy_shapes_and_deterministic_is_zero_noise() -> None:
    torch.manual_seed(0)
    policy = FlowPolicy((OBS_DIM,), ACTION_DIM, hidden=(8,))
    obs = torch.randn(7, OBS_DIM)
    mode = policy.deterministic(obs)
    torch.testing.assert_close(mode, policy.onestep(obs, torch.zeros(7, ACTION_DIM)).clamp(-1, 1))
    action, log_prob = policy.sample(obs)
    assert action.shape == (7, ACTION_DIM) and log_prob is None
    actions, _ = policy.sample(obs, num_samples=4)
    assert actions.shape == (4, 7, ACTION_DIM) and actions.abs().max() <= 1
    samples = policy.behaviour_samples(obs, 5, steps=3)
    assert samples.shape == (5, 7, ACTION_DIM) and samples.abs().max() <= 1
    torch.manual_seed(1)
    first = policy.sample(obs)[0]
    torch.manual_seed(1)
    torch.testing.assert_close(first, policy.sample(obs)[0])
    with pytest.raises(ValueError, match="FlowPolicy obs"):
        policy.deterministic(torch.zeros(7, OBS_DIM + 1))


def test_pixel_observations() -> None:
    policy = FlowPolicy((16, 16, 3), 2, hidden=(8,))
    pixels = torch.randint(0, 256, (3, 16, 16, 3), dtype=torch.uint8)
    assert policy.deterministic(pixels).shape == (3, 2)
    assert policy.behaviour_samples(pixels, 4, steps=2).shape == (4, 3, 2)
    assert OneStepPolicy((16, 16, 3), 2, hidden=(8,))(pixels, torch.zeros(3, 2)).shape == (3, 2)
