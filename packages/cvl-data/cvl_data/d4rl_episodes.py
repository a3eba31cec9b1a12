"""Episodes from D4RL-style flat transition arrays, and back.

A D4RL-style dataset is a dict of arrays with one row per transition ``i``: ``observations[i]``
(s_i), ``actions[i]``, ``rewards[i]``, ``terminals[i]``, ``timeouts[i]`` and, optionally,
``next_observations[i]`` (s_{i+1} of the same episode). An episode ends at every row whose
``terminals`` or ``timeouts`` is set; our ``terminated``/``truncated`` are those two flags.

What is ambiguous, and refused with a `DatasetError` naming the array and the row:

- arrays of different lengths, or of the wrong rank;
- flags that are not booleans (or 0/1);
- with ``next_observations``: a row ``i`` whose ``next_observations[i]`` differs from
  ``observations[i+1]`` although no flag ends the episode there (an unmarked boundary);
- a *trailing partial episode*: the last row has no flag, so the data may have been cut. By
  default refused; ``trailing="truncate"`` keeps it, with ``truncated`` set on its last step, and
  the import records that in the provenance (nothing is dropped);
- no ``next_observations``: the final next-observation of every episode is unknown. By default
  refused; ``drop_final_steps=True`` ends each episode one step early (its last row's
  observation becomes the final one, ``truncated`` set on the new last step), and the import
  records how many steps (and one-step episodes) were dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cvl_data.errors import DatasetError

Trailing = Literal["refuse", "truncate"]
REQUIRED = ("observations", "actions", "terminals", "timeouts")
PER_ROW = ("rewards", "terminals", "timeouts")


@dataclass(frozen=True)
class EpisodeRows:
    """Rows ``start .. stop - 1`` of the flat arrays form one episode's steps.

    ``final_obs_row`` is the row of ``next_observations`` holding ``s_T`` (None when the final
    observation is ``observations[stop]``: ``drop_final_steps`` has shortened the episode).
    """

    start: int
    stop: int
    final_obs_row: int | None
    truncate_last: bool  # set truncated on the last step (cut episodes)


def check_arrays(arrays: Mapping[str, np.ndarray], where: str) -> int:
    """Validate names, ranks, lengths and flag values; return the number of rows."""
    missing = [name for name in REQUIRED if name not in arrays]
    if missing:
        raise DatasetError(f"{where}: missing array(s) {missing}; have {sorted(arrays)}")
    rows = len(arrays["observations"]) if arrays["observations"].ndim else 0
    if rows == 0:
        raise DatasetError(f"{where} (array 'observations'): no rows")
    for name, array in arrays.items():
        if array.ndim == 0 or len(array) != rows:
            length = "a scalar" if array.ndim == 0 else f"{len(array)} rows"
            raise DatasetError(
                f"{where} (array '{name}'): {length}, but 'observations' has {rows} rows; "
                "arrays must agree in length"
            )
        if name in PER_ROW and array.ndim != 1:
            raise DatasetError(f"{where} (array '{name}'): shape {array.shape}, expected ({rows},)")
        if name in ("observations", "next_observations") and array.ndim < 2:
            raise DatasetError(
                f"{where} (array '{name}'): shape {array.shape}, expected ({rows}, ...) "
                "with one row per transition"
            )
    if (
        "next_observations" in arrays
        and arrays["next_observations"].shape != arrays["observations"].shape
    ):
        raise DatasetError(
            f"{where} (array 'next_observations'): shape {arrays['next_observations'].shape}, "
            f"but 'observations' has {arrays['observations'].shape}"
        )
    for name in ("terminals", "timeouts"):
        flags = arrays[name]
        if flags.dtype != np.bool_:
            bad = ~np.isin(flags, (0, 1)) if flags.dtype.kind in "biuf" else np.ones(rows, bool)
            if bad.any():
                index = int(np.argmax(bad))
                raise DatasetError(
                    f"{where} (array '{name}'): index {index} holds {flags[index].item()!r}; "
                    "expected booleans (or 0/1)"
                )
    return rows


def _check_continuity(arrays: Mapping[str, np.ndarray], ends: np.ndarray, where: str) -> None:
    """Within an episode, ``next_observations[i]`` must be ``observations[i + 1]``."""
    obs, nxt = arrays["observations"], arrays["next_observations"]
    equal = nxt[:-1] == obs[1:]  # (rows - 1, *obs_shape)
    same = equal.all(axis=tuple(range(1, equal.ndim)))
    unmarked = ~same & ~ends[:-1]
    if unmarked.any():
        i = int(np.argmax(unmarked))
        raise DatasetError(
            f"{where} (array 'next_observations'): index {i} differs from "
            f"observations[{i + 1}], but neither 'terminals' nor 'timeouts' ends an episode at "
            f"index {i}: ambiguous episode boundary"
        )


def split_episodes(
    arrays: Mapping[str, np.ndarray],
    where: str,
    trailing: Trailing = "refuse",
    drop_final_steps: bool = False,
) -> list[EpisodeRows]:
    """The episodes of checked flat arrays (see the module docstring for the rules)."""
    rows = len(arrays["observations"])
    ends = arrays["terminals"].astype(bool) | arrays["timeouts"].astype(bool)
    has_next = "next_observations" in arrays
    if has_next:
        _check_continuity(arrays, ends, where)
    if not ends[-1] and trailing != "truncate":
        start = int(np.flatnonzero(ends)[-1]) + 1 if ends.any() else 0
        raise DatasetError(
            f"{where} (arrays 'terminals', 'timeouts'): the last episode (indices {start}.."
            f"{rows - 1}) has no terminal or timeout at index {rows - 1}: a trailing partial "
            "episode; keep it marked truncated with trailing='truncate'"
        )
    stops = np.flatnonzero(ends) + 1
    if not ends[-1]:
        stops = np.append(stops, rows)
    if not has_next and not drop_final_steps:
        raise DatasetError(
            f"{where} (array 'next_observations'): missing, so the final next-observation of "
            f"each episode is unknown (the first episode ends at index {int(stops[0]) - 1}); "
            "end each episode one step early with drop_final_steps=True"
        )
    episodes, start = [], 0
    for stop in (int(s) for s in stops):
        if has_next:
            episodes.append(EpisodeRows(start, stop, stop - 1, not ends[stop - 1]))
        elif stop - start >= 2:
            episodes.append(EpisodeRows(start, stop - 1, None, True))
        start = stop
    return episodes
