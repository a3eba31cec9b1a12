"""The shell every command shares: `run(config_cls, fn)`.

A command is a frozen config dataclass, a function of it, and this shell: tyro parses the flags
into the config (its field docstrings are the ``--help``), ``fn`` does the work and returns the
text to print. Exit codes:

- 0: done;
- 2: an error of ours, printed as one line ``error: <message>`` on stderr: a `ConfigError`
  (a bad flag or a run folder that cannot be used), a `cvl_data.DatasetError` (a dataset that
  is missing, unfinished or malformed, content found after ``meta.json`` included), a
  `cvl_algos.CheckpointError` (a missing, corrupt or unfitting checkpoint), an `OSError` (a file
  or folder that cannot be read or written: read-only, disk full, a path under a regular
  file; the message names the path);
- 130: a `TrainingStopped` (a graceful stop; prints how to resume);
- 1: with ``failure`` given, that exception type (``error: ...``, e.g. a sweep with failed runs).

Anything else is a bug and keeps its traceback. ``--debug`` (anywhere among the flags; taken out
before tyro parses them) or the environment variable ``CVL_DEBUG=1`` prints the full traceback
above the ``error:`` line too.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cvl_eval.errors import ConfigError, TrainingStopped

__all__ = ["DEBUG_ENV", "DEBUG_FLAG", "error_line", "run"]

ConfigT = TypeVar("ConfigT")

DEBUG_FLAG = "--debug"
"""Flag of every command: full tracebacks on errors (also ``CVL_DEBUG=1``)."""
DEBUG_ENV = "CVL_DEBUG"


def _user_errors() -> tuple[type[BaseException], ...]:
    """The error types printed as one line (imported on demand: cvl_algos loads torch)."""
    from cvl_algos.checkpoint_files import CheckpointError
    from cvl_data import DatasetError

    return (ConfigError, DatasetError, CheckpointError, OSError)


def error_line(error: BaseException) -> str:
    """``error: <message>`` for one of our errors; an `OSError` names its path(s)."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        paths = f"{error.filename} -> {error.filename2}" if error.filename2 else error.filename
        return f"error: {paths}: {error.strerror}"
    text = str(error).strip() or type(error).__name__
    return "error: " + " ".join(text.splitlines())


def _split_debug(argv: Sequence[str] | None) -> tuple[list[str], bool]:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if DEBUG_FLAG in args:
        args = [a for a in args if a != DEBUG_FLAG]
        debug = True
    return args, debug


def run(
    config_cls: Any,
    fn: Callable[[ConfigT], str | None],
    argv: Sequence[str] | None = None,
    description: str | None = None,
    failure: type[Exception] | None = None,
) -> int:
    """Parse ``argv`` into ``config_cls`` (a dataclass, or a tyro union of them), call ``fn`` and
    print what it returns; returns the exit code (0, 1, 2 or 130, see the module docstring)."""
    import tyro

    args, debug = _split_debug(argv)
    hint = f"{DEBUG_FLAG} (or {DEBUG_ENV}=1): full traceback on errors."
    description = f"{description}\n\n{hint}" if description else hint
    config = tyro.cli(config_cls, args=args, description=description)
    try:
        text = fn(config)
    except TrainingStopped as stopped:
        print(str(stopped), file=sys.stderr)
        return 130
    except Exception as error:
        if isinstance(error, _user_errors()):
            code = 2
        elif failure is not None and isinstance(error, failure):
            code = 1
        else:
            raise
        if debug:
            traceback.print_exc()
        print(error_line(error), file=sys.stderr)
        return code
    if text:
        print(text)
    return 0
