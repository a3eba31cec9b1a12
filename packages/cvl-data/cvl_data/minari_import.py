"""`import_minari`: a Minari dataset -> a cvl dataset folder (needs ``pip install cvl-data[minari]``).

Each Minari episode maps onto one of ours exactly: its ``T + 1`` observations (the final one
included), ``T`` actions, rewards, terminations and truncations, in order. Stored dtypes are
ours: observations keep the Box space's dtype (Meta-World's float64 stays float64, bit-exact);
actions and rewards are float32 (Minari's float64 rewards are rounded to float32, a relative error
below 6e-8). Per-step ``infos`` are not imported (``provenance["minari"]["infos_dropped"]``
says whether there were any).

Metadata: the dataset's Minari metadata (dataset id, env spec, eval env spec, algorithm, authors,
code permalink, description, requirements, reference scores, serialised spaces) and the episodes'
reset seeds go to ``spec.provenance["minari"]``, from where `export_minari` restores them. A
Minari dataset written by `export_minari` also carries our spec (``cvl_spec``), which is restored.

Refused, with a `DatasetError` naming the dataset and the field: dict/tuple/text observations,
discrete actions (Discrete, MultiDiscrete, MultiBinary, integer Box), action bounds that are not
finite, and episodes that our writer refuses (e.g. actions outside the declared bounds, NaN).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.layout import partial_path
from cvl_data.spec import DatasetSpec
from cvl_data.writer import DatasetWriter

CVL_SPEC_KEY = "cvl_spec"  # our spec, as JSON text, in the metadata of datasets we export
COUNTER_KEYS = ("total_episodes", "total_steps", "dataset_size")  # recomputed by Minari


def require_minari() -> Any:
    """The ``minari`` module with its HDF5 storage usable, or a `DatasetError` saying how."""
    try:
        import h5py  # noqa: F401 (Minari's HDF5 storage)
        import minari
        import PIL  # noqa: F401 (imported by Minari's HDF5 storage, not declared by minari)
    except ImportError as error:
        raise DatasetError(
            f"Minari support needs minari, h5py and pillow ({error}); "
            "install them with: pip install 'cvl-data[minari]'"
        ) from None
    return minari


def load_minari(source: str | os.PathLike[str]) -> Any:
    """A local `minari.MinariDataset` from a dataset id or a dataset folder (or its ``data/``).

    A string naming an existing folder is a path; anything else is a dataset id looked up in
    Minari's local root (``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``); nothing is
    downloaded.
    """
    minari = require_minari()
    folder = Path(source)
    if folder.is_dir():
        data = folder / "data" if (folder / "data").is_dir() else folder
        try:
            return minari.MinariDataset(data)
        except (ValueError, OSError, KeyError) as error:
            raise DatasetError(f"{data}: not a readable Minari dataset ({error})") from None
    try:
        return minari.load_dataset(str(source), download=False)
    except (FileNotFoundError, ValueError) as error:
        raise DatasetError(f"Minari dataset {str(source)!r}: {error}") from None


def _box(space: Any, where: str, field: str) -> Any:
    """``space`` if it is a gymnasium Box of real or integer numbers; else a `DatasetError`."""
    import gymnasium as gym

    if not isinstance(space, gym.spaces.Box):
        kind = "discrete" if field == "actions" else type(space).__name__
        raise DatasetError(
            f"{where} (field '{field}'): {space} is a {kind} space; cvl-data stores "
            f"{'continuous (Box) actions' if field == 'actions' else 'Box observations'} only"
        )
    return space


def _spec_from_spaces(
    dataset: Any, where: str, task: str | None, env_id: str | None
) -> DatasetSpec:
    """Our spec built from the dataset's spaces and env spec (provenance filled in later)."""
    obs_space = _box(dataset.observation_space, where, "observations")
    action_space = _box(dataset.action_space, where, "actions")
    if np.dtype(action_space.dtype).kind != "f":
        raise DatasetError(
            f"{where} (field 'actions'): {action_space} has integer actions (discrete); "
            "cvl-data stores continuous actions only"
        )
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise DatasetError(f"{where} (field 'actions'): {action_space} has infinite bounds")
    env_spec = dataset.env_spec
    env_id = env_id or (env_spec.id if env_spec is not None else None)
    task = task or (env_spec.kwargs.get("env_name") if env_spec is not None else None) or env_id
    if env_id is None or task is None:
        raise DatasetError(f"{where}: no env_spec in its metadata; give the task and env id")
    pixels = obs_space.dtype == np.uint8 and len(obs_space.shape) == 3
    return DatasetSpec(
        env_id=env_id,
        task=task,
        obs_kind="pixels" if pixels else "state",
        obs_shape=obs_space.shape,
        obs_dtype=np.dtype(obs_space.dtype).name,
        action_shape=action_space.shape,
        action_low=action_space.low.reshape(-1).tolist(),
        action_high=action_space.high.reshape(-1).tolist(),
        has_rewards=True,
        provenance={"source": "minari"},
    )


def spec_from_minari(
    dataset: Any, task: str | None = None, env_id: str | None = None
) -> DatasetSpec:
    """Our `DatasetSpec` for a Minari dataset (see the module docstring for what is kept).

    A dataset we exported carries our spec (``cvl_spec``): it is restored (``task`` and
    ``env_id`` still override), after checking that it describes the same spaces.
    """
    where = f"Minari dataset {dataset.spec.dataset_id!r}"
    built = _spec_from_spaces(dataset, where, task, env_id)
    metadata = dict(dataset.storage.read_raw_metadata(dataset.spec.data_path))
    stored = metadata.pop(CVL_SPEC_KEY, None)
    spec = built
    if stored is not None:
        label = f"{where} (metadata '{CVL_SPEC_KEY}')"
        spec = DatasetSpec.from_json(json.loads(stored), where=label)
        same = ("obs_shape", "obs_dtype", "action_shape")
        differ = [f for f in same if getattr(spec, f) != getattr(built, f)]
        if differ:
            raise DatasetError(f"{label}: {differ} disagree with the dataset's spaces")
        spec = dataclasses.replace(spec, task=task or spec.task, env_id=env_id or spec.env_id)
    recorded = {k: v for k, v in metadata.items() if k not in COUNTER_KEYS}
    return dataclasses.replace(spec, provenance={**spec.provenance, "minari": recorded})


def _episode_seeds(dataset: Any) -> list[int | None]:
    seeds = []
    for metadata in dataset.storage.get_episode_metadata(dataset.episode_indices):
        seed = metadata.get("seed")
        seeds.append(None if seed is None else int(seed))
    return seeds


def _has_infos(dataset: Any) -> bool:
    """Whether the dataset recorded per-step infos (Minari records them for all or none)."""
    first = next(iter(dataset.iterate_episodes()), None)
    return bool(first is not None and first.infos)


def _write_episodes(writer: DatasetWriter, dataset: Any, where: str) -> None:
    """Stream every episode into ``writer``."""
    for index, episode in zip(dataset.episode_indices, dataset.iterate_episodes(), strict=True):
        observations = episode.observations
        if not isinstance(observations, np.ndarray) or len(observations) != len(episode) + 1:
            raise DatasetError(
                f"{where} episode {index} (field 'observations'): expected {len(episode) + 1} "
                f"observations (T + 1) for {len(episode)} steps"
            )
        try:
            writer.add_episode(
                observations,
                episode.actions,
                episode.rewards if writer.spec.has_rewards else None,
                terminated=episode.terminations,
                truncated=episode.truncations,
            )
        except DatasetError as error:
            raise DatasetError(f"{where} episode {index}: {error}") from None


def import_minari(
    source: str | os.PathLike[str] | Any,
    path: str | os.PathLike[str],
    task: str | None = None,
    env_id: str | None = None,
    durable: bool = True,
) -> Path:
    """Write the Minari dataset ``source`` (id, folder or `MinariDataset`) as our dataset ``path``.

    Args:
        source: a Minari dataset id (local), a Minari dataset folder, or a loaded `MinariDataset`.
        path: the new dataset folder (must not exist).
        task: task name; default: the env spec's ``env_name`` argument (Meta-World), else its id.
        env_id: environment id; default: the env spec's id.
        durable: fsync as the writer commits (see `DatasetWriter`).

    Returns:
        ``path``. On any error nothing is left at ``path`` or ``<path>.partial``.
    """
    dataset = source if hasattr(source, "iterate_episodes") else load_minari(source)
    where = f"Minari dataset {dataset.spec.dataset_id!r}"
    spec = spec_from_minari(dataset, task=task, env_id=env_id)
    seeds = _episode_seeds(dataset)
    extra = {"infos_dropped": _has_infos(dataset)}
    if any(seed is not None for seed in seeds):
        extra["episode_seeds"] = seeds
    minari_meta = {**spec.provenance["minari"], **extra}
    spec = dataclasses.replace(spec, provenance={**spec.provenance, "minari": minari_meta})
    path = Path(path)
    started = not partial_path(path).exists()
    try:
        with DatasetWriter(path, spec, durable=durable) as writer:
            _write_episodes(writer, dataset, where)
    except BaseException:
        if started:
            shutil.rmtree(partial_path(path), ignore_errors=True)
        raise
    return path
