"""An interrupted writer never leaves a dataset that opens as whole; its partial resumes."""

import gc
import json
import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from cvl_data import DatasetError, DatasetWriter, open_dataset

LENGTHS = [5, 2, 7, 4]


@pytest.fixture
def spec(make_spec):
    return make_spec()


@pytest.fixture
def episodes(encoded_episodes, spec):
    return encoded_episodes(LENGTHS, spec, seed=3)


def assert_same_dataset(a_path: Path, b_path: Path) -> None:
    a, b = open_dataset(a_path), open_dataset(b_path)
    assert a.spec == b.spec
    for name in ("observations", "actions", "rewards", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), strict=True)
    np.testing.assert_array_equal(a.episode_offsets, b.episode_offsets)


def reference(tmp_path: Path, spec, episodes) -> Path:
    with DatasetWriter(tmp_path / "reference", spec) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
    return tmp_path / "reference"


def assert_refused_then_resume(path: Path, spec, episodes, committed: int) -> None:
    partial = path.with_name(path.name + ".partial")
    assert not path.exists() and partial.is_dir()
    with pytest.raises(DatasetError, match="not finished") as info:
        open_dataset(path)
    assert str(partial) in str(info.value)
    with pytest.raises(DatasetError, match="unfinished"):
        open_dataset(partial)
    with pytest.raises(DatasetError, match="resume=True"):
        DatasetWriter(path, spec)
    with DatasetWriter(path, spec, resume=True) as writer:
        assert writer.num_episodes == committed
        assert writer.num_steps == sum(LENGTHS[:committed])
        for episode in episodes[committed:]:
            writer.add_episode(**episode)
    assert not partial.exists()


def test_exception_inside_with_block_leaves_resumable_partial(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    with (
        pytest.raises(RuntimeError, match="collector crashed"),
        DatasetWriter(path, spec) as writer,
    ):
        for episode in episodes[:2]:
            writer.add_episode(**episode)
        raise RuntimeError("collector crashed")
    assert_refused_then_resume(path, spec, episodes, committed=2)
    assert_same_dataset(path, reference(tmp_path, spec, episodes))


def test_writer_dropped_without_finish_leaves_resumable_partial(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    writer = DatasetWriter(path, spec)
    for episode in episodes[:3]:
        writer.add_episode(**episode)
    del writer
    gc.collect()
    assert_refused_then_resume(path, spec, episodes, committed=3)
    assert_same_dataset(path, reference(tmp_path, spec, episodes))


def _write_then_die(path: str, spec, episodes) -> None:
    writer = DatasetWriter(path, spec)
    for episode in episodes:
        writer.add_episode(**episode)
    os.kill(os.getpid(), signal.SIGKILL)  # no finally, no __del__, no flush beyond commits


def test_killed_process_leaves_resumable_partial(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    child = multiprocessing.get_context("fork").Process(
        target=_write_then_die, args=(str(path), spec, episodes[:2])
    )
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert_refused_then_resume(path, spec, episodes, committed=2)
    assert_same_dataset(path, reference(tmp_path, spec, episodes))


def test_torn_episode_bytes_are_dropped_on_resume(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    writer = DatasetWriter(path, spec)
    for episode in episodes[:2]:
        writer.add_episode(**episode)
    writer.close()
    partial = path.with_name("ds.partial")
    for name in ("observations", "actions", "episode_offsets"):  # a crash mid-episode
        with open(partial / f"{name}.npy", "ab") as handle:
            handle.write(b"\x7f" * 37)
    assert_refused_then_resume(path, spec, episodes, committed=2)
    assert_same_dataset(path, reference(tmp_path, spec, episodes))


def test_crash_between_metadata_and_rename_is_resumable(tmp_path, spec, episodes):
    # The state a crash inside finish() leaves: final meta.json written, folder not yet renamed.
    finished = reference(tmp_path, spec, episodes[:3])
    path = tmp_path / "ds"
    finished.rename(path.with_name("ds.partial"))
    with pytest.raises(DatasetError, match="not finished"):
        open_dataset(path)
    assert_refused_then_resume(path, spec, episodes, committed=3)
    assert_same_dataset(path, reference(tmp_path / "again", spec, episodes))


def test_partial_shorter_than_its_journal_is_reported(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    writer = DatasetWriter(path, spec)
    for episode in episodes[:2]:
        writer.add_episode(**episode)
    writer.close()
    actions = path.with_name("ds.partial") / "actions.npy"
    os.truncate(actions, actions.stat().st_size - 8)
    with pytest.raises(DatasetError, match="corrupt") as info:
        DatasetWriter(path, spec, resume=True)
    assert str(actions) in str(info.value) and "field 'actions'" in str(info.value)


def test_resume_requires_the_same_spec_but_not_the_same_provenance(tmp_path, spec, episodes):
    path = tmp_path / "ds"
    writer = DatasetWriter(path, spec)
    writer.add_episode(**episodes[0])
    writer.close()
    with pytest.raises(DatasetError, match="obs_dtype"):
        DatasetWriter(path, type(spec)(**{**spec.__dict__, "obs_dtype": "float64"}), resume=True)
    other = type(spec)(**{**spec.__dict__, "provenance": {"seed": 99}})
    with DatasetWriter(path, other, resume=True) as resumed:
        assert resumed.num_episodes == 1
    assert open_dataset(path).spec.provenance == spec.provenance


def test_never_overwrites_and_never_finishes_empty(tmp_path, spec, episodes):
    path = reference(tmp_path, spec, episodes[:1])
    with pytest.raises(DatasetError, match="already exists"):
        DatasetWriter(path, spec)
    empty = tmp_path / "empty"
    with pytest.raises(DatasetError, match="no episodes"), DatasetWriter(empty, spec):
        pass
    assert not empty.exists()
    with pytest.raises(DatasetError, match="not finished"):
        open_dataset(empty)


def test_resume_with_nothing_to_resume_starts_fresh(tmp_path, spec, episodes):
    with DatasetWriter(tmp_path / "ds", spec, resume=True) as writer:
        assert writer.num_episodes == 0
        writer.add_episode(**episodes[0])
    assert open_dataset(tmp_path / "ds").num_episodes == 1


def test_progress_journal_tracks_commits(tmp_path, spec, episodes):
    writer = DatasetWriter(tmp_path / "ds", spec)
    journal = tmp_path / "ds.partial" / "progress.json"
    for i, episode in enumerate(episodes[:3]):
        writer.add_episode(**episode)
        progress = json.loads(journal.read_text())
        assert progress["num_episodes"] == i + 1
        assert progress["num_steps"] == sum(LENGTHS[: i + 1])
    writer.close()


def test_recorded_spec_reads_the_partial_even_before_its_first_episode(tmp_path, make_spec):
    from cvl_data import recorded_spec

    path = tmp_path / "d"
    assert recorded_spec(path) is None
    spec = make_spec(provenance={"config": {"seed": 3}})
    writer = DatasetWriter(path, spec)  # started, nothing committed
    writer.close()
    assert recorded_spec(path).provenance == {"config": {"seed": 3}}
