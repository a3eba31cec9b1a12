"""Shared test setup: headless EGL rendering, one torch thread per test process, no
on-disk Hypothesis database (tests write nothing outside tmp_path).

Pants runs each test file in its own process, two at a time, so every file is independent.
"""

import pytest
import torch
from hypothesis import settings

import cvl_eval.envs  # noqa: F401 - chooses headless EGL (MUJOCO_GL) before MuJoCo is imported

torch.set_num_threads(1)

settings.register_profile("cvl-eval", database=None, deadline=None)
settings.load_profile("cvl-eval")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    """A data root with two related tasks' tiny noisy-expert datasets: reach-v3, reach-wall-v3."""
    from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted

    root = tmp_path_factory.mktemp("data")
    for task in ("reach", "reach-wall"):
        config = ScriptedConfig(task, num_episodes=2, noise_sigma=0.3, max_steps=20)
        generate_scripted(root / f"{task}-v3", config, progress=False, durable=False)
    return root


def cvl_eval_cli(*args, cwd=None, env=None, timeout=300):
    """``python -m cvl_eval <args>`` in a fresh process (what the ``cvl-*`` scripts run)."""
    import os
    import subprocess
    import sys

    base = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
    base.pop("CVL_DEBUG", None)
    command = [sys.executable, "-m", "cvl_eval", *map(str, args)]
    return subprocess.run(
        command, env=env or base, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def one_error_line(done, *fragments):
    """The one ``error:`` line of a failed command (exit 2, no traceback), with ``fragments``."""
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


class Crash(Exception):
    """Stands in for a killed process (`crash_at`)."""


@pytest.fixture
def crash_at():
    """``crash_at(e)``: an ``on_episode`` hook of the dataset generators that raises `Crash` once
    episode ``e`` is committed; ``crash_at.error`` is the exception type to expect."""

    def hook(episode):
        def on_episode(e, _):
            if e == episode:
                raise Crash(e)

        return on_episode

    hook.error = Crash
    return hook
