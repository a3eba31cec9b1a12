"""What a rerun changes against a recorded config: `changed_fields`, shared by the resumption
checks of generations (`cvl_eval.datagen.resume_check`) and of training runs
(`cvl_eval.training.checks`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from cvl_data.jsonio import to_json_data

__all__ = ["changed_fields", "config_defaults"]


def changed_fields(
    recorded: dict[str, Any],
    current: dict[str, Any],
    free: Iterable[str] = (),
    defaults: dict[str, Any] | None = None,
) -> dict[str, tuple[Any, Any]]:
    """``{field: (recorded, current)}`` of the fields that differ, ``free`` ones left out
    (values compared as JSON data: a tuple equals the list it was recorded as).

    ``defaults``: the config's default values (JSON data, nested configs as nested dicts). A
    field the recorded config lacks, at any depth, is compared at its default: a config field
    is added with the default that keeps the behaviour it had before it existed, so a config
    recorded before then is that default's (e.g. a learner's ``policy_ema_tau`` 0)."""
    now = json.loads(json.dumps(current))
    if defaults is not None:
        recorded = _with_defaults(recorded, json.loads(json.dumps(defaults)))
    keys = sorted((set(recorded) | set(now)) - set(free))
    return {k: (recorded.get(k), now.get(k)) for k in keys if recorded.get(k) != now.get(k)}


def _with_defaults(recorded: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` with the fields it lacks taken from ``defaults``, recursively."""
    out = dict(recorded)
    for key, default in defaults.items():
        if key not in out:
            out[key] = default
        elif isinstance(out[key], dict) and isinstance(default, dict):
            out[key] = _with_defaults(out[key], default)
    return out


def config_defaults(config_cls: type) -> dict[str, Any]:
    """The default values of a config dataclass's fields that have one, as JSON data (nested
    config dataclasses as nested dicts): `changed_fields`'s ``defaults``."""
    out = {}
    for field in dataclasses.fields(config_cls):
        if field.default is not dataclasses.MISSING:
            out[field.name] = to_json_data(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            out[field.name] = to_json_data(field.default_factory())
    return out
