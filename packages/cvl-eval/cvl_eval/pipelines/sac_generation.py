"""What SAC learned while it generated replay datasets: per-episode return and success against
the frames collected, per task (`cvl_eval.datagen.sac`), as a JSON summary and a PNG.

A replay dataset holds every stage of SAC's learning, so its composition is the learning curve
of the SAC that wrote it. `summarise_sac_generation` reads each generation's ``state.json``
(returns and successes of every episode, `cvl_eval.datagen.sac.checkpoints`) and the dataset's
episode lengths, and reports per task: episodes, frames, success over all episodes and over the
last ``window`` ones, mean return of the first and last ``window`` episodes, and the frame at
which the success rate over the last ``window`` episodes first reached one half (counted once
``window`` episodes exist; None: never).
`plot_sac_generation` draws the rolling return and success against frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.figures import save_figure, use_agg
from cvl_eval.datagen.sac.checkpoints import default_checkpoint_dir, read_state

__all__ = ["plot_sac_generation", "sac_generation_curves", "summarise_sac_generation"]


def sac_generation_curves(dataset_path: str | Path) -> dict[str, np.ndarray]:
    """Per episode of the SAC generation that wrote ``dataset_path``: ``frames`` (collected by its
    end), ``returns`` and ``successes``."""
    from cvl_data import open_dataset

    path = Path(dataset_path)
    state = read_state(default_checkpoint_dir(path))
    if state is None:
        raise FileNotFoundError(f"{path}: no SAC generation state beside it (not a sac dataset)")
    offsets = np.asarray(open_dataset(path).episode_offsets)
    returns = np.asarray(state["returns"], dtype=np.float64)
    if len(offsets) - 1 != len(returns):
        raise ValueError(
            f"{path}: {len(offsets) - 1} episodes on disk but {len(returns)} in the generation's "
            "state; finish the generation first"
        )
    successes = np.asarray(state["successes"], dtype=np.float64)
    return {"frames": offsets[1:].astype(np.int64), "returns": returns, "successes": successes}


def _rolling(values: np.ndarray, window: int) -> np.ndarray:
    """Mean over the last ``window`` values at each index (fewer at the start)."""
    sums = np.cumsum(np.concatenate([[0.0], values]))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(ends - window, 0)
    return (sums[ends] - sums[starts]) / (ends - starts)


def _summary(curves: Mapping[str, np.ndarray], window: int) -> dict[str, Any]:
    frames, returns, successes = curves["frames"], curves["returns"], curves["successes"]
    rolling = _rolling(successes, window)
    full = np.arange(len(rolling)) >= min(window, len(rolling)) - 1  # a whole window behind it
    reached = np.flatnonzero((rolling >= 0.5) & full)
    return {
        "episodes": len(returns),
        "frames": int(frames[-1]),
        "success_rate": float(successes.mean()),
        f"success_rate_last_{window}": float(successes[-window:].mean()),
        f"mean_return_first_{window}": float(returns[:window].mean()),
        f"mean_return_last_{window}": float(returns[-window:].mean()),
        "frames_to_half_success": int(frames[reached[0]]) if len(reached) else None,
    }


def summarise_sac_generation(
    datasets: Mapping[str, str | Path], out_dir: str | Path, window: int = 20
) -> dict[str, Any]:
    """``datasets``: task -> SAC replay dataset. Writes ``sac_generation.json`` (per task,
    `_summary`) and ``sac_generation.png`` in ``out_dir``; returns the summary."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    curves = {task: sac_generation_curves(path) for task, path in datasets.items()}
    summary = {
        "window": window,
        "tasks": {task: _summary(c, window) for task, c in curves.items()},
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "sac_generation.json", summary)
    plot_sac_generation(curves, out / "sac_generation.png", window)
    return summary


def plot_sac_generation(
    curves: Mapping[str, Mapping[str, np.ndarray]], path: str | Path, window: int
) -> Path:
    """Rolling return and success (over ``window`` episodes) against frames, a line per task."""
    use_agg()
    import matplotlib.pyplot as plt

    fig, (ax_return, ax_success) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for task, c in curves.items():
        ax_return.plot(c["frames"], _rolling(c["returns"], window), label=task)
        ax_success.plot(c["frames"], _rolling(c["successes"], window), label=task)
    ax_return.set(xlabel="frames collected", ylabel=f"episode return ({window}-episode mean)")
    ax_success.set(xlabel="frames collected", ylabel=f"success rate ({window}-episode mean)")
    ax_success.set_ylim(-0.02, 1.02)
    for ax in (ax_return, ax_success):
        ax.grid(alpha=0.3)
    ax_success.legend(loc="best", fontsize=8)
    fig.suptitle("SAC while it generated the replay datasets")
    return save_figure(fig, path, tight=False)
