"""`convert(source, target)`: datasets in and out of our format, by endpoint strings.

Endpoints:

- ``minari:<id or folder>``: a Minari dataset. As a source, a string naming an existing folder
  is read from there, anything else is a dataset id in Minari's local root
  (``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``; nothing is downloaded). As a
  target, an id (written under that root).
- ``<file>.npz``: a D4RL-style ``.npz`` (source and target); ``<file>.hdf5``/``.h5``: a D4RL
  HDF5 file (source only).
- anything else: a folder holding one of our datasets.

One side is always our folder: Minari -> ours, ``.npz``/HDF5 -> ours, ours -> Minari,
ours -> ``.npz``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cvl_data.d4rl import export_npz, import_d4rl
from cvl_data.errors import DatasetError
from cvl_data.minari_export import export_minari
from cvl_data.minari_import import import_minari
from cvl_data.reader import open_dataset

MINARI_PREFIX = "minari:"


@dataclass(frozen=True)
class ConvertOptions:
    """What a source may not say about itself, and how to treat ambiguous D4RL data."""

    task: str | None = None
    """Task name. Default: recorded in the source (our spec in a file we exported; Minari:
    the env spec's ``env_name`` argument, else its id). Required for a plain D4RL file."""
    env_id: str | None = None
    """Environment id, e.g. ``Meta-World/MT1``. Default: recorded, as for the task."""
    action_low: tuple[float, ...] | None = None
    """Lower action bound(s): one value, or one per action entry. Default: recorded (Minari:
    the action space). Required for a plain D4RL file."""
    action_high: tuple[float, ...] | None = None
    """Upper action bound(s), as ``action_low``."""
    trailing: Literal["refuse", "truncate"] = "refuse"
    """D4RL: a last episode with no terminal or timeout is refused, or kept marked truncated."""
    drop_final_steps: bool = False
    """D4RL without ``next_observations``: end each episode one step early instead of refusing
    (the final next-observation is otherwise unknown)."""


def _kind(endpoint: str) -> str:
    if endpoint.startswith(MINARI_PREFIX):
        return "minari"
    suffix = Path(endpoint).suffix
    if suffix == ".npz":
        return "npz"
    return "hdf5" if suffix in (".hdf5", ".h5") else "folder"


def _bound(values: tuple[float, ...] | None) -> float | tuple[float, ...] | None:
    if values is not None and len(values) == 1:
        return float(values[0])
    return values


def convert(source: str, target: str, options: ConvertOptions | None = None) -> dict[str, Any]:
    """Convert ``source`` to ``target`` (endpoints: the module docstring); returns a summary.

    Raises `DatasetError` for unsupported pairs and for everything the importers and exporters
    refuse; a failed conversion leaves nothing at ``target``.
    """
    options = options or ConvertOptions()
    pair = (_kind(source), _kind(target))
    if pair == ("minari", "folder"):
        name = source[len(MINARI_PREFIX) :]
        made = import_minari(name, target, task=options.task, env_id=options.env_id)
    elif pair in (("npz", "folder"), ("hdf5", "folder")):
        made = import_d4rl(
            source,
            target,
            env_id=options.env_id,
            task=options.task,
            action_low=_bound(options.action_low),
            action_high=_bound(options.action_high),
            trailing=options.trailing,
            drop_final_steps=options.drop_final_steps,
        )
    elif pair == ("folder", "minari"):
        made = export_minari(source, target[len(MINARI_PREFIX) :])
    elif pair == ("folder", "npz"):
        made = export_npz(source, target)
    else:
        raise DatasetError(
            f"convert {source!r} -> {target!r}: unsupported ({pair[0]} -> {pair[1]}); one side "
            "must be our dataset folder: minari:<id or folder> -> folder, .npz/.hdf5 -> folder, "
            "folder -> minari:<id>, folder -> .npz"
        )
    ours = open_dataset(target if pair[1] == "folder" else source)
    return {
        "from": source,
        "to": str(made),
        "episodes": ours.num_episodes,
        "steps": ours.num_steps,
        "task": ours.spec.task,
    }
