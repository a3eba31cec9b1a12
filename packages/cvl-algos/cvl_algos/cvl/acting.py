"""Critic-guided action selection for CVL at acting time (``CVLConfig.act_candidates``).

The paper acts with the policy's mode. The KL extraction of eq. 13 fits a Gaussian to
``exp(Q / alpha)``; where Q has several modes (mixed-quality data: the behaviours of several
sources) the Gaussian's mean can sit between them. Scoring a few policy samples with the critic
and taking the best (as EMaQ and BCQ do with a behaviour model's proposals) keeps the action
inside what the policy proposes while using what the critic knows. Not in the paper.
"""

from __future__ import annotations

import torch
from einops import rearrange
from torch import Tensor, nn

from cvl_algos.cvl.losses import QFn
from cvl_models.policy import sample_tanh_gaussian

__all__ = [
    "FutureBank",
    "best_by_q",
    "candidate_actions",
    "select_action_by_q",
    "select_flow_action_by_q",
]


def candidate_actions(policy: nn.Module, obs_t: Tensor, num_samples: int) -> Tensor:
    """The policy's mode followed by ``num_samples`` samples: (1 + num_samples, B, A), from one
    network pass."""
    mean, log_std = policy(obs_t)
    samples, _ = sample_tanh_gaussian(mean, log_std, num_samples)
    return torch.cat([rearrange(torch.tanh(mean), "b a -> 1 b a"), samples], dim=0)


def best_by_q(candidates: Tensor, q: Tensor) -> Tensor:
    """Per state, the candidate with the highest Q: (N, B, A), (N, B) -> (B, A).

    Ties go to the lowest index (the mode comes first in `candidate_actions`)."""
    assert candidates.ndim == 3 and q.shape == candidates.shape[:2], (candidates.shape, q.shape)
    best = q.argmax(dim=0)
    return candidates[best, torch.arange(candidates.shape[1], device=candidates.device)]


@torch.no_grad()
def select_action_by_q(policy: nn.Module, q_fn: QFn, obs_t: Tensor, num_samples: int) -> Tensor:
    """Acting by argmax over the policy's mode and ``num_samples`` samples of ``q_fn``: (B, A)."""
    candidates = candidate_actions(policy, obs_t, num_samples)
    return best_by_q(candidates, q_fn(obs_t, candidates))


@torch.no_grad()
def select_flow_action_by_q(
    policy: nn.Module,
    q_fn: QFn | None,
    obs_t: Tensor,
    num_samples: int,
    steps: int,
    noise_scale: float = 1.0,
) -> Tensor:
    """Acting by argmax over ``num_samples`` samples of a `cvl_models.flow.FlowPolicy`'s
    behaviour flow from ``noise_scale * N(0, I)`` (SfBC's selection;
    ``policy_extraction="flow_select"``): (B, A). Without a ``q_fn`` (no labelled data seen
    yet), the first sample."""
    candidates = policy.behaviour_samples(obs_t, num_samples, steps, noise_scale)
    if q_fn is None:
        return candidates[0]
    return best_by_q(candidates, q_fn(obs_t, candidates))


class FutureBank(nn.Module):
    """Future-state latents and arrival rewards for the direct estimator at acting time.

    Eq. 11 averages over future states drawn from the data; during training those are the
    batch's. ``store`` keeps the most recent batch's ``psi_target`` latents and rewards (the first
    ``capacity`` of them) so that a saved learner can score actions after loading; ``size`` says
    how many rows are valid (0 before the first labelled update).
    """

    psi: Tensor
    reward: Tensor
    size: Tensor

    def __init__(self, capacity: int, latent_dim: int) -> None:
        super().__init__()
        self.register_buffer("psi", torch.zeros(capacity, latent_dim))
        self.register_buffer("reward", torch.zeros(capacity))
        self.register_buffer("size", torch.zeros((), dtype=torch.int64))

    @torch.no_grad()
    def store(self, psi_future: Tensor, reward_future: Tensor) -> None:
        """Copy in a batch's (M, d) latents and (M,) rewards; no host synchronisation."""
        assert psi_future.ndim == 2 and reward_future.shape == psi_future.shape[:1], (
            psi_future.shape,
            reward_future.shape,
        )
        count = min(psi_future.shape[0], self.psi.shape[0])
        self.psi[:count].copy_(psi_future[:count])
        self.reward[:count].copy_(reward_future[:count])
        self.size.fill_(count)

    def valid(self) -> tuple[Tensor, Tensor]:
        """The stored (n, d) latents and (n,) rewards (reads ``size``: one host sync)."""
        count = int(self.size.item())
        return self.psi[:count], self.reward[:count]
