"""One process per run folder: an exclusive ``flock`` on ``<run>/run.lock`` for a run's lifetime.

Two processes training into one folder (two terminals, two sweeps over the same ``out_dir``, a
resume while the run is still going) would interleave checkpoints and logs. `hold_run_lock`
takes an exclusive, non-blocking `fcntl.flock` on the folder's lock file and writes the holder's
PID into it; the kernel drops the lock when the holder exits, however it exits (a killed process
leaves the file, not the lock). A second process gets a `ConfigError` naming the holder's PID.
`check_not_locked` asks the same question without creating anything, for checks that run
before any work. The file stays after the run: removing it would let two later processes lock
two different files of the same name. `hold_lock` is the same lock on any file, e.g. a data
root's ``generate.lock`` (`cvl_eval.datagen.dispatch`).

Lock files are opened without following symbolic links (`cvl_data.jsonio.open_no_follow`): a
``run.lock`` planted as a link to another file is refused, and that file is left untouched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from cvl_data.jsonio import naming_path, open_no_follow
from cvl_eval.errors import ConfigError

__all__ = ["LOCK_FILE", "check_not_locked", "hold_lock", "hold_run_lock"]

LOCK_FILE = "run.lock"
"""The lock file of a run folder (it holds the PID of the last process that held it)."""


@contextlib.contextmanager
def hold_run_lock(folder: str | Path) -> Iterator[Path]:
    """Hold the run folder's lock for the block (the folder must exist); yields the lock file.

    Raises:
        ConfigError: another process holds it (named by its PID).
    """
    with hold_lock(Path(folder) / LOCK_FILE, "trains", "out_dir") as path:
        yield path


@contextlib.contextmanager
def hold_lock(path: str | Path, doing: str, choose: str) -> Iterator[Path]:
    """Hold an exclusive lock on the file ``path`` (created if missing; its folder must exist)
    for the block, with this process's PID in it; yields the path.

    Args:
        doing: what the holder does in the folder, for the refusal (``"trains"``).
        choose: the flag naming another folder, for the refusal (``"out_dir"``).

    Raises:
        ConfigError: another process holds it (named by its PID).
        OSError: ``path`` is a symbolic link (never followed), or cannot be written.
    """
    path = Path(path)
    fd = open_no_follow(path, os.O_RDWR | os.O_CREAT)
    try:
        _lock_or_refuse(fd, path, doing, choose)
        with naming_path(path):  # e.g. a full disk
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock


def check_not_locked(folder: str | Path) -> None:
    """Refuse (`ConfigError`) a run folder whose lock another process holds; creates nothing."""
    path = Path(folder) / LOCK_FILE
    try:
        fd = open_no_follow(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        _lock_or_refuse(fd, path, "trains", "out_dir")
    finally:
        os.close(fd)


def _lock_or_refuse(fd: int, path: Path, doing: str, choose: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        raise ConfigError(
            f"{path.parent} is in use: another process {doing} there (PID {holder}, lock file "
            f"{path}); wait for it to end or stop it, or choose another {choose}"
        ) from None
