"""Checksums by default: a same-size bit flip is caught without asking, cheaply.

The stamp (``.verified.json``) remembers which files were found correct and under which file
identity (size, mtime, ctime, inode, device); the cheap default hashes only the files it cannot
vouch for. Tests forge stamp entries as real files to reach the "trusted" state without sleeping
out the racy window.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cvl_data import DatasetError, open_dataset
from cvl_data.checksums import RACY_NS, STAMP_FILE

LENGTHS = [40, 30, 50]


def flip_bit(file: Path, offset_from_end: int = 5) -> None:
    """Flip one bit inside the data (not the header), in place: the size stays the same."""
    size = file.stat().st_size
    with open(file, "r+b") as handle:
        handle.seek(size - offset_from_end)
        byte = handle.read(1)[0]
        handle.seek(size - offset_from_end)
        handle.write(bytes([byte ^ 0x10]))


def stamp(path: Path) -> dict:
    return json.loads((path / STAMP_FILE).read_text())


def set_verified(path: Path, delay_ns: int) -> dict:
    """Rewrite the stamp as if each file had been verified ``delay_ns`` after its last change."""
    document = stamp(path)
    for entry in document["files"].values():
        entry["verified_ns"] = max(entry["identity"][1:3]) + delay_ns
    (path / STAMP_FILE).write_text(json.dumps(document))
    return document


def age_stamp(path: Path) -> dict:
    """The stamp as if every file had been verified long after its last change (trusted)."""
    return set_verified(path, 10 * RACY_NS)


def wait_for_clock_tick(folder: Path, after_ns: int) -> None:
    """Return once the file system's (coarse) clock stamps changes later than ``after_ns``."""
    probe = folder.parent / "clock-probe"
    for _ in range(100_000):
        probe.write_bytes(b"x")
        if probe.stat().st_ctime_ns > after_ns:
            return
    raise AssertionError("the file-system clock did not advance")


@pytest.mark.parametrize("field", ["actions", "observations", "rewards", "episode_offsets"])
def test_same_size_bit_flip_is_detected_by_default(write_encoded, field):
    """``verify=False`` is what training passes (its ``verify_checksums`` flag is off by default);
    it used to skip checksums, so this flip was trained on."""
    path = write_encoded(LENGTHS).path
    file = path / f"{field}.npy"
    size = file.stat().st_size
    flip_bit(file)
    assert file.stat().st_size == size
    for kwargs in ({}, {"verify": False}):
        with pytest.raises(DatasetError, match="checksum mismatch") as info:
            open_dataset(path, **kwargs)
        assert str(file) in str(info.value) and f"field '{field}'" in str(info.value)


def test_bit_flip_after_a_trusted_verification_is_detected(write_encoded):
    path = write_encoded(LENGTHS).path  # opened once: the stamp exists
    aged = age_stamp(path)
    open_dataset(path)  # every entry is trusted: nothing is hashed, the stamp is left alone
    assert stamp(path) == aged
    file = path / "actions.npy"
    before = file.stat()
    wait_for_clock_tick(path, before.st_ctime_ns)  # else the flip could share the write's tick
    flip_bit(file)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))  # hide the edit's mtime
    assert file.stat().st_size == before.st_size and file.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(DatasetError, match=r"actions\.npy \(field 'actions'\): checksum mismatch"):
        open_dataset(path)  # the ctime moved: the file is hashed again


def test_full_check_hashes_what_the_stamp_vouches_for(write_encoded):
    """Damage below the file system leaves every file identity unchanged; forge that case."""
    path = write_encoded(LENGTHS).path
    flip_bit(path / "rewards.npy")
    document = stamp(path)
    entry = document["files"]["rewards.npy"]
    new = os.stat(path / "rewards.npy")
    entry["identity"] = [new.st_size, new.st_mtime_ns, new.st_ctime_ns, new.st_ino, new.st_dev]
    entry["verified_ns"] = max(entry["identity"][1:3]) + 10 * RACY_NS
    (path / STAMP_FILE).write_text(json.dumps(document))
    open_dataset(path)  # the cheap check trusts the (forged) stamp
    with pytest.raises(DatasetError, match=r"rewards\.npy \(field 'rewards'\): checksum mismatch"):
        open_dataset(path, verify=True)


def test_racy_entries_are_hashed_again(write_encoded):
    """A file verified within RACY_NS of its last change is not trusted: a change in the same
    clock tick as the verification would leave its identity unchanged."""
    path = write_encoded(LENGTHS).path
    racy = set_verified(path, RACY_NS // 2)
    open_dataset(path)
    for name, entry in stamp(path)["files"].items():
        assert entry["verified_ns"] != racy["files"][name]["verified_ns"], name  # hashed again


def test_edited_meta_checksum_is_not_vouched_for_by_the_stamp(write_encoded):
    path = write_encoded(LENGTHS).path
    age_stamp(path)
    meta = json.loads((path / "meta.json").read_text())
    meta["fields"]["truncated"]["sha256"] = "0" * 64
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match=r"truncated\.npy \(field 'truncated'\): checksum"):
        open_dataset(path)


@pytest.mark.parametrize("content", ["{not json", '{"format": "other"}', "[]", ""])
def test_broken_or_foreign_stamp_is_ignored_and_replaced(write_encoded, content):
    path = write_encoded(LENGTHS).path
    (path / STAMP_FILE).write_text(content)
    assert open_dataset(path).num_steps == sum(LENGTHS)
    assert set(stamp(path)["files"]) == {
        f"{n}.npy"
        for n in (
            "observations",
            "actions",
            "rewards",
            "terminated",
            "truncated",
            "episode_offsets",
        )
    }


def test_stamp_is_not_part_of_the_dataset(write_encoded):
    path = write_encoded(LENGTHS).path
    (path / STAMP_FILE).unlink()
    data = open_dataset(path)
    np.testing.assert_array_equal(data.episode_offsets, [0, 40, 70, 120])
    assert not any(p.name.endswith(".tmp") for p in path.iterdir())
