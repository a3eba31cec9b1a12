"""The on-disk layout: file names, field table, `.npy` headers, checksums, `meta.json`.

A finished dataset is one folder::

    <name>/meta.json               schema version, spec, counts, per-field file/dtype/shape/sha256
    <name>/observations.npy        (num_steps + num_episodes, *obs_shape) obs_dtype
    <name>/actions.npy             (num_steps, *action_shape) float32
    <name>/rewards.npy             (num_steps,) float32, only when spec.has_rewards
    <name>/terminated.npy          (num_steps,) bool
    <name>/truncated.npy           (num_steps,) bool
    <name>/episode_offsets.npy     (num_episodes + 1,) int64

An unfinished one is ``<name>.partial/`` with ``progress.json`` instead of ``meta.json``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.jsonio import package_versions
from cvl_data.spec import DatasetSpec

FORMAT = "cvl-dataset"
PARTIAL_FORMAT = "cvl-dataset-partial"
SCHEMA_VERSION = 1
META_FILE = "meta.json"
PROGRESS_FILE = "progress.json"
PARTIAL_SUFFIX = ".partial"
HEADER_BYTES = 256  # fixed .npy header size used by the writer, so data never moves


@dataclass(frozen=True)
class FieldLayout:
    """One stored array: its file, dtype, per-row shape and row count rule."""

    name: str
    dtype: np.dtype
    row_shape: tuple[int, ...]
    rows: Callable[[int, int], int]  # (num_steps, num_episodes) -> number of rows

    @property
    def file(self) -> str:
        return f"{self.name}.npy"

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize

    def shape(self, num_steps: int, num_episodes: int) -> tuple[int, ...]:
        return (self.rows(num_steps, num_episodes), *self.row_shape)


def field_layouts(spec: DatasetSpec) -> dict[str, FieldLayout]:
    """The fields a dataset with this spec stores, in canonical order."""

    def per_step(steps: int, episodes: int) -> int:
        return steps

    fields = [
        FieldLayout("observations", np.dtype(spec.obs_dtype), spec.obs_shape, lambda s, e: s + e),
        FieldLayout("actions", np.dtype(np.float32), spec.action_shape, per_step),
    ]
    if spec.has_rewards:
        fields.append(FieldLayout("rewards", np.dtype(np.float32), (), per_step))
    fields += [
        FieldLayout("terminated", np.dtype(np.bool_), (), per_step),
        FieldLayout("truncated", np.dtype(np.bool_), (), per_step),
        FieldLayout("episode_offsets", np.dtype(np.int64), (), lambda s, e: e + 1),
    ]
    return {f.name: f for f in fields}


def partial_path(path: Path) -> Path:
    """Where the writer keeps an unfinished dataset for final folder ``path``."""
    return path.with_name(path.name + PARTIAL_SUFFIX)


def npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """A version-1.0 `.npy` header of exactly `HEADER_BYTES` bytes (C order)."""
    descr = np.lib.format.dtype_to_descr(dtype)
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    body_len = HEADER_BYTES - 10
    if len(text) + 1 > body_len:
        raise ValueError(f"npy header too long for shape {shape}")
    body = text.ljust(body_len - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", body_len) + body.encode("latin1")


def file_sha256(path: Path) -> str:
    """sha256 of a whole file (header included), read in chunks."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def build_meta(
    spec: DatasetSpec, num_steps: int, num_episodes: int, folder: Path, created_utc: str
) -> dict[str, Any]:
    """`meta.json` content for finished field files in ``folder`` (checksums computed here)."""
    from cvl_data.tasks import task_domain

    fields = {}
    for name, layout in field_layouts(spec).items():
        fields[name] = {
            "file": layout.file,
            "dtype": layout.dtype.name,
            "shape": list(layout.shape(num_steps, num_episodes)),
            "sha256": file_sha256(folder / layout.file),
        }
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "spec": spec.to_json(),
        "domain": task_domain(spec.task),
        "num_episodes": num_episodes,
        "num_steps": num_steps,
        "fields": fields,
        "package_versions": package_versions(("cvl_data", "numpy", "python")),
        "created_utc": created_utc,
    }
