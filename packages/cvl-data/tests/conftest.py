"""Shared test setup: one torch thread per test process (Pants runs test files in parallel)."""

import os

import torch

os.environ.setdefault("MUJOCO_GL", "egl")
torch.set_num_threads(1)
