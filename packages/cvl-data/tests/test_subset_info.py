"""Whole-episode subsets (top episodes by return) and per-episode info in meta.json."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _naive_episode(source, e: int) -> dict:
    off = source.episode_offsets
    start, stop = int(off[e]), int(off[e + 1])
    return {
        "observations": np.asarray(source.observations)[start + e : stop + e + 1],
        "actions": np.asarray(source.actions)[start:stop],
        "rewards": np.asarray(source.rewards)[start:stop],
        "terminated": np.asarray(source.terminated)[start:stop],
    }


@settings(max_examples=15, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    data=st.data(),
)
def test_select_episodes_matches_naive_slicing(write_encoded, lengths, data):
    from cvl_data import concat_datasets, select_episodes

    source = write_encoded(lengths)
    source = concat_datasets([source, source]) if data.draw(st.booleans()) else source
    chosen = sorted(data.draw(st.sets(st.integers(0, source.num_episodes - 1), min_size=1)))
    subset = select_episodes(source, chosen)
    assert subset.num_episodes == len(chosen)
    assert subset.num_steps == sum(int(np.diff(source.episode_offsets)[e]) for e in chosen)
    for i, e in enumerate(chosen):
        start, stop = int(subset.episode_offsets[i]), int(subset.episode_offsets[i + 1])
        want = _naive_episode(source, e)
        np.testing.assert_array_equal(subset.observations[start + i : stop + i + 1], want["observations"])
        np.testing.assert_array_equal(subset.actions[start:stop], want["actions"])
        np.testing.assert_array_equal(subset.rewards[start:stop], want["rewards"])
        np.testing.assert_array_equal(subset.terminated[start:stop], want["terminated"])
    assert subset.spec.provenance["episode_subset"]["episodes"] == len(chosen)


def test_top_episodes_keeps_highest_returns_and_samplers_read_it(write_encoded):
    from cvl_data import TransitionSampler, episode_returns, top_episodes

    source = write_encoded([5, 3, 8, 2, 6])  # rewards = global step + 0.5: later = higher
    returns = episode_returns(source)
    naive = [float(np.sum(source.rewards[a:b])) for a, b in zip(source.episode_offsets[:-1], source.episode_offsets[1:])]
    np.testing.assert_allclose(returns, naive)
    top = top_episodes(source, 0.4)  # ceil(0.4 * 5) = 2 episodes
    assert top.episodes.tolist() == sorted(np.argsort(-returns)[:2].tolist())
    sampler = TransitionSampler(top, batch_size=64, seed=0)
    batch = sampler.sample()
    kept_steps = {int(r - 0.5) for r in np.asarray(top.rewards)}
    assert {int(r - 0.5) for r in batch.reward.numpy()} <= kept_steps


def test_subset_errors(write_encoded):
    from cvl_data import DatasetError, select_episodes, top_episodes

    source = write_encoded([2, 2])
    with pytest.raises(DatasetError, match="increasing"):
        select_episodes(source, [1, 0])
    with pytest.raises(DatasetError, match="increasing"):
        select_episodes(source, [2])
    with pytest.raises(DatasetError, match="fraction"):
        top_episodes(source, 0.0)


def test_episode_info_round_trips_through_resume_and_finish(tmp_path, make_spec, encoded_episodes):
    from cvl_data import DatasetError, DatasetWriter, open_dataset

    spec = make_spec()
    episodes = encoded_episodes([3, 4, 2], spec)
    writer = DatasetWriter(tmp_path / "ds", spec, durable=False)
    writer.add_episode(**episodes[0], info={"source": "expert", "success": True})
    writer.close()  # interrupted: the partial keeps the info of committed episodes
    writer = DatasetWriter(tmp_path / "ds", spec, resume=True, durable=False)
    writer.add_episode(**episodes[1])
    with pytest.raises(DatasetError, match="JSON"):
        writer.add_episode(**episodes[2], info={"bad": object()})
    writer.add_episode(**episodes[2], info={"source": "random", "return": 1.5})
    writer.finish()
    dataset = open_dataset(tmp_path / "ds")
    assert dataset.episode_info == (
        {"source": "expert", "success": True},
        {},
        {"source": "random", "return": 1.5},
    )


def test_episode_info_absent_and_malformed(tmp_path, write_encoded):
    from cvl_data import DatasetError, open_dataset

    dataset = write_encoded([2, 3])
    assert dataset.episode_info == ({}, {})
    meta_file = dataset.path / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["episode_info"] = [{}]
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match="episode_info"):
        open_dataset(dataset.path, verify=False)
