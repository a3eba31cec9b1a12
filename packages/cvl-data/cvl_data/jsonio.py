"""JSON records on disk, for every package of the monorepo: atomic writes, dataclasses as JSON
data, and the versions of the packages that produced a record.

A file written with `write_json_atomic` / `write_text_atomic` is either its old content or its
whole new content, never a torn mix: the text goes to a unique temporary sibling that is then
renamed over the target (``os.replace``). With ``durable`` the temporary file is fsynced before
the rename (and, with ``sync_dir``, the folder after it), so the new content also survives an OS
crash or a power loss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import platform
import uuid
from collections.abc import Iterable, Iterator
from importlib import import_module
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path
from typing import Any

__all__ = [
    "fsync_dir",
    "naming_path",
    "open_no_follow",
    "package_versions",
    "to_json_data",
    "write_json_atomic",
    "write_text_atomic",
]


def fsync_dir(path: Path) -> None:
    """Make a rename/creation inside ``path`` durable (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def naming_path(path: str | os.PathLike[str]) -> Iterator[None]:
    """Give an `OSError` raised in the block without a file name (a write or flush on a full
    disk, an fsync, an ``os.pwrite``: ``[Errno 28] No space left on device``) ``path`` as its
    ``filename``, so its message says which file; other errors pass unchanged."""
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.errno is None:
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def open_no_follow(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags, mode)`` that never follows a symbolic link at ``path``
    (``O_NOFOLLOW``): a link planted where a lock, log or data file belongs (``run.lock`` ->
    someone's file) is refused with an `OSError` naming ``path``, instead of writing its target.
    Returns the file descriptor."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise OSError(
            errno.ELOOP, "is a symbolic link; refusing to follow it (remove the link)", str(path)
        ) from None


def write_text_atomic(
    path: str | os.PathLike[str], text: str, durable: bool = False, sync_dir: bool = False
) -> Path:
    """Replace ``path`` by ``text`` atomically (parent folders are created); returns the path.

    An `OSError` (e.g. a full disk) names ``path`` and leaves neither a temporary file nor a
    changed ``path`` behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with naming_path(path), open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if durable and sync_dir:
        fsync_dir(path.parent)
    return path


def write_json_atomic(
    path: str | os.PathLike[str],
    data: Any,
    durable: bool = True,
    sync_dir: bool = False,
    *,
    sort_keys: bool = False,
) -> Path:
    """Replace ``path`` by ``data`` as JSON (indent 2, trailing newline), atomically.

    Args:
        durable: fsync the file before the rename (see the module docstring).
        sync_dir: with ``durable``, also fsync the folder after the rename.
        sort_keys: write object keys sorted.
    """
    text = json.dumps(data, indent=2, sort_keys=sort_keys) + "\n"
    return write_text_atomic(path, text, durable=durable, sync_dir=sync_dir)


def to_json_data(value: Any) -> Any:
    """A dataclass (or a structure of them) as plain JSON data: dicts, lists, str, numbers.

    Nested dataclasses become dicts and tuples become lists, exactly what a JSON file stores, so
    ``to_json_data(config) == json.load(file)`` after the config was written.

    Raises:
        TypeError: a value JSON cannot hold (e.g. a Path or a numpy array).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value))


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` of Python packages; ``"python"`` is the interpreter's version.

    A name is looked up as an installed distribution first (``cvl-eval``, ``torch``), then as an
    importable module's ``__version__`` (first-party packages run from source); ``"unknown"``
    when neither exists.
    """
    out = {}
    for name in names:
        if name == "python":
            out[name] = platform.python_version()
            continue
        try:
            out[name] = distribution_version(name)
        except PackageNotFoundError:
            try:
                out[name] = str(import_module(name.replace("-", "_")).__version__)
            except (ImportError, AttributeError):
                out[name] = "unknown"
    return out
