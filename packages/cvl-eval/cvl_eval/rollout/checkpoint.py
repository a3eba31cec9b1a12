"""Evaluate a saved learner on its task: N episodes with fixed seeds, JSON out.

`evaluate_checkpoint(EvaluateConfig)` accepts a run folder (its ``final/`` checkpoint, else its
latest periodic one) or a checkpoint folder (``learner.save`` output). The task, observation
kind and camera come from the run's ``config.json`` (a checkpoint inside a run folder finds it
too); a bare checkpoint needs ``task``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvl_data.jsonio import write_json_atomic
from cvl_eval.envs.make import check_camera, config_name, require_canonical
from cvl_eval.errors import ConfigError, check_ranges
from cvl_eval.rollout.evaluate import evaluate_policy
from cvl_eval.runs.folder import RunFolder, read_json


@dataclass(frozen=True)
class EvaluateConfig:
    """Which checkpoint, how many episodes, where the JSON goes."""

    checkpoint: str
    """A run folder or a checkpoint folder (``learner.save`` output)."""
    episodes: int = 10
    """Evaluation episodes."""
    seed: int = 100
    """Evaluation seed (training runs evaluate with 100 by default)."""
    task: str | None = None
    """Task; default: the run's. Required for a checkpoint outside a run folder."""
    out: str | None = None
    """JSON output file; default ``<checkpoint>/eval_<episodes>ep_seed<seed>.json``."""
    deterministic: bool = True
    """Act with the policy's mean action (False: sample)."""
    max_steps: int | None = None
    """Optional episode step limit."""
    device: str = "cpu"
    """Device to load the learner on."""
    allow_unverified_checkpoint: bool = False
    """Load a checkpoint that has no ``checksums.json`` (its files cannot be verified; warned).
    Without it such a checkpoint is refused."""
    trained_policy: bool = False
    """Act with the trained policy instead of its polyak average (a run trained with
    ``policy_ema_tau`` > 0 acts with the average by default). Refused for a learner without
    an average."""

    def __post_init__(self) -> None:
        if self.task is not None:
            object.__setattr__(self, "task", config_name(self.task))


def _check_numbers(config: EvaluateConfig) -> None:
    """Counts and seeds within their ranges, before any work (each refusal names its flag)."""
    max_steps = config.max_steps is None or config.max_steps >= 1
    check_ranges(
        config,
        {
            "episodes": (config.episodes >= 1, ">= 1"),
            "seed": (config.seed >= 0, ">= 0"),
            "max_steps": (max_steps, ">= 1"),
        },
    )


def _locate(path: Path) -> tuple[Path, dict[str, Any] | None]:
    """(checkpoint folder, the run's config.json content or None)."""
    if not path.exists():
        raise ConfigError(f"no such checkpoint or run folder: {path}")
    if (path / "config.json").is_file() and not (path / "state.json").is_file():
        run = RunFolder(path)
        checkpoint = run.final if (run.final / "state.json").is_file() else run.latest_checkpoint()
        if checkpoint is None:
            raise ConfigError(f"run folder {path} has no checkpoint yet")
        return checkpoint, read_json(run.config)
    if not (path / "state.json").is_file():
        raise ConfigError(f"{path} is neither a run folder nor a checkpoint (no state.json)")
    for parent in (path.parent, path.parent.parent):
        if (parent / "config.json").is_file():
            return path, read_json(parent / "config.json")
    return path, None


def _choose_policy(learner: Any, checkpoint: Path, trained: bool) -> str:
    """Which policy ``learner`` acts with: "average" (its polyak average), "trained", or
    "trained (no average)"; ``trained`` sets a learner with an average to its trained policy."""
    if learner.policy_ema is None:
        if trained:
            raise ConfigError(
                f"--trained-policy: {checkpoint} has no policy average (policy_ema_tau was 0); "
                "it acts with its trained policy already"
            )
        return "trained (no average)"
    if trained:
        learner.policy_ema = None  # `LearnerBase.acting_policy` falls back to ``policy``
        return "trained"
    return "average"


def evaluate_checkpoint(config: EvaluateConfig) -> dict[str, Any]:
    """Evaluate; returns (and writes) the `EvalResult` dict plus where it came from."""
    _check_numbers(config)
    checkpoint, run_config = _locate(Path(config.checkpoint))
    task = config.task or (run_config or {}).get("task")
    if task is None:
        raise ConfigError(f"{checkpoint} is not inside a run folder: give the task (--task)")
    try:  # the config's task was settled by it; a run's was canonical when the run wrote it
        task = require_canonical(task)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    camera = ((run_config or {}).get("train_config") or {}).get("camera") or "corner"

    from cvl_algos import load_learner

    learner = load_learner(
        checkpoint,
        device=config.device,
        restore_global_rng=False,
        allow_unverified=config.allow_unverified_checkpoint,
    )
    policy = _choose_policy(learner, checkpoint, config.trained_policy)
    pixels = len(learner.obs_shape) == 3  # image observations (H, W, C)
    if pixels:
        try:
            check_camera(task, camera)
        except ValueError as error:
            raise ConfigError(f"{checkpoint} (run config field 'camera'): {error}") from None
    result = evaluate_policy(
        task,
        lambda obs: learner.act(obs, deterministic=config.deterministic),
        config.episodes,
        seed=config.seed,
        pixels=pixels,
        max_steps=config.max_steps,
        image_size=learner.obs_shape[0] if pixels else 84,
        camera=camera,
    )
    document = {
        "checkpoint": str(checkpoint),
        "algorithm": learner.name,
        "learner_step": learner.step,
        "deterministic": config.deterministic,
        "policy": policy,
        **result.to_dict(),
    }
    out = (
        Path(config.out)
        if config.out
        else checkpoint / f"eval_{config.episodes}ep_seed{config.seed}.json"
    )
    write_json_atomic(out, document)
    document["out"] = str(out)
    return document


def format_result(document: dict[str, Any]) -> str:
    """One line per key number (what the CLI prints)."""
    summary = document["summary"]
    norm = summary["mean_normalized_return"]
    return json.dumps(
        {
            "task": document["env_name"],
            "episodes": len(document["returns"]),
            "return": round(summary["mean_return"], 2),
            "return_std": round(summary["std_return"], 2),
            "success": summary["success_rate"],
            "normalized": None if norm is None else round(norm, 4),
            "out": document["out"],
        }
    )
