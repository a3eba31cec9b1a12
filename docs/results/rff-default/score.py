"""The mixed suite: CVL with 4096 positive random features under the presets' default policy step
(rffd) against the presets' default CVL without random features (awcapn_t02m), rliable IQM and
P(rffd > awcapn_t02m). argv: out.json [seeds, default 0,1,2] [tasks, default all four]"""
import json, sys
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement

ALGOS = ("awcapn_t02m", "rffd")
SEEDS = tuple(int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "0,1,2").split(","))
TASKS = (sys.argv[3] if len(sys.argv) > 3 else "door-open,drawer-open,faucet-open,reach").split(",")
ROOTS = [f"/work/exp/rw/runs/{label}" for label in ALGOS]
runs = [r for r in load_runs(ROOTS, last_evals=3, up_to_step=10000)
        if r.seed in SEEDS and r.label in ALGOS and r.task.removesuffix("-v3") in TASKS]
for t in TASKS:
    for a in ALGOS:
        got = sorted(r.seed for r in runs if r.task.removesuffix("-v3") == t and r.label == a)
        assert got == list(SEEDS), (t, a, got)
scores, order, normalized = score_dict(runs, list(ALGOS))
assert normalized
agg = aggregate_scores(scores)
poi = probability_of_improvement(scores, [("rffd", "awcapn_t02m")])
out = {"scored_by": "expert-normalised return of the last 3 evaluations up to step 10000, pooled (30 episodes); rows seeds, columns tasks",
       "seeds": list(SEEDS), "tasks": list(order), "scores": {a: scores[a].tolist() for a in ALGOS},
       "means": {a: float(scores[a].mean()) for a in ALGOS},
       "aggregates": agg, "probability_of_improvement": poi,
       "runs": {f"{r.task}/{r.label}/seed_{r.seed}": {k: r.final[k] for k in ("success_rate", "mean_return")} for r in runs}}
print({a: round(float(scores[a].mean()), 3) for a in ALGOS},
      {a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in ALGOS},
      {k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
for i, t in enumerate(order):
    print("  ", t, {a: round(float(scores[a][:, i].mean()), 3) for a in ALGOS})
json.dump(out, open(sys.argv[1], "w"), indent=1)
