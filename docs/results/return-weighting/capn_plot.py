"""The neighbourhood cap (PREREG.md, twenty-second and twenty-third amendments): mean success per
dataset, each seed a dot, of the term with the cap at the best Q of the data's 8 nearest states
of other episodes (`bc_q_cap_neighbours`) beside the term, the plain cap and no term: stitched
plate-slide at 20k, the four held-out mixtures at 10k, and both suites' 8 datasets at 10k
(capn.json beside this file) -> capn.png. argv: the folder holding capn.json."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

folder = Path(sys.argv[1])
capn = json.loads((folder / "capn.json").read_text())
COLORS = {
    "the term + the neighbourhood cap": "tab:green",
    "the term + the cap": "tab:orange",
    "the term": "tab:blue",
    "without the term": "tab:gray",
}


def bars(ax, keys, per_seed, title):
    """per_seed: {arm: [seed values per key]}; a bar per arm and key, the seeds as dots."""
    width = 0.8 / len(per_seed)
    for k, (arm, values) in enumerate(per_seed.items()):
        x = np.arange(len(keys)) + (k - (len(per_seed) - 1) / 2) * width
        ax.bar(x, [np.mean(v) if v else 0.0 for v in values], width, label=arm, color=COLORS[arm])
        for xi, seeds in zip(x, values):
            ax.plot([xi] * len(seeds), seeds, "k.", markersize=3)
    ax.set_xticks(np.arange(len(keys)), keys, fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_ylim(0, 1.05)


def from_runs(part, labels, tasks):
    """{arm: [[success per seed] per task]} from a part's per-run rows."""
    runs = part["runs"]
    return {
        arm: [
            [v["success"] for k, v in runs.get(label, {}).items() if k.startswith(t + " seed")]
            for t in tasks
        ]
        for arm, label in zip(COLORS, labels)
    }


fig, axes = plt.subplots(1, 3, figsize=(17, 4.2), gridspec_kw={"width_ratios": [1, 2.2, 3.2]})
stitched = capn["stitched plate-slide, scored at 20k"]
bars(
    axes[0],
    ["plate-slide"],
    from_runs(stitched, ("capnus20k", "capus20k", "unegs20k", "plains20k"), ["plate-slide"]),
    "stitched plate-slide, 20k",
)
held = capn["held-out mixtures 4 x 2, scored at 10k"]
tasks = list(held["mean_success"]["capnu"])
per_seed = {
    arm: [held["mean_success"][label][t] for t in tasks]
    for arm, label in zip(COLORS, ("capnu", "capu", "uneg20k"))
}
bars(
    axes[1],
    tasks,
    {arm: [[v] for v in values] for arm, values in per_seed.items()},
    "held-out mixtures, 10k (bars: mean over seeds 0 and 1)",
)
suites = [(k, v) for k, v in capn.items() if k in ("hard@capnu", "mixed@capnu")]
keys, ours, term = [], [], []
for _, part in suites:
    for dataset in part["datasets"]:
        keys.append(dataset.replace(" (", "\n("))
        ours.append(part["success_per_seed"]["capnu"][dataset])
        term.append(part["success_per_seed"]["uneg"][dataset])
bars(
    axes[2],
    keys,
    {"the term + the neighbourhood cap": ours, "the term": term},
    "both suites, 10k: success, last 3 evaluations (dots: seeds)",
)
axes[0].set_ylabel("success, last 3 evaluations pooled")
handles, names = axes[0].get_legend_handles_labels()  # all four arms
axes[1].legend(handles, names, fontsize=8, loc="upper right")
fig.tight_layout()
fig.savefig(folder / "capn.png", dpi=110)
print(folder / "capn.png")
