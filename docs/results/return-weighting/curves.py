"""Success at every evaluation (curves.json beside this file, `score.py ... curves`): the suite's
drawer-open mixture at 10k steps (the presets, T = 0.3 / 0.5, the weights on one side only) and
20k, and the held-out mixtures at 20k (the weighted CVL against filtered BC); each seed a thin
line, the arm's mean a thick one (T = 0.5 dashed: its mean equals the policy-only arm's)
-> curves.png. argv: the folder holding curves.json."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

folder = Path(sys.argv[1])
panels = json.loads((folder / "curves.json").read_text())["runs"]
names = {"uneg": "presets' CVL", "aw03": "advantage weights T=0.3 (all anchors)",
         "aw05": "T=0.5", "aw03p": "T=0.3, policy's anchors only",
         "aw03c": "T=0.3, critic's anchors only", "filtered_bc": "filtered BC (top 20%)"}
colors = {"uneg": "tab:gray", "aw03": "tab:blue", "aw05": "tab:purple", "aw03p": "tab:orange",
          "aw03c": "tab:red", "filtered_bc": "tab:green"}


def arm_of(label: str) -> str:
    """The arm a run label belongs to (labels carry the data's suffix and the budget)."""
    stem = label.removesuffix("20k").removesuffix("_")
    return stem if stem in names else stem[:-1]


fig, axes = plt.subplots(2, 3, figsize=(15, 7.5))
for ax, (panel, labels) in zip(axes.flat, panels.items()):
    for label, seeds in labels.items():
        if not seeds:
            continue
        arm = arm_of(label)
        steps = [e["step"] for e in next(iter(seeds.values()))]
        curves = [[e["success"] for e in evals] for evals in seeds.values()]
        for curve in curves:
            ax.plot([e / 1000 for e in steps[: len(curve)]], curve, color=colors[arm], lw=0.7, alpha=0.5)
        if len({len(c) for c in curves}) == 1:
            mean = np.mean(curves, axis=0)
            ax.plot([s / 1000 for s in steps], mean, color=colors[arm], lw=2.2,
                    ls="--" if arm == "aw05" else "-",
                    label=f"{names[arm]} ({len(curves)} seeds)")
    ax.set_title(panel, fontsize=10)
    ax.set_xlabel("steps (thousands)")
    ax.set_ylim(-0.03, 1.05)
    ax.legend(fontsize=7, loc="lower right")
axes[0, 0].set_ylabel("success (10 episodes)")
axes[1, 0].set_ylabel("success (10 episodes)")
fig.tight_layout()
fig.savefig(folder / "curves.png", dpi=100)
