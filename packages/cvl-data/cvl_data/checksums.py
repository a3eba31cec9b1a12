"""Field-file checksums: the full check, and the cheap default backed by a verification stamp.

``meta.json`` records each field file's sha256. Hashing every file at every open costs a full
read of the dataset, so by default a file is hashed only when it may have changed since it was
last found correct. ``.verified.json`` (the *stamp*, next to ``meta.json``) records, per file,
the sha256 that matched and the file's identity at that moment: size, mtime, ctime, inode and
device. A file whose identity differs, or whose last change lies within `RACY_NS` of its
verification, is hashed again.

Why this catches a same-size bit flip: any write through the file system updates the file's
ctime, which no user tool can set back (``touch``/``os.utime`` restore only mtime and atime).
File-system clocks are coarse (a few ms), so a write in the same tick as a verification can
leave both times unchanged; such a *racy* entry is never trusted (the same rule git uses for its
index): until the file is older than `RACY_NS` at the time it is verified, every open hashes it.
What the stamp cannot see is damage that bypasses the file system (bit rot on the medium, a
raw-device write): ``verify="full"`` hashes every file regardless.

The stamp is a cache: it is written atomically under a unique temporary name (datasets are
opened by many processes at once), any unreadable or foreign stamp is ignored, and a folder that
cannot be written (read-only storage) simply gets no stamp, so every open hashes every file.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

from cvl_data.errors import DatasetError
from cvl_data.layout import META_FILE, file_sha256

STAMP_FILE = ".verified.json"
STAMP_FORMAT = "cvl-dataset-verified"
RACY_NS = 2_000_000_000  # a change this close to a verification is not trusted (coarse clocks)


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def _read_stamp(folder: Path) -> dict[str, Any]:
    """The stamp's per-file entries; empty when absent, unreadable or not ours."""
    try:
        stamp = json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(stamp, dict) or stamp.get("format") != STAMP_FORMAT:
        return {}
    files = stamp.get("files")
    return files if isinstance(files, dict) else {}


def _write_stamp(folder: Path, files: dict[str, Any]) -> None:
    """Best effort: a stamp that cannot be written only costs a re-hash at the next open."""
    tmp = folder / f"{STAMP_FILE}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.write_text(json.dumps({"format": STAMP_FORMAT, "files": files}, indent=1))
        os.replace(tmp, folder / STAMP_FILE)
    except OSError:
        with contextlib.suppress(OSError):  # read-only storage refuses even this unlink
            tmp.unlink(missing_ok=True)


def _trusted(entry: Any, identity: list[int], expected: str) -> bool:
    """A stamp entry vouches for a file when nothing about the file changed since, and the
    verification happened well after the file's last change."""
    if not isinstance(entry, dict) or entry.get("sha256") != expected:
        return False
    if entry.get("identity") != identity:
        return False
    verified_ns = entry.get("verified_ns")
    last_change_ns = max(identity[1], identity[2])
    return isinstance(verified_ns, int) and verified_ns - last_change_ns > RACY_NS


def verify_files(folder: Path, expected: dict[str, tuple[str, Any]], full: bool) -> None:
    """Check field files against their recorded sha256; raise `DatasetError` on a mismatch.

    Args:
        folder: the dataset folder.
        expected: field name -> (file name, sha256 recorded in ``meta.json``).
        full: hash every file (ignore the stamp); else hash only files the stamp cannot vouch for.
    """
    stamp = _read_stamp(folder)
    changed = False
    for name, (file_name, sha256) in expected.items():
        file = folder / file_name
        identity = _identity(file.stat())
        if not full and _trusted(stamp.get(file_name), identity, sha256):
            continue
        verified_ns = time.time_ns()  # taken before reading: a later write counts as racy
        if file_sha256(file) != sha256:
            raise DatasetError(
                f"{file} (field '{name}'): checksum mismatch with {folder / META_FILE} "
                "(file modified or corrupt)"
            )
        stamp[file_name] = {"sha256": sha256, "identity": identity, "verified_ns": verified_ns}
        changed = True
    if changed:
        _write_stamp(folder, stamp)
