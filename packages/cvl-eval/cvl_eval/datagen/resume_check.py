"""A generation rerun into a folder that already holds data must be the same generation.

Resuming an interrupted generation appends the missing episodes, and a finished dataset is only
reported; both are right only when the rerun asks for the data that is there. A rerun with other
flags (``--noise-sigma 0.5`` after 0.3, another ``--seed``, another ``--kind``) would append
episodes of another config under the old one's record, or return the old dataset as if it were
the new one. `check_same_generation` compares the generation config recorded in each dataset's
provenance (finished, or kept by the partial's writer) with the current one
(`cvl_eval.runs.config_changes.changed_fields`) and refuses a difference with a `ConfigError`
naming the fields, the path and the way out (another ``--out-dir``). Fields that do not change
the data are not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cvl_eval.errors import ConfigError
from cvl_eval.runs.config_changes import changed_fields

__all__ = ["STATE_FREE_FIELDS", "check_same_generation", "refuse_changes"]

STATE_FREE_FIELDS = ("image_size", "camera")
"""Config fields that shape only the pixel twin, never a state dataset."""


def refuse_changes(where: str | Path, changes: dict[str, tuple[Any, Any]], what: str) -> None:
    """Raise the `ConfigError` of a rerun whose config differs from the one ``where`` records."""
    if not changes:
        return
    details = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changes.items())
    raise ConfigError(
        f"{where}: {what} was generated with another config ({details}); rerun with the "
        "recorded values to continue or report it, or choose another --out-dir for the new one"
    )


def check_same_generation(
    targets: Iterable[tuple[Path, str]],
    provenance: Callable[[str], dict[str, Any]],
    defaults: dict[str, Any] | None = None,
) -> None:
    """Each existing target ``(folder, obs_kind)`` (finished or partial) records the generator
    and config ``provenance(obs_kind)`` describes, up to the fields that do not shape it;
    ``defaults`` (`config_defaults` of the config's class) stand in for fields the record
    predates."""
    from cvl_data import recorded_spec

    for path, kind in targets:
        spec = recorded_spec(path)
        if spec is None:
            continue
        what = "this dataset" if path.exists() else "this unfinished dataset"
        stored = spec.provenance if isinstance(spec.provenance, dict) else {}
        if "config" not in stored:
            raise ConfigError(
                f"{path}: holds a dataset with no recorded generation config (not written by "
                "this generator); choose another --out-dir"
            )
        now = provenance(kind)
        recorded = {"generator": stored.get("generator"), **stored["config"]}
        current = {"generator": now.get("generator"), **now["config"]}
        free = STATE_FREE_FIELDS if kind == "state" else ()
        refuse_changes(path, changed_fields(recorded, current, free, defaults), what)
