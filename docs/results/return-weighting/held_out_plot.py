"""The presets' default on the held-out mixtures at 10k and 20k (PREREG.md, thirty-second
amendment): the expert-normalised return per dataset, each seed a dot, of `awcapn_t02` beside the
return weights alone (`aw03`) and filtered BC, at 10k (t02.json) and at 20k (held_out.json,
steps20k.json), all beside this file -> held_out.png. argv: that folder."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from awcapn_plot import NAMES, bars, by_dataset  # noqa: E402

NAMES.update(
    {
        "awcapn_t02_20k": NAMES["awcapn_t02"],
        "aw03_20k": NAMES["aw03"],
        "filtered_bc20k": NAMES["filtered_bc"],
    }
)
ARMS_10K = ("awcapn_t02", "aw03", "filtered_bc")


def main(folder):
    at_10k = json.loads((folder / "t02.json").read_text())["held-out 4 x 2, 10k"]
    at_20k = json.loads((folder / "held_out.json").read_text())[
        "held-out 4 x 2, 20k (thirty-second amendment)"
    ]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = ((at_10k, "10k steps (the presets' budget)"), (at_20k, "20k steps"))
    for ax, (part, title) in zip(axes, panels):
        per_seed = by_dataset(part)
        if part is at_10k:
            per_seed = {label: per_seed[label] for label in ARMS_10K}
        keys = [t.removesuffix("-v3") for t in part["tasks"]]
        bars(ax, keys, per_seed, f"held-out mixtures, {title}; dots: seeds 0 and 1")
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
    axes[0].set_ylabel("expert-normalised return, last 3 evaluations pooled")
    handles = {n: h for h, n in zip(*axes[0].get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="upper center", ncol=3)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(folder / "held_out.png", dpi=110)
    print(folder / "held_out.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
