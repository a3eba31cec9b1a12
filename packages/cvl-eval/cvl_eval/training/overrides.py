"""Learner config overrides: ``key=value`` text -> a value of the field's declared type.

Every place that changes a learner config from text (``train --overrides``, ``sweep
--overrides [algo:]key=value``, the paper presets' budgets, the quickstart) goes through
`typed_overrides`. Each value is converted to the type its frozen config dataclass declares
(``bool``, ``int``, ``float``, ``str``, ``Literal[...]``, ``tuple[int, ...]``, ``X | None``) and
refused with a `ConfigError` naming the key, the value and the expected type when it does not
parse or fit: ``normalize_q=False`` is the bool False, never the truthy string ``"False"``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from typing import Any, Literal, Union

from cvl_eval.errors import ConfigError

__all__ = ["convert_value", "describe_type", "split_overrides", "typed_overrides"]

_INT = re.compile(r"[+-]?\d+")
_NONE = ("none", "null")


def split_overrides(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("lambda_bc=0.1", "hidden=[64,64]")`` -> ``{"lambda_bc": "0.1", "hidden": "[64,64]"}``
    (the last of a repeated key wins, so later overrides refine earlier ones)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not of the form key=value")
        out[key.strip()] = text.strip()
    return out


def typed_overrides(
    config_cls: type, items: tuple[str, ...] | list[str], owner: str
) -> dict[str, Any]:
    """The overrides ``items`` as values of ``config_cls``'s field types.

    Raises:
        ConfigError: a malformed item, a field ``config_cls`` does not have, or a value that
            does not parse as (or fit) the field's type; ``owner`` (the algorithm) leads it.
    """
    texts = split_overrides(items)
    hints = typing.get_type_hints(config_cls)
    known = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(texts) - known)
    if unknown:
        raise ConfigError(
            f"{owner}: unknown learner config field(s) {unknown}; known: {sorted(known)}"
        )
    out = {}
    for key, text in texts.items():
        try:
            out[key] = convert_value(text, hints[key])
        except ValueError:
            raise ConfigError(
                f"{owner}: override {key}={text!r} is not {describe_type(hints[key])} "
                f"(the type of {config_cls.__name__}.{key})"
            ) from None
    return out


def convert_value(text: str, annotation: Any) -> Any:
    """``text`` as a value of ``annotation``; `ValueError` when it does not parse or fit."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return _convert_union(text, typing.get_args(annotation))
    if origin is Literal:
        return _convert_literal(text, typing.get_args(annotation))
    if origin is tuple:
        return _convert_tuple(text, typing.get_args(annotation))
    if annotation is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(text)
        return text.lower() == "true"
    if annotation is int:
        if not _INT.fullmatch(text):
            raise ValueError(text)
        return int(text)
    if annotation is float:
        value = float(text)  # ValueError for "1e-3x", "{oops", ""
        if math.isnan(value):
            raise ValueError(text)
        return value
    if annotation is str:
        return _unquote(text)
    raise ValueError(f"no converter for {annotation!r}")


def describe_type(annotation: Any) -> str:
    """What `convert_value` accepts for ``annotation``, for error messages."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        parts = [describe_type(a) for a in typing.get_args(annotation) if a is not type(None)]
        none = " or None" if type(None) in typing.get_args(annotation) else ""
        return " or ".join(parts) + none
    if origin is Literal:
        return f"one of {list(typing.get_args(annotation))}"
    if origin is tuple:
        element = typing.get_args(annotation)[0]
        return f"a tuple of {describe_type(element)} (e.g. [64,64] or 64,64)"
    names = {bool: "a bool (true or false, any case)", int: "an int", float: "a float"}
    return names.get(annotation, "a string" if annotation is str else repr(annotation))


def _convert_union(text: str, args: tuple[Any, ...]) -> Any:
    if type(None) in args and text.lower() in _NONE:
        return None
    for arg in args:
        if arg is type(None):
            continue
        try:
            return convert_value(text, arg)
        except ValueError:
            continue
    raise ValueError(text)


def _convert_literal(text: str, choices: tuple[Any, ...]) -> Any:
    for choice in choices:
        try:
            if convert_value(text, type(choice)) == choice:
                return choice
        except ValueError:
            continue
    raise ValueError(text)


def _convert_tuple(text: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    body = text.strip()
    if body[:1] + body[-1:] in ("[]", "()"):
        body = body[1:-1]
    items = [item.strip() for item in body.split(",")] if body.strip() else []
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(convert_value(item, args[0]) for item in items)
    if len(items) != len(args):
        raise ValueError(text)
    return tuple(convert_value(item, arg) for item, arg in zip(items, args))


def _unquote(text: str) -> str:
    """A JSON string literal (``"mc"``, as `json.dumps` writes it) or the text as it is."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(value, str):
            return value
    return text
