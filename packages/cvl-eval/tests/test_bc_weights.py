"""Behaviour-term weights by phase: the phase labels against a step-by-step replay of the switch,
the weights against a naive per-batch softmax with a real tiny CVL learner's policy mode, and the
per-phase sums against naive ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_data import DatasetSpec, DatasetWriter, open_dataset
from cvl_eval.analysis.bc_weights import (
    FROM_MID_TASK,
    behaviour_phases,
    behaviour_weights,
    weights_by_phase,
)

OBS_DIM, ACTION_DIM = 39, 4
SWITCH_NEAR = {"kind": "expert", "switch": {"near": 0.1, "steps": 50}, "then": {"kind": "random"}}
SWITCH_STEPS = {"kind": "expert", "switch": {"near": None, "steps": 3}, "then": {"task": "door"}}
EPISODES = [  # (length, behaviour, step from which the hand is within 0.05 of the object)
    (8, SWITCH_NEAR, 4),
    (6, SWITCH_STEPS, None),
    (5, {"kind": "expert", "start": {"near": 0.1, "steps": 150}}, 0),
    (7, None, None),
]


@pytest.fixture(scope="module")
def stitched(tmp_path_factory):
    """Four episodes on disk: a switch by distance (the hand comes within 0.1 at step 4 and
    leaves again at step 6: the switch is for good), a switch by step count, an episode
    recorded from mid-task, and one without a behaviour record."""
    spec = DatasetSpec(
        "Meta-World/MT1", "door-open-v3", "state", (OBS_DIM,), "float32", (ACTION_DIM,), -1, 1, True
    )
    path = tmp_path_factory.mktemp("stitched") / "data"
    rng = np.random.default_rng(0)
    with DatasetWriter(path, spec, durable=False) as writer:
        for e, (length, behaviour, near_from) in enumerate(EPISODES):
            obs = rng.normal(size=(length + 1, OBS_DIM)).astype(np.float32)
            obs[:, 4:7] = obs[:, 0:3] + np.array([0.5, 0.0, 0.0], np.float32)  # far
            if near_from is not None:
                obs[near_from:, 4:7] = obs[near_from:, 0:3] + np.array([0.05, 0.0, 0.0])
                obs[near_from + 2 :, 4:7] = obs[near_from + 2 :, 0:3] + np.array([0.5, 0, 0])
            info = {"source": f"source{e}"}
            if behaviour is not None:
                info["behaviour"] = behaviour
            writer.add_episode(
                obs,
                rng.uniform(-1, 1, (length, ACTION_DIM)),
                rng.uniform(0, 10, length),
                terminated=np.zeros(length, bool),
                truncated=np.arange(length) == length - 1,
                info=info,
            )
    return open_dataset(path)


def naive_phases(dataset) -> list[str]:
    """Replay each switching episode step by step, as `switching_actor` decides."""
    labels = []
    for e, (length, behaviour, _) in enumerate(EPISODES):
        row0 = dataset.episode_offsets[e] + e
        switched = False
        for t in range(length):
            state = np.asarray(dataset.observations[row0 + t])
            if behaviour is None:
                labels.append(f"source{e}")
            elif "start" in behaviour:
                labels.append(FROM_MID_TASK)
            else:
                rule = behaviour["switch"]
                near = rule["near"] is not None and (
                    np.linalg.norm(state[0:3] - state[4:7]) < rule["near"]
                )
                switched = switched or t >= rule["steps"] or near
                then = behaviour["then"].get("task") or behaviour["then"]["kind"]
                labels.append(
                    f"{then} after the switch" if switched else "expert before the switch"
                )
    return labels


def test_phases_replay_the_switch(stitched):
    phases = behaviour_phases(stitched)
    assert phases.tolist() == naive_phases(stitched)
    # by hand: the distance switch comes at step 4 and stays; the step switch at step 3
    assert phases[:8].tolist() == ["expert before the switch"] * 4 + ["random after the switch"] * 4
    assert phases[8:14].tolist() == ["expert before the switch"] * 3 + ["door after the switch"] * 3


@pytest.mark.parametrize("baseline", ["none", "mode"])
def test_weights_are_each_batch_softmax(stitched, baseline):
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, hidden=(16, 16), latent_dim=8)

    def q(obs, action):  # a known Q: the first action coordinate plus the first state entry
        return np.asarray(obs)[:, 0].astype(np.float64) + np.asarray(action)[:, 0]

    beta, batch = 0.7, 5
    index, weights = behaviour_weights(learner, q, stitched, 3, batch, beta, baseline, seed=2)
    assert index.shape == weights.shape == (3 * batch,)
    episode = np.repeat(np.arange(len(EPISODES)), [n for n, _, _ in EPISODES])
    obs = np.asarray(stitched.observations[index + episode[index]])
    score = obs[:, 0].astype(np.float64) + np.asarray(stitched.actions[index])[:, 0]
    if baseline == "mode":
        with torch.no_grad():
            mean, _ = learner.policy(torch.as_tensor(obs))
        score = score - (obs[:, 0] + torch.tanh(mean)[:, 0].numpy())
    for k in range(3):
        z = score[k * batch : (k + 1) * batch]
        z = (z - z.mean()) / z.std()
        expected = batch * np.exp(beta * z) / np.exp(beta * z).sum()
        np.testing.assert_allclose(weights[k * batch : (k + 1) * batch], expected, rtol=1e-5)
    with pytest.raises(ValueError, match="baseline"):
        behaviour_weights(learner, q, stitched, 1, batch, beta, "median")


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(1, 40))
def test_weights_by_phase_sum_like_a_loop(data, n):
    phases = np.array(["a", "b", "c"], dtype=object)[np.arange(9) % 3]
    index = np.array(data.draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)))
    weights = np.array(data.draw(st.lists(st.floats(0.01, 10), min_size=n, max_size=n)))
    out = weights_by_phase(phases, index, weights)
    assert sum(row["anchor_share"] for row in out.values()) == pytest.approx(1.0)
    assert sum(row["weight_share"] for row in out.values()) == pytest.approx(1.0)
    for label, row in out.items():
        mine = [w for i, w in zip(index, weights) if phases[i] == label]
        assert row["mean_weight"] == pytest.approx(sum(mine) / len(mine))
        assert row["anchor_share"] == pytest.approx(len(mine) / n)
