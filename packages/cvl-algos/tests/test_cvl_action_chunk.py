"""Action chunks (``action_chunk``): the critic and the policy take h actions, acting returns the
chunk's first action, Q takes whole chunks, checkpoints, resumption, vectorised seeds and the
config's refusals; the default (h = 1) builds the networks it always built."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    one_line_error,  # pants: no-infer-dep
)

from cvl_algos import make_learner

H = 3
TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
CHUNKED = {
    "action_chunk": H,
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
    "policy_ema_tau": 0.01,
}


def chunk_batch(seed: int = 0, size: int = 16):
    """`make_contrastive_batch` with (B, H * A) action chunks whose later actions carry signal:
    the future moves with the chunk's mean action."""
    batch = make_contrastive_batch(seed, size)
    gen = torch.Generator().manual_seed(1000 + seed)
    later = torch.tanh(torch.randn(size, (H - 1) * ACTION_DIM, generator=gen))
    chunk = torch.cat([batch.action_t, later], dim=1)
    future = batch.obs_t.clone()
    future[:, :ACTION_DIM] += 2.0 * chunk.reshape(size, H, ACTION_DIM).mean(dim=1)
    reward = torch.sin(future[:, 0])
    return dataclasses.replace(
        batch, action_t=chunk, obs_future=future, reward_future=reward, reward_t=reward
    )


def build(seed: int = 0, **extra):
    return make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed, **{**TINY, **CHUNKED, **extra})


@pytest.mark.parametrize("extraction", ["ddpgbc", "awr", "kl", "flow"])
def test_networks_take_chunks_and_acting_returns_the_first_action(extraction):
    learner = build(policy_extraction=extraction)
    assert learner.chunk_dim == H * ACTION_DIM
    for i in range(3):
        learner.update(chunk_batch(i))
    obs = torch.randn(5, OBS_DIM)
    for deterministic in (True, False):
        with learner.rng_scope():
            chunk = learner.chunk_action(obs, deterministic)
        assert chunk.shape == (5, H * ACTION_DIM)
    plan = learner.chunk_action(obs, True)
    torch.testing.assert_close(learner.policy_action(obs, True), plan[:, :ACTION_DIM])
    assert learner.act(obs.numpy()).shape == (5, ACTION_DIM)
    assert learner.act(obs[0].numpy()).shape == (ACTION_DIM,)
    np.testing.assert_array_equal(learner.act(obs.numpy()), plan[:, :ACTION_DIM].numpy())


def test_q_values_take_whole_chunks_and_refuse_single_actions():
    learner = build()
    batch = chunk_batch(0)
    learner.update(batch)
    q = learner.q_values(batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future)
    assert q.shape == (16,) and torch.isfinite(q).all()
    message = one_line_error(
        lambda: learner.q_values(
            batch.obs_t, batch.action_t[:, :ACTION_DIM], batch.obs_future, batch.reward_future
        )
    )
    assert f"actions must have {H * ACTION_DIM} entries" in message


def test_the_default_builds_the_one_action_networks():
    chunked, plain = build(), make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=0, **TINY)
    assert plain.chunk_dim == ACTION_DIM and plain.config.action_chunk == 1
    assert plain.sampler_options == {} and chunked.sampler_options == {"action_chunk": H}
    first = dict(chunked.critic.named_parameters())
    for name, param in plain.critic.named_parameters():
        grows = first[name].shape != param.shape
        # only the layers that read the action grow, by (H - 1) * A inputs
        assert not grows or first[name].shape[-1] - param.shape[-1] == (H - 1) * ACTION_DIM


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    check_save_load_act_resume(lambda: build(4), tmp_path, batch_fn=chunk_batch)


def test_vectorised_seeds_equal_each_seed_alone() -> None:
    check_vectorised_equals_alone(build, updates=30, batch_fn=chunk_batch)


@pytest.mark.parametrize("bad", [0, -2, True, 2.5])
def test_config_refusals(bad) -> None:
    message = one_line_error(
        lambda: make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, action_chunk=bad)
    )
    assert "action_chunk must be an int >= 1" in message


def test_the_learner_s_sampler_draws_chunks_from_a_dataset_on_disk(tmp_path) -> None:
    """`make_sampler` passes ``action_chunk`` to `cvl_data.ContrastiveSampler`: a real dataset's
    batches carry each anchor's next H actions (held at the episode's last step), and train."""
    from cvl_data import DatasetSpec, DatasetWriter, open_dataset

    spec = DatasetSpec(
        "Meta-World/MT1", "reach-v3", "state", (OBS_DIM,), "float32", (ACTION_DIM,), -1.0, 1.0, True
    )
    lengths, rng = (4, 7), np.random.default_rng(0)
    with DatasetWriter(tmp_path / "ds", spec, durable=False) as writer:
        for episode, length in enumerate(lengths):
            steps = np.arange(length, dtype=np.float32)
            obs = rng.normal(size=(length + 1, OBS_DIM)).astype(np.float32)
            obs[:, 0], obs[:, 1] = np.arange(length + 1), episode  # the anchor's step, episode
            writer.add_episode(
                obs,
                np.repeat(steps[:, None] / 10 + episode / 100, ACTION_DIM, axis=1),
                rng.normal(size=length).astype(np.float32),
                terminated=np.zeros(length, bool),
                truncated=np.arange(length) == length - 1,
            )
    learner = build(batch_size=32, sampler_mode="uniform")
    sampler = learner.make_sampler(open_dataset(tmp_path / "ds"), "cpu", seed=0)
    batch = sampler.sample()
    assert batch.action_t.shape == (32, H * ACTION_DIM)
    for obs_t, chunk in zip(batch.obs_t, batch.action_t, strict=True):
        t, episode = int(obs_t[0]), int(obs_t[1])
        held = [min(t + j, lengths[episode] - 1) for j in range(H)]
        expected = np.repeat(
            np.array(held, np.float32)[:, None] / 10 + episode / 100, ACTION_DIM, 1
        )
        np.testing.assert_array_equal(chunk.numpy(), expected.reshape(-1))
    metrics = learner.update(batch)
    assert all(np.isfinite(float(v)) for v in metrics.values())
