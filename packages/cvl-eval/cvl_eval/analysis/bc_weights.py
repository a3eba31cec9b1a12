"""Where the advantage-weighted behaviour term puts its weight, by behaviour phase of the data.

CVL's DDPG+BC term with ``bc_q_weight_beta`` > 0 weighs data pair ``b`` of a batch by
``w_b = B softmax_b(beta z_b)`` (`cvl_algos.cvl.extraction.q_weights`), ``z`` the
batch-standardised ``Q(s_b, a_b)``, or with ``bc_q_weight_baseline="mode"`` the advantage
``Q(s_b, a_b) - Q(s_b, tanh(mean(s_b)))`` over the policy's mode. `behaviour_weights` computes
these weights for a trained learner on batches of the data's transitions, and
`weights_by_phase` sums them by what the data's behaviour was doing at each step
(`behaviour_phases`): on a ``stitch`` dataset (`cvl_eval.datagen.hard_suite`) an episode's
approach before its switch, the wrong behaviour after it, or the expert recorded from mid-task.
The question it answers: does the term weigh down the only data that shows the approach?

Q is `cvl_eval.analysis.critic_diagnostics.q_function`'s: for CVL's direct estimator a fixed set
of data futures (training uses each batch's own), so these are the training weights up to the
estimator's sampling noise. Batches are drawn uniformly over the data's transitions, as the
presets' ``sampler_mode="uniform"`` draws anchors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from einops import rearrange

from cvl_data.source import step_episode_index
from cvl_eval.analysis.critic_diagnostics import QFunction

__all__ = ["behaviour_phases", "behaviour_weights", "weights_by_phase"]

FROM_MID_TASK = "expert from mid-task"
"""Phase of an episode recorded from its ``start`` switch on (the expert finishing the task)."""


def _phase_of_episode(info: dict[str, Any], states: np.ndarray) -> np.ndarray:
    """Phase label of each of an episode's steps from its ``episode_info`` entry and its
    states ``s_0 .. s_{T-1}`` (T, obs_dim)."""
    behaviour = info.get("behaviour") or {}
    steps = len(states)
    if behaviour.get("start"):
        return np.full(steps, FROM_MID_TASK, dtype=object)
    switch = behaviour.get("switch")
    if not switch:
        return np.full(steps, info.get("source", "unlabelled"), dtype=object)
    # `cvl_eval.datagen.phases.Switch.holds` on every step at once (analysis does not import
    # datagen): after ``steps`` steps, or once the hand (0:3) is within ``near`` of the object (4:7)
    holds = np.zeros(steps, dtype=bool)
    if switch.get("steps") is not None:
        holds |= np.arange(steps) >= switch["steps"]
    if switch.get("near") is not None:
        holds |= np.linalg.norm(states[:, 0:3] - states[:, 4:7], axis=1) < switch["near"]
    switched = np.logical_or.accumulate(holds)  # the actor hands over for good
    then = behaviour.get("then") or {}
    after = then.get("task") or then.get("kind") or "other"
    first = behaviour.get("kind", "behaviour")
    return np.where(switched, f"{after} after the switch", f"{first} before the switch")


def behaviour_phases(dataset) -> np.ndarray:
    """Phase label (object array, one per transition) of every step of ``dataset``: the
    episode's source, or for a switching behaviour which side of its switch the step is on
    (the rule of `cvl_eval.datagen.phases.Switch`, replayed on the recorded states), or
    `FROM_MID_TASK`."""
    offsets = np.asarray(dataset.episode_offsets, dtype=np.int64)
    if len(dataset.episode_info) != len(offsets) - 1:
        raise ValueError(
            f"{dataset.path}: episode_info has {len(dataset.episode_info)} entries for "
            f"{len(offsets) - 1} episodes"
        )
    labels = []
    for episode, info in enumerate(dataset.episode_info):
        rows = slice(offsets[episode] + episode, offsets[episode + 1] + episode)
        labels.append(_phase_of_episode(info, np.asarray(dataset.observations[rows])))
    return np.concatenate(labels)


@torch.no_grad()
def behaviour_weights(
    learner,
    q: QFunction,
    dataset,
    num_batches: int,
    batch_size: int,
    beta: float,
    baseline: str = "mode",
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The behaviour term's weights on ``num_batches`` uniform batches of transitions.

    Returns the transitions' indices (num_batches * batch_size,) and their weights, each batch
    weighted on its own as in training (`cvl_algos.cvl.extraction.q_weights` of ``Q(s, a)``, or
    of the advantage over the policy's mode with ``baseline="mode"``).
    """
    from cvl_algos.cvl.extraction import q_weights

    if baseline not in ("none", "mode"):
        raise ValueError(f"baseline must be 'none' or 'mode', got {baseline!r}")
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
    episode = step_episode_index(np.asarray(dataset.episode_offsets, np.int64))
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(episode), size=num_batches * batch_size)
    obs = np.asarray(dataset.observations[index + episode[index]])
    action = np.asarray(dataset.actions[index])
    score = q(obs, action)
    if baseline == "mode":
        mean, _ = learner.policy(learner.obs_tensor(obs))
        score = score - q(obs, torch.tanh(mean).cpu().numpy())
    per_batch = rearrange(torch.as_tensor(score), "(n b) -> n b", b=batch_size)
    weights = torch.stack([q_weights(row, beta) for row in per_batch])
    return index, rearrange(weights, "n b -> (n b)").double().numpy()


def weights_by_phase(
    phases: np.ndarray, index: np.ndarray, weights: np.ndarray
) -> dict[str, dict[str, float]]:
    """Per phase: the share of the sampled anchors, their mean weight, and the share of the
    total weight (the share of the behaviour term's pull that phase gets)."""
    assert index.shape == weights.shape, (index.shape, weights.shape)
    labels = phases[index]
    total = float(weights.sum())
    out = {}
    for label in sorted(set(labels.tolist())):
        mask = labels == label
        out[label] = {
            "anchor_share": float(mask.mean()),
            "mean_weight": float(weights[mask].mean()),
            "weight_share": float(weights[mask].sum() / total),
        }
    return out
