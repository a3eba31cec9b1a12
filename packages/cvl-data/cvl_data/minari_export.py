"""`export_minari`: a cvl dataset -> a Minari dataset (needs ``pip install cvl-data[minari]``).

Each of our episodes becomes one Minari episode (HDF5 storage, frames stored raw: no JPEG),
observations ``T + 1`` rows, actions float32, rewards float64 (Minari's usual), terminations
and truncations as stored. Spaces: the ones recorded at import (``provenance["minari"]``)
where they still describe the data, else Boxes built from our spec (observations unbounded, or
``[0, 255]`` uint8 for pixels; actions with the spec's bounds). The env spec: the recorded one,
else ``gymnasium.spec(env_id)`` when that is registered and serialisable, else an `EnvSpec` with
our ``env_id``, no entry point and, for a task other than the env id, ``kwargs={"env_name": task}``
(Meta-World's convention: Meta-World registers its envs with lambdas, which gymnasium cannot
serialise). Our whole spec goes into the metadata as ``cvl_spec`` (JSON text), so
`import_minari` restores it; a reward-free dataset is written with zero rewards and comes back
reward-free.

The dataset is built in a hidden temporary folder next to its destination and renamed into
place, so a Minari dataset folder is always complete.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.minari_import import COUNTER_KEYS, CVL_SPEC_KEY, require_minari
from cvl_data.reader import open_dataset
from cvl_data.source import EpisodeSource
from cvl_data.spec import DatasetSpec

# Keys Minari sets itself (or we set per export) rather than copying from the recorded metadata.
OWN_KEYS = {
    "dataset_id",
    "observation_space",
    "action_space",
    "env_spec",
    "data_format",
    "jpeg_encoding",
    "minari_version",
    "episode_seeds",
    "infos_dropped",
    *COUNTER_KEYS,
}


def _recorded_space(text: Any, shape: tuple[int, ...], dtype: str) -> Any:
    """The recorded (serialised) Box if it matches ``shape`` and ``dtype``, else None."""
    import gymnasium as gym
    from minari.serialization import deserialize_space

    if not isinstance(text, str):
        return None
    try:
        space = deserialize_space(text)
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(space, gym.spaces.Box) and space.shape == shape and space.dtype == dtype:
        return space
    return None


def minari_spaces(spec: DatasetSpec) -> tuple[Any, Any]:
    """(observation space, action space) for ``spec`` (see the module docstring)."""
    import gymnasium as gym

    recorded = spec.provenance.get("minari", {})
    obs = _recorded_space(recorded.get("observation_space"), spec.obs_shape, spec.obs_dtype)
    if obs is None:
        low, high = (0, 255) if spec.obs_kind == "pixels" else (-np.inf, np.inf)
        obs = gym.spaces.Box(low, high, spec.obs_shape, np.dtype(spec.obs_dtype))
    low, high = (b.astype(np.float32) for b in spec.action_bounds())
    action = _recorded_space(recorded.get("action_space"), spec.action_shape, "float32")
    if action is None or not (
        np.array_equal(action.low, low) and np.array_equal(action.high, high)
    ):
        action = gym.spaces.Box(low, high, spec.action_shape, np.float32)
    return obs, action


def minari_env_spec(spec: DatasetSpec) -> str:
    """The env spec JSON text for ``spec`` (see the module docstring)."""
    import gymnasium as gym
    from gymnasium.envs.registration import EnvSpec

    recorded = spec.provenance.get("minari", {}).get("env_spec")
    if isinstance(recorded, str):
        return recorded
    if spec.task == spec.env_id:
        try:
            return gym.spec(spec.env_id).to_json()
        except (gym.error.Error, ValueError, TypeError):
            pass
    kwargs = {} if spec.task == spec.env_id else {"env_name": spec.task}
    return EnvSpec(id=spec.env_id, entry_point=None, kwargs=kwargs).to_json()


def minari_metadata(source: EpisodeSource, dataset_id: str) -> dict[str, Any]:
    """Metadata for `MinariStorage.update_metadata`: recorded fields, ours, and the env spec."""
    spec = source.spec
    recorded = spec.provenance.get("minari", {})
    metadata = {k: v for k, v in recorded.items() if k not in OWN_KEYS}
    for key in ("author", "author_email"):
        if key in metadata:
            metadata[key] = set(metadata[key])
    metadata.setdefault("algorithm_name", str(spec.provenance.get("generator", "cvl-data")))
    metadata.setdefault("description", f"Exported by cvl-data from task {spec.task}")
    ours = {k: v for k, v in spec.provenance.items() if k != "minari"}
    own_spec = DatasetSpec.from_json({**spec.to_json(), "provenance": ours})
    metadata[CVL_SPEC_KEY] = json.dumps(own_spec.to_json(), sort_keys=True)
    metadata["dataset_id"] = dataset_id
    metadata["minari_version"] = require_minari().__version__
    metadata["env_spec"] = minari_env_spec(spec)
    return metadata


def _episode_buffers(source: EpisodeSource, seeds: list[Any] | None) -> Any:
    """One `EpisodeBuffer` per episode, built lazily from the memory maps."""
    from minari.data_collector import EpisodeBuffer

    offsets = source.episode_offsets
    for e in range(source.num_episodes):
        start, stop = int(offsets[e]), int(offsets[e + 1])
        rewards = source.rewards[start:stop] if source.rewards is not None else None
        yield EpisodeBuffer(
            id=e,
            seed=seeds[e] if seeds is not None else None,
            observations=np.asarray(source.observations[start + e : stop + e + 1]),
            actions=np.asarray(source.actions[start:stop], dtype=np.float32),
            rewards=np.zeros(stop - start) if rewards is None else np.asarray(rewards, np.float64),
            terminations=np.asarray(source.terminated[start:stop]),
            truncations=np.asarray(source.truncated[start:stop]),
        )


def _fill(folder: Path, source: EpisodeSource, dataset_id: str) -> None:
    """Write the whole Minari dataset under ``folder`` (its ``data/`` subfolder)."""
    minari = require_minari()
    from minari.dataset.minari_storage import MinariStorage

    obs_space, action_space = minari_spaces(source.spec)
    storage = MinariStorage.new(
        folder / "data", obs_space, action_space, data_format="hdf5", jpeg_encoding=False
    )
    storage.update_metadata(minari_metadata(source, dataset_id))
    seeds = source.spec.provenance.get("minari", {}).get("episode_seeds")
    if not isinstance(seeds, list) or len(seeds) != source.num_episodes:
        seeds = None
    for buffer in _episode_buffers(source, seeds):
        storage.update_episodes([buffer])
    storage.update_episode_metadata(storage.apply(minari.EpisodeMetadataCallback()))


def export_minari(source: EpisodeSource | str | os.PathLike[str], dataset_id: str) -> Path:
    """Write our dataset ``source`` (a folder or an opened dataset) as Minari's ``dataset_id``.

    The dataset lands in Minari's local root (``MINARI_DATASETS_PATH``, default
    ``~/.minari/datasets``) at ``<root>/<dataset_id>``, where ``minari.load_dataset(dataset_id)``
    finds it. Refuses an id Minari cannot parse and an id that already exists.

    Returns:
        The new dataset's folder.
    """
    minari = require_minari()
    from minari.dataset.minari_dataset import parse_dataset_id
    from minari.namespace import create_namespace, list_local_namespaces
    from minari.storage.datasets_root_dir import get_dataset_path

    if not isinstance(source, EpisodeSource):
        source = open_dataset(source)
    try:
        namespace = parse_dataset_id(dataset_id)[0]
    except (ValueError, TypeError) as error:
        raise DatasetError(f"Minari dataset id {dataset_id!r}: {error}") from None
    final = Path(get_dataset_path(dataset_id))
    if final.exists():
        raise DatasetError(f"Minari dataset {dataset_id!r}: {final} already exists")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        _fill(tmp, source, dataset_id)
        if namespace is not None and namespace not in list_local_namespaces():
            create_namespace(namespace)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    minari.load_dataset(dataset_id)  # proves Minari reads what was written
    return final
