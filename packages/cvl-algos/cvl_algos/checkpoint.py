"""Pickle-free checkpoints: tensors in safetensors, everything else in JSON.

A checkpoint is a directory holding two files:

- ``tensors.safetensors``: every tensor: module ``state_dict`` entries (``module/<name>/<key>``),
  optimizer tensor state such as Adam's ``exp_avg`` and ``step`` (``optim/<name>/...``), and the
  byte states of RNGs (``rng/...``, ``generator/<name>``) as uint8 tensors.
- ``state.json``: the caller's JSON-able ``state`` (config, step counters, ...), the optimizers'
  non-tensor structure (param groups, hyperparameters), numpy and python ``random`` states.

Nested Python structures are encoded to JSON with tagged nodes: ``{"__tensor__": key}`` points
into the safetensors file, ``{"__tuple__": [...]}`` keeps tuples apart from lists,
``{"__items__": [[k, v], ...]}`` keeps dicts with non-string keys (optimizer state uses int keys)
and ``{"__ndarray__": base64, ...}`` holds numpy arrays. Loading never unpickles and never calls
``torch.load``.

Writes are atomic: everything goes to a temporary sibling directory which is then renamed onto
``dir`` (an existing checkpoint there is replaced only after the new one is complete).
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

FORMAT_VERSION = 1
TENSORS_FILE = "tensors.safetensors"
STATE_FILE = "state.json"

__all__ = [
    "FORMAT_VERSION",
    "get_global_rng_state",
    "load_checkpoint",
    "read_checkpoint_state",
    "save_checkpoint",
    "set_global_rng_state",
]


class CheckpointError(RuntimeError):
    """A checkpoint directory is missing, incomplete or inconsistent with the objects given."""


# ----------------------------------------------------------------------------- encoding


def _encode(obj: Any, key: str, tensors: dict[str, torch.Tensor]) -> Any:
    """Encode ``obj`` as JSON-able data; tensors go to ``tensors`` under names derived from ``key``."""
    if isinstance(obj, torch.Tensor):
        tensors[key] = obj.detach().to("cpu").contiguous().clone()
        return {"__tensor__": key}
    if isinstance(obj, np.ndarray):
        data = np.ascontiguousarray(obj)
        return {
            "__ndarray__": base64.b64encode(data.tobytes()).decode("ascii"),
            "dtype": data.dtype.str,
            "shape": list(data.shape),
        }
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, bytes):
        return {"__bytes__": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, f"{key}/{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_encode(v, f"{key}/{i}", tensors) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: _encode(v, f"{key}/{k}", tensors) for k, v in obj.items()}
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"checkpoint: unsupported dict key {k!r} at {key}")
            items.append([k, _encode(v, f"{key}/{k}", tensors)])
        return {"__items__": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"checkpoint: cannot encode {type(obj).__name__} at {key} without pickling")


def _decode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`_encode`."""
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        name = obj["__tensor__"]
        if name not in tensors:
            raise CheckpointError(f"checkpoint: tensor {name!r} missing from {TENSORS_FILE}")
        return tensors[name]
    if "__tuple__" in obj:
        return tuple(_decode(v, tensors) for v in obj["__tuple__"])
    if "__items__" in obj:
        return {k: _decode(v, tensors) for k, v in obj["__items__"]}
    if "__ndarray__" in obj:
        raw = base64.b64decode(obj["__ndarray__"])
        return np.frombuffer(raw, dtype=np.dtype(obj["dtype"])).reshape(obj["shape"]).copy()
    if "__bytes__" in obj:
        return base64.b64decode(obj["__bytes__"])
    return {k: _decode(v, tensors) for k, v in obj.items()}


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


def save_checkpoint(
    dir: str | os.PathLike,
    modules: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    state: dict[str, Any],
    generators: dict[str, torch.Generator] | None = None,
) -> Path:
    """Write ``modules``, ``optimizers``, ``state`` and RNG states to ``dir`` atomically.

    Args:
        dir: target directory; replaced if it exists.
        modules: name -> module; their ``state_dict`` tensors go to safetensors.
        optimizers: name -> optimizer; tensor state to safetensors, param groups to JSON.
        state: JSON-able dict (config, step, ...); tuples and tensors inside are allowed too.
        generators: name -> ``torch.Generator`` owned by the caller (e.g. a learner's RNG).

    Returns:
        The checkpoint directory as a ``Path``.
    """
    target = Path(dir)
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
            name: _encode(opt.state_dict(), f"optim/{name}", tensors)
            for name, opt in optimizers.items()
        },
        "generators": {
            name: _encode(gen.get_state(), f"generator/{name}", tensors)
            for name, gen in (generators or {}).items()
        },
        "rng": _encode(get_global_rng_state(), "rng", tensors),
        "state": _encode(state, "state", tensors),
    }
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        save_file(tensors, str(tmp / TENSORS_FILE), metadata={"format": "cvl_algos"})
        with open(tmp / STATE_FILE, "w") as handle:
            json.dump(document, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        with open(tmp / TENSORS_FILE, "rb+") as handle:
            os.fsync(handle.fileno())
        _fsync_dir(tmp)
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


def _read(dir: str | os.PathLike) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    path = Path(dir)
    if not (path / STATE_FILE).is_file() or not (path / TENSORS_FILE).is_file():
        raise CheckpointError(f"no complete checkpoint at {path}")
    with open(path / STATE_FILE) as handle:
        document = json.load(handle)
    if document.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"unsupported checkpoint format {document.get('format_version')}")
    return document, load_file(str(path / TENSORS_FILE), device="cpu")


def read_checkpoint_state(dir: str | os.PathLike) -> dict[str, Any]:
    """The caller ``state`` saved in ``dir``, without touching any module or RNG."""
    document, tensors = _read(dir)
    return _decode(document["state"], tensors)


def load_checkpoint(
    dir: str | os.PathLike,
    modules: dict[str, nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    device: str | torch.device = "cpu",
    generators: dict[str, torch.Generator] | None = None,
    restore_global_rng: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into existing objects, in place.

    Modules are loaded strictly (every key must match) and moved to ``device``; optimizer tensor
    state follows its parameters' device. Generators present in both the checkpoint and
    ``generators`` get their states back (a CUDA generator saved on a GPU machine is skipped when
    the caller has none). With ``restore_global_rng`` the torch/numpy/python global RNGs are
    restored too.

    Returns:
        The ``state`` dict given to :func:`save_checkpoint`.
    """
    document, tensors = _read(dir)
    if sorted(modules) != document["modules"]:
        raise CheckpointError(f"modules {sorted(modules)} != saved {document['modules']}")
    if sorted(optimizers) != sorted(document["optimizers"]):
        raise CheckpointError(
            f"optimizers {sorted(optimizers)} != saved {sorted(document['optimizers'])}"
        )
    for name, module in modules.items():
        prefix = f"module/{name}/"
        sub = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        module.to(device)
        module.load_state_dict(sub, strict=True)
    for name, opt in optimizers.items():
        opt.load_state_dict(_decode(document["optimizers"][name], tensors))
    for name, gen in (generators or {}).items():
        if name in document["generators"]:
            gen.set_state(_decode(document["generators"][name], tensors).to(torch.uint8))
    if restore_global_rng:
        set_global_rng_state(_decode(document["rng"], tensors))
    return _decode(document["state"], tensors)
