"""The presets' CVL re-run through `cvl-paper mixed|hard --algorithms cvl_mc` beside the runs the
README's mixed and hard rows score (the same learner, settings, data and seeds, trained one by one
with `cvl-train`). argv: PRESET_ROOT LANE_ROOT DATA_ROOT out.json.

PRESET_ROOT holds ``mixed/`` and ``hard/``, each a `cvl-paper` experiment folder; LANE_ROOT the
single runs as ``<label>/<task>/seed<s>`` (mixed: ``awcapn_t02m``; hard: ``awcapn_t02`` on the
stitched tasks, ``awcapn_t02n`` on the noisy ones); DATA_ROOT the single runs' datasets as
``<kind>/<task>-v3``. For each suite: the datasets' fingerprints, each run's evaluations compared
episode by episode (over the seeds the preset ran), and the IQM with its 95% CI that the preset's
own report wrote."""

import json
import sys
from pathlib import Path

from cvl_data import dataset_fingerprint

SUITES = {
    "mixed": {
        t: ("awcapn_t02m", "mixed") for t in ("door-open", "drawer-open", "faucet-open", "reach")
    },
    "hard": {
        "door-open": ("awcapn_t02", "stitch"),
        "drawer-open": ("awcapn_t02", "stitch"),
        "faucet-open": ("awcapn_t02n", "noisy"),
        "reach": ("awcapn_t02n", "noisy"),
    },
}
FIELDS = ("step", "episode_returns", "episode_successes")


def evaluations(path):
    """The ``FIELDS`` of every evaluation in an ``evals.jsonl``."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: row[k] for k in FIELDS} for row in rows]


def seeds_run(folder, task):
    """The seeds the preset ran on ``task`` (its ``--seeds``)."""
    runs = (folder / f"runs/cvl_mc/{task}-v3").glob("seed_*")
    return sorted(int(p.name.removeprefix("seed_")) for p in runs)


def compare_suite(suite, preset_root, lane_root, data_root):
    """Fingerprints, per-run identity and the preset report's IQM of one suite."""
    folder = preset_root / suite
    out = {"datasets": {}, "runs": {}}
    for task, (label, kind) in SUITES[suite].items():
        ours = dataset_fingerprint(folder / "data" / f"{task}-v3")
        theirs = dataset_fingerprint(data_root / kind / f"{task}-v3")
        out["datasets"][task] = {"preset": ours, "single_runs": theirs, "same": ours == theirs}
        for seed in seeds_run(folder, task):
            preset = evaluations(folder / f"runs/cvl_mc/{task}-v3/seed_{seed}/evals.jsonl")
            lane = evaluations(lane_root / f"{label}/{task}/seed{seed}/evals.jsonl")
            out["runs"][f"{task}/seed{seed}"] = {
                "evaluations": len(preset),
                "identical": preset == lane,
                "last_success": preset[-1]["episode_successes"].count(True) / 10,
            }
    aggregates = json.loads((folder / "report/rliable/rliable.json").read_text())["aggregates"]
    out["report_iqm"] = aggregates["cvl_mc"]["IQM"]
    out["all_identical"] = all(r["identical"] for r in out["runs"].values())
    return out


def main(argv):
    preset_root, lane_root, data_root, out_file = map(Path, argv)
    result = {s: compare_suite(s, preset_root, lane_root, data_root) for s in SUITES}
    out_file.write_text(json.dumps(result, indent=1) + "\n")
    for suite, r in result.items():
        iqm = r["report_iqm"]
        same_data = all(d["same"] for d in r["datasets"].values())
        print(
            f"{suite}: datasets identical {same_data}, runs identical {r['all_identical']} "
            f"({len(r['runs'])} runs); the preset's report: IQM {iqm['point']:.2f} "
            f"[{iqm['low']:.2f}, {iqm['high']:.2f}]"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
