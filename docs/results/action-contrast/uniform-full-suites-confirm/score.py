"""Both full suites, presets' CVL (cvl_mc) against uniform negatives (uneg): rliable per suite and
over both, with the plan's three readings. argv: out.json"""
import json, sys
import numpy as np
from cvl_eval.analysis.run_scores import load_runs, score_dict, pooled_evals
from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement

ALGOS = ("cvl_mc", "uneg")
SEEDS = tuple(int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "0,1,2").split(","))
SOURCES = {  # suite -> (root, tasks, kind)
    "mixed": [("/work/exp/cs/runs/mixed", ["door-open"], "mixture"),
              ("/work/exp/cr/runs/mixed", ["drawer-open", "faucet-open", "reach"], "mixture")],
    "hard": [("/work/exp/cs/runs/stitch", ["door-open", "drawer-open"], "stitch"),
             ("/work/exp/cr/runs/noisy", ["faucet-open", "reach"], "noisy")],
}
out = {"scored_by": "expert-normalised return of the last 3 evaluations up to step 10000, pooled (30 episodes); rows seeds 0-2, columns datasets",
       "suites": {}, "runs": {}}
allcols = {a: [] for a in ALGOS}
for suite, sources in SOURCES.items():
    cols, names = {a: [] for a in ALGOS}, []
    for root, tasks, kind in sources:
        runs = [r for r in load_runs([root], last_evals=3, up_to_step=10000)
                if r.seed in SEEDS and r.label in ALGOS and r.task.removesuffix("-v3") in tasks]
        for t in tasks:
            for a in ALGOS:
                got = sorted(r.seed for r in runs if r.task.removesuffix("-v3") == t and r.label == a)
                assert got == list(SEEDS), (root, t, a, got)
        scores, order, normalized = score_dict(runs, list(ALGOS))
        assert normalized
        for a in ALGOS:
            cols[a].append(scores[a])
        names += [f"{t} ({kind})" for t in order]
        for r in runs:
            out["runs"].setdefault(f"{r.task} ({kind})", {}).setdefault(r.label, {})[f"seed_{r.seed}"] = {
                k: r.final[k] for k in ("success_rate", "mean_return")}
    scores = {a: np.concatenate(cols[a], axis=1) for a in ALGOS}
    for a in ALGOS:
        allcols[a].append(scores[a])
    agg = aggregate_scores(scores)
    poi = probability_of_improvement(scores, [("uneg", "cvl_mc")])
    means = {n: {a: round(float(scores[a][:, i].mean()), 3) for a in ALGOS} for i, n in enumerate(names)}
    out["suites"][suite] = {"datasets": names, "scores": {a: scores[a].tolist() for a in ALGOS},
                            "aggregates": agg, "probability_of_improvement": poi, "dataset_means": means}
    print(suite, {a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in ALGOS},
          {k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
    for n, m in means.items():
        print("  ", n, m, "diff %.3f" % (m["uneg"] - m["cvl_mc"]))
scores = {a: np.concatenate(allcols[a], axis=1) for a in ALGOS}
agg = aggregate_scores(scores)
poi = probability_of_improvement(scores, [("uneg", "cvl_mc")])
out["both"] = {"aggregates": agg, "probability_of_improvement": poi}
print("both", {a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in ALGOS},
      {k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
json.dump(out, open(sys.argv[1], "w"), indent=1)
