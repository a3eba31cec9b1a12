"""CQL+UDS: data views (union with zero-reward shared data) and zero-reward critic pretraining."""

from types import SimpleNamespace

import numpy as np
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    assert_modules_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    tiny_learner,  # pants: no-infer-dep
)

from cvl_algos.cql import CQLConfig
from cvl_algos.pretraining import pretrain_then_finetune
from cvl_algos.uds import CQLUDSConfig, CQLUDSLearner, uds_datasets, zero_reward_batch
from cvl_data import DatasetSpec, DatasetWriter, TransitionSampler, open_dataset, reward_free


def _write(path, task, seed, episodes=3, length=6, reward_offset=1.0):
    rng = np.random.default_rng(seed)
    spec = DatasetSpec(
        env_id="test",
        task=task,
        obs_kind="state",
        obs_shape=(OBS_DIM,),
        obs_dtype="float32",
        action_shape=(ACTION_DIM,),
        action_low=-1.0,
        action_high=1.0,
        has_rewards=True,
        provenance={"test": True},
    )
    with DatasetWriter(path, spec) as writer:
        for _ in range(episodes):
            writer.add_episode(
                rng.normal(size=(length + 1, OBS_DIM)).astype(np.float32),
                rng.uniform(-1, 1, size=(length, ACTION_DIM)).astype(np.float32),
                (reward_offset + rng.uniform(size=length)).astype(np.float32),
                terminated=np.zeros(length, bool),
                truncated=np.eye(1, length, length - 1, dtype=bool)[0],
            )
    return open_dataset(path)


def test_config_extends_cql():
    cfg = CQLUDSConfig()
    assert isinstance(cfg, CQLConfig) and cfg.cql_alpha == 1.0 and cfg.pretrain_steps > 0


def test_union_with_shared_has_zero_rewards_for_shared(tmp_path):
    target = _write(tmp_path / "drawer-open", "drawer-open-v3", 0)
    shared = _write(tmp_path / "drawer-close", "drawer-close-v3", 1)
    data = uds_datasets(target, [shared])
    assert data.pretrain is None
    rewards = np.asarray(data.train.rewards)
    assert data.train.num_steps == target.num_steps + shared.num_steps
    np.testing.assert_array_equal(rewards[: target.num_steps], target.rewards)
    assert np.all(rewards[target.num_steps :] == 0)
    # reward-free shared data is accepted too
    assert uds_datasets(target, reward_free(shared)).train.num_steps == data.train.num_steps


def test_without_shared_data_pretrain_on_zero_reward_target(tmp_path):
    target = _write(tmp_path / "t", "door-open-v3", 0)
    data = uds_datasets(target, [])
    assert data.train is target
    assert data.pretrain.num_steps == target.num_steps
    assert np.all(np.asarray(data.pretrain.rewards) == 0)
    np.testing.assert_array_equal(data.pretrain.actions, target.actions)


def test_zero_reward_batch_copies(batch):
    before = clone_batch(batch)
    zeroed = zero_reward_batch(batch)
    assert_batch_equal(batch, before)
    assert torch.all(zeroed.reward == 0) and zeroed.obs is batch.obs


def test_pretraining_trains_critic_only_and_keeps_step(tmp_path):
    target = _write(tmp_path / "t", "door-open-v3", 0)
    sampler = TransitionSampler(uds_datasets(target).pretrain, batch_size=16, seed=0)
    learner = tiny_learner("cql_uds", pretrain_steps=3)
    policy_before = {k: v.clone() for k, v in learner.policy.state_dict().items()}
    critic_before = [p.clone() for p in learner.critic.parameters()]
    seen = []
    metrics = pretrain_then_finetune(
        learner, sampler, None, 0, callback=lambda phase, i, m: seen.append(i)
    )
    assert seen == [1, 2, 3] and learner.pretrain_steps == 3 and learner.step == 0
    assert "cql_regularizer" in metrics and "actor_loss" not in metrics
    for k, v in learner.policy.state_dict().items():
        assert torch.equal(v, policy_before[k]), k
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, learner.critic.parameters()))
    assert pretrain_then_finetune(learner, sampler, None, 0) == {}  # nothing left


def test_zero_reward_pretraining_ignores_labels():
    """Pretraining on a labelled batch equals pretraining on the same batch at reward 0."""
    batch = make_transition_batch(2)
    a = tiny_learner("cql_uds", seed=9)
    b = tiny_learner("cql_uds", seed=9)
    assert a.pretrain_update(batch) == b.pretrain_update(zero_reward_batch(batch))
    assert_modules_equal(a.critic, b.critic)


def test_pretraining_resumes_exactly(tmp_path):
    batches = [make_transition_batch(i) for i in range(6)]
    straight = tiny_learner("cql_uds", seed=2)
    for b in batches[:4]:
        straight.pretrain_update(b)
    for b in batches[4:]:
        straight.update(b)
    first = tiny_learner("cql_uds", seed=2)
    for b in batches[:2]:
        first.pretrain_update(b)
    first.save(tmp_path / "ck")
    resumed = CQLUDSLearner.load(tmp_path / "ck")
    assert resumed.pretrain_steps == 2 and resumed.step == 0
    it = iter(batches[2:4])
    pretrain_then_finetune(resumed, SimpleNamespace(sample=lambda: next(it)), None, 0, 4)
    for b in batches[4:]:
        resumed.update(b)
    assert_learners_equal(straight, resumed)
