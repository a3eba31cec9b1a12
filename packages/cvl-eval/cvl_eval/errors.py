"""The errors cvl-eval raises on purpose, shared by every room (and caught by `cvl_eval.cli`)."""

from __future__ import annotations

from typing import Any

__all__ = ["ConfigError", "TrainingStopped", "check_ranges"]


class ConfigError(ValueError):
    """A config (training, sweep, generation, evaluation, report) that cannot run; raised before
    any work, with a message that says what to fix."""


class TrainingStopped(RuntimeError):
    """A run stopped gracefully (signal or callback) after writing a checkpoint."""


def check_ranges(config: Any, checks: dict[str, tuple[bool, str]]) -> None:
    """Refuse the first field of ``config`` whose check failed: ``checks`` maps a field name to
    (its value is in range, what is expected, e.g. ``">= 1"``); the `ConfigError` reads
    ``<field> = <value> is out of range: expected <what> (--<flag>)``."""
    for name, (ok, expected) in checks.items():
        if not ok:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{name} = {getattr(config, name)} is out of range: expected {expected} ({flag})"
            )
