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
