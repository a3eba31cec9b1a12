import json, sys
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
d = json.load(open(sys.argv[1]))
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
for ax, suite in zip(axes, ("mixed", "hard")):
    s = d["suites"][suite]
    names = [n.replace("-v3", "") for n in s["datasets"]]
    x = np.arange(len(names))
    for off, (algo, label, color) in zip((-0.18, 0.18), (("cvl_mc", "presets' CVL", "tab:gray"), ("uneg", "with uniform negatives", "tab:blue"))):
        sc = np.array(s["scores"][algo])
        ax.bar(x + off, sc.mean(0), 0.34, color=color, alpha=0.6, label=label)
        for j in range(sc.shape[1]):
            ax.scatter([x[j] + off] * sc.shape[0], sc[:, j], color=color, s=14, zorder=3)
    agg = s["aggregates"]; poi = s["probability_of_improvement"]["uneg,cvl_mc"]
    ax.set_title(f"{suite} suite: IQM {agg['cvl_mc']['IQM']['point']:.2f} vs {agg['uneg']['IQM']['point']:.2f}, P = {poi['point']:.2f}")
    ax.set_xticks(x, names, rotation=20, fontsize=8)
    ax.axhline(1.0, color="k", lw=0.5, ls=":")
axes[0].set_ylabel("expert-normalised return\n(last 3 evaluations, 30 episodes)")
axes[1].legend(fontsize=8, loc="lower center")
fig.suptitle("CVL critic term with uniform negatives on both suites, 3 seeds (dots), 10k steps")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
