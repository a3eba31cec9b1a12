"""The checkpoints of a SAC replay-buffer generation: the learner and the ``state.json`` counters.

After an episode is committed (every ``checkpoint_every`` episodes, and at the end) the learner
is saved (``learner.save``: safetensors + JSON) under a fresh name in the checkpoint folder
(default ``<dataset>.sac/``), then ``state.json`` (episodes, frames, returns, config) is
replaced atomically to name it, then older learner folders are removed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic

STATE_FILE = "state.json"
"""The generation's counters in its checkpoint folder."""
STATE_FORMAT = "cvl-sac-generation"


def default_checkpoint_dir(path: str | Path) -> Path:
    """Where `generate_sac` keeps its checkpoints by default: ``<path>.sac/`` beside the data."""
    path = Path(path)
    return path.with_name(path.name + ".sac")


def final_sac_dir(checkpoint_dir: str | Path) -> Path:
    """The learner checkpoint named by a generation's ``state.json`` (the last one saved)."""
    state = read_state(Path(checkpoint_dir))
    if state is None:
        raise FileNotFoundError(f"{checkpoint_dir}: no {STATE_FILE}; not a SAC generation")
    return Path(checkpoint_dir) / state["learner"]


def read_state(checkpoint_dir: Path) -> dict[str, Any] | None:
    """A generation's counters (``state.json``), or None before its first checkpoint."""
    file = checkpoint_dir / STATE_FILE
    return json.loads(file.read_text(encoding="utf-8")) if file.exists() else None


def write_state(checkpoint_dir: Path, state: dict[str, Any]) -> None:
    """Replace ``state.json`` atomically."""
    write_json_atomic(checkpoint_dir / STATE_FILE, state, durable=False, sort_keys=True)


def save_checkpoint(checkpoint_dir: Path, learner, counters: dict[str, Any]) -> str:
    """Save the learner under a fresh name, then name it in ``state.json``, then prune."""
    name = f"learner-{counters['episodes']:07d}"
    learner.save(checkpoint_dir / name)
    write_state(checkpoint_dir, {**counters, "learner": name})
    for old in checkpoint_dir.glob("learner-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return name
