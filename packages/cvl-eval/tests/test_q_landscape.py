"""Q between the policy's action and the expert's: Q functions whose shape over actions is known
(one basin at the expert; two basins with a valley between), on real rollouts of a tiny real
learner in Meta-World, and the segment measures against a naive loop."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_eval.analysis.on_policy_critic import PHASES, rollout_states
from cvl_eval.analysis.q_landscape import (
    format_landscape,
    q_landscape,
    segment_actions,
    segment_shape,
)
from cvl_eval.envs.experts import ScriptedExpert


@pytest.fixture(scope="module")
def visited():
    learner = make_learner("bc", (39,), 4, seed=0, hidden=(16, 16))
    visited = rollout_states(learner, "reach", episodes=2, seed=100, max_steps=30)
    expert = np.clip(ScriptedExpert("reach")(visited["obs"]), -1, 1).astype(np.float32)
    return visited, expert


def _target(visited, expert):
    """Q functions read the expert's action of a state from a lookup by the state's bytes."""
    return {o.tobytes(): e for o, e in zip(visited["obs"], expert)}


def test_one_basin_at_the_expert_is_a_pull_not_a_valley(visited):
    visited, expert = visited
    lookup = _target(visited, expert)

    def q(obs, action):
        target = np.stack([lookup[o.tobytes()] for o in obs])
        return 100.0 - np.square(action - target).sum(axis=1)

    result = q_landscape(q, visited, expert, PHASES, points=11, h=0.05)
    json.dumps(result, allow_nan=False)
    assert [row["states"] for row in result["phases"]] == [50, 10]
    for row in result["phases"]:
        assert row["p_first_step_down"] == 0.0 and row["p_valley"] == 0.0
        assert row["mean_valley_depth"] == 0.0 and row["p_local_max"] == 0.0
        assert row["mean_q_expert"] == 100.0 > row["mean_q_policy"]
    assert "P(valley)" in format_landscape(result)


def test_a_second_basin_at_the_policy_is_a_valley_and_a_local_max(visited):
    """Q = 100 + max of two bumps, one at the policy's action and a higher one at the
    expert's: the policy sits on a local maximum and the segment dips between them."""
    visited, expert = visited
    lookup = _target(visited, expert)
    policy = {o.tobytes(): a for o, a in zip(visited["obs"], visited["action"])}

    def q(obs, action):
        to_expert = np.stack([lookup[o.tobytes()] for o in obs])
        to_policy = np.stack([policy[o.tobytes()] for o in obs])

        def bump(centre, height):
            return height * np.exp(-np.square(action - centre).sum(axis=1) / 0.01)

        return 100.0 + np.maximum(bump(to_policy, 5.0), bump(to_expert, 10.0))

    gap = np.abs(visited["action"] - expert).sum(axis=1)
    assert gap.min() > 0.5  # an untrained policy: the two bumps are apart
    result = q_landscape(q, visited, expert, PHASES, points=21, h=0.05)
    for row in result["phases"]:
        assert row["p_first_step_down"] == 1.0 and row["p_valley"] == 1.0
        assert row["p_local_max"] == 1.0 and row["mean_valley_depth"] > 4.0


def test_segment_actions_ends_and_refusal():
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    seg = segment_actions(a, b, 5)
    assert seg.shape == (2, 5, 3)
    np.testing.assert_allclose(seg[:, 0], a)
    np.testing.assert_allclose(seg[:, -1], b)
    np.testing.assert_allclose(seg[0, 2], 0.5)
    with pytest.raises(ValueError, match="points must be at least 3"):
        segment_actions(a, b, 2)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-50, 50, allow_nan=False), min_size=3, max_size=8),
        min_size=1,
        max_size=5,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1),
    st.sampled_from([0.0, 0.01, 0.5]),
)
def test_segment_shape_matches_a_naive_loop(rows, tol):
    values = np.array(rows, dtype=np.float64)
    shape = segment_shape(values, tol)
    for i, row in enumerate(rows):
        low = min(row[0], row[-1])
        depth = max(low - min(row), 0.0)
        assert shape["first_step_down"][i] == (row[1] < row[0])
        assert shape["valley_depth"][i] == pytest.approx(depth)
        assert shape["valley"][i] == (depth > tol * 0.5 * (abs(row[0]) + abs(row[-1])))


def test_a_maximum_on_the_box_bound_counts_as_local_and_at_bound():
    """Q rises with a_0 beyond the box and peaks at 0.2 in the other coordinates: an action at
    a_0 = 1 is a local maximum inside the box (its +e_0 probe is clipped back onto it), one at
    a_0 = 0.5 is not."""

    def q(obs, action):
        return action[:, 0] - np.square(action[:, 1:] - 0.2).sum(axis=1)

    action = np.array([[1.0, 0.2, 0.2, 0.2], [0.5, 0.2, 0.2, 0.2]], dtype=np.float32)
    visited = {"obs": np.zeros((2, 3), np.float32), "action": action, "t": np.array([0, 30])}
    expert = np.full((2, 4), -0.5, dtype=np.float32)
    result = q_landscape(q, visited, expert, ((0, 25), (25, 50)), points=5, h=0.05)
    at_bound, inside = result["phases"]
    assert at_bound["p_local_max"] == 1.0 and at_bound["p_at_bound"] == 1.0
    assert inside["p_local_max"] == 0.0 and inside["p_at_bound"] == 0.0
    assert at_bound["p_first_step_down"] == 1.0 and at_bound["p_valley"] == 0.0
