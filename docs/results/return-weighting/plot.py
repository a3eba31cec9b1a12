"""Per-dataset mean success of the presets' CVL and the return-weighted arms (screen.json and
scores.json beside this file, and suites.json when present: the mixed and hard suites, each
seed a dot) -> suites.png. argv: the folder holding the files."""

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
suites = json.loads((folder / "suites.json").read_text()) if (folder / "suites.json").exists() else {}
suites = {k: v for k, v in suites.items() if k in ("mixed", "hard")}
fig, axes = plt.subplots(1, 2 + len(suites), figsize=(11 + 5 * len(suites), 3.8))
labels = {"uneg": "presets' CVL", "rw03": "return weights T=0.3", "aw03": "advantage over start T=0.3",
          "filtered_bc": "filtered BC (top 20%)"}
colors = {"uneg": "tab:gray", "rw03": "tab:orange", "aw03": "tab:blue", "filtered_bc": "tab:green"}

rows = screen["runs"]
names = list(rows)
for k, arm in enumerate(("uneg", "rw03", "aw03")):
    values = [rows[n].get(arm, {}).get("success", np.nan) for n in names]
    axes[0].bar(np.arange(len(names)) + (k - 1) * 0.27, values, 0.27, label=labels[arm], color=colors[arm])
axes[0].set_xticks(np.arange(len(names)), [n.replace(" (", "\n").replace(") seed ", " s") for n in names], fontsize=7)
axes[0].set_ylabel("success, last 3 evaluations")
axes[0].set_title("screen (each run)")
axes[0].legend(fontsize=7)

tasks = scores["tasks"]
arms = [a for a in ("uneg", "aw03", "filtered_bc") if a in scores["mean_success"]]
width = 0.8 / len(arms)
for k, arm in enumerate(arms):
    values = [scores["mean_success"][arm][t] for t in tasks]
    x = np.arange(len(tasks)) + (k - (len(arms) - 1) / 2) * width
    axes[1].bar(x, values, width, label=labels[arm], color=colors[arm])
axes[1].set_xticks(np.arange(len(tasks)), tasks, fontsize=8)
axes[1].set_title("held-out mixtures, mean success over seeds 0 and 1")
axes[1].legend(fontsize=7)
for ax, (name, suite) in zip(axes[2:], suites.items()):
    keys = suite["datasets"]
    for k, arm in enumerate(("uneg", "aw03")):
        per_seed = np.asarray([suite["success_per_seed"][arm][d] for d in keys])
        x = np.arange(len(keys)) + (k - 0.5) * 0.35
        ax.bar(x, per_seed.mean(axis=1), 0.35, label=labels[arm], color=colors[arm])
        for j in range(per_seed.shape[1]):
            ax.plot(x, per_seed[:, j], "k.", markersize=4)
    ax.set_xticks(np.arange(len(keys)), [d.replace(" (", "\n(") for d in keys], fontsize=8)
    seeds = ", ".join(str(s) for s in suite["seeds"])
    ax.set_title(f"{name} suite, mean success (dots: seeds {seeds})")
    ax.legend(fontsize=7)
for ax in axes:
    ax.set_ylim(0, 1.05)
fig.tight_layout()
fig.savefig(folder / "suites.png", dpi=110)
