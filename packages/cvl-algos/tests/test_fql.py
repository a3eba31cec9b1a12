"""Flow Q-Learning (`cvl_algos.fql`): the TD target against a naive loop, gradient isolation,
learning on a fixed batch, checkpoints, resumption and vectorised seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
)

from cvl_algos import FQLLearner, load_learner, make_learner
from cvl_algos.fql import fql_critic_loss, twin_q_fn
from cvl_algos.vectorised import VectorisedLearner

TINY = {"hidden": (32, 32), "flow_steps": 3}


@pytest.mark.parametrize("q_agg", ["mean", "min"])
def test_critic_loss_matches_naive_loop(q_agg: str) -> None:
    learner = make_learner("fql", (OBS_DIM,), ACTION_DIM, q_agg=q_agg, **TINY)
    batch = make_transition_batch(0, batch_size=5)
    before = clone_batch(batch)
    torch.manual_seed(7)
    loss, metrics = fql_critic_loss(
        batch, learner.critic, learner.critic_target, learner.policy, 0.9, q_agg
    )
    torch.manual_seed(7)
    with torch.no_grad():
        action_next, _ = learner.policy.sample(batch.obs_next)
    total = 0.0
    for b in range(5):
        with torch.no_grad():
            n1, n2 = learner.critic_target(batch.obs_next[b : b + 1], action_next[b : b + 1])
        agg = min(float(n1), float(n2)) if q_agg == "min" else 0.5 * float(n1 + n2)
        y = float(batch.reward[b]) + 0.9 * (1.0 - float(batch.terminated[b])) * agg
        q1, q2 = learner.critic(batch.obs[b : b + 1], batch.action[b : b + 1])
        total += (float(q1) - y) ** 2 + (float(q2) - y) ** 2
    assert abs(float(loss) - total / 5) < 1e-4 * (1 + total / 5)
    assert float(metrics["q_target"]) != 0.0
    assert_batch_equal(batch, before)


def test_actor_loss_leaves_the_critic_without_gradients() -> None:
    learner = make_learner("fql", (OBS_DIM,), ACTION_DIM, **TINY)
    batch = make_transition_batch(1)
    loss, metrics = learner._policy_step(batch, {})
    loss.backward()
    assert all(p.grad is None for p in learner.critic.parameters())
    assert all(p.grad is not None for p in learner.policy.parameters())
    q_fn = twin_q_fn(learner.critic, "mean")
    actions = torch.zeros(3, batch.obs.shape[0], ACTION_DIM)
    q1, q2 = learner.critic(batch.obs, actions[0])
    torch.testing.assert_close(q_fn(batch.obs, actions)[1], 0.5 * (q1 + q2))


def test_update_lowers_the_critic_loss_and_stays_finite() -> None:
    learner = make_learner("fql", (OBS_DIM,), ACTION_DIM, lr=3e-3, **TINY)
    batch = make_transition_batch(2, batch_size=32)
    metrics = [learner.update(batch) for _ in range(80)]
    losses = [float(m["critic_loss"]) for m in metrics]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    assert all(np.isfinite(float(v)) for m in metrics for v in m.values())
    assert isinstance(learner, FQLLearner) and learner.step == 80


def test_checkpoint_resume_act_and_vectorised_seeds(tmp_path) -> None:
    batches = [make_transition_batch(i) for i in range(6)]

    def build(seed: int = 3):
        return make_learner("fql", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY)

    straight = build()
    for batch in batches:
        straight.update(batch)
    first = build()
    for batch in batches[:3]:
        first.update(batch)
    first.save(tmp_path / "ckpt")
    loaded = load_learner(tmp_path / "ckpt")
    obs = batches[0].obs
    np.testing.assert_array_equal(first.act(obs), loaded.act(obs))
    np.testing.assert_array_equal(
        first.act(obs, deterministic=False), loaded.act(obs, deterministic=False)
    )
    resumed = load_learner(tmp_path / "ckpt")
    for batch in batches[3:]:
        resumed.update(batch)
    assert_learners_equal(straight, resumed)

    vector = VectorisedLearner([build(0), build(1)])
    alone = [build(0), build(1)]
    for i, batch in enumerate(batches):
        vector.update([batch, batches[-1 - i]])
        alone[0].update(batch)
        alone[1].update(batches[-1 - i])
    for k, learner in enumerate(vector.sync()):
        for key, module in alone[k].state_modules().items():
            other = learner.state_modules()[key].state_dict()
            for name, value in module.state_dict().items():
                torch.testing.assert_close(value, other[name], rtol=1e-4, atol=1e-5)
