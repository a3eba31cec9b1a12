"""Samplers against a naive per-sample reference; offsets stay inside episodes; no mutation."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from cvl_data import (
    ContrastiveBatch,
    ContrastiveSampler,
    PolicyAnchors,
    TransitionBatch,
    TransitionSampler,
)

SETTINGS = settings(max_examples=30, deadline=None, database=None)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
lengths_st = st.lists(st.integers(1, 40), min_size=1, max_size=8)


def naive_contrastive(dataset, t: int, k: int) -> dict:
    """Per-sample reference from the numpy arrays (DESIGN.md sec. 2 notation)."""
    offsets = dataset.episode_offsets
    e = int(np.searchsorted(offsets, t, side="right") - 1)
    assert 1 <= k <= offsets[e + 1] - t, "offset crosses the episode's end"
    row = t + e
    return {
        "obs_t": dataset.observations[row],
        "obs_next": dataset.observations[row + 1],
        "obs_future": dataset.observations[row + k],
        "action_t": dataset.actions[t],
        "reward_t": None if dataset.rewards is None else dataset.rewards[t],
        "reward_future": None if dataset.rewards is None else dataset.rewards[t + k - 1],
        "done": float(dataset.terminated[t]),
    }


def anchor_steps(dataset, batch: ContrastiveBatch | PolicyAnchors | TransitionBatch) -> np.ndarray:
    """Recover global steps from the encoded observation rows (obs[r, 0] == r)."""
    obs = batch.obs if isinstance(batch, TransitionBatch) else batch.obs_t
    rows = obs[:, 0].cpu().numpy().astype(np.int64)
    first_rows = dataset.episode_offsets + np.arange(dataset.num_episodes + 1)
    e = np.searchsorted(first_rows, rows, side="right") - 1
    steps = rows - e
    assert np.all(steps < dataset.episode_offsets[e + 1]), "anchor is an episode's final state"
    return steps


def check_against_reference(dataset, batch: ContrastiveBatch, steps: np.ndarray) -> None:
    for i, (t, k) in enumerate(zip(steps, batch.offset.cpu().tolist(), strict=True)):
        ref = naive_contrastive(dataset, int(t), k)
        for name in ("obs_t", "obs_next", "obs_future", "action_t"):
            np.testing.assert_array_equal(getattr(batch, name)[i].cpu().numpy(), ref[name])
        assert batch.done[i].item() == ref["done"]
        if ref["reward_t"] is not None:
            assert batch.reward_t[i].item() == ref["reward_t"]
            assert batch.reward_future[i].item() == ref["reward_future"] == t + k - 1 + 0.5


@SETTINGS
@given(
    lengths=lengths_st,
    discount=st.floats(0.5, 0.999),
    seed=st.integers(0, 2**31 - 1),
    batch_size=st.integers(1, 64),
)
def test_uniform_batches_match_reference_and_stay_in_episode(
    write_encoded, lengths, discount, seed, batch_size
):
    dataset = write_encoded(lengths, seed=seed % 7)
    sampler = ContrastiveSampler(dataset, batch_size, discount=discount, seed=seed)
    for _ in range(3):
        batch = sampler.sample()
        steps = anchor_steps(dataset, batch)
        check_against_reference(dataset, batch, steps)  # includes: offset never crosses the end
        assert batch.batch_size == batch_size and batch.task_id is None


@SETTINGS
@given(lengths=lengths_st, seed=st.integers(0, 2**31 - 1), data=st.data())
def test_batch_at_equals_reference_for_any_anchor(write_encoded, lengths, seed, data):
    dataset = write_encoded(lengths)
    steps = data.draw(st.lists(st.integers(0, dataset.num_steps - 1), min_size=1, max_size=50))
    sampler = ContrastiveSampler(dataset, 8, seed=seed)
    batch = sampler.batch_at(torch.tensor(steps, dtype=torch.int64))
    check_against_reference(dataset, batch, np.array(steps))


@SETTINGS
@given(lengths=lengths_st, seed=st.integers(0, 2**31 - 1))
def test_whole_episode_mode_returns_exactly_one_episodes_steps(write_encoded, lengths, seed):
    dataset = write_encoded(lengths)
    sampler = ContrastiveSampler(dataset, max(lengths), mode="episode", seed=seed)
    offsets = dataset.episode_offsets
    for _ in range(4):
        batch = sampler.sample()
        steps = anchor_steps(dataset, batch)
        e = int(np.searchsorted(offsets, steps[0], side="right") - 1)
        np.testing.assert_array_equal(steps, np.arange(offsets[e], offsets[e + 1]))
        check_against_reference(dataset, batch, steps)


@SETTINGS
@given(lengths=lengths_st, batch_size=st.integers(1, 10), seed=st.integers(0, 2**31 - 1))
def test_episode_mode_window_is_consecutive_steps_of_one_episode(
    write_encoded, lengths, batch_size, seed
):
    dataset = write_encoded(lengths)
    sampler = ContrastiveSampler(dataset, batch_size, mode="episode", seed=seed)
    offsets = dataset.episode_offsets
    for _ in range(4):
        steps = anchor_steps(dataset, sampler.sample())
        e = int(np.searchsorted(offsets, steps[0], side="right") - 1)
        length = offsets[e + 1] - offsets[e]
        assert len(steps) == min(batch_size, length)
        np.testing.assert_array_equal(np.diff(steps), 1)
        assert offsets[e] <= steps[0] and steps[-1] < offsets[e + 1]


def test_episode_mode_draws_every_episode(write_encoded):
    dataset = write_encoded([3, 9, 1, 5, 2])
    sampler = ContrastiveSampler(dataset, 16, mode="episode", seed=0)
    first = {int(anchor_steps(dataset, sampler.sample())[0]) for _ in range(200)}
    assert first == set(dataset.episode_offsets[:-1].tolist())


def test_uniform_anchors_are_uniform_over_transitions(write_encoded):
    dataset = write_encoded([7, 1, 12, 30])
    sampler = ContrastiveSampler(dataset, 1000, seed=11)
    steps = np.concatenate([anchor_steps(dataset, sampler.sample()) for _ in range(100)])
    counts = np.bincount(steps, minlength=dataset.num_steps)
    assert chisquare(counts).pvalue > 1e-3


def test_batch_dtypes_and_shapes(write_encoded):
    dataset = write_encoded([6, 4], obs_shape=(5,), action_shape=(3,))
    batch = ContrastiveSampler(dataset, 9, seed=0).sample()
    assert batch.obs_t.shape == batch.obs_next.shape == batch.obs_future.shape == (9, 5)
    assert batch.obs_t.dtype == torch.float32
    assert batch.action_t.shape == (9, 3) and batch.action_t.dtype == torch.float32
    for name in ("reward_t", "reward_future", "done"):
        assert getattr(batch, name).shape == (9,) and getattr(batch, name).dtype == torch.float32
    assert batch.offset.dtype == torch.int64
    transition = TransitionSampler(dataset, 9).sample()
    assert transition.obs.shape == (9, 5) and transition.action.shape == (9, 3)
    assert transition.reward.dtype == transition.terminated.dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_pixels_stay_uint8_on_device(write_encoded, device):
    dataset = write_encoded(
        [3, 5], obs_kind="pixels", obs_shape=(6, 5, 3), obs_dtype="uint8", has_rewards=False
    )
    sampler = ContrastiveSampler(dataset, 4, device=device, seed=1)
    assert sampler.data.observations.dtype == torch.uint8
    assert sampler.data.observations.device.type == device
    steps = torch.tensor([0, 2, 3, 7], device=device)
    batch = sampler.batch_at(steps)
    assert batch.obs_t.dtype == batch.obs_future.dtype == torch.uint8
    assert batch.obs_t.device.type == device and batch.obs_t.shape == (4, 6, 5, 3)
    assert batch.reward_t is None and batch.reward_future is None
    for i, t in enumerate(steps.tolist()):
        ref = naive_contrastive(dataset, t, batch.offset[i].item())
        np.testing.assert_array_equal(batch.obs_future[i].cpu().numpy(), ref["obs_future"])
        np.testing.assert_array_equal(batch.obs_t[i].cpu().numpy(), ref["obs_t"])
    transition = TransitionSampler(dataset, 4, device=device).sample()
    assert transition.obs.dtype == torch.uint8 and transition.reward is None


@SETTINGS
@given(lengths=lengths_st, seed=st.integers(0, 2**31 - 1))
def test_transition_sampler_matches_reference(write_encoded, lengths, seed):
    dataset = write_encoded(lengths)
    batch = TransitionSampler(dataset, 32, seed=seed).sample()
    for i, t in enumerate(anchor_steps(dataset, batch)):
        ref = naive_contrastive(dataset, int(t), 1)
        np.testing.assert_array_equal(batch.obs[i].numpy(), ref["obs_t"])
        np.testing.assert_array_equal(batch.obs_next[i].numpy(), ref["obs_next"])
        np.testing.assert_array_equal(batch.action[i].numpy(), ref["action_t"])
        assert batch.reward[i].item() == ref["reward_t"]
        assert batch.terminated[i].item() == ref["done"]


def test_same_seed_same_batches_different_seed_different(write_encoded):
    dataset = write_encoded([20, 30, 25])
    for mode in ("uniform", "episode"):
        a = ContrastiveSampler(dataset, 16, mode=mode, seed=5)
        b = ContrastiveSampler(dataset, 16, mode=mode, seed=5)
        c = ContrastiveSampler(dataset, 16, mode=mode, seed=6)
        batches_a = [a.sample() for _ in range(5)]
        batches_b = [b.sample() for _ in range(5)]
        batches_c = [c.sample() for _ in range(5)]
        for x, y in zip(batches_a, batches_b, strict=True):
            assert torch.equal(x.obs_t, y.obs_t) and torch.equal(x.offset, y.offset)
        assert any(
            x.obs_t.shape != z.obs_t.shape or not torch.equal(x.obs_t, z.obs_t)
            for x, z in zip(batches_a, batches_c, strict=True)
        )


def test_sampling_never_mutates_the_dataset(write_encoded, file_digests):
    dataset = write_encoded([8, 3, 6])
    before_files = file_digests(dataset.path)
    arrays = {
        n: np.array(getattr(dataset, n))
        for n in ("observations", "actions", "rewards", "terminated", "truncated")
    }
    contrastive = ContrastiveSampler(dataset, 32, seed=0)
    episode = ContrastiveSampler(dataset, 32, mode="episode", seed=0)
    transition = TransitionSampler(dataset, 32, seed=0)
    data_before = {
        name: value.clone()
        for name, value in vars(contrastive.data).items()
        if isinstance(value, torch.Tensor)
    }
    for sampler in (contrastive, episode, transition):
        for _ in range(5):
            batch = sampler.sample()
            for value in vars(batch).values():  # a careless consumer writes into its batch
                if isinstance(value, torch.Tensor):
                    value.add_(7)
    for name, value in data_before.items():
        assert torch.equal(getattr(contrastive.data, name), value), name
    for name, value in arrays.items():
        np.testing.assert_array_equal(getattr(dataset, name), value)
    assert file_digests(dataset.path) == before_files
    # and the next batch equals a fresh sampler's after the same number of draws
    fresh = ContrastiveSampler(dataset, 32, seed=0)
    for _ in range(5):
        fresh.sample()
    assert torch.equal(fresh.sample().obs_future, contrastive.sample().obs_future)


def test_invalid_arguments(write_encoded):
    dataset = write_encoded([3])
    with pytest.raises(ValueError, match="mode"):
        ContrastiveSampler(dataset, 4, mode="episodes")
    with pytest.raises(ValueError, match="batch_size"):
        ContrastiveSampler(dataset, 0)
    with pytest.raises(ValueError, match="discount"):
        ContrastiveSampler(dataset, 4, discount=1.0)
    with pytest.raises(ValueError, match="batch_size"):
        TransitionSampler(dataset, 2.5)


def write_shared_starts(tmp_path, encoded_episodes, make_spec, lengths, groups):
    """Encoded episodes whose first observations are made equal within each group of
    ``groups`` (a group id per episode); steps stay readable from ``reward_t = step + 0.5``."""
    from cvl_data import DatasetWriter, open_dataset

    spec = make_spec()
    episodes = encoded_episodes(lengths, spec)
    starts = {}
    for episode, group in zip(episodes, groups, strict=True):
        starts.setdefault(group, episode["observations"][0].copy())
        episode["observations"][0] = starts[group]
    with DatasetWriter(tmp_path / "ds", spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
    return open_dataset(tmp_path / "ds")


def steps_of(batch: ContrastiveBatch) -> np.ndarray:
    return (batch.reward_t.cpu().numpy() - 0.5).round().astype(np.int64)


def test_shared_start_blocks_share_their_start_and_match_the_reference(
    tmp_path, encoded_episodes, make_spec
):
    lengths, groups = [5, 8, 3, 6, 7, 4], [0, 1, 0, 2, 0, 1]
    dataset = write_shared_starts(tmp_path, encoded_episodes, make_spec, lengths, groups)
    episode_of_step = np.repeat(np.arange(len(lengths)), lengths)
    sampler = ContrastiveSampler(dataset, 12, mode="shared_start", start_groups=3, seed=1)
    for _ in range(50):
        batch = sampler.sample()
        steps = steps_of(batch)
        check_against_reference(dataset, batch, steps)
        for block in steps.reshape(3, 4):
            assert len({groups[e] for e in episode_of_step[block]}) == 1, block


def test_shared_start_anchors_stay_uniform_over_transitions(tmp_path, encoded_episodes, make_spec):
    """Each block's first anchor is uniform, so its start group is drawn by the group's share
    of the steps, and inside the group every anchor is uniform: every anchor is uniform over
    all transitions. (A block's anchors share a group, so the two levels are tested apart:
    blocks are independent of each other, anchors within a block given its group.)"""
    lengths, groups = [7, 1, 12, 30, 9], [0, 0, 1, 2, 1]
    dataset = write_shared_starts(tmp_path, encoded_episodes, make_spec, lengths, groups)
    group_of_step = np.repeat(groups, lengths)
    share = np.bincount(group_of_step) / dataset.num_steps
    sampler = ContrastiveSampler(dataset, 200, mode="shared_start", start_groups=20, seed=11)
    blocks = np.concatenate([steps_of(sampler.sample()).reshape(20, 10) for _ in range(100)])
    block_groups = np.bincount(group_of_step[blocks[:, 0]], minlength=3)
    assert chisquare(block_groups, share * len(blocks)).pvalue > 1e-3
    for group in range(3):
        in_group = np.flatnonzero(group_of_step == group)
        counts = np.bincount(
            blocks[group_of_step[blocks[:, 0]] == group].ravel(), minlength=len(group_of_step)
        )[in_group]
        assert chisquare(counts).pvalue > 1e-3


def test_shared_start_with_distinct_starts_draws_whole_blocks_of_one_episode(write_encoded):
    dataset = write_encoded([6, 9, 4, 11])  # every first observation differs
    episode_of_step = np.repeat(np.arange(4), [6, 9, 4, 11])
    sampler = ContrastiveSampler(dataset, 8, mode="shared_start", start_groups=2, seed=0)
    again = ContrastiveSampler(dataset, 8, mode="shared_start", start_groups=2, seed=0)
    for _ in range(20):
        batch = sampler.sample()
        blocks = episode_of_step[steps_of(batch)].reshape(2, 4)
        assert all(len(set(block)) == 1 for block in blocks)
        assert torch.equal(batch.obs_future, again.sample().obs_future)


def test_shared_start_refuses_groups_that_do_not_divide_the_batch(write_encoded):
    dataset = write_encoded([3, 4])
    for groups in (0, 3, 9):
        with pytest.raises(ValueError, match="start_groups must divide batch_size 8"):
            ContrastiveSampler(dataset, 8, mode="shared_start", start_groups=groups)


@SETTINGS
@given(lengths=lengths_st, fraction=st.floats(0.01, 1.0), seed=st.integers(0, 2**31 - 1))
def test_behaviour_weight_flags_the_top_episodes_by_return(write_encoded, lengths, fraction, seed):
    """``behaviour_top_fraction`` flags exactly the anchors of the ceil(f * E) episodes of highest
    return (ties to the earlier episode), and draws the same anchors as a sampler without it."""
    dataset = write_encoded(lengths, seed=seed % 7)
    flagged = ContrastiveSampler(dataset, 32, seed=seed, behaviour_top_fraction=fraction)
    plain = ContrastiveSampler(dataset, 32, seed=seed)
    offsets = dataset.episode_offsets
    returns = [
        float(np.sum(dataset.rewards[a:b], dtype=np.float64))
        for a, b in zip(offsets[:-1], offsets[1:])
    ]
    keep = max(1, int(np.ceil(fraction * len(returns))))
    top = set(sorted(range(len(returns)), key=lambda e: (-returns[e], e))[:keep])
    for _ in range(3):
        batch, reference = flagged.sample(), plain.sample()
        assert torch.equal(batch.obs_t, reference.obs_t) and reference.behaviour_weight is None
        assert torch.equal(batch.offset, reference.offset)
        episodes = np.searchsorted(offsets, anchor_steps(dataset, batch), side="right") - 1
        expected = [1.0 if e in top else 0.0 for e in episodes]
        assert batch.behaviour_weight.tolist() == expected


def test_behaviour_weight_needs_rewards(write_encoded):
    dataset = write_encoded([3, 4], has_rewards=False)
    with pytest.raises(ValueError, match="behaviour_top_fraction ranks episodes by return"):
        ContrastiveSampler(dataset, 8, behaviour_top_fraction=0.5)


@SETTINGS
@given(
    lengths=lengths_st,
    chunk=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    mode=st.sampled_from(["uniform", "episode"]),
)
def test_action_chunks_match_a_per_anchor_reference(write_encoded, lengths, chunk, seed, mode):
    """``action_chunk`` h: the anchor's actions a_t .. a_{t+h-1} in time order, the episode's last
    action repeated past its end (a loop per anchor); every other field, and the anchors, as
    without chunks."""
    dataset = write_encoded(lengths, seed=seed % 7)
    chunked = ContrastiveSampler(dataset, 16, mode=mode, seed=seed, action_chunk=chunk)
    plain = ContrastiveSampler(dataset, 16, mode=mode, seed=seed)
    offsets = dataset.episode_offsets
    for _ in range(3):
        batch, reference = chunked.sample(), plain.sample()
        assert torch.equal(batch.obs_t, reference.obs_t)
        assert torch.equal(batch.obs_future, reference.obs_future)
        steps = anchor_steps(dataset, batch)
        for i, t in enumerate(steps):
            last = int(offsets[np.searchsorted(offsets, t, side="right")]) - 1
            expected = np.concatenate([dataset.actions[min(t + j, last)] for j in range(chunk)])
            np.testing.assert_array_equal(batch.action_t[i].numpy(), expected)


def test_action_chunk_refusals(write_encoded):
    dataset = write_encoded([3])
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="action_chunk must be a positive int"):
            ContrastiveSampler(dataset, 4, action_chunk=bad)
