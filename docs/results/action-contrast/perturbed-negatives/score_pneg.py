"""Near-miss negatives (pneg) against uniform negatives (uneg, the default) on the same data and
seeds: each run's expert-normalised return and success over its last 3 evaluations pooled.
argv: out.json"""
import json, os, sys

PAIRS = {  # dataset -> (pneg root, uneg root)
    "handle-pull (held-out mixture)": ("/work/exp/pt/runs/pneg/handle-pull", "/work/exp/cu/runs/uneg/handle-pull"),
    "lever-pull (held-out mixture)": ("/work/exp/pt/runs/pneg/lever-pull", "/work/exp/cu/runs/uneg/lever-pull"),
    "door-open (the suite's mixture)": ("/work/exp/pt/runs/mixed/pneg/door-open", "/work/exp/cs/runs/mixed/uneg/door-open"),
    "drawer-open (stitch)": ("/work/exp/pt/runs/stitch/pneg/drawer-open", "/work/exp/cs/runs/stitch/uneg/drawer-open"),
}


def score(run):
    evals = [json.loads(line) for line in open(os.path.join(run, "evals.jsonl"))]
    if not evals or evals[-1]["step"] != 10000:
        return None
    last = evals[-3:]
    return {"normalized": round(sum(e["normalized"] for e in last) / 3, 3),
            "success": round(sum(e["success"] for e in last) / 3, 3),
            "evaluations": [[e["step"], round(e["normalized"], 3)] for e in evals]}


out = {"scored_by": "expert-normalised return and success of the last 3 evaluations up to step 10000, pooled (30 episodes)", "runs": {}}
for name, (pneg, uneg) in PAIRS.items():
    for seed in (0, 1):
        p = os.path.join(pneg, f"seed_{seed}")
        if not os.path.exists(os.path.join(p, "evals.jsonl")) or score(p) is None:
            continue
        out["runs"][f"{name} seed {seed}"] = {"pneg": score(p), "uneg": score(os.path.join(uneg, f"seed_{seed}"))}
for k, v in out["runs"].items():
    print(f"{k:40s} pneg {v['pneg']['normalized']:.2f} ({v['pneg']['success']:.2f})  uneg {v['uneg']['normalized']:.2f} ({v['uneg']['success']:.2f})")
json.dump(out, open(sys.argv[1], "w"), indent=1)
