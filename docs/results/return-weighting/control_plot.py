"""Per-dataset success of the presets' CVL, `aw03` and BC with `aw03`'s weights (T = 0.1,
`awbc01`; filtered BC on the held-out mixtures), each seed a dot, on the held-out mixtures and
both suites (control.json beside this file) -> control.png. argv: the folder holding it."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

folder = Path(sys.argv[1])
control = json.loads((folder / "control.json").read_text())
labels = {"uneg": "presets' CVL", "aw03": "CVL + weights (aw03)", "awbc01": "BC + weights (T=0.1)",
          "filtered_bc": "filtered BC (top 20%)"}
colors = {"uneg": "tab:gray", "aw03": "tab:blue", "awbc01": "tab:red", "filtered_bc": "tab:green"}
held_out = control["runs"]
tasks = ["handle-pull", "lever-pull", "hammer", "plate-slide"]
panels = [("held-out mixtures", tasks, {arm: {t: [v["success"] for k, v in held_out[arm].items()
                                                 if k.startswith(t + " seed")] for t in tasks}
                                        for arm in ("uneg", "aw03", "awbc01", "filtered_bc")})]
for name in ("mixed", "hard"):
    suite = control.get(f"{name} with awbc01")
    if suite:
        panels.append((f"{name} suite", suite["datasets"], suite["success_per_seed"]))
fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.1))
for ax, (title, keys, success) in zip(np.atleast_1d(axes), panels):
    arms = [a for a in labels if a in success]
    width = 0.8 / len(arms)
    for k, arm in enumerate(arms):
        x = np.arange(len(keys)) + (k - (len(arms) - 1) / 2) * width
        per_seed = [success[arm][d] for d in keys]
        ax.bar(x, [np.mean(s) for s in per_seed], width, label=labels[arm], color=colors[arm])
        for xi, seeds in zip(x, per_seed):
            ax.plot([xi] * len(seeds), seeds, "k.", markersize=3)
    ax.set_xticks(np.arange(len(keys)), [d.replace(" (", "\n(") for d in keys], fontsize=8)
    ax.set_title(f"{title}, success (dots: seeds)", fontsize=10)
    ax.set_ylim(0, 1.05)
handles, names = np.atleast_1d(axes)[0].get_legend_handles_labels()
fig.legend(handles, names, loc="upper center", ncol=len(names), fontsize=8)
fig.tight_layout(rect=(0, 0, 1, 0.93))
fig.savefig(folder / "control.png", dpi=110)
