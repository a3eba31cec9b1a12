"""D4RL-style datasets in and out: a dict of arrays, an ``.npz`` file, or a D4RL HDF5 file.

`import_d4rl` rebuilds episodes from the flat arrays (rules: `cvl_data.d4rl_episodes`) and
writes our dataset. `export_npz` writes the same flat layout (``observations``, ``actions``,
``rewards``, ``terminals``, ``timeouts``, ``next_observations``) plus our spec as JSON text
(``cvl_spec``), which `import_d4rl` restores; every episode then comes back identical.

A file without ``cvl_spec`` says nothing about the environment or the action bounds, so those
come from the caller (``env_id``, ``task``, ``action_low``, ``action_high``); observations keep
their dtype (uint8 ``(N, H, W, C)`` arrays are pixels). Files are read with
``allow_pickle=False``; HDF5 needs ``h5py`` (part of ``cvl-data[minari]``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.d4rl_episodes import EpisodeRows, Trailing, check_arrays, split_episodes
from cvl_data.errors import DatasetError
from cvl_data.layout import partial_path
from cvl_data.reader import open_dataset
from cvl_data.source import EpisodeSource
from cvl_data.spec import Bound, DatasetSpec
from cvl_data.writer import DatasetWriter

ARRAYS = ("observations", "actions", "rewards", "terminals", "timeouts", "next_observations")
SPEC_KEY = "cvl_spec"


def read_d4rl_file(file: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The D4RL arrays (and ``cvl_spec`` if present) of an ``.npz``, ``.hdf5`` or ``.h5`` file."""
    file = Path(file)
    if not file.is_file():
        raise DatasetError(f"{file}: no such file")
    wanted = (*ARRAYS, SPEC_KEY)
    if file.suffix == ".npz":
        try:
            with np.load(file, allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files if k in wanted}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
            raise DatasetError(
                f"{file}: unreadable .npz ({type(error).__name__}: {error}); not an .npz "
                "archive of arrays, or truncated"
            ) from None
    if file.suffix in (".hdf5", ".h5"):
        try:
            import h5py
        except ImportError:
            raise DatasetError(
                f"{file}: reading HDF5 needs h5py: pip install 'cvl-data[minari]'"
            ) from None
        try:
            with h5py.File(file, "r") as h5:
                for key in (k for k in wanted if k in h5):
                    if not isinstance(h5[key], h5py.Dataset):
                        raise DatasetError(
                            f"{file} (field '{key}'): an HDF5 {type(h5[key]).__name__}, "
                            "expected a dataset (one array)"
                        )
                return {k: np.asarray(h5[k][()]) for k in wanted if k in h5}
        except OSError as error:
            raise DatasetError(f"{file}: unreadable HDF5 ({error})") from None
    raise DatasetError(f"{file}: unknown extension; expected .npz, .hdf5 or .h5")


def d4rl_spec(
    arrays: Mapping[str, np.ndarray],
    recorded: Any,
    where: str,
    env_id: str | None,
    task: str | None,
    action_low: Bound | None,
    action_high: Bound | None,
) -> DatasetSpec:
    """Our spec: the recorded ``cvl_spec`` if present (arguments override), else built."""
    given = {"env_id": env_id, "task": task, "action_low": action_low, "action_high": action_high}
    given = {k: v for k, v in given.items() if v is not None}
    if recorded is not None:
        label = f"{where} (array '{SPEC_KEY}')"
        text = recorded.item() if isinstance(recorded, np.ndarray) else recorded
        try:
            document = json.loads(text.decode() if isinstance(text, bytes) else str(text))
        except (ValueError, UnicodeDecodeError) as error:
            raise DatasetError(f"{label}: not valid JSON ({error})") from None
        return dataclasses.replace(DatasetSpec.from_json(document, where=label), **given)
    missing = [k for k in ("env_id", "task", "action_low", "action_high") if k not in given]
    if missing:
        raise DatasetError(
            f"{where}: no '{SPEC_KEY}' recorded, so give {', '.join(missing)} "
            "(a D4RL file does not say which environment or action bounds it has)"
        )
    obs = arrays["observations"]
    pixels = obs.dtype == np.uint8 and obs.ndim == 4
    return DatasetSpec(
        obs_kind="pixels" if pixels else "state",
        obs_shape=obs.shape[1:],
        obs_dtype=obs.dtype.name,
        action_shape=arrays["actions"].shape[1:] or (1,),
        has_rewards="rewards" in arrays,
        **given,
    )


def _write(writer: DatasetWriter, arrays: Mapping[str, np.ndarray], rows: EpisodeRows) -> None:
    start, stop = rows.start, rows.stop
    obs = arrays["observations"]
    final = obs[stop] if rows.final_obs_row is None else arrays["next_observations"][stop - 1]
    truncated = arrays["timeouts"][start:stop].astype(bool)
    if rows.truncate_last:
        truncated[-1] = True
    actions = arrays["actions"][start:stop]
    writer.add_episode(
        np.concatenate([obs[start:stop], final[None]]),
        actions.reshape(len(actions), *writer.spec.action_shape),
        arrays["rewards"][start:stop] if writer.spec.has_rewards else None,
        terminated=arrays["terminals"][start:stop],
        truncated=truncated,
    )


def import_d4rl(
    source: Mapping[str, Any] | str | os.PathLike[str],
    path: str | os.PathLike[str],
    env_id: str | None = None,
    task: str | None = None,
    action_low: Bound | None = None,
    action_high: Bound | None = None,
    trailing: Trailing = "refuse",
    drop_final_steps: bool = False,
    durable: bool = True,
) -> Path:
    """Write a D4RL-style dict or file (``.npz``/``.hdf5``) as our dataset ``path``.

    Args:
        source: a dict of arrays, or a file path.
        path: the new dataset folder (must not exist).
        env_id, task, action_low, action_high: the spec's fields; required unless the source
            records ``cvl_spec`` (then they override it).
        trailing: ``"refuse"`` (default) or ``"truncate"``: keep a last episode that has no
            terminal/timeout, marked truncated (see `cvl_data.d4rl_episodes`).
        drop_final_steps: without ``next_observations``, end each episode one step early instead
            of refusing.
        durable: fsync as the writer commits.

    Returns:
        ``path``. On any error nothing is left at ``path`` or ``<path>.partial``.
    """
    where = "D4RL dict" if isinstance(source, Mapping) else str(source)
    raw = dict(source) if isinstance(source, Mapping) else read_d4rl_file(source)
    arrays = {k: np.asarray(v) for k, v in raw.items() if k in ARRAYS}
    rows = check_arrays(arrays, where)
    spec = d4rl_spec(arrays, raw.get(SPEC_KEY), where, env_id, task, action_low, action_high)
    if spec.has_rewards and "rewards" not in arrays:
        raise DatasetError(f"{where}: missing array 'rewards' (the spec has rewards)")
    episodes = split_episodes(arrays, where, trailing, drop_final_steps)
    facts = {
        "source": where,
        "rows": rows,
        "next_observations": "next_observations" in arrays,
        "trailing_truncated": not (arrays["terminals"][-1] or arrays["timeouts"][-1]),
        "dropped_steps": rows - sum(e.stop - e.start for e in episodes),
    }
    spec = dataclasses.replace(spec, provenance={**spec.provenance, "d4rl": facts})
    path = Path(path)
    started = not partial_path(path).exists()
    try:
        with DatasetWriter(path, spec, durable=durable) as writer:
            for index, episode in enumerate(episodes):
                try:
                    _write(writer, arrays, episode)
                except DatasetError as error:
                    raise DatasetError(
                        f"{where} episode {index} (indices {episode.start}..{episode.stop - 1}): "
                        f"{error}"
                    ) from None
    except BaseException:
        if started:
            shutil.rmtree(partial_path(path), ignore_errors=True)
        raise
    return path


def _check_exportable(source: EpisodeSource, where: str) -> None:
    """Flags may only end episodes: one on every last step, none before (else the flat file
    would place the boundaries elsewhere)."""
    offsets = source.episode_offsets
    flags = np.asarray(source.terminated) | np.asarray(source.truncated)
    last = np.zeros(source.num_steps, bool)
    last[offsets[1:] - 1] = True
    for bad, why in ((flags & ~last, "set before"), (~flags & last, "missing on")):
        if bad.any():
            step = int(np.argmax(bad))
            e = int(np.searchsorted(offsets, step, side="right")) - 1
            raise DatasetError(
                f"{where}: episode {e} has a terminated/truncated flag {why} its last step (step "
                f"{step - int(offsets[e])}); a D4RL file ends an episode exactly where a flag is"
            )


def export_npz(
    source: EpisodeSource | str | os.PathLike[str], file: str | os.PathLike[str]
) -> Path:
    """Write our dataset as a D4RL-style ``.npz`` (atomically: temporary name, then rename).

    Rows are transitions: ``observations`` (s_t), ``next_observations`` (s_{t+1}, the final
    next-observation included), ``actions``, ``rewards`` (absent for reward-free data),
    ``terminals`` and ``timeouts`` (our terminated and truncated), and ``cvl_spec``.
    """
    if not isinstance(source, EpisodeSource):
        source = open_dataset(source)
    file = Path(file)
    if file.suffix != ".npz":
        raise DatasetError(f"{file}: the D4RL export writes .npz files")
    if file.exists():
        raise DatasetError(f"{file}: already exists; the export never overwrites a file")
    _check_exportable(source, str(getattr(source, "path", "dataset")))
    offsets = source.episode_offsets
    episode = np.repeat(np.arange(source.num_episodes), np.diff(offsets))
    rows = np.arange(source.num_steps) + episode  # observation row of each step's s_t
    arrays = {
        "observations": np.asarray(source.observations[rows]),
        "next_observations": np.asarray(source.observations[rows + 1]),
        "actions": np.asarray(source.actions),
        "terminals": np.asarray(source.terminated),
        "timeouts": np.asarray(source.truncated),
        SPEC_KEY: np.array(json.dumps(source.spec.to_json(), sort_keys=True)),
    }
    if source.rewards is not None:
        arrays["rewards"] = np.asarray(source.rewards)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, file)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return file
