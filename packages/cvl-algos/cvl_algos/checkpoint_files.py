"""A checkpoint's files on disk: the checksum manifest, verification, and guarded reads.

Every checkpoint written by `cvl_algos.checkpoint.save_checkpoint` holds ``checksums.json``:
the sha256 and byte size of each of its other files. Loading verifies them first, so a
truncated, corrupt or edited file is refused with one `CheckpointError` naming the file and what
is wrong, before anything is parsed.

A checkpoint without ``checksums.json`` (one from before the manifest existed, or one whose
manifest was deleted to slip edited weights past it) is refused unless the caller opts in with
``allow_unverified=True`` (``cvl-evaluate --allow-unverified-checkpoint``): then its files are
parsed with the same guarded readers (a truncated or garbled file is still one clean error), but
a same-size corruption cannot be detected, so each load emits a `CheckpointWarning`. Re-saving
such a checkpoint (``learner.save``) gives it a manifest.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

MANIFEST_FILE = "checksums.json"
MANIFEST_FORMAT = "cvl-checkpoint-checksums"


class CheckpointError(ValueError):
    """A checkpoint is missing, incomplete, corrupt, edited, or does not fit what loads it.

    Messages name the file and what is wrong, e.g.
    ``"/runs/a/final/tensors.safetensors: does not match checksums.json: sha256 differs (...)"``.
    """


class CheckpointWarning(UserWarning):
    """A checkpoint loaded without checksum verification (written before checksums existed)."""


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_manifest(folder: Path, names: list[str]) -> None:
    """Record the sha256 and size of ``folder/<name>`` for each name in ``checksums.json``."""
    files = {
        name: {"sha256": file_sha256(folder / name), "bytes": (folder / name).stat().st_size}
        for name in sorted(names)
    }
    document = {"format": MANIFEST_FORMAT, "files": files}
    (folder / MANIFEST_FILE).write_text(json.dumps(document, indent=1, sort_keys=True))


def read_manifest(folder: Path, required: tuple[str, ...]) -> dict[str, Any] | None:
    """The manifest's per-file records (None for a checkpoint written before manifests)."""
    file = folder / MANIFEST_FILE
    if not file.exists():
        return None
    document = read_json(file)
    if not isinstance(document, dict) or document.get("format") != MANIFEST_FORMAT:
        raise CheckpointError(f"{file}: not a checkpoint manifest (field 'format')")
    files = document.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise CheckpointError(f"{file} (field 'files'): missing or malformed")
    missing = [name for name in required if name not in files]
    if missing:
        raise CheckpointError(f"{file} (field 'files'): no record of {missing}")
    return files


def verify_files(folder: Path, required: tuple[str, ...], allow_unverified: bool = False) -> bool:
    """Check every file the manifest lists; with ``allow_unverified``, return False (with a
    warning) when there is no manifest.

    Raises `CheckpointError` for a missing folder, file or manifest (unless allowed), a size or
    a sha256 that differs.
    """
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no checkpoint folder")
    for name in required:
        if not (folder / name).is_file():
            raise CheckpointError(f"{folder / name}: missing (incomplete checkpoint)")
    files = read_manifest(folder, required)
    if files is None and not allow_unverified:
        raise CheckpointError(
            f"{folder / MANIFEST_FILE}: missing, so the checkpoint's files cannot be verified; "
            "refusing it (--allow-unverified-checkpoint, or allow_unverified=True, loads it "
            "unverified)"
        )
    if files is None:
        warnings.warn(
            f"{folder}: no {MANIFEST_FILE} (written before checkpoints recorded checksums); "
            "loading it without checksum verification",
            CheckpointWarning,
            stacklevel=3,
        )
        return False
    for name, record in files.items():
        file = folder / name
        if not file.is_file():
            raise CheckpointError(f"{file}: missing, but {MANIFEST_FILE} lists it")
        size = file.stat().st_size
        if size != record.get("bytes"):
            raise CheckpointError(
                f"{file}: does not match {MANIFEST_FILE}: {size} bytes, recorded "
                f"{record.get('bytes')} (truncated or modified)"
            )
        if file_sha256(file) != record.get("sha256"):
            raise CheckpointError(
                f"{file}: does not match {MANIFEST_FILE}: sha256 differs (corrupt or edited)"
            )
    return True


def read_json(file: Path) -> Any:
    """A JSON file's content, or a `CheckpointError` naming it (truncated, not UTF-8, ...)."""
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{file}: not valid JSON ({error}); truncated or corrupt") from None
    except OSError as error:
        raise CheckpointError(f"{file}: unreadable ({error})") from None


def read_tensors(file: Path) -> dict[str, torch.Tensor]:
    """A safetensors file's tensors on the CPU, or a `CheckpointError` naming it."""
    try:
        return load_file(str(file), device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"{file}: unreadable safetensors ({error}); truncated or corrupt"
        ) from None
