"""Pickle-free checkpoints: tensors in safetensors, everything else in JSON, all checksummed.

A checkpoint is a directory holding:

- ``tensors.safetensors``: every tensor: module ``state_dict`` entries (``module/<name>/<key>``),
  optimizer tensor state such as Adam's ``exp_avg`` and ``step`` (``optim/<name>/...``), and the
  byte states of RNGs (``rng/...``, ``generator/<name>``) as uint8 tensors.
- ``state.json``: the caller's JSON-able ``state`` (config, step counters, ...), the optimizers'
  non-tensor structure (param groups, hyperparameters), numpy and python ``random`` states.
- ``checksums.json``: the sha256 and size of every other file, verified before anything is
  parsed (`cvl_algos.checkpoint_files`: what a checkpoint without it, from before, does).
- optionally, JSON files the caller adds (``extra_files``, e.g. a trainer's state), covered by
  the checksums and written atomically with the rest.

Nested Python structures are encoded to JSON with tagged nodes (`cvl_algos.checkpoint_codec`).
Loading never unpickles and never calls ``torch.load``.

Writes are atomic: everything goes to a temporary sibling directory which is then renamed onto
``dir`` (an existing checkpoint there is replaced only after the new one is complete).

Every problem on load (missing or truncated files, checksum mismatches, invalid JSON or
safetensors, tensors that do not fit the modules, optimizers or generators given) raises one
`CheckpointError` naming the file and what is wrong. `verify_checkpoint(dir)` runs every check a
load would, without touching any object.
"""

from __future__ import annotations

import binascii
import json
import os
import random
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import save_file
from torch import nn

from cvl_algos.checkpoint_codec import decode, encode
from cvl_algos.checkpoint_files import (
    MANIFEST_FILE,
    CheckpointError,
    CheckpointWarning,
    read_json,
    read_tensors,
    verify_files,
    write_manifest,
)
from cvl_data.jsonio import naming_path

FORMAT_VERSION = 1
TENSORS_FILE = "tensors.safetensors"
STATE_FILE = "state.json"

REQUIRED_FILES = (STATE_FILE, TENSORS_FILE)
DOCUMENT_FIELDS = ("modules", "optimizers", "generators", "rng", "state")

__all__ = [
    "FORMAT_VERSION",
    "CheckpointError",
    "CheckpointWarning",
    "get_global_rng_state",
    "load_checkpoint",
    "read_checkpoint_json",
    "read_checkpoint_state",
    "save_checkpoint",
    "set_global_rng_state",
    "verify_checkpoint",
]


# ----------------------------------------------------------------------------- RNG states


def get_global_rng_state() -> dict[str, Any]:
    """Global RNG states: torch CPU, every CUDA device, numpy's legacy global, python ``random``."""
    state: dict[str, Any] = {
        "torch_cpu": torch.get_rng_state(),
        "numpy": np.random.get_state(),  # noqa: NPY002 (the legacy global state is what we save)
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["torch_cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def set_global_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`get_global_rng_state` returned (CUDA states only where CUDA exists)."""
    torch.set_rng_state(state["torch_cpu"].to(torch.uint8))
    np.random.set_state(state["numpy"])  # noqa: NPY002
    python = state["python"]
    random.setstate((python[0], tuple(python[1]), python[2]))
    cuda = state.get("torch_cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.to(torch.uint8) for s in cuda])


# ----------------------------------------------------------------------------- save / load


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_files(
    folder: Path, tensors: dict[str, torch.Tensor], document: dict, extra: dict[str, Any]
) -> None:
    """Write every file of a checkpoint into ``folder``, the manifest last, all fsynced."""
    try:
        save_file(tensors, str(folder / TENSORS_FILE), metadata={"format": "cvl_algos"})
    except SafetensorError as error:  # e.g. a full disk: an OSError the caller can name
        code = re.search(r"os error (\d+)", str(error))
        if code is None:
            raise
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1)))) from error
    texts = {STATE_FILE: json.dumps(document, indent=1)}
    texts.update({name: json.dumps(value, indent=1) for name, value in extra.items()})
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    write_manifest(folder, [TENSORS_FILE, *texts])
    for name in (TENSORS_FILE, *texts, MANIFEST_FILE):
        with open(folder / name, "rb+") as handle:
            os.fsync(handle.fileno())
    _fsync_dir(folder)


def save_checkpoint(
    dir: str | os.PathLike,
    modules: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    state: dict[str, Any],
    generators: dict[str, torch.Generator] | None = None,
    extra_files: dict[str, Any] | None = None,
) -> Path:
    """Write ``modules``, ``optimizers``, ``state`` and RNG states to ``dir`` atomically.

    Args:
        dir: target directory; replaced if it exists.
        modules: name -> module; their ``state_dict`` tensors go to safetensors.
        optimizers: name -> optimizer; tensor state to safetensors, param groups to JSON.
        state: JSON-able dict (config, step, ...); tuples and tensors inside are allowed too.
        generators: name -> ``torch.Generator`` owned by the caller (e.g. a learner's RNG).
        extra_files: file name (``*.json``) -> JSON-able value, written beside the others and
            covered by the checksums (read back with :func:`read_checkpoint_json`).

    Returns:
        The checkpoint directory as a ``Path``.
    """
    target = Path(dir)
    extra = dict(extra_files or {})
    reserved = {STATE_FILE, TENSORS_FILE, MANIFEST_FILE}
    bad = [n for n in extra if n in reserved or not n.endswith(".json") or "/" in n]
    if bad:
        raise ValueError(f"checkpoint: extra file names must be plain *.json, not {bad}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    for name, module in modules.items():
        for key, value in module.state_dict().items():
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"checkpoint: module {name} entry {key} is not a tensor")
            tensors[f"module/{name}/{key}"] = value.detach().to("cpu").contiguous().clone()
    document = {
        "format_version": FORMAT_VERSION,
        "modules": sorted(modules),
        "optimizers": {
            name: encode(opt.state_dict(), f"optim/{name}", tensors)
            for name, opt in optimizers.items()
        },
        "generators": {
            name: encode(gen.get_state(), f"generator/{name}", tensors)
            for name, gen in (generators or {}).items()
        },
        "rng": encode(get_global_rng_state(), "rng", tensors),
        "state": encode(state, "state", tensors),
    }
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        with naming_path(target):  # a full disk names the checkpoint, not its temporary folder
            _write_files(tmp, tensors, document, extra)
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(target, old)
        os.rename(tmp, target)
        _fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _read(
    dir: str | os.PathLike, allow_unverified: bool = False
) -> tuple[dict[str, Any], dict[str, torch.Tensor], bool]:
    """(state.json document, tensors, whether checksums were verified), every check passed."""
    path = Path(dir)
    verified = verify_files(path, REQUIRED_FILES, allow_unverified)
    state_file = path / STATE_FILE
    document = read_json(state_file)
    if not isinstance(document, dict):
        raise CheckpointError(f"{state_file}: expected a JSON object")
    if document.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{state_file} (field 'format_version'): {document.get('format_version')!r}, "
            f"this cvl_algos reads version {FORMAT_VERSION}"
        )
    missing = [field for field in DOCUMENT_FIELDS if field not in document]
    if missing:
        raise CheckpointError(f"{state_file}: missing field(s) {missing}")
    return document, read_tensors(path / TENSORS_FILE), verified


def _decoded(document: dict, field: str, tensors: dict, dir: str | os.PathLike) -> Any:
    """``document[field]`` decoded; a malformed node is a `CheckpointError` naming it."""
    try:
        return decode(document[field], tensors)
    except CheckpointError as error:
        raise CheckpointError(f"{Path(dir) / STATE_FILE} (field '{field}'): {error}") from None
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise CheckpointError(
            f"{Path(dir) / STATE_FILE} (field '{field}'): malformed ({type(error).__name__}: "
            f"{error})"
        ) from None


def verify_checkpoint(dir: str | os.PathLike, allow_unverified: bool = False) -> bool:
    """Run every check a load would (files, checksums, JSON, safetensors, tensor references)
    without touching any module, optimizer or RNG.

    Returns:
        True when the checksums were verified; False for a checkpoint without ``checksums.json``
        loaded with ``allow_unverified`` (also warned with `CheckpointWarning`): it parsed, but a
        same-size corruption would go unnoticed.

    Raises:
        CheckpointError: naming the file and what is wrong.
    """
    document, tensors, verified = _read(dir, allow_unverified)
    for field in DOCUMENT_FIELDS:
        _decoded(document, field, tensors, dir)
    return verified


def read_checkpoint_json(dir: str | os.PathLike, name: str) -> Any:
    """An extra JSON file saved with the checkpoint (``extra_files``), after verification."""
    path = Path(dir)
    verify_files(path, (*REQUIRED_FILES, name))
    return read_json(path / name)


def read_checkpoint_state(dir: str | os.PathLike, allow_unverified: bool = False) -> dict[str, Any]:
    """The caller ``state`` saved in ``dir``, without touching any module or RNG."""
    document, tensors, _ = _read(dir, allow_unverified)
    return _decoded(document, "state", tensors, dir)


def _restore(what: str, file: Path, restore: Any) -> None:
    """Run ``restore()``; an error (shapes, keys, sizes) becomes a `CheckpointError`."""
    try:
        restore()
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"{file}: {what} does not fit the saved state ({first})") from None


def _check_module(name: str, module: nn.Module, saved: dict[str, torch.Tensor], file: Path) -> None:
    """The saved tensors have exactly the module's keys and shapes (checked before loading)."""
    expected = module.state_dict()
    missing, unexpected = sorted(set(expected) - set(saved)), sorted(set(saved) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{file}: module '{name}' does not fit the saved tensors (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]}); wrong algorithm or architecture?"
        )
    for key, value in expected.items():
        if tuple(saved[key].shape) != tuple(value.shape):
            raise CheckpointError(
                f"{file}: module '{name}' tensor '{key}' has shape {tuple(saved[key].shape)}, "
                f"the module expects {tuple(value.shape)}"
            )


def load_checkpoint(
    dir: str | os.PathLike,
    modules: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    device: str | torch.device = "cpu",
    generators: dict[str, torch.Generator] | None = None,
    restore_global_rng: bool = True,
    allow_unverified: bool = False,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into existing objects, in place.

    Modules are loaded strictly (every key must match) and moved to ``device``; optimizer tensor
    state follows its parameters' device. Generators present in both the checkpoint and
    ``generators`` get their states back (a CUDA generator saved on a GPU machine is skipped when
    the caller has none). With ``restore_global_rng`` the torch/numpy/python global RNGs are
    restored too. Everything is verified and decoded before any object is touched.

    Returns:
        The ``state`` dict given to :func:`save_checkpoint`.
    """
    path = Path(dir)
    document, tensors, _ = _read(path, allow_unverified)
    state_file, tensors_file = path / STATE_FILE, path / TENSORS_FILE
    if sorted(modules) != document["modules"]:
        raise CheckpointError(
            f"{state_file}: modules {document['modules']}, expected {sorted(modules)}"
        )
    if sorted(optimizers) != sorted(document["optimizers"]):
        raise CheckpointError(
            f"{state_file}: optimizers {sorted(document['optimizers'])}, expected {sorted(optimizers)}"
        )
    decoded = {field: _decoded(document, field, tensors, path) for field in DOCUMENT_FIELDS}
    saved = {}
    for name, module in modules.items():
        prefix = f"module/{name}/"
        saved[name] = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        _check_module(name, module, saved[name], tensors_file)
    for name, module in modules.items():
        sub = saved[name]
        module.to(device)
        _restore(
            f"module '{name}'",
            tensors_file,
            lambda m=module, s=sub: m.load_state_dict(s, strict=True),
        )
    for name, opt in optimizers.items():
        state = decoded["optimizers"][name]
        _restore(f"optimizer '{name}'", state_file, lambda o=opt, s=state: o.load_state_dict(s))
    for name, gen in (generators or {}).items():
        if name in decoded["generators"]:
            state = decoded["generators"][name]
            _restore(
                f"generator '{name}'",
                tensors_file,
                lambda g=gen, s=state: g.set_state(s.to(torch.uint8)),
            )
    if restore_global_rng:
        _restore("the global RNG state", state_file, lambda: set_global_rng_state(decoded["rng"]))
    return decoded["state"]
