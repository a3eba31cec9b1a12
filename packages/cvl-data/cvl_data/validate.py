"""Checks shared by the writer (per episode) and `open_dataset` (whole arrays, in chunks).

Every failure raises `DatasetError` with a label naming the file and field, e.g.
``"/d/actions.npy (field 'actions')"``, or the argument, e.g. ``"add_episode(actions=...)"``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.spec import DatasetSpec

CHUNK_BYTES = 64 << 20


def _chunks(array: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(first_row, block) pairs of at most ~64 MiB each, so a memmap is never loaded whole."""
    row_bytes = max(1, array[:1].nbytes)
    step = max(1, CHUNK_BYTES // row_bytes)
    for start in range(0, len(array), step):
        yield start, np.asarray(array[start : start + step])


def check_finite(array: np.ndarray, label: str) -> None:
    """No NaN or inf anywhere (integer arrays pass trivially)."""
    if array.dtype.kind != "f":
        return
    for start, block in _chunks(array):
        bad = ~np.isfinite(block)
        if bad.any():
            row = start + int(np.argwhere(bad)[0][0])
            raise DatasetError(f"{label}: non-finite value (NaN or inf) at row {row}")


def check_action_bounds(actions: np.ndarray, spec: DatasetSpec, label: str) -> None:
    """All actions inside ``[action_low, action_high]`` (compared in float32, as stored)."""
    low, high = (b.astype(np.float32) for b in spec.action_bounds())
    for start, block in _chunks(actions):
        for bound, bad_of, word in ((low, np.less, "<"), (high, np.greater, ">")):
            bad = bad_of(block, bound)
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                value = float(block[index])
                side = "action_low" if word == "<" else "action_high"
                raise DatasetError(
                    f"{label}: row {start + index[0]} value {value} {word} {side} "
                    f"{float(bound[index[1:]])} (declared bounds in the spec)"
                )


def check_offsets(offsets: np.ndarray, num_steps: int, label: str) -> None:
    """Offsets start at 0, strictly increase (episodes have >= 1 step) and end at num_steps."""
    if offsets.ndim != 1 or len(offsets) < 2:
        raise DatasetError(
            f"{label}: need at least 2 entries (one episode), got shape {offsets.shape}"
        )
    if int(offsets[0]) != 0:
        raise DatasetError(f"{label}: first offset must be 0, got {int(offsets[0])}")
    steps = np.diff(offsets)
    if (steps <= 0).any():
        e = int(np.argmax(steps <= 0))
        raise DatasetError(
            f"{label}: offsets not strictly increasing at episode {e} "
            f"({int(offsets[e])} -> {int(offsets[e + 1])})"
        )
    if int(offsets[-1]) != num_steps:
        raise DatasetError(
            f"{label}: last offset {int(offsets[-1])} does not cover the arrays' {num_steps} steps"
        )


def check_flags(array: np.ndarray, label: str) -> None:
    """Flags must be boolean."""
    if array.dtype != np.bool_:
        raise DatasetError(f"{label}: dtype {array.dtype}, expected bool")


def _coerce(value: object, dtype: np.dtype, shape: tuple[int, ...], label: str) -> np.ndarray:
    """``value`` as a C-contiguous array of ``dtype`` and ``shape``, refusing lossy kind changes."""
    if value is None:
        raise DatasetError(f"{label}: required, got None")
    array = np.asarray(value)
    if array.shape != shape:
        raise DatasetError(f"{label}: shape {array.shape}, expected {shape}")
    if dtype == np.bool_:
        if array.dtype != np.bool_ and (
            array.dtype.kind not in "biuf" or not np.isin(array, (0, 1)).all()
        ):
            raise DatasetError(f"{label}: expected booleans (or 0/1), got {array.dtype}")
        return np.ascontiguousarray(array, dtype=np.bool_)
    source_kinds = "biu" if dtype.kind in "iu" else "biuf"  # never float -> int
    if array.dtype.kind not in source_kinds:
        raise DatasetError(f"{label}: dtype {array.dtype} cannot be stored as {dtype}")
    if dtype.kind in "iu" and array.size and not np.can_cast(array.dtype, dtype, "safe"):
        info = np.iinfo(dtype)
        if array.min() < info.min or array.max() > info.max:
            raise DatasetError(f"{label}: values outside the range of {dtype}")
    return np.ascontiguousarray(array, dtype=dtype)


def coerce_episode(
    spec: DatasetSpec,
    observations: object,
    actions: object,
    rewards: object | None,
    terminated: object,
    truncated: object,
) -> dict[str, np.ndarray]:
    """One episode's arrays, checked against ``spec`` and converted to their stored dtypes.

    ``observations`` has ``T + 1`` rows (the final next-observation included), the others ``T``.
    """
    obs = np.asarray(observations) if observations is not None else None
    if obs is None or obs.ndim == 0 or len(obs) < 2:
        shape = None if obs is None else obs.shape
        raise DatasetError(
            f"add_episode(observations=...): need T + 1 >= 2 rows (T >= 1 steps), got shape {shape}"
        )
    T = len(obs) - 1
    out = {
        "observations": _coerce(
            obs, np.dtype(spec.obs_dtype), (T + 1, *spec.obs_shape), "add_episode(observations=...)"
        ),
        "actions": _coerce(
            actions, np.dtype(np.float32), (T, *spec.action_shape), "add_episode(actions=...)"
        ),
    }
    if spec.has_rewards:
        out["rewards"] = _coerce(rewards, np.dtype(np.float32), (T,), "add_episode(rewards=...)")
    elif rewards is not None:
        raise DatasetError("add_episode(rewards=...): the spec says has_rewards=False; pass None")
    for name in ("terminated", "truncated"):
        value = terminated if name == "terminated" else truncated
        out[name] = _coerce(value, np.dtype(np.bool_), (T,), f"add_episode({name}=...)")
    for name in ("observations", "actions", "rewards"):
        if name in out:
            check_finite(out[name], f"add_episode({name}=...)")
    check_action_bounds(out["actions"], spec, "add_episode(actions=...)")
    return out
