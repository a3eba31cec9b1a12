"""Figures as files: matplotlib's Agg backend chosen at plot time, colours, tick labels, saving.

Importing cvl-eval's analysis code leaves matplotlib's backend alone (a notebook keeps its own);
each function that draws a file calls `use_agg` first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["algorithm_colors", "save_figure", "steps_label", "use_agg"]

DPI = 150


def use_agg() -> None:
    """Draw with matplotlib's non-interactive Agg backend (files only, no display needed); called
    when a plot is drawn, never at import."""
    import matplotlib

    if matplotlib.get_backend().lower() != "agg":
        matplotlib.use("Agg")


def algorithm_colors(algorithms: Sequence[str]) -> dict[str, tuple]:
    """A fixed colour per algorithm (matplotlib's tab10, in the given order)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {algo: cmap(i % 10) for i, algo in enumerate(algorithms)}


def steps_label(value: float, _position: int = 0) -> str:
    """Axis tick label for step counts: 0, 500, 20k, 1.5M."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def save_figure(fig, path: str | Path, dpi: int = DPI, tight: bool = True) -> Path:
    """Save ``fig`` (parent folders created) and close it; the file is written under a
    temporary name with the same suffix (matplotlib's format) and renamed into place, so a
    reader never sees half an image."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    try:
        fig.savefig(partial, dpi=dpi, bbox_inches="tight" if tight else None)
        partial.replace(path)
    finally:
        plt.close(fig)
        partial.unlink(missing_ok=True)
    return path
