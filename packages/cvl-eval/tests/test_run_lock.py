"""One process per run folder: a second process training into a folder a live run holds is
refused with the holder's PID; the lock goes with the holder, however it ends."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.sweep import SweepConfig, sweep
from cvl_eval.runs.lock import LOCK_FILE, hold_run_lock
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

TRAIN_IN_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    from cvl_eval.training.config import TrainConfig
    from cvl_eval.training.loop import train

    dataset, out, flags = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])

    def wait_for_release(info):  # after the first update: announce, then hold on
        (flags / "started").touch()
        while not (flags / "release").exists():
            time.sleep(0.05)

    config = TrainConfig(dataset=dataset, out_dir=out, algorithm="bc", steps=3, hidden=(8, 8),
                         batch_size=8, eval_every=0, eval_episodes=1, eval_max_steps=5,
                         progress=False, tensorboard=False)
    train(config, callback=wait_for_release)
    """
)

HOLD_IN_CHILD = textwrap.dedent(
    """
    import sys, time
    from cvl_eval.runs.lock import hold_run_lock

    with hold_run_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(600)
    """
)


def _train_config(data_root, out, **kw):
    base = dict(
        dataset=str(data_root / "reach-v3"),
        out_dir=str(out),
        algorithm="bc",
        steps=3,
        hidden=(8, 8),
        batch_size=8,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=5,
        progress=False,
        tensorboard=False,
    )
    return TrainConfig(**{**base, **kw})


def _wait_for(path, process, seconds=300):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture
def holder(tmp_path):
    """``holder(folder)``: a child process holding ``folder``'s lock (killed at the end)."""
    children = []

    def start(folder):
        folder.mkdir(parents=True, exist_ok=True)
        child = subprocess.Popen(
            [sys.executable, "-c", HOLD_IN_CHILD, str(folder)],
            env=ENV,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout.readline().strip() == "held"
        return child

    yield start
    for child in children:
        child.kill()
        child.wait()


def test_a_second_training_process_is_refused_while_the_first_runs(data_root, tmp_path):
    out, flags = tmp_path / "run", tmp_path / "flags"
    flags.mkdir()
    command = [sys.executable, "-c", TRAIN_IN_CHILD, str(data_root / "reach-v3"), str(out), flags]
    first = subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(flags / "started", first)
        assert (out / LOCK_FILE).read_text().strip() == str(first.pid)
        for resume in (True, False):
            with pytest.raises(ConfigError, match=rf"in use.*\(PID {first.pid}, lock file"):
                train(_train_config(data_root, out, resume=resume))
    finally:
        (flags / "release").touch()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    # the first run finished and let go: resuming now reports its results
    assert train(_train_config(data_root, out, resume=True))["steps"] == 3


def test_a_sweep_over_a_held_run_folder_starts_nothing(data_root, tmp_path, holder):
    out = tmp_path / "sweep"
    child = holder(out / "bc" / "reach-v3" / "seed_0")
    config = SweepConfig(
        data_root=str(data_root), out_dir=str(out), algorithms=("bc",), tasks=("reach",), seeds=(0,)
    )
    with pytest.raises(ConfigError, match=f"PID {child.pid}"):
        sweep(config, progress=False)
    assert sorted(p.name for p in (out / "bc" / "reach-v3" / "seed_0").iterdir()) == [LOCK_FILE]


def test_the_lock_dies_with_its_holder(data_root, tmp_path, holder):
    out = tmp_path / "run"
    child = holder(out)
    with pytest.raises(ConfigError, match=f"PID {child.pid}"):
        with hold_run_lock(out):
            pass
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    results = train(_train_config(data_root, out))  # the stale file is no obstacle
    assert results["steps"] == 3
    assert (out / LOCK_FILE).read_text().strip() == str(os.getpid())
