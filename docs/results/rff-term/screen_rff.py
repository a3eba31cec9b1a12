"""The screen's runs of both random-feature arms, with and without the critic's action term, and
the direct estimator's (the term): each run's expert-normalised return and success over its last
3 evaluations pooled. argv: out.json"""
import json, os, sys

ROOTS = {"rff": "/work/exp/rt/runs/mixed/rff", "rffterm": "/work/exp/rt/runs/mixed/rffterm",
         "uneg": {"door-open": "/work/exp/cs/runs/mixed/uneg", "drawer-open": "/work/exp/cr/runs/mixed/uneg"}}
out = {"scored_by": "expert-normalised return and success of the last 3 evaluations up to step 10000, pooled (30 episodes)", "runs": {}}
for arm, root in ROOTS.items():
    for task in ("door-open", "drawer-open"):
        for seed in (0, 1):
            base = root[task] if isinstance(root, dict) else root
            evals = [json.loads(line) for line in open(os.path.join(base, task, f"seed_{seed}", "evals.jsonl"))]
            assert evals[-1]["step"] == 10000, (arm, task, seed)
            last = evals[-3:]
            out["runs"][f"{arm}/{task}/seed_{seed}"] = {
                "normalized": round(sum(e["normalized"] for e in last) / 3, 3),
                "success": round(sum(e["success"] for e in last) / 3, 3)}
for arm in ROOTS:
    vals = [v["normalized"] for k, v in out["runs"].items() if k.startswith(arm + "/")]
    out[f"mean_{arm}"] = round(sum(vals) / len(vals), 3)
    print(arm, vals, out[f"mean_{arm}"])
json.dump(out, open(sys.argv[1], "w"), indent=1)
