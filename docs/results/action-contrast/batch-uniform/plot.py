"""Per-dataset means (bars) and seeds (dots) of each arm of `score.py confirm`'s output, one
panel per suite in it (or per suite named). argv: scores.json out.png [suites]"""
import json, sys
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

NAMES = {"bneg": ("half batch, half uniform", "tab:orange"), "uneg": ("uniform (default)", "tab:blue"),
         "filtered_bc": ("filtered BC", "tab:gray"), "iql": ("IQL", "tab:green")}
d = json.load(open(sys.argv[1]))
suites = sys.argv[3].split(",") if len(sys.argv) > 3 else list(d["suites"])
fig, axes = plt.subplots(1, len(suites), figsize=(5.5 * len(suites), 3.9), sharey=True, squeeze=False)
for ax, suite in zip(axes[0], suites):
    s = d["suites"][suite]
    names = [n.replace("-v3", "") for n in s["datasets"]]
    algos = list(s["scores"])
    width = 0.8 / len(algos)
    x = np.arange(len(names))
    for i, algo in enumerate(algos):
        label, color = NAMES[algo]
        off = (i - (len(algos) - 1) / 2) * width
        sc = np.array(s["scores"][algo])
        ax.bar(x + off, sc.mean(0), width * 0.95, color=color, alpha=0.6, label=label)
        for j in range(sc.shape[1]):
            ax.scatter([x[j] + off] * sc.shape[0], sc[:, j], color=color, s=12, zorder=3)
    agg = s["aggregates"]; poi = s["probability_of_improvement"]["bneg,uneg"]
    ax.set_title(f"{suite}: IQM {agg['bneg']['IQM']['point']:.2f} vs {agg['uneg']['IQM']['point']:.2f}, "
                 f"P(half > uniform) = {poi['point']:.2f}", fontsize=10)
    ax.set_xticks(x, names, rotation=20, fontsize=8)
    ax.axhline(1.0, color="k", lw=0.5, ls=":")
    ax.legend(fontsize=7, loc="lower left")
axes[0][0].set_ylabel("expert-normalised return\n(last 3 evaluations, 30 episodes)")
fig.suptitle("CVL critic term, half batch + half uniform negatives vs uniform ones\n3 seeds (dots), 10k steps", fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
