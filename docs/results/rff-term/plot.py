"""Per-task scores of the mixed suite: CVL with 4096 positive random features and the critic's
uniform action term against the default CVL without random features (the same term).
argv: scores.json out.png"""
import json, sys
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
d = json.load(open(sys.argv[1]))
names = [n.replace("-v3", "") for n in d["tasks"]]
x = np.arange(len(names))
fig, ax = plt.subplots(figsize=(7, 4.3))
for off, (algo, label, color) in zip((-0.18, 0.18), (("uneg", "without RFF (the default)", "tab:gray"), ("rffterm", "4096 positive random features", "tab:orange"))):
    sc = np.array(d["scores"][algo])
    ax.bar(x + off, sc.mean(0), 0.34, color=color, alpha=0.6, label=label)
    for j in range(sc.shape[1]):
        ax.scatter([x[j] + off] * sc.shape[0], sc[:, j], color=color, s=14, zorder=3)
agg = d["aggregates"]; poi = d["probability_of_improvement"]["rffterm,uneg"]
ax.set_title(f"IQM {agg['rffterm']['IQM']['point']:.2f} with RFF vs {agg['uneg']['IQM']['point']:.2f} without, "
             f"P(with > without) = {poi['point']:.2f}", fontsize=10)
ax.set_xticks(x, names)
ax.axhline(1.0, color="k", lw=0.5, ls=":")
ax.set_ylabel("expert-normalised return\n(last 3 evaluations, 30 episodes)")
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
fig.suptitle("Mixed suite, both estimators with the critic's uniform action term, 3 seeds (dots), 10k steps", fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
