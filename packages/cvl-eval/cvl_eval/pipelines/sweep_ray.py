"""A sweep's runs as Ray tasks (``sweep --backend ray``), on a local instance or a cluster.

Each run is one Ray task (`_train_run`) that reserves ``num_cpus`` / ``num_gpus`` of the cluster
and trains the run exactly as the local backend does: in a fresh child process
(`cvl_eval.pipelines.sweep_worker.train_in_child`, started as ``python -m``; ``resume=True``,
output in the run's ``train.log``, the error line in its ``error.json``). The child dies with the Ray worker that
started it (SIGTERM through ``PR_SET_PDEATHSIG``: it checkpoints and stops), so a cancelled task
or a killed sweep leaves a checkpoint to resume from and no orphan training.

Where runs live: the run folders (and the datasets) must be on storage every node reaches at the
same path (a shared filesystem such as NFS); the sweep passes them as absolute paths. Every
node needs the cvl packages installed (``pip install 'cvl-eval[ray]'``); a local instance that
the sweep starts itself gets the driver's ``sys.path``.

Ray is an optional dependency (the ``ray`` extra of cvl-eval), imported only here.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from cvl_eval.errors import ConfigError
from cvl_eval.training.config import TrainConfig

__all__ = ["RayBackend", "import_ray"]

_STOP_TIMEOUT_S = 120.0
"""How long an interrupted sweep waits for a cancelled run to checkpoint and stop."""


def import_ray() -> Any:
    """The ``ray`` module, or a `ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--backend ray needs Ray: pip install 'cvl-eval[ray]' (or 'ray>=2.9')"
        ) from None
    return ray


def _train_run(config: TrainConfig, log_path: str) -> int:
    """Ray task: train ``config`` in a child interpreter (``python -m
    cvl_eval.pipelines.sweep_worker``, not a multiprocessing child, which would re-import the
    Ray worker's main module); its exit code. A cancelled task (Ray raises KeyboardInterrupt
    here) stops the child gracefully first, so the run keeps a checkpoint."""
    import json
    import subprocess

    from cvl_data.jsonio import to_json_data

    command = [sys.executable, "-m", "cvl_eval.pipelines.sweep_worker"]
    arguments = [json.dumps(to_json_data(config)), log_path, str(os.getpid())]
    child = subprocess.Popen([*command, *arguments], stdin=subprocess.DEVNULL)
    try:
        while child.poll() is None:  # not child.wait(): Ray's cancel must reach this thread
            time.sleep(0.2)
        return child.returncode
    finally:
        if child.poll() is None:
            child.terminate()  # SIGTERM: checkpoint and stop
            try:
                child.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()


class RayBackend:
    """Submits runs as Ray tasks; at most ``max_in_flight`` at once (the sweep's ``workers``).

    ``address`` None starts a local instance with ``workers * num_cpus`` CPUs (and shuts it down
    at the end); ``"auto"`` or ``"ray://host:port"`` connects to a running cluster. A Ray already
    initialised in this process (e.g. by the caller) is used as it is.
    """

    def __init__(
        self,
        address: str | None,
        num_cpus: float,
        num_gpus: float,
        max_in_flight: int,
    ) -> None:
        self.ray = import_ray()
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.max_in_flight = max_in_flight
        self._started = False
        self._task: Any = None
        self._stopping: list[str] = []

    def __enter__(self) -> RayBackend:
        ray = self.ray
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not ray.is_initialized():
            sigterm = signal.getsignal(signal.SIGTERM)
            if self.address is None:
                # Ray starts its workers at niceness 15: next to other busy processes a run then
                # starves (importing torch took 98 s instead of 4.5 s beside a 2-process sweep
                # on 2 cores). The runs are this instance's only work, so they run at 0.
                os.environ.setdefault("RAY_worker_niceness", "0")
                ray.init(
                    num_cpus=max(1, round(self.max_in_flight * self.num_cpus)),
                    num_gpus=self.num_gpus * self.max_in_flight if self.num_gpus else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}},
                )
            else:
                ray.init(address=self.address, log_to_driver=False)
            self._started = True
            _restore_sigterm(sigterm)
        self._task = ray.remote(_train_run).options(
            num_cpus=self.num_cpus, num_gpus=self.num_gpus, name="cvl-train"
        )
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._started:
            self.ray.shutdown()
        _wait_until_unlocked(self._stopping, _STOP_TIMEOUT_S)

    def run(
        self,
        runs: list[tuple[TrainConfig, str]],
        on_done: Callable[[int, int | None, str | None], None],
    ) -> None:
        """Train ``runs`` (config, log path); ``on_done(index, exitcode, error)`` as each ends
        (exit code None and Ray's error line when the task itself failed, e.g. its node died).
        On an interruption the tasks in flight are cancelled; their children checkpoint before
        they stop."""
        ray = self.ray
        queue = list(enumerate(runs))
        in_flight: dict[Any, int] = {}
        try:
            while queue or in_flight:
                while queue and len(in_flight) < self.max_in_flight:
                    index, (config, log_path) = queue.pop(0)
                    in_flight[self._task.remote(config, log_path)] = index
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    index = in_flight.pop(ref)
                    try:
                        on_done(index, int(ray.get(ref)), None)
                    except ray.exceptions.RayError as error:  # the task, not the run, failed
                        on_done(index, None, f"{type(error).__name__}: {str(error)[-500:]}")
        finally:
            if in_flight:  # interrupted: cancel; each run checkpoints, then its lock is free
                for ref in in_flight:
                    ray.cancel(ref)
                ray.wait(list(in_flight), num_returns=len(in_flight), timeout=_STOP_TIMEOUT_S)
                self._stopping = [runs[index][0].out_dir for index in in_flight.values()]


def _restore_sigterm(handler: Any) -> None:
    """Put back the SIGTERM handler that was in place before ``ray.init``. Ray's core worker
    installs a C-level failure handler for SIGTERM that aborts the process (exit -6), so
    without this a SIGTERM to the sweep skipped its ``finally``: no cancellation, no wait for
    the runs to checkpoint and stop, and a sweep restarted at once found their folders in use."""
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _wait_until_unlocked(run_dirs: list[str], timeout: float) -> None:
    """Wait until no process holds the run folders' locks (their runs have stopped), so that a
    sweep started right after this one does not find them in use; warns after ``timeout``."""
    from cvl_eval.runs.lock import check_not_locked

    deadline = time.monotonic() + timeout
    for run_dir in run_dirs:
        while True:
            try:
                check_not_locked(run_dir)
                break
            except ConfigError as error:
                if time.monotonic() > deadline:
                    print(f"warning: {error}", file=sys.stderr)
                    break
                time.sleep(0.2)
