"""The shell every entry point in ``experiments/`` shares: `run(config_cls, fn)`.

An entry point is a frozen config dataclass, a function of it, and this shell: tyro parses the
flags into the config (its field docstrings are the ``--help``), ``fn`` does the work and
returns the text to print. A `ConfigError` (a bad flag, caught before any work) prints
``error: ...`` and exits 2; a `TrainingStopped` prints how to resume and exits 130; with
``failure`` given, that exception type prints ``error: ...`` and exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cvl_eval.errors import ConfigError, TrainingStopped

__all__ = ["run"]

ConfigT = TypeVar("ConfigT")


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

    config = tyro.cli(config_cls, args=argv, description=description)
    try:
        text = fn(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except TrainingStopped as stopped:
        print(str(stopped), file=sys.stderr)
        return 130
    except Exception as error:
        if failure is None or not isinstance(error, failure):
            raise
        print(f"error: {error}", file=sys.stderr)
        return 1
    if text:
        print(text)
    return 0
