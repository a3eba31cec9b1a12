"""`DatasetSpec`: what a dataset holds (env, task, shapes, dtypes, bounds, provenance)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from cvl_data.errors import DatasetError

ObsKind = Literal["state", "pixels"]
Bound = float | tuple[float, ...]


def _as_bound(value: Any, name: str) -> Bound:
    """A scalar bound stays a float; a list/array becomes a flat tuple of floats."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        return float(array)
    return tuple(float(x) for x in array.reshape(-1))


@dataclass(frozen=True)
class DatasetSpec:
    """Static description of one offline dataset.

    Attributes:
        env_id: environment id, e.g. ``"Meta-World/MT1"`` or ``"MountainCarContinuous-v0"``.
        task: task name, e.g. ``"drawer-open-v3"`` (its domain is `cvl_data.task_domain(task)`).
        obs_kind: ``"state"`` (vector observations) or ``"pixels"`` (channel-last uint8 images).
        obs_shape: shape of one observation, e.g. ``(39,)`` or ``(84, 84, 3)``.
        obs_dtype: numpy dtype name of the stored observations (``"uint8"`` for pixels).
        action_shape: shape of one action, e.g. ``(4,)``. Actions are stored as float32.
        action_low: lower action bound, a scalar or one value per action entry (flattened).
        action_high: upper action bound, same form as ``action_low``.
        has_rewards: whether the dataset carries rewards (reward-free data is first class).
        provenance: JSON-able facts about how the data was made (generator, policy, seed, ...).
    """

    env_id: str
    task: str
    obs_kind: ObsKind
    obs_shape: tuple[int, ...]
    obs_dtype: str
    action_shape: tuple[int, ...]
    action_low: Bound
    action_high: Bound
    has_rewards: bool
    provenance: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "obs_shape", tuple(int(d) for d in self.obs_shape))
        set_(self, "action_shape", tuple(int(d) for d in self.action_shape))
        set_(self, "obs_dtype", np.dtype(self.obs_dtype).name)
        set_(self, "action_low", _as_bound(self.action_low, "action_low"))
        set_(self, "action_high", _as_bound(self.action_high, "action_high"))
        set_(self, "has_rewards", bool(self.has_rewards))
        set_(self, "provenance", dict(self.provenance))
        self._check()

    def _check(self) -> None:
        def fail(name: str, why: str) -> None:
            raise DatasetError(f"DatasetSpec field '{name}': {why}")

        if self.obs_kind not in ("state", "pixels"):
            fail("obs_kind", f"must be 'state' or 'pixels', got {self.obs_kind!r}")
        if not self.obs_shape or min(self.obs_shape) < 1:
            fail("obs_shape", f"must be a non-empty tuple of positive ints, got {self.obs_shape}")
        if not self.action_shape or min(self.action_shape) < 1:
            fail(
                "action_shape",
                f"must be a non-empty tuple of positive ints, got {self.action_shape}",
            )
        kind = np.dtype(self.obs_dtype).kind
        if kind not in "fiu":
            fail("obs_dtype", f"must be a float or integer dtype, got {self.obs_dtype!r}")
        if self.obs_kind == "pixels":
            if self.obs_dtype != "uint8":
                fail("obs_dtype", f"pixels are stored as uint8, got {self.obs_dtype!r}")
            if len(self.obs_shape) != 3:
                fail("obs_shape", f"pixels are (H, W, C), got {self.obs_shape}")
        low, high = self.action_bounds()
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            fail("action_low", "action bounds must be finite")
        if np.any(low > high):
            fail(
                "action_high",
                f"action_low {self.action_low} exceeds action_high {self.action_high}",
            )

    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds broadcast to ``action_shape`` as float64 arrays ``(low, high)``."""

        def broadcast(bound: Bound, name: str) -> np.ndarray:
            array = np.asarray(bound, dtype=np.float64)
            if array.ndim == 0:
                return np.broadcast_to(array, self.action_shape)
            if array.size != int(np.prod(self.action_shape)):
                raise DatasetError(
                    f"DatasetSpec field '{name}': {array.size} values for action_shape "
                    f"{self.action_shape}"
                )
            return array.reshape(self.action_shape)

        return broadcast(self.action_low, "action_low"), broadcast(self.action_high, "action_high")

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; `DatasetSpec.from_json` inverts it exactly."""
        out = dataclasses.asdict(self)
        out["obs_shape"] = list(self.obs_shape)
        out["action_shape"] = list(self.action_shape)
        for name in ("action_low", "action_high"):
            value = out[name]
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "spec") -> DatasetSpec:
        """Build from `to_json` output; a missing or bad field raises `DatasetError` naming it."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(data, dict):
            raise DatasetError(f"{where}: expected an object, got {type(data).__name__}")
        missing = [n for n in names if n not in data and n != "provenance"]
        if missing:
            raise DatasetError(f"{where}: missing field(s) {', '.join(repr(m) for m in missing)}")
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise DatasetError(f"{where}: unknown field(s) {', '.join(repr(u) for u in unknown)}")
        try:
            return cls(**{n: data[n] for n in names if n in data})
        except DatasetError as error:
            raise DatasetError(f"{where}: {error}") from None
        except (TypeError, ValueError) as error:
            raise DatasetError(f"{where}: invalid value ({error})") from None

    @property
    def obs_row_bytes(self) -> int:
        """Bytes of one stored observation."""
        return int(np.prod(self.obs_shape)) * np.dtype(self.obs_dtype).itemsize
