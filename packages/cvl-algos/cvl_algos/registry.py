"""Learner registry: ``make_learner(name, ...)`` and the ``ALGORITHMS`` table.

Learner classes are referenced by import path and imported on first use, so importing
``cvl_algos`` stays cheap. The registry sits above the learners: it imports them (by path), none
of them imports it. ``register(name, target)`` adds an algorithm (a class or a ``"module:Class"``
path); a learner describes itself through its class's declarations (`cvl_algos.base.LearnerBase`:
``offline``, ``needs_rewards``, ``pretraining``, sampler, progress metrics), so adding an
algorithm is its module plus one line in `ALGORITHMS`.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any

import torch

from cvl_algos.base import LearnerBase

if TYPE_CHECKING:
    # Never executed; names the modules behind the import paths below so that Pants'
    # dependency inference ships them with anything that uses the registry.
    import cvl_algos.bc
    import cvl_algos.cql
    import cvl_algos.cvl
    import cvl_algos.fql
    import cvl_algos.iql
    import cvl_algos.sac
    import cvl_algos.uds  # noqa: F401

__all__ = [
    "ALGORITHMS",
    "learner_class",
    "load_learner",
    "make_learner",
    "offline_algorithms",
    "register",
]

ALGORITHMS: dict[str, str | type] = {
    "bc": "cvl_algos.bc:BCLearner",
    "filtered_bc": "cvl_algos.bc:FilteredBCLearner",
    "weighted_bc": "cvl_algos.bc:WeightedBCLearner",
    "cql": "cvl_algos.cql:CQLLearner",
    "cql_uds": "cvl_algos.uds:CQLUDSLearner",
    "sac": "cvl_algos.sac:SACLearner",
    "cvl": "cvl_algos.cvl:CVLLearner",
    "cvl_mc": "cvl_algos.cvl:CVLMCLearner",
    "iql": "cvl_algos.iql:IQLLearner",
    "fql": "cvl_algos.fql:FQLLearner",
}
"""Algorithm name -> learner class or its ``"module:Class"`` import path."""


def register(name: str, target: str | type, overwrite: bool = False) -> None:
    """Make ``make_learner(name, ...)`` build ``target`` (a learner class or ``"module:Class"``)."""
    if name in ALGORITHMS and not overwrite and ALGORITHMS[name] != target:
        raise ValueError(f"algorithm {name!r} is already registered as {ALGORITHMS[name]!r}")
    ALGORITHMS[name] = target


def learner_class(name: str) -> type:
    """The learner class registered under ``name`` (imports it on first use)."""
    if name not in ALGORITHMS:
        raise KeyError(f"unknown algorithm {name!r}; known: {sorted(ALGORITHMS)}")
    target = ALGORITHMS[name]
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module_name), attr)
        ALGORITHMS[name] = target
    return target


def make_learner(
    name: str,
    obs_shape: tuple[int, ...],
    action_dim: int,
    device: str | torch.device = "cpu",
    seed: int = 0,
    **config_overrides: Any,
):
    """Build the learner ``name`` with its default config updated by ``config_overrides``.

    Example: ``make_learner("cql", (39,), 4, device="cuda", policy_eval_start=0)``.
    Unknown override names raise ``TypeError`` listing the config's fields.
    """
    cls = learner_class(name)
    config = cls.config_cls()
    known = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(config_overrides) - known)
    if unknown:
        raise TypeError(f"{name}: unknown config fields {unknown}; known: {sorted(known)}")
    config = dataclasses.replace(config, **config_overrides)
    return cls(tuple(obs_shape), int(action_dim), config=config, device=device, seed=seed)


def load_learner(
    dir,
    device: str | torch.device = "cpu",
    restore_global_rng: bool = True,
    allow_unverified: bool = False,
):
    """Load any learner saved with ``learner.save(dir)``: the class registered under its saved
    algorithm name; an unregistered name is a `CheckpointError` (nothing the checkpoint names is
    imported). ``allow_unverified``: load a checkpoint without ``checksums.json`` (warned)."""
    for name in list(ALGORITHMS):
        learner_class(name)  # the registry's own import paths, so that every name resolves
    return LearnerBase.load(
        dir,
        device=device,
        restore_global_rng=restore_global_rng,
        allow_unverified=allow_unverified,
    )


def offline_algorithms() -> tuple[str, ...]:
    """The registered algorithms an offline trainer runs (their learner class is ``offline``)."""
    return tuple(name for name in ALGORITHMS if learner_class(name).offline)
