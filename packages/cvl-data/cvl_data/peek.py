"""Looking at a dataset folder without opening it whole, for code outside this package that must
not know the on-disk layout: whether a folder is a (finished) dataset, its spec from its metadata
alone, and the episodes of a dataset that is still being written.

`episode_lengths(path)` gives a finished dataset's episode lengths from its offsets file alone,
for checks that need the episodes' sizes before any work (the policy step's neighbour search).

`dataset_fingerprint(path)` names a finished dataset's content (a hash of its fields' recorded
checksums), so a run can tell the data it started on from data later put at the same path.

`open_committed(path)` is the reader's view of a `DatasetWriter` at work (or interrupted): the
finished dataset when there is one, else the episodes committed to ``<path>.partial/`` so far,
memory-mapped read-only up to the last committed episode (bytes of an episode being written are
ignored). A generator that resumes uses it to reload what it already wrote, e.g. the SAC replay
buffer of cvl-eval.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.layout import HEADER_BYTES, META_FILE, PROGRESS_FILE, field_layouts, partial_path
from cvl_data.reader import Dataset, load_field, open_dataset, read_meta
from cvl_data.spec import DatasetSpec
from cvl_data.validate import check_offsets

__all__ = [
    "dataset_fingerprint",
    "episode_lengths",
    "is_dataset",
    "open_committed",
    "read_spec",
    "recorded_spec",
]


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a finished dataset folder (it has its metadata file)."""
    return (Path(path) / META_FILE).is_file()


def read_spec(path: str | os.PathLike[str]) -> DatasetSpec:
    """The `DatasetSpec` of the finished dataset at ``path``, read from its metadata only (no
    array is opened; `open_dataset` checks the rest).

    Raises:
        DatasetError: no dataset there (or an unfinished one), or unreadable metadata.
    """
    meta_file = Path(path) / META_FILE
    return DatasetSpec.from_json(
        read_meta(Path(path)).get("spec"), where=f"{meta_file} (field 'spec')"
    )


def episode_lengths(path: str | os.PathLike[str]) -> np.ndarray:
    """``(E,)`` int64: the steps of each episode of the finished dataset at ``path``, read from
    its metadata and its episode offsets file only, with `open_dataset`'s checks of that field
    (`open_dataset` checks the rest).

    Raises:
        DatasetError: no finished dataset there, or an offsets file that is missing, unreadable,
            of another dtype or length than the metadata records, or not increasing from 0 to
            ``num_steps``.
    """
    path = Path(path)
    meta = read_meta(path)
    spec = DatasetSpec.from_json(meta.get("spec"), where=f"{path / META_FILE} (field 'spec')")
    offsets = load_field(path, meta, spec, "episode_offsets")
    file = path / field_layouts(spec)["episode_offsets"].file
    check_offsets(np.asarray(offsets), meta["num_steps"], f"{file} (field 'episode_offsets')")
    return np.diff(np.asarray(offsets, dtype=np.int64))


def dataset_fingerprint(path: str | os.PathLike[str]) -> str:
    """A sha256 naming the content of the finished dataset at ``path``: the hash of its fields'
    sha256 (recorded in its metadata, checked against the files by `open_dataset`), so two
    datasets share it only when every field file is the same. Reads the metadata only.

    Raises:
        DatasetError: no finished dataset there, or unreadable metadata.
    """
    meta_file = Path(path) / META_FILE
    fields = read_meta(Path(path)).get("fields")
    if not isinstance(fields, dict) or not all(isinstance(f, dict) for f in fields.values()):
        raise DatasetError(f"{meta_file} (field 'fields'): missing or malformed")
    digests = {name: field.get("sha256") for name, field in sorted(fields.items())}
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


def recorded_spec(path: str | os.PathLike[str]) -> DatasetSpec | None:
    """The `DatasetSpec` recorded at dataset folder ``path``: the finished dataset's, else the
    one a `DatasetWriter` at work (or interrupted) keeps in ``<path>.partial/`` (even with no
    episode committed yet, since a resumed writer keeps it); None when neither exists.

    Raises:
        DatasetError: unreadable metadata.
    """
    path = Path(path)
    if path.exists():
        return read_spec(path)
    progress_file = partial_path(path) / PROGRESS_FILE
    if not progress_file.exists():
        return None
    try:
        progress = json.loads(progress_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DatasetError(f"{progress_file}: unreadable ({error})") from None
    return DatasetSpec.from_json(progress.get("spec"), where=f"{progress_file} (field 'spec')")


def open_committed(path: str | os.PathLike[str]) -> Dataset | None:
    """The committed episodes at dataset folder ``path``, finished or partial; None when nothing
    is committed yet (or there is no dataset at all).

    A finished dataset is opened with `open_dataset` (``verify=False``); a partial one becomes a
    `Dataset` whose ``path`` is the ``.partial`` folder and whose ``meta`` is its progress record.

    Raises:
        DatasetError: a partial field file shorter than its committed episodes.
    """
    path = Path(path)
    if path.exists():
        return open_dataset(path, verify=False)
    partial = partial_path(path)
    progress_file = partial / PROGRESS_FILE
    if not progress_file.exists():
        return None
    progress = json.loads(progress_file.read_text(encoding="utf-8"))
    spec = DatasetSpec.from_json(progress["spec"], where=str(progress_file))
    steps, episodes = int(progress["num_steps"]), int(progress["num_episodes"])
    if episodes == 0:
        return None
    arrays: dict[str, np.ndarray] = {}
    for name, layout in field_layouts(spec).items():
        file = partial / layout.file
        shape = layout.shape(steps, episodes)
        need = HEADER_BYTES + int(np.prod(shape, dtype=np.int64)) * layout.dtype.itemsize
        if file.stat().st_size < need:
            raise DatasetError(f"{file}: shorter than its {episodes} committed episodes")
        arrays[name] = np.memmap(file, layout.dtype, mode="r", offset=HEADER_BYTES, shape=shape)
    return Dataset.from_fields(partial, spec, progress, arrays)
