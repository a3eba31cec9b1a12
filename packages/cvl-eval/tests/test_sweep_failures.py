"""A sweep's failures are kept, and its workers end with it: a failed run's traceback stays in its
train.log, its error and config in sweep.json / index.json; a killed sweep leaves no worker."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cvl_eval.pipelines.sweep import SweepConfig, sweep
from cvl_eval.runs.lock import LOCK_FILE


def _config(data_root, out, **kw):
    base = dict(
        data_root=str(data_root),
        out_dir=str(out),
        algorithms=("bc",),
        tasks=("reach",),
        seeds=(0,),
        workers=1,
        steps=4,
        hidden=(8, 8),
        batch_size=8,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=5,
        tensorboard=False,
    )
    return SweepConfig(**{**base, **kw})


def test_a_failed_run_keeps_its_traceback_error_and_config(data_root, tmp_path):
    broken = tmp_path / "data"
    shutil.copytree(data_root / "reach-v3", broken / "reach-v3")
    os.truncate(broken / "reach-v3" / "actions.npy", 300)  # meta.json is fine: validation passes
    out = tmp_path / "sweep"
    with pytest.raises(RuntimeError, match="DatasetError.*actions.npy"):
        sweep(_config(broken, out), progress=False)
    run = out / "bc" / "reach-v3" / "seed_0"
    log = (run / "train.log").read_text()
    assert "Traceback (most recent call last)" in log and "DatasetError" in log
    assert "lost sys.stderr" not in log
    for document in ("sweep.json", "index.json"):
        (failed,) = json.loads((out / document).read_text())["failed"]
        assert failed["run"] == str(run) and failed["exitcode"] == 1
        assert failed["error"].startswith("cvl_data.errors.DatasetError: ")
        assert failed["config"]["out_dir"] == str(run) and failed["config"]["algorithm"] == "bc"
        assert failed["log"] == str(run / "train.log")


SWEEP_IN_CHILD = textwrap.dedent(
    """
    import json, sys
    from cvl_eval.pipelines.sweep import SweepConfig, sweep

    sweep(SweepConfig(**json.loads(sys.argv[1])), progress=False)
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_when_the_sweep_is_killed(data_root, tmp_path):
    out = tmp_path / "sweep"
    config = _config(data_root, out, steps=10**7, checkpoint_every=50)
    fields = {k: v for k, v in vars(config).items()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", SWEEP_IN_CHILD, json.dumps(fields)], env=env)
    lock = out / "bc" / "reach-v3" / "seed_0" / LOCK_FILE
    worker = None
    try:
        deadline = time.monotonic() + 300
        while worker is None:
            assert parent.poll() is None and time.monotonic() < deadline
            text = lock.read_text().strip() if lock.exists() else ""
            worker = int(text) if text and int(text) != parent.pid else None
            time.sleep(0.1)
        parent.kill()  # SIGKILL: the sweep cannot stop its children itself
        parent.wait()
        deadline = time.monotonic() + 120
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the worker outlived its sweep"
        assert "stopped" in (lock.parent / "train.log").read_text().lower()
    finally:
        if parent.poll() is None:
            parent.kill()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
