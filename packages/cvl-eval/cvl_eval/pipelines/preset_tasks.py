"""The task lists of the paper presets (`cvl_eval.pipelines.paper_presets`), short names; the
presets make them canonical."""

from __future__ import annotations

__all__ = [
    "PIXEL_TASKS",
    "PRETRAINING_TASKS",
    "PRETRAINING_TASKS_CPU",
    "REPLAY_TASKS",
]

PRETRAINING_TASKS: tuple[str, ...] = (
    "drawer-open",
    "door-open",
    "window-open",
    "faucet-open",
    "button-press",
    "handle-press",
    "plate-slide",
    "coffee-push",
    "push",
    "reach",
)
"""The 10 tasks of the pretraining experiment (each has related tasks in its domain)."""

PIXEL_TASKS: tuple[str, ...] = ("door-close", "door-open", "drawer-close", "drawer-open")
"""The paper's four image-based tasks (table 4)."""

REPLAY_TASKS: tuple[str, ...] = ("drawer-open", "drawer-close", "reach", "button-press-topdown")
"""The SAC-replay preset's tasks: drawer-open, the task of the paper's table 3 (at the preset's
settings SAC reaches a return of ~2580 in 100k frames and never succeeds), and drawer-close, reach
and button-press-topdown, which SAC learns within 100k frames (every one of the last 20 episodes
succeeds; docs/results.md, "SAC replay data")."""

PRETRAINING_TASKS_CPU: tuple[str, ...] = ("drawer-open", "door-open", "faucet-open")
"""The pretraining preset's default tasks: the suite's tasks with a default mixture
(`cvl_eval.datagen.mixed_suite`) and related tasks in their domain (drawer-close; door-close,
door-lock, door-unlock; faucet-close)."""
