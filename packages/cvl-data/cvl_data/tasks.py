"""Task names and domains (paper sec. 5.2: pretraining on the related tasks of a domain)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

_VERSION_SUFFIX = re.compile(r"-v\d+$")

T = TypeVar("T")


def task_base_name(task: str) -> str:
    """The task name without its version suffix: ``"drawer-open-v3"`` -> ``"drawer-open"``."""
    return _VERSION_SUFFIX.sub("", task)


def task_domain(task: str) -> str:
    """The domain of a task: its name, version suffix stripped, up to the first ``-``.

    >>> task_domain("drawer-open-v3"), task_domain("drawer-close"), task_domain("reach-v2")
    ('drawer', 'drawer', 'reach')
    """
    return task_base_name(task).split("-", 1)[0]


def _task_of(item: object) -> str:
    if isinstance(item, str):
        return item
    spec = getattr(item, "spec", None)
    if spec is None:
        raise TypeError(f"expected a task name or a dataset with .spec, got {type(item).__name__}")
    return spec.task


def related_tasks(target: str, available: Iterable[T]) -> list[T]:
    """The items of ``available`` in the target's domain, the target task itself excluded.

    ``available`` holds task names or datasets (anything with ``.spec.task``); the matching items
    are returned as given, in their original order. Version suffixes are ignored when comparing
    (``"drawer-open"`` and ``"drawer-open-v3"`` are the same task).
    """
    domain = task_domain(target)
    base = task_base_name(target)
    out = []
    for item in available:
        task = _task_of(item)
        if task_domain(task) == domain and task_base_name(task) != base:
            out.append(item)
    return out
