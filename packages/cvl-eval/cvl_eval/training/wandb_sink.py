"""`WandbSink`: a run's metrics and evaluations to Weights & Biases (optional, off by default).

Enabled by ``TrainConfig.wandb`` (``train --wandb``, ``sweep --wandb``). The W&B run's files go
to ``<run folder>/wandb``; ``WANDB_MODE=offline`` keeps them there (``wandb sync`` uploads them
later). The run id is derived from the run folder's absolute path, so a resumed run continues
the same W&B run. Keys are TensorBoard's (``<phase>/<key>``, ``eval/<key>``) at the same global
step (the update count). wandb is imported only here (the ``wandb`` extra of cvl-eval).

Several runs trained in one process (`cvl_eval.training.seeds`) each get their own W&B run
(``reinit="create_new"``, wandb >= 0.19.10; with an older wandb a second concurrent run is
refused, since ``wandb.init`` would hand back the first one and mix their logs).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from cvl_eval.errors import ConfigError

__all__ = ["WandbSink", "import_wandb", "wandb_run_id"]

_CONCURRENT_RUNS = (0, 19, 10)
"""The first wandb with ``reinit="create_new"`` (several active runs in one process)."""
_active = 0
"""Sinks open in this process."""


def import_wandb() -> Any:
    """The ``wandb`` module, or a `ConfigError` saying how to install it."""
    try:
        import wandb
    except ImportError:
        raise ConfigError(
            "--wandb needs Weights & Biases: pip install 'cvl-eval[wandb]' (or 'wandb')"
        ) from None
    return wandb


def wandb_run_id(run_dir: str | Path) -> str:
    """A stable W&B run id for a run folder (16 hex digits of its absolute path's sha256)."""
    return hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]


class WandbSink:
    """One W&B run per training run; `log` takes scalars at a global step."""

    def __init__(
        self, run_dir: Path, project: str, group: str | None, name: str, config: dict[str, Any]
    ) -> None:
        global _active
        wandb = import_wandb()
        version = tuple(int(x) for x in re.findall(r"\d+", wandb.__version__)[:3])
        concurrent = version >= _CONCURRENT_RUNS
        if _active and not concurrent:
            raise ConfigError(
                f"several W&B runs in one process (--vectorise-seeds with --wandb) need wandb "
                f">= 0.19.10; this is {wandb.__version__}"
            )
        self._run = wandb.init(
            project=project,
            group=group,
            name=name,
            id=wandb_run_id(run_dir),
            resume="allow",
            dir=str(run_dir),
            config=config,
            **({"reinit": "create_new"} if concurrent else {}),
        )
        _active += 1

    def log(self, scalars: dict[str, float], step: int) -> None:
        if scalars:
            self._run.log(scalars, step=step)

    def close(self) -> None:
        global _active
        self._run.finish()
        _active -= 1
