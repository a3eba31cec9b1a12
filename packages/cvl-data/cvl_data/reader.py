"""`open_dataset`: validate a dataset folder and expose its arrays memory-mapped."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.checksums import verify_files
from cvl_data.errors import DatasetError
from cvl_data.layout import (
    FORMAT,
    META_FILE,
    PARTIAL_SUFFIX,
    PROGRESS_FILE,
    SCHEMA_VERSION,
    field_layouts,
    partial_path,
)
from cvl_data.spec import DatasetSpec
from cvl_data.validate import check_action_bounds, check_finite, check_flags, check_offsets


@dataclass(frozen=True, eq=False)
class Dataset:
    """One finished dataset, its arrays memory-mapped read-only (never loaded whole).

    Episode ``e`` has steps ``episode_offsets[e] .. episode_offsets[e+1] - 1`` and observation
    rows ``episode_offsets[e] + e .. episode_offsets[e+1] + e`` (inclusive: ``s_0 .. s_T``).
    """

    path: Path
    spec: DatasetSpec
    meta: dict[str, Any]
    observations: np.ndarray  # (num_steps + num_episodes, *obs_shape)
    actions: np.ndarray  # (num_steps, *action_shape) float32
    rewards: np.ndarray | None  # (num_steps,) float32
    terminated: np.ndarray  # (num_steps,) bool
    truncated: np.ndarray  # (num_steps,) bool
    episode_offsets: np.ndarray  # (num_episodes + 1,) int64

    @property
    def num_episodes(self) -> int:
        return len(self.episode_offsets) - 1

    @property
    def num_steps(self) -> int:
        return int(self.episode_offsets[-1])

    @property
    def task_ids(self) -> None:
        """Per-step task ids; None for a single dataset (see `concat_datasets`)."""
        return None

    @property
    def task_names(self) -> tuple[str, ...]:
        return (self.spec.task,)

    @classmethod
    def from_fields(
        cls, path: Path, spec: DatasetSpec, meta: dict[str, Any], arrays: dict[str, np.ndarray]
    ) -> Dataset:
        """A dataset from its field arrays (`cvl_data.layout.field_layouts` names; no
        ``rewards`` for a reward-free one); the episode offsets are loaded into memory."""
        return cls(
            path=path,
            spec=spec,
            meta=meta,
            observations=arrays["observations"],
            actions=arrays["actions"],
            rewards=arrays.get("rewards"),
            terminated=arrays["terminated"],
            truncated=arrays["truncated"],
            episode_offsets=np.array(arrays["episode_offsets"]),
        )

    @property
    def episode_info(self) -> tuple[dict[str, Any], ...]:
        """Per-episode facts the writer was given (``add_episode(info=...)``); ``{}`` each if none."""
        info = self.meta.get("episode_info")
        if info is None:
            return ({},) * self.num_episodes
        return tuple(info)

    def chunks(self, field: str) -> Iterator[np.ndarray]:
        """The field as consecutive blocks (one here); see `cvl_data.source.EpisodeSource`."""
        array = getattr(self, field)
        if array is None:
            raise DatasetError(f"{self.path}: field '{field}' is absent (reward-free dataset)")
        yield array

    def episode(self, e: int) -> dict[str, np.ndarray | None]:
        """Episode ``e``'s arrays as views: observations ``(T + 1, ...)``, others ``(T, ...)``."""
        start, stop = int(self.episode_offsets[e]), int(self.episode_offsets[e + 1])
        return {
            "observations": self.observations[start + e : stop + e + 1],
            "actions": self.actions[start:stop],
            "rewards": None if self.rewards is None else self.rewards[start:stop],
            "terminated": self.terminated[start:stop],
            "truncated": self.truncated[start:stop],
        }


def read_meta(path: Path) -> dict[str, Any]:
    """The checked ``meta.json`` of the finished dataset at ``path`` (`DatasetError` otherwise)."""
    if not path.exists():
        partial = partial_path(path)
        if partial.exists():
            raise DatasetError(
                f"{path}: not finished; an interrupted writer left {partial} "
                "(continue it with DatasetWriter(path, spec, resume=True))"
            )
        raise DatasetError(f"no dataset at {path} (no such dataset folder)")
    if not path.is_dir():
        raise DatasetError(f"{path}: not a folder")
    if (path / PROGRESS_FILE).exists() or path.name.endswith(PARTIAL_SUFFIX):
        raise DatasetError(
            f"{path}: an unfinished dataset (its writer was interrupted); "
            "continue it with DatasetWriter(..., resume=True)"
        )
    meta_file = path / META_FILE
    if not meta_file.exists():
        raise DatasetError(f"{meta_file}: missing file (field 'meta')")
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DatasetError(f"{meta_file}: not valid JSON ({error})") from None
    if not isinstance(meta, dict):
        raise DatasetError(f"{meta_file}: expected a JSON object")
    if meta.get("format") != FORMAT:
        raise DatasetError(
            f"{meta_file} (field 'format'): {meta.get('format')!r}, expected {FORMAT!r}"
        )
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise DatasetError(
            f"{meta_file} (field 'schema_version'): unknown schema version "
            f"{meta.get('schema_version')!r}; this cvl_data reads version {SCHEMA_VERSION}"
        )
    for name in ("num_episodes", "num_steps"):
        value = meta.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DatasetError(f"{meta_file} (field '{name}'): expected an int >= 0, got {value!r}")
        if value == 0:
            raise DatasetError(f"{meta_file} (field '{name}'): empty dataset ({name} = 0)")
    if not isinstance(meta.get("fields"), dict):
        raise DatasetError(f"{meta_file} (field 'fields'): missing or not an object")
    return meta


def load_field(path: Path, meta: dict[str, Any], spec: DatasetSpec, name: str) -> np.ndarray:
    """Field ``name`` of the dataset at ``path`` as a read-only memory map, checked against its
    layout and ``meta`` (file, dtype, row shape, rows, recorded shape); contents unchecked."""
    layout = field_layouts(spec)[name]
    entry = meta["fields"].get(name)
    label = f"{path / layout.file} (field '{name}')"
    if not isinstance(entry, dict) or entry.get("file") != layout.file:
        raise DatasetError(
            f"{path / META_FILE} (field 'fields.{name}'): missing or wrong file name"
        )
    file = path / layout.file
    if not file.exists():
        raise DatasetError(f"{label}: missing file")
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as error:
        raise DatasetError(f"{label}: unreadable .npy ({error})") from None
    if array.dtype != layout.dtype:
        raise DatasetError(f"{label}: dtype {array.dtype}, expected {layout.dtype}")
    if array.shape[1:] != layout.row_shape:
        raise DatasetError(f"{label}: row shape {array.shape[1:]}, expected {layout.row_shape}")
    rows = layout.rows(meta["num_steps"], meta["num_episodes"])
    if len(array) != rows:
        rule = {"observations": "num_steps + num_episodes", "episode_offsets": "num_episodes + 1"}
        raise DatasetError(
            f"{label}: {len(array)} rows, but meta.json says {rule.get(name, 'num_steps')} = "
            f"{rows}; fields have mismatched lengths"
        )
    if entry.get("shape") != list(array.shape) or entry.get("dtype") != layout.dtype.name:
        raise DatasetError(
            f"{label}: file holds {array.dtype} {tuple(array.shape)}, but meta.json records "
            f"{entry.get('dtype')} {entry.get('shape')}"
        )
    return array


def open_dataset(path: str | os.PathLike[str], verify: bool = False) -> Dataset:
    """Open and validate a finished dataset folder; arrays are read-only memory maps.

    Checks, each raising `DatasetError` naming the file and field: folder and ``meta.json``
    present, known schema version, not empty, every field file present with the declared
    dtype and a consistent length, episode offsets increasing from 0 to ``num_steps``, no NaN or
    inf in observations, actions or rewards, actions inside the declared bounds, and each file's
    sha256 against ``meta.json``.

    Args:
        path: the dataset folder.
        verify: how checksums are checked (see `cvl_data.checksums`). ``False`` (default): hash
            only the files that changed, or may have changed, since they were last verified
            (a stamp, ``.verified.json``, remembers); any write to a file is caught, a same-size
            bit flip included. ``True``: hash every file now (also catches damage that bypasses
            the file system, e.g. bit rot on the medium).
    """
    path = Path(path)
    meta = read_meta(path)
    spec = DatasetSpec.from_json(meta.get("spec"), where=f"{path / META_FILE} (field 'spec')")
    layouts = field_layouts(spec)
    unexpected = sorted(set(meta["fields"]) - set(layouts))
    if unexpected:
        raise DatasetError(
            f"{path / META_FILE} (field 'fields'): unexpected field(s) {unexpected} for "
            f"has_rewards={spec.has_rewards}"
        )
    arrays = {name: load_field(path, meta, spec, name) for name in layouts}
    expected = {n: (f.file, meta["fields"][n].get("sha256")) for n, f in layouts.items()}
    verify_files(path, expected, full=bool(verify))

    def label(name: str) -> str:
        return f"{path / layouts[name].file} (field '{name}')"

    check_offsets(
        np.asarray(arrays["episode_offsets"]), meta["num_steps"], label("episode_offsets")
    )
    for name in ("terminated", "truncated"):
        check_flags(arrays[name], label(name))
    for name in ("observations", "actions", "rewards"):
        if name in arrays:
            check_finite(arrays[name], label(name))
    check_action_bounds(arrays["actions"], spec, label("actions"))
    info = meta.get("episode_info")
    if info is not None and (
        not isinstance(info, list)
        or len(info) != meta["num_episodes"]
        or not all(isinstance(i, dict) for i in info)
    ):
        raise DatasetError(
            f"{path / META_FILE} (field 'episode_info'): expected a list of "
            f"{meta['num_episodes']} dicts, one per episode"
        )
    return Dataset.from_fields(path, spec, meta, arrays)
