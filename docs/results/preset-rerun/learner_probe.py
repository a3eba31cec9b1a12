"""Which commit moves a learner's runs: short runs of one learner at several commits, compared
update by update. argv: REPO OUT.json.

For each probe below, every commit's ``packages/`` is extracted from REPO (``git archive``) into
a temporary folder and one short ``cvl_eval train`` run is made with those packages alone on
``PYTHONPATH`` (1 torch thread, the working directory a fresh temporary folder, so that no file
of the caller's can shadow a module). Each run's signature is every logged training metric whose
name holds ``loss`` at every logged update, and the return of its one evaluation episode at the
last update. Two commits whose signatures are equal train and act alike to the float on that
data; the first update where they differ says which part of the learner moved.

Probes: the presets' CVL with random features (`paper-hard`'s and `paper-mixed`'s ``cvl``
settings, 300 updates) on the hard suite's reach data at the published runs' commit (852f6b3),
at ae860eb and its parent and at 17db438, and on the mixed suite's drawer-open data at the
published mixed runs' commit (f77c416), at ae860eb and its parent; CQL (the presets' settings,
1200 updates: past its 1k BC warm start) on the hard suite's reach data at the published hard
runs' commit (773e770) and at 17db438. The data are the presets' own (``cvl-paper`` writes them
to ``<root>/<suite>/data``), passed as DATA_ROOT in the environment."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The presets' settings written out, not read from the packages: every commit must run the same
# ones, whatever its own presets say.
RFF = [
    "lr=1e-3",
    'sampler_mode="uniform"',
    "normalize_q=true",
    "num_action_samples=4",
    "temperature=0.1",
    "self_normalized=true",
    'rff_kind="positive"',
    "num_rff_features=4096",
    "policy_extraction=ddpgbc",
    "bc_alpha=0.3",
    "policy_ema_tau=0.001",
]
CQL = ["lr=1e-3", "policy_eval_start=1000", "cql_num_samples=4"]
PROBES = {
    "cvl (random features), hard reach": (
        "cvl",
        "hard/data/reach-v3",
        300,
        RFF,
        ["852f6b3", "544babe", "ae860eb", "17db438"],
    ),
    "cvl (random features), mixed drawer-open": (
        "cvl",
        "mixed/data/drawer-open-v3",
        300,
        RFF,
        ["f77c416", "544babe", "ae860eb"],
    ),
    "cql, hard reach": ("cql", "hard/data/reach-v3", 1200, CQL, ["773e770", "17db438"]),
}


def signature(repo: Path, commit: str, algo: str, data: Path, steps: int, overrides: list) -> dict:
    """One short run of ``algo`` with the packages of ``commit``; its losses and final return."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", commit, "packages"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        packages = Path(tmp) / "packages"
        env = dict(os.environ, MUJOCO_GL="egl")
        env["PYTHONPATH"] = os.pathsep.join(
            str(packages / p) for p in ("cvl-data", "cvl-models", "cvl-algos", "cvl-eval")
        )
        out = Path(tmp) / "run"
        flags = ["--steps", str(steps), "--eval-every", str(steps), "--eval-episodes", "1"]
        flags += ["--hidden", "128", "128", "--batch-size", "256", "--num-threads", "1"]
        command = [sys.executable, "-m", "cvl_eval", "train", "--dataset", str(data)]
        command += ["--out-dir", str(out), "--algorithm", algo, "--seed", "0", *flags]
        subprocess.run(
            [*command, "--overrides", *overrides],
            env=env,
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        losses = {
            str(m["update"]): {k: v for k, v in m.items() if "loss" in k}
            for m in lines
            if m.get("phase") == "train"
        }
        evals = [json.loads(x) for x in (out / "evals.jsonl").read_text().splitlines()]
        return {"losses": losses, "final_return": evals[-1]["return"]}


def first_difference(a: dict, b: dict) -> str:
    """The first update and metric where two signatures differ, or 'equal'."""
    for update, metrics in a["losses"].items():
        for name, value in metrics.items():
            other = b["losses"].get(update, {}).get(name)
            if other != value:
                return f"update {update}, {name}: {value!r} against {other!r}"
    return "equal" if a["final_return"] == b["final_return"] else "final return"


def main(argv: list[str]) -> None:
    repo, out_file = Path(argv[0]), Path(argv[1])
    data_root = Path(os.environ["DATA_ROOT"])
    result = {}
    for name, (algo, data, steps, overrides, commits) in PROBES.items():
        runs = {c: signature(repo, c, algo, data_root / data, steps, overrides) for c in commits}
        first = runs[commits[0]]
        result[name] = {
            "algorithm": algo,
            "data": data,
            "updates": steps,
            "overrides": overrides,
            "final_return": {c: r["final_return"] for c, r in runs.items()},
            "against_" + commits[0]: {c: first_difference(first, r) for c, r in runs.items()},
            "runs": runs,
        }
        for c in commits:
            print(f"{name}: {c} {result[name]['against_' + commits[0]][c]}", flush=True)
    tmp = out_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.rename(out_file)


if __name__ == "__main__":
    main(sys.argv[1:])
