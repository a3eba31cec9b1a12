"""The tagged-JSON codec of checkpoints: nested Python state -> JSON + a tensor table, and back.

``{"__tensor__": key}`` points into the safetensors file, ``{"__tuple__": [...]}`` keeps tuples
apart from lists, ``{"__items__": [[k, v], ...]}`` keeps dicts with non-string keys (optimizer
state uses int keys), ``{"__ndarray__": base64, "dtype", "shape"}`` holds numpy arrays and
``{"__bytes__": base64}`` bytes. Nothing is pickled.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import torch

from cvl_algos.checkpoint_files import CheckpointError


def encode(obj: Any, key: str, tensors: dict[str, torch.Tensor]) -> Any:
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
        return {"__tuple__": [encode(v, f"{key}/{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [encode(v, f"{key}/{i}", tensors) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: encode(v, f"{key}/{k}", tensors) for k, v in obj.items()}
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"checkpoint: unsupported dict key {k!r} at {key}")
            items.append([k, encode(v, f"{key}/{k}", tensors)])
        return {"__items__": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"checkpoint: cannot encode {type(obj).__name__} at {key} without pickling")


def decode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`encode`."""
    if isinstance(obj, list):
        return [decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        name = obj["__tensor__"]
        if name not in tensors:
            raise CheckpointError(f"tensor {name!r} missing from the safetensors file")
        return tensors[name]
    if "__tuple__" in obj:
        return tuple(decode(v, tensors) for v in obj["__tuple__"])
    if "__items__" in obj:
        return {k: decode(v, tensors) for k, v in obj["__items__"]}
    if "__ndarray__" in obj:
        raw = base64.b64decode(obj["__ndarray__"])
        return np.frombuffer(raw, dtype=np.dtype(obj["dtype"])).reshape(obj["shape"]).copy()
    if "__bytes__" in obj:
        return base64.b64decode(obj["__bytes__"])
    return {k: decode(v, tensors) for k, v in obj.items()}
