"""Task domains, multi-task concatenation with task ids, relabelled views that copy nothing."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_data import (
    ContrastiveSampler,
    DatasetError,
    TransitionSampler,
    concat_datasets,
    related_tasks,
    reward_free,
    task_domain,
    union_with_shared,
    zero_reward,
)

SETTINGS = settings(max_examples=30, deadline=None, database=None)
words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
FIELDS = ("observations", "actions", "rewards", "terminated", "truncated")


@pytest.mark.parametrize(
    ("task", "domain"),
    [
        ("drawer-open-v3", "drawer"),
        ("drawer-close", "drawer"),
        ("drawer-close-v2", "drawer"),
        ("button-press-topdown-wall-v3", "button"),
        ("reach-v3", "reach"),
        ("reach", "reach"),
        ("MountainCarContinuous-v0", "MountainCarContinuous"),
    ],
)
def test_task_domain_examples(task, domain):
    assert task_domain(task) == domain


@SETTINGS
@given(parts=st.lists(words, min_size=1, max_size=4), version=st.integers(0, 9))
def test_task_domain_is_first_part_with_or_without_version(parts, version):
    name = "-".join(parts)
    assert task_domain(name) == task_domain(f"{name}-v{version}") == parts[0]


def test_related_tasks_same_domain_without_target():
    available = ["drawer-open-v3", "drawer-close-v3", "door-open-v3", "drawer-close", "reach-v3"]
    assert related_tasks("drawer-open-v3", available) == ["drawer-close-v3", "drawer-close"]
    assert related_tasks("drawer-open", available) == ["drawer-close-v3", "drawer-close"]
    assert related_tasks("reach-v3", available) == []


def test_related_tasks_accepts_datasets(write_encoded):
    open_ = write_encoded([2], task="drawer-open-v3")
    close = write_encoded([2], task="drawer-close-v3")
    door = write_encoded([2], task="door-open-v3")
    assert related_tasks("drawer-open-v3", [open_, close, door]) == [close]


@pytest.fixture(scope="module")
def three(write_encoded):
    """Read-only datasets shared by the tests of this module (none of them writes)."""
    return (
        write_encoded([3, 4], task="drawer-open-v3", seed=1),
        write_encoded([2, 5, 1], task="drawer-close-v3", seed=2),
        write_encoded([6], task="drawer-open-v3", seed=3),
    )


def test_concat_task_ids_offsets_and_arrays(three):
    joined = concat_datasets(three)
    assert joined.task_names == ("drawer-open-v3", "drawer-close-v3")
    np.testing.assert_array_equal(joined.task_ids, [0] * 7 + [1] * 8 + [0] * 6)
    np.testing.assert_array_equal(joined.episode_offsets, [0, 3, 7, 9, 14, 15, 21])
    assert joined.num_episodes == 6 and joined.num_steps == 21
    for name in FIELDS:
        np.testing.assert_array_equal(
            getattr(joined, name), np.concatenate([getattr(d, name) for d in three])
        )
    assert joined.spec.task == "drawer-open-v3+drawer-close-v3"
    assert joined.spec.has_rewards


def test_nested_concat_remaps_task_ids(three):
    inner = concat_datasets(three[1:])  # close=0, open=1
    outer = concat_datasets([three[0], inner])
    assert outer.task_names == ("drawer-open-v3", "drawer-close-v3")
    np.testing.assert_array_equal(outer.task_ids, [0] * 7 + [1] * 8 + [0] * 6)


def naive(source, t: int, k: int) -> dict:
    offsets = source.episode_offsets
    e = int(np.searchsorted(offsets, t, side="right") - 1)
    assert 1 <= k <= offsets[e + 1] - t
    obs = source.observations
    rewards = source.rewards
    return {
        "obs_t": obs[t + e],
        "obs_future": obs[t + e + k],
        "reward_future": None if rewards is None else rewards[t + k - 1],
        "task_id": None if source.task_ids is None else source.task_ids[t],
    }


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_samplers_accept_concatenations_and_keep_futures_in_episode(three, seed):
    joined = concat_datasets(three)
    sampler = ContrastiveSampler(joined, 64, seed=seed)
    steps = torch.randint(0, joined.num_steps, (64,), generator=torch.Generator().manual_seed(seed))
    batch = sampler.batch_at(steps)
    for i, t in enumerate(steps.tolist()):
        ref = naive(joined, t, batch.offset[i].item())
        np.testing.assert_array_equal(batch.obs_t[i].numpy(), ref["obs_t"])
        np.testing.assert_array_equal(batch.obs_future[i].numpy(), ref["obs_future"])
        assert batch.reward_future[i].item() == ref["reward_future"]
        assert batch.task_id[i].item() == ref["task_id"]
    assert TransitionSampler(joined, 8, seed=seed).sample().task_id.dtype == torch.int64


def test_concat_refuses_mismatched_specs(write_encoded):
    a = write_encoded([2], task="drawer-open-v3")
    b = write_encoded([2], task="reach-v3", obs_shape=(4,))
    with pytest.raises(DatasetError, match="obs_shape") as info:
        concat_datasets([a, b])
    assert "reach-v3" in str(info.value) and str(b.path) in str(info.value)
    with pytest.raises(DatasetError, match="reward_free"):
        concat_datasets([a, write_encoded([2], has_rewards=False)])
    with pytest.raises(DatasetError, match="no datasets"):
        concat_datasets([])


def test_reward_free_view_hides_rewards_and_copies_nothing(write_encoded, file_digests):
    source = write_encoded([4, 3])
    before = file_digests(source.path)
    rewards_before = np.array(source.rewards)
    view = reward_free(source)
    assert view.rewards is None and not view.spec.has_rewards
    assert view.spec.provenance["relabel"] == "reward_free"
    for name in ("observations", "actions", "terminated", "truncated"):
        assert getattr(view, name) is getattr(source, name)
    batch = ContrastiveSampler(view, 8).sample()
    assert batch.reward_t is None and batch.reward_future is None
    assert TransitionSampler(view, 8).sample().reward is None
    assert source.spec.has_rewards and "relabel" not in source.spec.provenance
    np.testing.assert_array_equal(source.rewards, rewards_before)
    assert file_digests(source.path) == before


def test_zero_reward_view_is_zero_read_only_and_leaves_source(write_encoded, file_digests):
    source = write_encoded([4, 3])
    before = file_digests(source.path)
    rewards_before = np.array(source.rewards)
    view = zero_reward(source)
    assert view.spec.has_rewards
    np.testing.assert_array_equal(view.rewards, np.zeros(7, np.float32))
    assert view.rewards.nbytes == 7 * 4 and view.rewards.strides == (0,)  # a broadcast scalar
    with pytest.raises(ValueError):
        view.rewards[0] = 1.0
    assert np.shares_memory(view.observations, source.observations)
    batch = ContrastiveSampler(view, 16, seed=3).sample()
    assert torch.equal(batch.reward_future, torch.zeros(16))
    assert torch.equal(batch.reward_t, torch.zeros(16))
    np.testing.assert_array_equal(source.rewards, rewards_before)
    assert file_digests(source.path) == before
    # zero_reward also labels reward-free data (UDS's shared data may have no rewards)
    assert zero_reward(reward_free(source)).spec.has_rewards


def test_union_with_shared_is_labelled_target_plus_zeroed_shared(three, file_digests):
    target, close, more = three
    shared_rewards_before = [np.array(close.rewards), np.array(more.rewards)]
    union = union_with_shared(target, [close, reward_free(more)])
    assert union.spec.has_rewards and union.task_names == ("drawer-open-v3", "drawer-close-v3")
    rewards = union.rewards
    np.testing.assert_array_equal(rewards[:7], target.rewards)
    np.testing.assert_array_equal(rewards[7:], np.zeros(14, np.float32))
    np.testing.assert_array_equal(union.task_ids[:7], 0)
    np.testing.assert_array_equal(close.rewards, shared_rewards_before[0])
    np.testing.assert_array_equal(more.rewards, shared_rewards_before[1])
    single = union_with_shared(target, close)
    assert single.num_steps == 15
    with pytest.raises(DatasetError, match="has no rewards"):
        union_with_shared(reward_free(target), [close])
    batch = ContrastiveSampler(union, 256, seed=0).sample()
    shared = batch.task_id == 1
    assert torch.equal(batch.reward_future[shared], torch.zeros(int(shared.sum())))
