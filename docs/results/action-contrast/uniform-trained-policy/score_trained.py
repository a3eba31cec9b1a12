"""Paired: each uneg run's 10k evaluation (the policy's average, 10 episodes, eval seed 100) against
the trained policy on the same episodes (cvl-evaluate --trained-policy). argv: out.json"""
import json, sys, glob, os
import numpy as np
GROUPS = {"suites": ("cs_", "cr_"), "held-out": ("cu_",)}
ROOT = {"cs": "/work/exp/cs/runs", "cr": "/work/exp/cr/runs", "cu": "/work/exp/cu/runs"}
rows = []
for f in sorted(glob.glob("/work/exp/ds/trained/*.json")):
    name = os.path.basename(f)[:-5]
    parts = name.split("_")  # e.g. cs mixed door-open seed 0 / cu handle-pull seed 0
    root = ROOT[parts[0]]
    sub = parts[1:-2]
    run = os.path.join(root, *(sub[:-1] if len(sub) == 2 else []), "uneg", sub[-1], f"seed_{parts[-1]}")
    ema = [json.loads(l) for l in open(os.path.join(run, "evals.jsonl"))]
    ema = [e for e in ema if e["step"] == 10000][0]
    tr = json.load(open(f))
    rows.append({"run": name, "average": {"normalized": ema["normalized"], "success": ema["success"]},
                 "trained": {"normalized": tr["summary"]["mean_normalized_return"], "success": tr["summary"]["success_rate"]}})
out = {"scored_by": "normalised return and success at 10k, 10 episodes, evaluation seed 100, the same episodes for both actors", "runs": rows, "groups": {}}
for g, prefixes in GROUPS.items():
    sel = [r for r in rows if r["run"].startswith(prefixes)]
    if not sel:
        continue
    a = np.array([r["average"]["normalized"] for r in sel]); t = np.array([r["trained"]["normalized"] for r in sel])
    sa = np.array([r["average"]["success"] for r in sel]); st = np.array([r["trained"]["success"] for r in sel])
    out["groups"][g] = {"runs": len(sel), "average_mean": float(a.mean()), "trained_mean": float(t.mean()),
                        "average_success": float(sa.mean()), "trained_success": float(st.mean()),
                        "trained_ahead_by_0.1": int((t > a + 0.1).sum()), "trained_behind_by_0.1": int((t < a - 0.1).sum())}
    print(g, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out["groups"][g].items()})
for r in rows:
    print(r["run"], round(r["average"]["normalized"], 2), "->", round(r["trained"]["normalized"], 2), f'({r["average"]["success"]:.1f} -> {r["trained"]["success"]:.1f})')
json.dump(out, open(sys.argv[1], "w"), indent=1)
