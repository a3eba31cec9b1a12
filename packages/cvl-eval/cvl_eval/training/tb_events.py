"""TensorBoard event files written by the training loop's own thread.

``torch.utils.tensorboard.SummaryWriter`` writes from a background thread: a write that fails
there (a full disk) prints that thread's traceback, then resurfaces later as a bare ``No space
left on device`` naming no file. `EventFile` writes the same records (TFRecord framing, the
``brain.Event:2`` header, scalar summaries; with ``purge_step`` the ``SessionLog.START`` event
that makes TensorBoard drop the steps a resumed run repeats) synchronously, so any `OSError`
reaches the caller at once, naming the event file (`cvl_data.jsonio.naming_path`).
"""

from __future__ import annotations

import itertools
import os
import socket
import time
from pathlib import Path

import tensorboard  # noqa: F401 - the protos below live in it; explicit for Pants
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.record_writer import RecordWriter

from cvl_data.jsonio import naming_path, open_no_follow

__all__ = ["EventFile"]

_COUNTER = itertools.count()


class EventFile:
    """One new ``events.out.tfevents.*`` file in ``folder``; every write happens in the call."""

    def __init__(self, folder: str | os.PathLike[str], purge_step: int | None = None) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = f"{int(time.time())}.{socket.gethostname()}.{os.getpid()}.{next(_COUNTER)}"
        self.path = folder / f"events.out.tfevents.{stamp}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        with naming_path(self.path):
            self._file = os.fdopen(open_no_follow(self.path, flags), "wb")
        self._records = RecordWriter(self._file)
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))
        if purge_step:
            start = SessionLog(status=SessionLog.START)
            self._write(Event(wall_time=time.time(), step=purge_step, session_log=start))

    def add_scalars(self, scalars: dict[str, float], step: int) -> None:
        """One event at ``step`` holding every ``tag: value`` of ``scalars``."""
        if not scalars:
            return
        values = [Summary.Value(tag=tag, simple_value=float(v)) for tag, v in scalars.items()]
        self._write(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))

    def _write(self, event: Event) -> None:
        with naming_path(self.path):
            self._records.write(event.SerializeToString())

    def flush(self) -> None:
        with naming_path(self.path):
            self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            try:
                self.flush()
            finally:
                self._file.close()
