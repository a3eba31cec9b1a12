"""The errors cvl-eval raises on purpose, shared by every room (and caught by `cvl_eval.cli`)."""

from __future__ import annotations

__all__ = ["ConfigError", "TrainingStopped"]


class ConfigError(ValueError):
    """A config (training, sweep, generation, evaluation, report) that cannot run; raised before
    any work, with a message that says what to fix."""


class TrainingStopped(RuntimeError):
    """A run stopped gracefully (signal or callback) after writing a checkpoint."""
