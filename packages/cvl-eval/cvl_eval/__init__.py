"""cvl_eval: environments, rollouts, dataset generation, rliable metrics, plots and reports.

Part of the CVL monorepo ("Contrastive Value Learning: Implicit Models for Simple Offline RL",
Mazoure, Eysenbach, Nachum, Tompson).

Names are exported lazily (``from cvl_eval import make_env`` imports only what it needs), so
``import cvl_eval`` stays cheap and sets no rendering backend. Modules that touch MuJoCo set
``MUJOCO_GL=egl`` (unless already set) before importing it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # never executed; lets Pants' dependency inference see the lazy modules
    from cvl_eval import (  # noqa: F401
        collect,
        curves,
        envs,
        experts,
        generate,
        metric_plots,
        metrics,
        mountain_car,
        pixels,
        rollout,
        sac_generate,
        tables,
    )

__version__ = "0.1.0"

_EXPORTS = {
    # environments
    "make_env": "cvl_eval.envs",
    "TASK_NAMES": "cvl_eval.envs",
    "ENV_NAMES": "cvl_eval.envs",
    "MOUNTAIN_CAR": "cvl_eval.envs",
    "canonical_name": "cvl_eval.envs",
    "is_metaworld": "cvl_eval.envs",
    "PixelObservation": "cvl_eval.pixels",
    "RenderConfig": "cvl_eval.pixels",
    "OffscreenRenderer": "cvl_eval.pixels",
    # rollouts
    "evaluate_policy": "cvl_eval.rollout",
    "evaluation_seeds": "cvl_eval.rollout",
    "EvalResult": "cvl_eval.rollout",
    "random_policy": "cvl_eval.rollout",
    "Episode": "cvl_eval.collect",
    "run_episode": "cvl_eval.collect",
    "dataset_spec": "cvl_eval.collect",
    # experts and normalisation
    "ScriptedExpert": "cvl_eval.experts",
    "normalized_score": "cvl_eval.experts",
    "expert_return": "cvl_eval.experts",
    "load_expert_table": "cvl_eval.experts",
    # dataset generation
    "ScriptedConfig": "cvl_eval.generate",
    "generate_scripted": "cvl_eval.generate",
    "GenerationReport": "cvl_eval.generate",
    "SACDataConfig": "cvl_eval.sac_generate",
    "SACGenerationReport": "cvl_eval.sac_generate",
    "generate_sac": "cvl_eval.sac_generate",
    # Mountain Car analysis
    "HeatmapConfig": "cvl_eval.mountain_car",
    "mountain_car_q_analysis": "cvl_eval.mountain_car",
    "analyze_mountain_car": "cvl_eval.mountain_car",
    "mountain_car_sac_config": "cvl_eval.mountain_car",
    "mountain_car_cvl_overrides": "cvl_eval.mountain_car",
    # metrics, plots, tables
    "BootstrapConfig": "cvl_eval.metrics",
    "aggregate_scores": "cvl_eval.metrics",
    "performance_profiles": "cvl_eval.metrics",
    "probability_of_improvement": "cvl_eval.metrics",
    "sample_efficiency": "cvl_eval.metrics",
    "score_matrix": "cvl_eval.metrics",
    "write_rliable_report": "cvl_eval.metric_plots",
    "TableFormat": "cvl_eval.tables",
    "to_markdown": "cvl_eval.tables",
    "to_csv": "cvl_eval.tables",
    "write_tables": "cvl_eval.tables",
    "plot_learning_curves": "cvl_eval.curves",
    "final_returns": "cvl_eval.curves",
}

__all__ = [
    "ENV_NAMES",
    "MOUNTAIN_CAR",
    "TASK_NAMES",
    "BootstrapConfig",
    "Episode",
    "EvalResult",
    "GenerationReport",
    "HeatmapConfig",
    "SACDataConfig",
    "SACGenerationReport",
    "OffscreenRenderer",
    "PixelObservation",
    "RenderConfig",
    "ScriptedConfig",
    "ScriptedExpert",
    "TableFormat",
    "__version__",
    "aggregate_scores",
    "analyze_mountain_car",
    "canonical_name",
    "dataset_spec",
    "evaluate_policy",
    "evaluation_seeds",
    "expert_return",
    "final_returns",
    "generate_sac",
    "generate_scripted",
    "is_metaworld",
    "load_expert_table",
    "make_env",
    "mountain_car_cvl_overrides",
    "mountain_car_q_analysis",
    "mountain_car_sac_config",
    "normalized_score",
    "performance_profiles",
    "plot_learning_curves",
    "probability_of_improvement",
    "random_policy",
    "run_episode",
    "sample_efficiency",
    "score_matrix",
    "to_csv",
    "to_markdown",
    "write_rliable_report",
    "write_tables",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cvl_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
