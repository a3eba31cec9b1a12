"""Shared test setup: headless EGL rendering, one torch thread per test process, no
on-disk Hypothesis database (tests write nothing outside tmp_path).

Pants runs each test file in its own process, two at a time, so every file is independent.
"""

import torch
from hypothesis import settings

import cvl_eval.envs  # noqa: F401 - chooses headless EGL (MUJOCO_GL) before MuJoCo is imported

torch.set_num_threads(1)

settings.register_profile("cvl-eval", database=None, deadline=None)
settings.load_profile("cvl-eval")
