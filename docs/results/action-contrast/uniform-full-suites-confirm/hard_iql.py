"""Hard suite on one machine: the presets' CVL (cvl_mc), the default with uniform negatives
(uneg) and tuned IQL (iql), 4 datasets x 3 seeds; rliable IQM and P(improvement), also over the
stitched half. argv: out.json"""
import json, sys
import numpy as np
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement

ALGOS = ["cvl_mc", "uneg", "iql"]
SOURCES = [("/work/exp/cs/runs/stitch", ["door-open", "drawer-open"], "stitch"),
           ("/work/exp/cr/runs/noisy", ["faucet-open", "reach"], "noisy")]
cols, names, runs_out = {a: [] for a in ALGOS}, [], {}
for root, tasks, kind in SOURCES:
    runs = [r for r in load_runs([root], last_evals=3, up_to_step=10000)
            if r.seed in (0, 1, 2) and r.label in ALGOS and r.task.removesuffix("-v3") in tasks]
    for t in tasks:
        for a in ALGOS:
            got = sorted(r.seed for r in runs if r.task.removesuffix("-v3") == t and r.label == a)
            assert got == [0, 1, 2], (root, t, a, got)
    scores, order, normalized = score_dict(runs, ALGOS)
    assert normalized
    for a in ALGOS:
        cols[a].append(scores[a])
    names += [f"{t} ({kind})" for t in order]
    for r in runs:
        runs_out.setdefault(f"{r.task} ({kind})", {}).setdefault(r.label, {})[f"seed_{r.seed}"] = {
            k: r.final[k] for k in ("success_rate", "mean_return")}
scores = {a: np.concatenate(cols[a], axis=1) for a in ALGOS}
pairs = [("uneg", "iql"), ("cvl_mc", "iql"), ("uneg", "cvl_mc")]
out = {"scored_by": "expert-normalised return of the last 3 evaluations up to step 10000, pooled; rows seeds 0-2, columns datasets",
       "datasets": names, "scores": {a: scores[a].tolist() for a in ALGOS}, "runs": runs_out}
for part, idx in (("all", list(range(len(names)))), ("stitch", [i for i, n in enumerate(names) if "stitch" in n])):
    sub = {a: scores[a][:, idx] for a in ALGOS}
    agg = aggregate_scores(sub)
    poi = probability_of_improvement(sub, pairs)
    out[part] = {"aggregates": agg, "probability_of_improvement": poi}
    print(part, {a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in ALGOS},
          {k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
for i, n in enumerate(names):
    print(n, {a: round(float(scores[a][:, i].mean()), 2) for a in ALGOS},
          {a: round(float(np.mean([runs_out[n][a][f"seed_{s}"]["success_rate"] for s in range(3)])), 2) for a in ALGOS})
json.dump(out, open(sys.argv[1], "w"), indent=1)
