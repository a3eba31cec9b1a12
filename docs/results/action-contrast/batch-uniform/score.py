"""Half batch, half uniform negatives (bneg) against uniform negatives (uneg, the default) on the
held-out mixtures and both suites, with filtered BC (held-out) and IQL (hard suite) beside them.
argv: out.json screen|confirm [suites, default all]. The mixed suite's drawer-open, faucet-open
and reach runs were not run (PREREG.md), so its door-open mixture is also a suite of its own. "screen": each of the screen's 8 runs, paired with uneg's run on
the same data and seed. "confirm": rliable IQM with 95% stratified-bootstrap CIs and
P(bneg > other) per suite, over 4 datasets x seeds 0-2 each."""
import json, sys
import numpy as np
from cvl_eval.analysis.run_scores import load_runs, score_dict
from cvl_eval.analysis.metrics import aggregate_scores, probability_of_improvement
from cvl_eval.envs.expert_scores import normalized_score

BU = "/work/exp/bu/runs"
SUITES = {  # suite -> [(kind, tasks, {label: root})]
    "held-out": [("mixture", ["handle-pull", "lever-pull", "hammer", "plate-slide"],
                  {"bneg": BU, "uneg": "/work/exp/cu/runs", "filtered_bc": "/work/exp/cu/runs"})],
    "mixed": [("mixture", ["door-open"], {"bneg": f"{BU}/mixed", "uneg": "/work/exp/cs/runs/mixed"}),
              ("mixture", ["drawer-open", "faucet-open", "reach"],
               {"bneg": f"{BU}/mixed", "uneg": "/work/exp/cr/runs/mixed"})],
    "door-open-mixture": [("mixture", ["door-open"], {"bneg": f"{BU}/mixed", "uneg": "/work/exp/cs/runs/mixed"})],
    "hard": [("stitch", ["door-open", "drawer-open"],
              {"bneg": f"{BU}/stitch", "uneg": "/work/exp/cs/runs/stitch", "iql": "/work/exp/cs/runs/stitch"}),
             ("noisy", ["faucet-open", "reach"],
              {"bneg": f"{BU}/noisy", "uneg": "/work/exp/cr/runs/noisy", "iql": "/work/exp/cr/runs/noisy"})],
}
SUITES["hard-stitch"] = SUITES["hard"][:1]  # the half where IQL leads the default
SCREEN = [("held-out", "handle-pull"), ("held-out", "lever-pull"), ("mixed", "door-open"),
          ("hard", "drawer-open")]
SCORED_BY = "expert-normalised return of the last 3 evaluations up to step 10000, pooled (30 episodes)"


def runs_of(tasks, roots, seeds):
    """{label: {(task, seed): run}} for the labels and roots given."""
    found = {}
    for label, root in roots.items():
        for r in load_runs([root], last_evals=3, up_to_step=10000):
            task = r.task.removesuffix("-v3")
            if r.label == label and task in tasks and r.seed in seeds:
                found.setdefault(label, {})[(task, r.seed)] = r
    return found


def screen(out):
    for suite, task in SCREEN:
        for kind, tasks, roots in SUITES[suite]:
            if task not in tasks:
                continue
            found = runs_of([task], {k: roots[k] for k in ("bneg", "uneg")}, (0, 1))
            for seed in (0, 1):
                pair = {a: found.get(a, {}).get((task, seed)) for a in ("bneg", "uneg")}
                if pair["bneg"] is None:
                    continue
                out["runs"][f"{task} ({suite}, {kind}) seed {seed}"] = {
                    a: {"normalized": round(float(normalized_score(r.task, r.final["mean_return"])), 3), "success": round(r.final["success_rate"], 3)}
                    for a, r in pair.items()}
    for part in ("held-out", "suites"):
        rows = [v for k, v in out["runs"].items() if ("(held-out" in k) == (part == "held-out")]
        out[f"mean_{part}"] = {a: round(sum(v[a]["normalized"] for v in rows) / len(rows), 3)
                               for a in ("bneg", "uneg")} if rows else None
    for k, v in out["runs"].items():
        print(f"{k:45s} bneg {v['bneg']['normalized']:.2f} ({v['bneg']['success']:.2f})  uneg {v['uneg']['normalized']:.2f} ({v['uneg']['success']:.2f})")
    print("means", out["mean_held-out"], out["mean_suites"])


def confirm(out):
    seeds = (0, 1, 2)
    chosen = sys.argv[3].split(",") if len(sys.argv) > 3 else list(SUITES)
    for suite, sources in ((s, SUITES[s]) for s in chosen):
        labels = list(sources[0][2])
        cols, names = {a: [] for a in labels}, []
        for kind, tasks, roots in sources:
            found = runs_of(tasks, roots, seeds)
            for a in labels:
                missing = [(t, s) for t in tasks for s in seeds if (t, s) not in found.get(a, {})]
                assert not missing, (suite, a, missing)
            runs = [r for a in labels for r in found[a].values()]
            scores, order, normalized = score_dict(runs, labels)
            assert normalized
            for a in labels:
                cols[a].append(scores[a])
            names += [f"{t} ({kind})" for t in order]
        scores = {a: np.concatenate(cols[a], axis=1) for a in labels}
        agg = aggregate_scores(scores)
        poi = probability_of_improvement(scores, [("bneg", a) for a in labels if a != "bneg"])
        means = {n: {a: round(float(scores[a][:, i].mean()), 3) for a in labels} for i, n in enumerate(names)}
        out["suites"][suite] = {"datasets": names, "scores": {a: scores[a].tolist() for a in labels},
                                "aggregates": agg, "probability_of_improvement": poi, "dataset_means": means}
        print(suite, {a: [round(agg[a]["IQM"][x], 2) for x in ("point", "low", "high")] for a in labels},
              {k: [round(v[x], 2) for x in ("point", "low", "high")] for k, v in poi.items()})
        for n, m in means.items():
            print("  ", n, m)


out = {"scored_by": SCORED_BY, "runs": {}, "suites": {}}
{"screen": screen, "confirm": confirm}[sys.argv[2]](out)
json.dump(out, open(sys.argv[1], "w"), indent=1)
