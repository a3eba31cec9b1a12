"""Per-dataset mean success of the presets' CVL and the return-weighted arms (screen.json and
scores.json beside this file) -> suites.png. argv: the folder holding both files."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

folder = Path(sys.argv[1])
screen = json.loads((folder / "screen.json").read_text())
scores = json.loads((folder / "scores.json").read_text())["held-out"]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
labels = {"uneg": "presets' CVL", "rw03": "return weights T=0.3", "aw03": "advantage over start T=0.3"}
colors = {"uneg": "tab:gray", "rw03": "tab:orange", "aw03": "tab:blue"}

rows = screen["runs"]
names = list(rows)
for k, arm in enumerate(labels):
    values = [rows[n].get(arm, {}).get("success", np.nan) for n in names]
    axes[0].bar(np.arange(len(names)) + (k - 1) * 0.27, values, 0.27, label=labels[arm], color=colors[arm])
axes[0].set_xticks(np.arange(len(names)), [n.replace(" (", "\n").replace(") seed ", " s") for n in names], fontsize=7)
axes[0].set_ylabel("success, last 3 evaluations")
axes[0].set_title("screen (each run)")
axes[0].legend(fontsize=7)

tasks = scores["tasks"]
arms = [a for a in ("uneg", "aw03") if a in scores["mean_success"]]
for k, arm in enumerate(arms):
    values = [scores["mean_success"][arm][t] for t in tasks]
    axes[1].bar(np.arange(len(tasks)) + (k - 0.5) * 0.35, values, 0.35, label=labels[arm], color=colors[arm])
axes[1].set_xticks(np.arange(len(tasks)), tasks, fontsize=8)
axes[1].set_title("held-out mixtures, mean success over seeds 0 and 1")
axes[1].legend(fontsize=7)
for ax in axes:
    ax.set_ylim(0, 1.05)
fig.tight_layout()
fig.savefig(folder / "suites.png", dpi=110)
