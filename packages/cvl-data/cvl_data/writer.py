"""`DatasetWriter`: stream episodes to disk; finish atomically; resume after a crash.

While writing, data lives in ``<path>.partial/``: one `.npy` per field with a fixed-size
placeholder header (rows appended in place, never moved) and ``progress.json``, rewritten
atomically after every committed episode. ``progress.json`` also records, per field, the sha256
of the committed rows as they were written (``data_sha256``). On resume, bytes past the last
committed episode are truncated away and the committed rows are hashed again and compared with
that record, so a byte changed in a ``.partial`` between two runs is refused (a `DatasetError`
naming the file) instead of being sealed under fresh checksums. `finish` writes the final
headers and ``meta.json`` (with checksums), then renames the folder to ``<path>``: a folder at
``<path>`` is always a whole dataset.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Self

import numpy as np

from cvl_data.errors import DatasetError
from cvl_data.jsonio import fsync_dir, open_no_follow, write_json_atomic
from cvl_data.layout import (
    HEADER_BYTES,
    META_FILE,
    PARTIAL_FORMAT,
    PROGRESS_FILE,
    SCHEMA_VERSION,
    build_meta,
    field_layouts,
    file_sha256,
    npy_header,
    partial_path,
)
from cvl_data.spec import DatasetSpec
from cvl_data.validate import coerce_episode


def _same_except_provenance(a: DatasetSpec, b: DatasetSpec) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(DatasetSpec)
        if f.name != "provenance" and getattr(a, f.name) != getattr(b, f.name)
    ]


def _json_info(info: dict[str, Any] | None, where: Path, episode: int) -> dict[str, Any]:
    """``info`` as a plain JSON dict (a copy), or a `DatasetError` naming the episode."""
    if info is None:
        return {}
    if not isinstance(info, dict):
        raise DatasetError(f"{where}: episode {episode} info must be a dict, got {type(info)}")
    try:
        return json.loads(json.dumps(info, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise DatasetError(f"{where}: episode {episode} info is not JSON-able ({error})") from None


class DatasetWriter:
    """Append episodes to a new dataset folder; usable as a context manager.

    >>> with DatasetWriter(path, spec) as writer:          # doctest: +SKIP
    ...     writer.add_episode(obs, actions, rewards, terminated=term, truncated=trunc)

    A clean ``with`` exit calls `finish`; an exception leaves ``<path>.partial/`` with every
    episode committed so far. ``DatasetWriter(path, spec, resume=True)`` continues it (the spec
    must match except for ``provenance``; the partial's spec is kept). With ``resume=True`` and
    nothing to resume, a new dataset is started.

    Every committed episode is flushed, so a killed process loses at most the episode being
    written. With ``durable=True`` (default) files are also fsynced, so committed episodes
    survive an OS crash or power loss; ``durable=False`` skips the fsyncs (faster, e.g. tests).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        spec: DatasetSpec,
        resume: bool = False,
        durable: bool = True,
    ):
        self.path = Path(path)
        self.durable = durable
        self.spec = spec
        self._partial = partial_path(self.path)
        self._layouts = field_layouts(spec)
        self._files: dict[str, BinaryIO] = {}
        self._hashes: dict[str, Any] = {}  # sha256 of each field's committed rows
        self._num_episodes = 0
        self._num_steps = 0
        self._episode_info: list[dict[str, Any]] = []
        self._finished = False
        if self.path.exists():
            raise DatasetError(f"{self.path}: already exists; a writer never overwrites a dataset")
        if self._partial.exists():
            if not resume:
                raise DatasetError(
                    f"{self._partial}: an unfinished dataset is here; pass resume=True to "
                    "continue it, or delete the folder to start again"
                )
            self._resume()
        else:
            self._start()

    # ------------------------------------------------------------------ state
    @property
    def num_episodes(self) -> int:
        """Episodes committed so far (> 0 after resuming a partial dataset)."""
        return self._num_episodes

    @property
    def num_steps(self) -> int:
        """Steps (transitions) committed so far."""
        return self._num_steps

    def _committed_bytes(self, name: str) -> int:
        layout = self._layouts[name]
        return HEADER_BYTES + layout.rows(self._num_steps, self._num_episodes) * layout.row_bytes

    def _progress(self) -> dict[str, Any]:
        return {
            "format": PARTIAL_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "spec": self.spec.to_json(),
            "num_episodes": self._num_episodes,
            "num_steps": self._num_steps,
            "episode_info": self._episode_info,
            "data_sha256": {name: h.hexdigest() for name, h in self._hashes.items()},
        }

    # ------------------------------------------------------------ start/resume
    def _start(self) -> None:
        """Build the empty partial under a scratch name, then rename it into place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self._partial.with_name(f"{self._partial.name}.init-{os.getpid()}")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        for name, layout in self._layouts.items():
            rows = np.zeros(1, np.int64).tobytes() if name == "episode_offsets" else b""
            self._hashes[name] = hashlib.sha256(rows)
            with open(scratch / layout.file, "wb") as handle:
                handle.write(npy_header(layout.dtype, layout.shape(0, 0)) + rows)
                self._sync(handle)
        write_json_atomic(
            scratch / PROGRESS_FILE, self._progress(), self.durable, True, sort_keys=True
        )
        os.rename(scratch, self._partial)
        self._sync_dir(self._partial.parent)
        self._open_files()

    def _resume(self) -> None:
        progress_file = self._partial / PROGRESS_FILE
        meta_file = self._partial / META_FILE
        source = progress_file if progress_file.exists() else meta_file
        try:
            progress = json.loads(source.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DatasetError(
                f"{progress_file}: missing; cannot resume this partial dataset"
            ) from None
        except json.JSONDecodeError as error:
            raise DatasetError(f"{source}: not valid JSON ({error})") from None
        if progress.get("schema_version") != SCHEMA_VERSION:
            raise DatasetError(
                f"{source} (field 'schema_version'): {progress.get('schema_version')!r}, "
                f"this writer resumes version {SCHEMA_VERSION}"
            )
        stored = DatasetSpec.from_json(progress.get("spec"), where=f"{source} (field 'spec')")
        differ = _same_except_provenance(stored, self.spec)
        if differ:
            raise DatasetError(
                f"{source} (field 'spec'): the partial dataset's spec differs in {differ}; "
                "resume with the same spec"
            )
        self.spec = stored
        self._layouts = field_layouts(stored)
        self._num_episodes = int(progress["num_episodes"])
        self._num_steps = int(progress["num_steps"])
        self._episode_info = list(progress.get("episode_info") or [{}] * self._num_episodes)
        if len(self._episode_info) != self._num_episodes:
            raise DatasetError(
                f"{source} (field 'episode_info'): {len(self._episode_info)} entries for "
                f"{self._num_episodes} committed episodes; the partial dataset is corrupt"
            )
        for name, layout in self._layouts.items():
            file = self._partial / layout.file
            need = self._committed_bytes(name)
            size = file.stat().st_size if file.exists() else -1
            if size < need:
                raise DatasetError(
                    f"{file} (field '{name}'): {size} bytes, shorter than the {need} bytes of its "
                    f"{self._num_episodes} committed episodes; the partial dataset is corrupt"
                )
        self._check_committed(progress, source)
        self._open_files()
        if source == meta_file:  # finished but not yet renamed: keep it resumable
            write_json_atomic(progress_file, self._progress(), self.durable, True, sort_keys=True)
            meta_file.unlink()

    def _check_committed(self, progress: dict[str, Any], source: Path) -> None:
        """Hash the committed rows of every field again and compare them with the record made
        as they were written (``data_sha256``; for a finished partial, the field files against
        ``meta.json``): a changed byte is refused, never sealed under new checksums."""
        if source.name == META_FILE:
            for name, entry in (progress.get("fields") or {}).items():
                file = self._partial / str(entry.get("file"))
                if file_sha256(file) != entry.get("sha256"):
                    raise DatasetError(
                        f"{file} (field '{name}'): checksum mismatch with {source}; the partial "
                        f"dataset is corrupt: delete {self._partial} to start again"
                    )
        recorded = progress.get("data_sha256") if source.name != META_FILE else None
        if source.name != META_FILE and not isinstance(recorded, dict):
            raise DatasetError(
                f"{source} (field 'data_sha256'): missing (written by an older cvl-data); the "
                f"committed episodes cannot be checked: delete {self._partial} to start again"
            )
        for name, layout in self._layouts.items():
            file = self._partial / layout.file
            digest = hashlib.sha256()
            with open(file, "rb") as handle:
                handle.seek(HEADER_BYTES)
                left = self._committed_bytes(name) - HEADER_BYTES
                while left > 0:
                    chunk = handle.read(min(left, 1 << 20))
                    digest.update(chunk)
                    left -= len(chunk)
            if recorded is not None and recorded.get(name) != digest.hexdigest():
                raise DatasetError(
                    f"{file} (field '{name}'): its {self._num_episodes} committed episodes differ "
                    f"from the checksum recorded as they were written ({source}); the partial "
                    f"dataset is corrupt: delete {self._partial} to start again"
                )
            self._hashes[name] = digest

    def _open_files(self) -> None:
        for name, layout in self._layouts.items():
            fd = open_no_follow(self._partial / layout.file, os.O_RDWR)
            handle = os.fdopen(fd, "r+b")  # noqa: SIM115 (kept open)
            handle.truncate(self._committed_bytes(name))
            handle.seek(0, os.SEEK_END)
            self._files[name] = handle

    def _sync(self, handle: BinaryIO) -> None:
        handle.flush()
        if self.durable:
            os.fsync(handle.fileno())

    def _sync_dir(self, folder: Path) -> None:
        if self.durable:
            fsync_dir(folder)

    # ----------------------------------------------------------------- writing
    def add_episode(
        self,
        observations: object,
        actions: object,
        rewards: object | None = None,
        terminated: object = None,
        truncated: object = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Append and commit one episode of ``T >= 1`` steps.

        Args:
            observations: ``(T + 1, *obs_shape)``: ``s_0 .. s_T``, the final next-observation
                included.
            actions: ``(T, *action_shape)``, inside the spec's bounds; stored as float32.
            rewards: ``(T,)`` float rewards ``r_0 .. r_{T-1}``; None iff ``spec.has_rewards`` is
                False.
            terminated: ``(T,)`` booleans (required).
            truncated: ``(T,)`` booleans (required).
            info: optional JSON-able facts about the episode (e.g. which behaviour produced
                it, whether it succeeded); kept in ``meta.json``'s ``episode_info`` list, read
                back as `Dataset.episode_info`.
        """
        if self._finished or not self._files:
            raise DatasetError(f"{self._partial}: writer is closed")
        info = _json_info(info, self._partial, self._num_episodes)
        arrays = coerce_episode(self.spec, observations, actions, rewards, terminated, truncated)
        T = len(arrays["actions"])
        arrays["episode_offsets"] = np.array([self._num_steps + T], dtype=np.int64)
        rows = {name: arrays[name].tobytes() for name in self._files}
        try:
            for name, handle in self._files.items():
                handle.write(rows[name])
            for handle in self._files.values():
                self._sync(handle)
        except BaseException:
            self._rollback()
            raise
        for name, data in rows.items():
            self._hashes[name].update(data)
        self._num_episodes += 1
        self._num_steps += T
        self._episode_info.append(info)
        # Data is synced before the journal names it; the journal's own rename need not be.
        write_json_atomic(
            self._partial / PROGRESS_FILE, self._progress(), self.durable, sort_keys=True
        )

    def _rollback(self) -> None:
        """Drop bytes of an episode that failed half-way (best effort; resume truncates too)."""
        for name, handle in self._files.items():
            try:
                handle.flush()
                handle.truncate(self._committed_bytes(name))
                handle.seek(0, os.SEEK_END)
            except OSError:
                pass

    def finish(self) -> Path:
        """Write final headers and ``meta.json`` (with checksums), then rename into place."""
        if self._finished:
            return self.path
        if self._num_episodes == 0:
            raise DatasetError(
                f"{self._partial}: no episodes were added; refusing an empty dataset"
            )
        for name, handle in self._files.items():
            layout = self._layouts[name]
            handle.seek(0)
            handle.write(
                npy_header(layout.dtype, layout.shape(self._num_steps, self._num_episodes))
            )
            self._sync(handle)
        self.close()
        created = datetime.now(UTC).isoformat(timespec="seconds")
        meta = build_meta(self.spec, self._num_steps, self._num_episodes, self._partial, created)
        if any(self._episode_info):
            meta["episode_info"] = self._episode_info
        write_json_atomic(self._partial / META_FILE, meta, self.durable, True, sort_keys=True)
        (self._partial / PROGRESS_FILE).unlink()
        self._sync_dir(self._partial)
        if self.path.exists():
            raise DatasetError(
                f"{self.path}: appeared while writing; finished data left in {self._partial}"
            )
        os.rename(self._partial, self.path)
        self._sync_dir(self.path.parent)
        self._finished = True
        return self.path

    def close(self) -> None:
        """Close the files without finishing (the partial dataset stays resumable)."""
        files, self._files = self._files, {}
        for handle in files.values():
            handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.close()

    def __del__(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.close()
