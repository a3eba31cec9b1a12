"""Data identity, .partial integrity, no followed links and read-only folders at the level of the data package, on real files.

- A byte changed in a ``.partial`` dataset between two runs is refused on resume (the committed
  rows are checked against the sha256 recorded as they were written), never sealed under new
  checksums (item 3).
- A symbolic link planted where a partial's field file belongs is not followed (item 5).
- `dataset_fingerprint` tells a dataset from another one put at the same path (item 1).
- A dataset on read-only storage opens: the verification stamp that cannot be written is
  skipped (item 7; a read-only bind mount in a user and mount namespace of its own).
"""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cvl_data import DatasetError, DatasetWriter, dataset_fingerprint, open_dataset

LENGTHS = [5, 2, 7, 4]


@pytest.fixture
def spec(make_spec):
    return make_spec()


@pytest.fixture
def episodes(encoded_episodes, spec):
    return encoded_episodes(LENGTHS, spec, seed=3)


def _interrupted(path: Path, spec, episodes, committed: int) -> Path:
    """A partial dataset with ``committed`` episodes, its writer gone without finishing."""
    writer = DatasetWriter(path, spec, durable=False)
    for episode in episodes[:committed]:
        writer.add_episode(**episode)
    writer.close()
    return path.with_name(path.name + ".partial")


def _flip(file: Path, offset_from_end: int) -> None:
    data = bytearray(file.read_bytes())
    data[-offset_from_end] ^= 0x40
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("field", ["rewards", "observations", "episode_offsets"])
def test_flipped_byte_in_partial_refused_on_resume(tmp_path, spec, episodes, field):
    partial = _interrupted(tmp_path / "d", spec, episodes, committed=3)
    _flip(partial / f"{field}.npy", 2)  # inside the last committed episode
    with pytest.raises(DatasetError, match=rf"{field}\.npy .*corrupt"):
        DatasetWriter(tmp_path / "d", spec, resume=True)
    assert not (tmp_path / "d").exists()


def test_untouched_partial_resumes_to_the_uninterrupted_dataset(tmp_path, spec, episodes):
    _interrupted(tmp_path / "d", spec, episodes, committed=2)
    with DatasetWriter(tmp_path / "d", spec, resume=True, durable=False) as writer:
        assert writer.num_episodes == 2
        for episode in episodes[2:]:
            writer.add_episode(**episode)
    with DatasetWriter(tmp_path / "ref", spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
    assert dataset_fingerprint(tmp_path / "d") == dataset_fingerprint(tmp_path / "ref")
    open_dataset(tmp_path / "d", verify="full")


def test_partial_without_recorded_checksums_refused(tmp_path, spec, episodes):
    partial = _interrupted(tmp_path / "d", spec, episodes, committed=2)
    progress = json.loads((partial / "progress.json").read_text())
    del progress["data_sha256"]  # as an older writer left it
    (partial / "progress.json").write_text(json.dumps(progress))
    with pytest.raises(DatasetError, match="data_sha256.*delete"):
        DatasetWriter(tmp_path / "d", spec, resume=True)


def test_symlinked_field_file_not_followed(tmp_path, spec, episodes):
    partial = _interrupted(tmp_path / "d", spec, episodes, committed=2)
    victim = tmp_path / "victim"
    victim.write_bytes((partial / "actions.npy").read_bytes())
    before = victim.read_bytes()
    (partial / "actions.npy").unlink()
    (partial / "actions.npy").symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        DatasetWriter(tmp_path / "d", spec, resume=True)
    assert victim.read_bytes() == before


def test_fingerprint_tells_replaced_data(tmp_path, spec, encoded_episodes):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        with DatasetWriter(tmp_path / name, spec, durable=False) as writer:
            for episode in encoded_episodes(LENGTHS, spec, seed=seed):
                writer.add_episode(**episode)
    fingerprints = {name: dataset_fingerprint(tmp_path / name) for name in "abc"}
    assert fingerprints["a"] == fingerprints["b"] != fingerprints["c"]
    with pytest.raises(DatasetError, match="no dataset"):
        dataset_fingerprint(tmp_path / "missing")


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _namespaces_work(), reason="needs unshare -rm (user+mount namespaces)")
def test_read_only_dataset_opens(tmp_path, spec, episodes):
    with DatasetWriter(tmp_path / "d", spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
    (tmp_path / "d" / ".verified.json").unlink(missing_ok=True)  # every open must hash
    script = textwrap.dedent(
        f"""
        import subprocess, sys
        folder = {str(tmp_path / "d")!r}
        subprocess.run(["mount", "--bind", folder, folder], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
        from cvl_data import open_dataset
        for verify in (False, "full"):
            print(open_dataset(folder, verify=verify).num_episodes)
        """
    )
    done = subprocess.run(
        ["unshare", "-rm", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": ":".join(sys.path)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(len(LENGTHS))] * 2
    assert not (tmp_path / "d" / ".verified.json").exists()
    assert np.asarray(open_dataset(tmp_path / "d").rewards).shape == (sum(LENGTHS),)
