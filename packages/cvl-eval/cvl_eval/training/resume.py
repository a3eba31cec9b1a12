"""Where a resumed run continues: the newest valid checkpoint of its folder, never silently none.

A checkpoint (``checkpoints/step_<N>/``) is valid when its learner loads (files, checksums,
class, shapes: `cvl_algos.load_learner`) and its ``trainer.json`` holds the trainer's state with
consistent steps: ``updates = step + pretrain_steps = N``, each an int >= 0, equal to the
learner's own counters. `resume_point` tries the checkpoint ``latest.json`` names, then every
other one, newest first, and says on stderr which one it continues from (and why any was
skipped). When the folder has checkpoints but none is valid it refuses with one `ConfigError`
before anything is written, so the run's logs are never cut to nothing; a run that never
reached a checkpoint starts over (`cvl_eval.training.session`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cvl_eval.errors import ConfigError
from cvl_eval.runs.folder import TRAINER_STATE_FILE, RunFolder, checkpoint_name
from cvl_eval.training.config import TRAINER_STATE_VERSION

__all__ = ["check_trainer_state", "resume_point"]


def resume_point(run: RunFolder, device: str) -> tuple[Any, dict[str, Any]] | None:
    """``(learner, trainer state)`` of the newest valid checkpoint of ``run``, or None when it
    has none at all (the run starts over).

    Raises:
        ConfigError: the run has checkpoints but none is valid (each one's problem named).
    """
    from cvl_algos import CheckpointError, load_learner

    problems = []
    for folder in run.checkpoint_candidates():
        try:
            learner = load_learner(folder, device=device)
            trainer = check_trainer_state(folder, learner)
        except CheckpointError as error:
            print(f"warning: cannot resume from {folder}: {error}", file=sys.stderr)
            problems.append(str(error))
            continue
        skipped = f" (skipped {len(problems)} unusable newer one(s))" if problems else ""
        print(
            f"resuming {run.path} from {folder} (update {trainer['updates']}, step "
            f"{trainer['step']}){skipped}",
            file=sys.stderr,
        )
        return learner, trainer
    if problems or run.has_checkpoints():
        why = problems[0] if problems else f"{run.checkpoints / 'latest.json'} names no checkpoint"
        raise ConfigError(
            f"cannot resume {run.path}: no valid checkpoint in {run.checkpoints} ({why}); "
            "nothing was changed; to start over, choose another out_dir"
        )
    return None


def check_trainer_state(folder: Path, learner: Any) -> dict[str, Any]:
    """The trainer state of checkpoint ``folder`` (its ``trainer.json``), checked against the
    folder's name and ``learner``'s counters.

    Raises:
        CheckpointError: naming the file and the field at fault.
    """
    from cvl_algos import CheckpointError
    from cvl_algos.checkpoint_files import read_json

    file = folder / TRAINER_STATE_FILE
    if not file.is_file():
        raise CheckpointError(f"{file}: missing (incomplete checkpoint)")
    state = read_json(file)
    if not isinstance(state, dict):
        raise CheckpointError(f"{file}: expected a JSON object")
    if state.get("version", TRAINER_STATE_VERSION) != TRAINER_STATE_VERSION:
        raise CheckpointError(
            f"{file} (field 'version'): {state.get('version')!r}, expected {TRAINER_STATE_VERSION}"
        )
    counts = {}
    for name in ("updates", "step", "pretrain_steps"):
        value = state.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CheckpointError(f"{file} (field '{name}'): expected an int >= 0, got {value!r}")
        counts[name] = value
    _check_counts(file, counts, folder, learner)
    for name, kind in (("samplers", dict), ("wall_time_s", (int, float))):
        if not isinstance(state.get(name), kind):
            raise CheckpointError(f"{file} (field '{name}'): missing or malformed")
    return state


def _check_counts(file: Path, counts: dict[str, int], folder: Path, learner: Any) -> None:
    """``updates = step + pretrain_steps``, the folder's step and the learner's counters agree."""
    from cvl_algos import CheckpointError

    updates, step, pretrain = counts["updates"], counts["step"], counts["pretrain_steps"]
    if updates != step + pretrain:
        raise CheckpointError(
            f"{file} (field 'updates'): {updates} != step {step} + pretrain_steps {pretrain}"
        )
    if folder.name != checkpoint_name(updates):
        raise CheckpointError(
            f"{file} (field 'updates'): {updates}, but the checkpoint folder is {folder.name}"
        )
    if (step, pretrain) != (learner.step, learner.pretrain_steps):
        raise CheckpointError(
            f"{file} (fields 'step', 'pretrain_steps'): {step}, {pretrain}; the learner saved "
            f"beside it is at step {learner.step}, pretrain_steps {learner.pretrain_steps}"
        )
