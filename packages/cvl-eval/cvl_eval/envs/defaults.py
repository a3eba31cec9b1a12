"""Per-environment defaults: the one home of what differs between environments, read by data
generation (`cvl_eval.datagen`), the paper presets (`cvl_eval.pipelines`) and the tests.

Meta-World tasks take every default as it is. Mountain Car differs twice (measured, see
docs/deviations.md, the Mountain Car SAC warm-up row):

- SAC data collection: i.i.d. uniform warm-up actions never reach its goal (0 of 40 episodes)
  and a SAC that never saw the goal reward learns to stand still; uniform actions *held for 25
  steps* reach it in 38 of 40 episodes. So its SAC datasets start with 10k warm-up frames of
  held actions (`SACDataConfig.warmup_frames`, `warmup_action_repeat`).
- Learners: no behaviour cloning (paper table 2: lambda_BC = 0 on Mountain Car), for every
  learner whose config has a ``lambda_bc`` field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from cvl_eval.envs.make import MOUNTAIN_CAR, require_canonical

__all__ = ["ENV_DEFAULTS", "EnvDefaults", "env_defaults", "learner_defaults"]


def _frozen(values: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(values or {}))


@dataclass(frozen=True)
class EnvDefaults:
    """What one environment changes in the shared defaults."""

    sac_data: Mapping[str, Any] = field(default_factory=_frozen)
    """`cvl_eval.datagen.sac.config.SACDataConfig` fields of its SAC replay datasets."""
    learner: Mapping[str, Any] = field(default_factory=_frozen)
    """Learner config fields, for every learner whose config has them."""


ENV_DEFAULTS: Mapping[str, EnvDefaults] = MappingProxyType(
    {
        MOUNTAIN_CAR: EnvDefaults(
            sac_data=_frozen({"warmup_frames": 10_000, "warmup_action_repeat": 25}),
            learner=_frozen({"lambda_bc": 0.0}),
        ),
    }
)
"""Environments whose defaults differ (canonical names); every other one: `EnvDefaults()`."""


def env_defaults(name: str) -> EnvDefaults:
    """The defaults of environment ``name`` (canonical, one of `ENV_NAMES`)."""
    return ENV_DEFAULTS.get(require_canonical(name), EnvDefaults())


def learner_defaults(name: str, config_cls: type) -> dict[str, Any]:
    """The learner config fields environment ``name`` sets that ``config_cls`` has."""
    known = {f.name for f in dataclasses.fields(config_cls)}
    return {k: v for k, v in env_defaults(name).learner.items() if k in known}
