"""The expert-return table that normalises scores: 1.0 is the scripted expert.

``normalized_score(task, raw) = raw / expert_return(task)``: 1.0 is the scripted expert
(`cvl_eval.envs.experts.ScriptedExpert`) on the same evaluation protocol, 0.0 is zero return.
The table ships in the package (``cvl_eval/envs/data/expert_returns.json``) and is recomputed
by ``python -m cvl_eval.rollout.expert_table`` (see that module).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np

from cvl_eval.envs.make import canonical_name

__all__ = ["expert_return", "load_expert_table", "normalized_score"]

EXPERT_TABLE_RESOURCE = "data/expert_returns.json"
"""The packaged table, relative to this module's package (a literal path next to the module:
Pants' asset inference finds the ``resources`` target from it)."""


@cache
def load_expert_table() -> dict:
    """The packaged expert table (see module docstring), read with importlib.resources."""
    text = resources.files("cvl_eval.envs").joinpath(EXPERT_TABLE_RESOURCE).read_text()
    return json.loads(text)


def expert_return(task: str) -> float:
    """Mean return of the scripted expert on ``task`` (from the packaged table)."""
    name = canonical_name(task)
    tasks = load_expert_table()["tasks"]
    if name not in tasks:
        raise KeyError(f"{name!r} is not in the expert table (Meta-World tasks only)")
    return float(tasks[name]["mean_return"])


def normalized_score(task: str, raw_return: float | np.ndarray) -> float | np.ndarray:
    """``raw_return / expert_return(task)``; keeps the shape of ``raw_return``.

    Raw returns are the primary record everywhere; this is for cross-task aggregation.
    """
    reference = expert_return(task)
    if isinstance(raw_return, np.ndarray):
        return raw_return / reference
    return float(raw_return) / reference
