"""The critic's action term at 20k steps (PREREG.md, sixteenth and seventeenth amendments): mean
success per dataset with and without the term, each seed a dot, on the four stitched datasets and
the held-out mixtures (term20k.json beside this file); and on stitched plate-slide, each critic's
mean Q at the data's approach states for five actions, each seed a dot (rollout_plate_slide.json)
-> term.png. argv: the folder holding both."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

folder = Path(sys.argv[1])
term = json.loads((folder / "term20k.json").read_text())
rollout = json.loads((folder / "rollout_plate_slide.json").read_text())["checkpoints"]
colors = {"with the term": "tab:blue", "without it": "tab:gray"}


def bars(ax, keys, per_seed, title):
    """per_seed: {arm: [seed values per key]}; a bar per arm and key, the seeds as dots."""
    width = 0.8 / len(per_seed)
    for k, (arm, values) in enumerate(per_seed.items()):
        x = np.arange(len(keys)) + (k - (len(per_seed) - 1) / 2) * width
        ax.bar(x, [np.mean(v) for v in values], width, label=arm, color=colors[arm])
        for xi, seeds in zip(x, values):
            ax.plot([xi] * len(seeds), seeds, "k.", markersize=3)
    ax.set_xticks(np.arange(len(keys)), keys, fontsize=8)
    ax.set_title(title, fontsize=10)


fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
for ax, (part, arms) in zip(axes, (("stitched", ("unegs20k", "plains20k")),
                                   ("held-out", ("uneg20k", "plain20k")))):
    runs = term[f"{part}, scored at 20k"]["runs"]
    keys = list(term[f"{part}, scored at 20k"]["mean_success_per_dataset"][arms[0]])
    per_seed = {name: [[v["success"] for k, v in runs[arm].items() if k.startswith(t + " seed")]
                       for t in keys] for name, arm in zip(colors, arms)}
    bars(ax, keys, per_seed, f"{part} data, 20k steps: success, last 3 evaluations (dots: seeds)")
    ax.set_ylim(0, 1.05)
actions = ["data", "uniform", "toward", "away", "policy"]
per_seed = {name: [[row["mean_q"][a] for path, row in rollout.items()
                    if path.startswith(arm + "/") and path.endswith("/final")] for a in actions]
            for name, arm in zip(colors, ("unegs20k", "plains20k"))}
bars(axes[2], [f"{a}'s\naction" for a in actions], per_seed,
     "stitched plate-slide, 20k: mean Q at the data's approach states")
axes[2].set_ylabel("Q (the critic's MC estimate)")
axes[1].legend(fontsize=9, loc="upper center")
fig.tight_layout()
fig.savefig(folder / "term.png", dpi=110)
print(folder / "term.png")
