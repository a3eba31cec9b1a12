"""Per-task normalised scores of `polu` against the presets' default before it (`cvl_mc` with
uniform negatives) and filtered BC, on the held-out mixtures and both suites at 4 x 3 (each run
its last 3 evaluations pooled; bars the mean over seeds 0-2, dots the seeds).
argv: out.png, run from this folder after `score.py` (reads `screen.json`)."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SEEDS = (0, 1, 2)
METHODS = (
    ("uniform negatives (the default before)", "cvl_mc"),
    ("polu (the default from 2026-12-07)", None),
    ("filtered BC", "filtered_bc"),
)


def panels(here: Path) -> list[tuple[str, dict, dict]]:
    """(title, reference table, polu's runs by 'task seed s') per panel."""
    polu = json.loads((here / "screen.json").read_text())["polu"]
    stored = here.parent / "preset-rerun"
    held = json.loads((stored / "heldout_baselines.json").read_text())
    suites = json.loads((stored / "baselines.json").read_text())
    return [
        ("held-out mixtures", held, polu["held-out runs"]),
        ("mixed suite", suites["mixed"], polu["mixed runs"]),
        ("hard suite", suites["hard"], polu["hard runs"]),
    ]


def per_seed(table: dict, runs: dict, key: str | None) -> np.ndarray:
    """seeds x tasks normalised scores of one method."""
    if key is None:
        return np.asarray(
            [[runs[f"{t} seed {s}"]["normalized"] for t in table["tasks"]] for s in SEEDS]
        )
    return np.asarray(table["scores"][key])[list(SEEDS)]


def main(argv: list[str]) -> None:
    here, out = Path(__file__).parent, Path(argv[0])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    width = 0.27
    for ax, (title, table, runs) in zip(axes, panels(here)):
        x = np.arange(len(table["tasks"]))
        for i, (label, key) in enumerate(METHODS):
            scores = per_seed(table, runs, key)
            pos = x + (i - 1) * width
            ax.bar(pos, scores.mean(0), width, label=label, alpha=0.8)
            ax.scatter(np.repeat(pos, len(SEEDS)), scores.T.ravel(), s=8, c="k", zorder=3)
        ax.set_xticks(x, [t.removesuffix("-v3") for t in table["tasks"]], rotation=20)
        ax.set_title(title)
        ax.axhline(1.0, c="grey", lw=0.8, ls="--")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("normalised return (last 3 evaluations)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    tmp = out.with_name(out.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.rename(out)


if __name__ == "__main__":
    main(sys.argv[1:])
