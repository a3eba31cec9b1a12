"""Shared test setup: headless EGL rendering, one torch thread per test process, no
on-disk Hypothesis database (tests write nothing outside tmp_path).

Pants runs each test file in its own process, two at a time, so every file is independent.
"""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import torch
from hypothesis import settings

torch.set_num_threads(1)

settings.register_profile("cvl-eval", database=None, deadline=None)
settings.load_profile("cvl-eval")
