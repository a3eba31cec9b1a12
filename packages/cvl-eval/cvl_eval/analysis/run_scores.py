"""What a report reads from run folders: `RunRecord` s, and the numbers grouped for tables,
learning curves and rliable (per algorithm label x task, seeds or evaluation episodes as runs)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cvl_eval.envs.expert_scores import normalized_score
from cvl_eval.envs.make import is_metaworld
from cvl_eval.errors import ConfigError
from cvl_eval.runs.folder import RunFolder, read_json
from cvl_eval.runs.index import find_runs

__all__ = [
    "RunRecord",
    "curve_dict",
    "curve_records",
    "grouped",
    "evals_up_to",
    "final_eval_file",
    "final_policy_eval",
    "load_runs",
    "pooled_evals",
    "score_dict",
]


@dataclass(frozen=True)
class RunRecord:
    """What the report reads from one finished run folder."""

    path: Path
    label: str
    task: str
    seed: int
    final: dict[str, Any]
    evals: list[dict[str, Any]]


def load_runs(
    roots: Sequence[str],
    last_evals: int = 1,
    up_to_step: int | None = None,
    final_episodes: int | None = None,
) -> list[RunRecord]:
    """Finished runs under ``roots`` (`cvl_eval.runs.index.find_runs`); with ``last_evals``
    K > 1 each run's ``final`` pools the episodes of its last K evaluations (`pooled_evals`);
    with ``up_to_step`` S each run is read as if it had stopped at step S (`evals_up_to`: its
    evaluations after S are dropped, and ``final`` pools its last K evaluations up to S), so
    that longer runs also give the score of a shorter budget; with ``final_episodes`` N each
    run's ``final`` is N episodes of its final policy (`final_policy_eval`). Every
    ``results.json`` is checked first (`_checked_results`)."""
    _check_scoring(last_evals, up_to_step, final_episodes)
    records = []
    for path in find_runs([Path(r) for r in roots]):
        run = RunFolder(path)
        results = _checked_results(run.results)
        evals = run.read_evals()
        final = results["final_eval"]
        if up_to_step is not None:
            evals = evals_up_to(evals, up_to_step, path)
        if up_to_step is not None or last_evals > 1:
            final = pooled_evals(evals, last_evals, path)
        if final_episodes is not None:
            final = final_policy_eval(run, results, final_episodes)
        records.append(
            RunRecord(
                path=path,
                label=results["label"],
                task=results["task"],
                seed=results["seed"],
                final=final,
                evals=evals,
            )
        )
    return records


def _check_scoring(last_evals: int, up_to_step: int | None, final_episodes: int | None) -> None:
    """The scoring flags in their ranges, and at most one way of scoring a run."""
    if last_evals < 1:
        raise ConfigError(f"--last-evals must be >= 1, got {last_evals}")
    if up_to_step is not None and up_to_step < 1:
        raise ConfigError(f"--up-to-step must be >= 1, got {up_to_step}")
    if final_episodes is not None:
        if final_episodes < 1:
            raise ConfigError(f"--final-episodes must be >= 1, got {final_episodes}")
        if last_evals > 1 or up_to_step is not None:
            raise ConfigError(
                "--final-episodes scores each run by its final policy alone: drop --last-evals "
                "and --up-to-step"
            )


def final_eval_file(run: RunFolder, episodes: int) -> tuple[Path, int]:
    """Where ``cvl-evaluate --checkpoint <run> --episodes N --seed S`` writes its result, and S,
    the run's own evaluation seed (``train_config.eval_seed`` of its config.json)."""
    seed = read_json(run.config).get("train_config", {}).get("eval_seed")
    if not isinstance(seed, int):
        raise ConfigError(f"{run.config} (field 'train_config.eval_seed'): expected an int")
    return run.final / f"eval_{episodes}ep_seed{seed}.json", seed


def final_policy_eval(run: RunFolder, results: dict[str, Any], episodes: int) -> dict[str, Any]:
    """A run scored by ``episodes`` episodes of its final policy: ``final/eval_<N>ep_seed<S>.json``
    as ``cvl-evaluate --checkpoint <run> --episodes N --seed S`` writes it, S the run's own
    evaluation seed (``eval_seed`` of its config.json), so that its first episodes have the
    seeds of the training's evaluations. Fewer, noisier episodes per evaluation are what
    `pooled_evals` works around by pooling; this scores the policy the run ends with instead of
    a mean over the last evaluations of a policy that may still be learning. Refused, naming the
    file: a missing one (with the command that writes it), another episode count, task or step,
    sampled actions, or a policy other than the one the run's evaluations act with."""
    file, seed = final_eval_file(run, episodes)
    if not file.is_file():
        raise ConfigError(
            f"{file}: missing; write it with `cvl-evaluate --checkpoint {run.path} --episodes "
            f"{episodes} --seed {seed}`"
        )
    try:
        document = read_json(file)
        returns = [float(r) for r in document["returns"]]
        successes = [bool(x) for x in document["successes"]]
        found = {k: document[k] for k in ("env_name", "learner_step", "deterministic", "policy")}
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{file}: not an evaluation written by cvl-evaluate ({error!r})"
        ) from None
    expected = {"env_name": results["task"], "learner_step": results.get("steps")}
    wrong = {k: found[k] for k, v in expected.items() if found[k] != v}
    if len(returns) != episodes or len(successes) != episodes:
        wrong["episodes"] = len(returns)
    if found["deterministic"] is not True or found["policy"] == "trained":
        wrong.update(deterministic=found["deterministic"], policy=found["policy"])
    if wrong:
        raise ConfigError(
            f"{file}: {wrong}, expected {episodes} episodes of the run's task {results['task']} "
            f"at its final step {results.get('steps')}, mean actions of its acting policy"
        )
    return {
        "mean_return": float(np.mean(returns)),
        "success_rate": float(np.mean(successes)),
        "returns": returns,
        "successes": successes,
        "steps": [int(found["learner_step"])],
    }


def pooled_evals(evals: list[dict[str, Any]], last: int, path: Path) -> dict[str, Any]:
    """The episodes of the ``last`` evaluations of a run pooled into one final score
    (``mean_return``, ``success_rate``, ``returns``, ``successes``): a run's success swings by
    0.4-0.8 between consecutive 10-episode evaluations, so scoring it by more episodes at the
    end of training cuts that noise. Refuses a run with fewer evaluations, naming it."""
    if len(evals) < last:
        raise ConfigError(
            f"{path / 'evals.jsonl'}: {len(evals)} evaluations, fewer than --last-evals {last}"
        )
    chosen = evals[-last:]
    returns = [float(r) for e in chosen for r in e["episode_returns"]]
    successes = [bool(x) for e in chosen for x in e["episode_successes"]]
    return {
        "mean_return": float(np.mean(returns)),
        "success_rate": float(np.mean(successes)),
        "returns": returns,
        "successes": successes,
        "steps": [int(e["step"]) for e in chosen],
    }


def evals_up_to(evals: list[dict[str, Any]], step: int, path: Path) -> list[dict[str, Any]]:
    """The evaluations of a run at steps <= ``step``; refuses a run that did not evaluate at
    ``step`` itself (it stopped earlier, or evaluated off that step), naming its evals.jsonl and
    the steps it has, so that a budget is never scored from a run that did not reach it."""
    steps = [int(e["step"]) for e in evals]
    if step not in steps:
        raise ConfigError(
            f"{path / 'evals.jsonl'}: no evaluation at --up-to-step {step} (steps {steps})"
        )
    return [e for e in evals if int(e["step"]) <= step]


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
"""What a label or task read from a run folder may be: a plain name, never a path."""


def _checked_results(file: Path) -> dict[str, Any]:
    """``results.json`` with a plain ``label`` and ``task`` (names, never paths: a report's
    files and figures are named by them), an int ``seed`` and an object ``final_eval``; a
    `ConfigError` naming the file and field otherwise."""
    try:
        results = read_json(file)
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: not valid JSON ({error})") from None
    if not isinstance(results, dict):
        raise ConfigError(f"{file}: expected a JSON object")
    for field in ("label", "task"):
        value = results.get(field)
        if not isinstance(value, str) or not NAME.fullmatch(value) or ".." in value:
            raise ConfigError(
                f"{file} (field '{field}'): {value!r} is not a plain name (letters, digits, "
                "'_.+-'; no path)"
            )
    seed = results.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"{file} (field 'seed'): expected an int, got {seed!r}")
    if not isinstance(results.get("final_eval"), dict):
        raise ConfigError(f"{file} (field 'final_eval'): missing or not an object")
    return results


def _normalizer(task: str):
    if is_metaworld(task):
        return lambda r: normalized_score(task, r)
    return None


def grouped(
    runs: list[RunRecord], key: str, episodes: str | None = None
) -> dict[str, dict[str, list[float]]]:
    """``{label: {task: [final <key> of each seed, in seed order]}}``; with ``episodes`` (a
    per-episode field of the final evaluation) the values of every episode of every seed."""
    out: dict[str, dict[str, list[tuple[int, list[float]]]]] = {}
    for run in runs:
        values = [float(v) for v in run.final[episodes]] if episodes else [run.final[key]]
        out.setdefault(run.label, {}).setdefault(run.task, []).append((run.seed, values))
    return {
        label: {task: [v for _, vs in sorted(pairs) for v in vs] for task, pairs in tasks.items()}
        for label, tasks in out.items()
    }


def score_dict(
    runs: list[RunRecord], algorithms: Sequence[str], episodes_as_runs: bool = False
) -> tuple[dict[str, np.ndarray], list[str], bool]:
    """rliable inputs: ``{label: (runs, tasks)}`` scores, the task order, normalised or not."""
    tasks = sorted(set.intersection(*({r.task for r in runs if r.label == a} for a in algorithms)))
    if not tasks:
        raise ConfigError(f"the algorithms {list(algorithms)} share no task")
    normalizers = {t: _normalizer(t) for t in tasks}
    normalized = all(n is not None for n in normalizers.values())
    scores = {}
    for algo in algorithms:
        columns = []
        for task in tasks:
            seeds = sorted(
                (r for r in runs if r.label == algo and r.task == task), key=lambda r: r.seed
            )
            values = (
                [float(x) for x in seeds[0].final["returns"]]
                if episodes_as_runs
                else [float(r.final["mean_return"]) for r in seeds]
            )
            if normalized:
                values = [normalizers[task](v) for v in values]
            columns.append(values)
        n = min(len(c) for c in columns)
        scores[algo] = np.asarray([c[:n] for c in columns], dtype=np.float64).T
    return scores, tasks, normalized


def curve_dict(
    runs: list[RunRecord], algorithms: Sequence[str], tasks: Sequence[str], normalized: bool
) -> tuple[dict[str, np.ndarray], list[int]] | None:
    """Per algorithm (runs, tasks, points) curves at the steps every run evaluated, or None."""
    selected = [r for r in runs if r.label in algorithms and r.task in tasks]
    common = set.intersection(*({e["step"] for e in r.evals} for r in selected))
    steps = sorted(common)
    if len(steps) < 2:
        return None
    out = {}
    for algo in algorithms:
        columns = []
        for task in tasks:
            normalize = _normalizer(task) if normalized else None
            seeds = sorted(
                (r for r in selected if r.label == algo and r.task == task), key=lambda r: r.seed
            )
            rows = []
            for run in seeds:
                by_step = {e["step"]: e["return"] for e in run.evals}
                values = [by_step[s] for s in steps]
                rows.append([normalize(v) for v in values] if normalize else values)
            columns.append(rows)
        n = min(len(c) for c in columns)
        out[algo] = np.asarray([c[:n] for c in columns], dtype=np.float64).transpose(1, 0, 2)
    return out, steps


def curve_records(runs: list[RunRecord], algorithms: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {
            "algorithm": r.label,
            "task": r.task,
            "seed": r.seed,
            "step": e["step"],
            "return": e["return"],
            "success": e["success"],
        }
        for r in runs
        if r.label in algorithms
        for e in r.evals
    ]
