"""The return weights with the neighbourhood cap (PREREG.md, twenty-fourth amendment): the
expert-normalised return per dataset, each seed a dot, of `awcapn` beside the return weights alone
(`aw03`), the term (the presets' CVL) and, where they ran, the term with the neighbourhood cap and
filtered BC: stitched plate-slide at 20k, the four held-out mixtures at 10k and both suites' 8
datasets at 10k (awcapn.json and capn.json beside this file) -> awcapn.png. argv: that folder."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

NAMES = {  # label in the JSON files: (name in the figure, colour)
    "awcapn": ("return weights (T = 0.3) + neighbourhood cap", "tab:green"),
    "aw03": ("return weights (aw03)", "tab:purple"),
    "uneg": ("the term (presets)", "tab:blue"),
    "capnu": ("the term + neighbourhood cap", "tab:olive"),
    "filtered_bc": ("filtered BC", "tab:gray"),
    "awcapn_t02": ("return weights at T = 0.2 + neighbourhood cap", "tab:red"),
}


def bars(ax, keys, per_seed, title):
    """per_seed: {label: [[value per seed] per key]}; a bar per label and key, seeds as dots."""
    width = 0.8 / len(per_seed)
    for k, (label, values) in enumerate(per_seed.items()):
        x = np.arange(len(keys)) + (k - (len(per_seed) - 1) / 2) * width
        name, color = NAMES[label]
        ax.bar(x, [np.mean(v) for v in values], width, label=name, color=color)
        for xi, seeds in zip(x, values):
            ax.plot([xi] * len(seeds), seeds, "k.", markersize=3)
    ax.set_xticks(np.arange(len(keys)), keys, fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylim(0, 1.1)


def by_dataset(part):
    """{label: [[score per seed] per dataset]} from a part's seeds x datasets score matrices."""
    return {label: np.asarray(m).T.tolist() for label, m in part["scores"].items()}


def figure(stitched, ours, out):
    """Three panels: ``stitched`` ({label: {run: row}}, stitched plate-slide at 20k), the held-out
    4 x 2 and both suites of ``ours`` (a scorer's JSON) -> ``out``."""
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.2), gridspec_kw={"width_ratios": [1.2, 2.2, 3.2]})
    per_seed = {
        label: [[r["normalized"] for r in runs.values()]] for label, runs in stitched.items()
    }
    bars(axes[0], ["plate-slide"], per_seed, "stitched plate-slide, 20k")
    if "held-out 4 x 2, 10k" in ours:
        held = ours["held-out 4 x 2, 10k"]
        bars(axes[1], [t.removesuffix("-v3") for t in held["tasks"]], by_dataset(held),
             "held-out mixtures, 10k (dots: seeds 0 and 1)")  # fmt: skip
    suites = [ours[k] for k in ("hard suite, 10k", "mixed suite, 10k") if k in ours]
    if suites:
        keys = [d.replace(" (", "\n(") for part in suites for d in part["tasks"]]
        joined = {
            label: sum((by_dataset(p)[label] for p in suites), []) for label in suites[0]["scores"]
        }
        bars(axes[2], keys, joined, "both suites, 10k (dots: seeds 0-2)")
    for ax in axes:
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
    axes[0].set_ylabel("expert-normalised return, last 3 evaluations pooled")
    handles = {n: h for ax in axes for h, n in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="upper center", ncol=len(handles))
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(out, dpi=110)
    print(out)


def main(folder):
    ours = json.loads((folder / "awcapn.json").read_text())
    capn = json.loads((folder / "capn.json").read_text())
    stitched = {"awcapn": ours["screen A, stitched plate-slide, 20k"]["runs"]}
    old = capn["stitched plate-slide, scored at 20k"]["runs"]
    stitched.update({"aw03": old["aw03s20k"], "uneg": old["unegs20k"], "capnu": old["capnus20k"]})
    figure(stitched, ours, folder / "awcapn.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
