"""The paper's experiments: data generation -> sweep -> report (-> heatmaps).

`run_paper_experiment(PaperConfig(experiment=...))` runs one of the presets
(`cvl_eval.pipelines.paper_presets.PRESETS`) in ``out_dir``: ``data/``
(`cvl_eval.datagen.dispatch`), ``runs/`` (`cvl_eval.pipelines.sweep`), ``report/``
(`cvl_eval.analysis.report`), with ``final_episodes`` N also ``report_final<N>/`` (every run
scored by N episodes of its final policy) and, for Mountain Car, ``mountain_car/``
(`cvl_eval.analysis.mountain_car`). Every stage resumes, so an interrupted experiment is
continued by running the same command again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.datagen.dispatch import GenerateConfig, check_generate, generate_datasets
from cvl_eval.envs.make import MOUNTAIN_CAR
from cvl_eval.pipelines.paper_presets import Budget, PaperConfig, resolve
from cvl_eval.pipelines.sweep import SweepConfig, expand, sweep
from cvl_eval.pipelines.sweep_plan import overrides_of_learners_run

__all__ = ["generate_configs", "run_paper_experiment", "sweep_config"]


def sweep_config(plan: dict[str, Any], config: PaperConfig) -> SweepConfig:
    """The sweep of a resolved preset (`resolve`)."""
    preset, budget, out = plan["preset"], plan["budget"], plan["out"]
    # the presets' shared settings cover learners a preset may not run; the user's are checked
    shared = overrides_of_learners_run((*budget.overrides, *preset.overrides), preset.algorithms)
    return SweepConfig(
        data_root=str(out / "data" / ("pixels" if preset.pixels else "")),
        out_dir=str(out / "runs"),
        algorithms=preset.algorithms,
        tasks=budget.tasks,
        seeds=budget.seeds,
        workers=config.workers,
        threads_per_run=config.threads_per_run,
        steps=budget.steps,
        pretrain_steps=budget.pretrain_steps,
        hidden=budget.hidden,
        batch_size=budget.batch_size,
        overrides=(*shared, *config.overrides),
        observations="pixels" if preset.pixels else "state",
        device=config.device,
        eval_every=budget.eval_every,
        eval_episodes=config.eval_episodes,
        eval_max_steps=config.eval_max_steps,
        checkpoint_every=max(budget.eval_every, 1000),
        backend=config.backend,
        ray_address=config.ray_address,
        num_cpus=config.num_cpus,
        num_gpus=config.num_gpus,
        wandb=config.wandb,
        wandb_project=f"cvl-{config.experiment}",
        vectorise_seeds=config.vectorise_seeds,
    )


def generate_configs(plan: dict[str, Any], config: PaperConfig) -> tuple[GenerateConfig, ...]:
    """The data generation of a resolved preset (`resolve`): one config per data kind and size
    (`Budget.data_of`: the target tasks' and the related tasks') over its data tasks, with each
    environment's defaults (`cvl_eval.envs.defaults`), into the one data root."""
    budget = plan["budget"]
    groups: dict[tuple[str, int], list[str]] = {}
    for task in plan["data_tasks"]:
        groups.setdefault(budget.data_of(task), []).append(task)
    return tuple(
        GenerateConfig(
            tasks=tuple(tasks),
            out_dir=str(plan["out"] / "data"),
            kind=kind,  # type: ignore[arg-type]
            pixels=plan["preset"].pixels,
            episodes=episodes,
            frames=budget.frames,
            sac_hidden=budget.sac_hidden,
            sac_batch_size=budget.sac_batch_size,
            device=config.device,
            progress=config.progress,
        )
        for (kind, episodes), tasks in groups.items()
    )


def run_paper_experiment(config: PaperConfig) -> dict[str, Any]:
    """Generate the data, run the sweep, write the report (and the Mountain Car heatmaps)."""
    from cvl_eval.analysis.report import ReportConfig, report

    plan = resolve(config)
    preset, budget, out = plan["preset"], plan["budget"], plan["out"]
    sweep_cfg = sweep_config(plan, config)
    expand(sweep_cfg)  # names and combinations, before any work
    generations = generate_configs(plan, config)
    for generation_config in generations:
        check_generate(generation_config)  # every kind's data checked before any is written
    generation: dict[str, Any] = {}
    for generation_config in generations:
        generation.update(generate_datasets(generation_config))
    sweep_record = sweep(sweep_cfg, progress=config.progress)
    summary = report(
        ReportConfig(
            runs=(str(out / "runs"),),
            out_dir=str(out / "report"),
            algorithms=preset.algorithms,
            bootstrap_reps=config.bootstrap_reps,
            title=preset.description,
            last_evals=budget.last_evals,
        )
    )
    result = {
        "experiment": config.experiment,
        "full": config.full,
        "budget": to_json_data(budget),
        "generation": generation,
        "sweep": sweep_record,
        "report": summary["files"],
        "warnings": [],
    }
    if config.final_episodes is not None:
        result["report_final"] = _final_policy_report(plan, config)
    replay = {task: e["paths"][0] for task, e in generation.items() if e["kind"] == "sac"}
    if replay:  # what SAC learned while writing the data: report/sac_generation.{json,png}
        from cvl_eval.pipelines.sac_generation import summarise_sac_generation

        result["sac_generation"] = summarise_sac_generation(replay, out / "report")
    if preset.mountain_car:
        result["mountain_car"] = _mountain_car(out, generation, budget)
        if generation[MOUNTAIN_CAR].get("success_rate") == 0:
            result["warnings"].append(
                "Mountain Car: SAC never reached the goal in its data (success_rate 0), so its Q "
                "reflects the action cost only and the heatmaps / Spearman say little about CVL; "
                "give SAC more frames (--frames) or another seed"
            )
    write_json_atomic(out / "experiment.json", result)
    return result


def _final_policy_report(plan: dict[str, Any], config: PaperConfig) -> dict[str, str]:
    """Every run of the preset's learners evaluated by ``final_episodes`` episodes of its final
    policy (runs that have that file already are skipped), then the report scored by them."""
    from tqdm import tqdm

    from cvl_eval.analysis.report import ReportConfig, report
    from cvl_eval.analysis.run_scores import final_eval_file
    from cvl_eval.rollout.checkpoint import EvaluateConfig, evaluate_checkpoint
    from cvl_eval.runs.folder import RunFolder
    from cvl_eval.runs.index import find_runs

    preset, out, episodes = plan["preset"], plan["out"], config.final_episodes
    runs = [RunFolder(p) for a in preset.algorithms for p in find_runs([out / "runs" / a])]
    todo = []
    for run in runs:
        file, seed = final_eval_file(run, episodes)
        if not file.is_file():
            todo.append(
                EvaluateConfig(
                    str(run.path),
                    episodes,
                    seed,
                    max_steps=config.eval_max_steps,
                    device=config.device,
                    out=str(file),
                )
            )
    for evaluation in tqdm(todo, desc="final policies", unit="run", disable=not config.progress):
        evaluate_checkpoint(evaluation)
    summary = report(
        ReportConfig(
            runs=(str(out / "runs"),),
            out_dir=str(out / f"report_final{episodes}"),
            algorithms=preset.algorithms,
            bootstrap_reps=config.bootstrap_reps,
            title=preset.description,
            final_episodes=episodes,
        )
    )
    return summary["files"]


def _mountain_car(out: Path, generation: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """Heatmaps of every seed's CVL critic against the data-generating SAC."""
    from cvl_eval.analysis.mountain_car import analyze_mountain_car

    task = MOUNTAIN_CAR
    entry = generation[task]
    results = {}
    for seed in budget.seeds:
        analysis = analyze_mountain_car(
            out / "runs" / "cvl" / task / f"seed_{seed}" / "final",
            entry["sac_dir"],
            entry["paths"][0],
            out / "mountain_car" / f"seed_{seed}",
        )
        results[f"seed_{seed}"] = {
            "png": str(analysis.png),
            "json": str(analysis.json),
            "spearman_states": analysis.spearman_states,
            "spearman_pairs": analysis.spearman_pairs,
        }
    return results
