"""The presets' CVL on the four held-out mixtures beside IQL and BC, from stored scores (no
training). argv: RESULTS_ROOT out.json, RESULTS_ROOT being ``docs/results``.

The presets' CVL: its 4 x 3 runs at 10k steps (`return-weighting/held_out.json`, the key that
compares it with filtered BC and weighted BC). IQL and BC: the presets' learners with the
presets' settings on the same mixtures (the same generation command; `heldout/four-tasks/`,
whose `report.json` keeps every run's mean return over its last 3 evaluations pooled), which
the README's held-out row quotes. Each return is normalised as the reports normalise it
(`cvl_eval.envs.expert_scores.normalized_score`); rliable IQM with 95% CIs and P(CVL > each)."""

import json
import sys
from pathlib import Path

import numpy as np
from baselines import fmt, iqm_and_p

from cvl_eval.envs.expert_scores import normalized_score

CVL_KEY = "held-out 4 x 3, 10k, against filtered BC and weighted BC (control.json)"
BASELINES = ("iql", "bc", "filtered_bc")


def main(argv: list[str]) -> None:
    root, out_file = Path(argv[0]), Path(argv[1])
    ours = json.loads((root / "return-weighting/held_out.json").read_text())[CVL_KEY]
    tasks = ours["tasks"]
    report = json.loads((root / "heldout/four-tasks/report.json").read_text())
    if report["scored_by"] != "the pooled episodes of the last 3 evaluations":
        raise SystemExit(f"{root}/heldout/four-tasks/report.json: scored by {report['scored_by']}")
    scores = {"cvl_mc": np.asarray(ours["scores"]["awcapn_t02"])}
    for algo in BASELINES:
        returns = report["final_return"][algo]
        columns = [[normalized_score(t, r) for r in returns[t]] for t in tasks]
        scores[algo] = np.asarray(columns, dtype=np.float64).T
    if any(s.shape != (3, len(tasks)) for s in scores.values()):
        raise SystemExit("expected 3 seeds x 4 tasks for every method")
    out = {
        "tasks": tasks,
        "scores": {a: s.tolist() for a, s in scores.items()},
        **iqm_and_p(scores),
    }
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    tmp.rename(out_file)
    for a, iqm in out["iqm"].items():
        p = out["p_cvl_mc_over"].get(a)
        print(f"{a:12s} IQM {fmt(iqm)}" + (f"  P(cvl_mc > it) {fmt(p)}" if p else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
