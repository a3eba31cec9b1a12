"""Environments: building them, rendering them, and the scripted experts that score them.

| module | job |
|---|---|
| `make` | `make_env`, `TASK_NAMES` (the 50 Meta-World v3 tasks), `MOUNTAIN_CAR`, names, seeding |
| `metaworld_tasks` | one goal-observable Meta-World task (MT1 goal sets, cached) |
| `pixels` | `OffscreenRenderer` / `PixelObservation`: headless EGL frames, fast mode |
| `experts` | `ScriptedExpert`: Meta-World's scripted policies, batched |
| `expert_scores` | the packaged expert-return table and `normalized_score` |
| `defaults` | per-environment defaults (SAC data collection, learner settings) |

Headless rendering: this is the one place that chooses it. Importing anything under
``cvl_eval.envs`` sets ``MUJOCO_GL=egl`` (and ``PYOPENGL_PLATFORM=egl`` with it) unless the
environment already sets them, before any module here imports MuJoCo. Everything in cvl-eval that
touches MuJoCo does so through this package, and ``experiments/doctor.py`` imports it first.
"""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
if os.environ["MUJOCO_GL"] == "egl":
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
