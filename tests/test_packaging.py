"""Packaging invariants of the monorepo.

Each package's version lives in one place (`cvl_x.__version__`); its pyproject.toml derives
it, and the first-party pins there must admit the current versions of the packages it
depends on, matching the import direction data/models -> algos -> eval.
"""

import importlib
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = {
    "data": (),
    "models": (),
    "algos": ("data", "models"),
    "eval": ("data", "models", "algos"),
}


def _project(name: str) -> dict:
    return tomllib.loads((ROOT / "packages" / f"cvl-{name}" / "pyproject.toml").read_text())


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


@pytest.mark.parametrize("name", sorted(FIRST_PARTY))
def test_version_is_derived_from_the_package(name):
    data = _project(name)
    assert data["project"]["name"] == f"cvl-{name}"
    assert "version" not in data["project"], f"version must live only in cvl_{name}/__init__.py"
    assert data["project"]["dynamic"] == ["version"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {"attr": f"cvl_{name}.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", importlib.import_module(f"cvl_{name}").__version__)


@pytest.mark.parametrize("name", sorted(FIRST_PARTY))
def test_first_party_pins_admit_current_versions(name):
    pins = {}
    for requirement in _project(name)["project"]["dependencies"]:
        match = re.fullmatch(r"cvl-(\w+)>=([\d.]+),<([\d.]+)", requirement)
        if match:
            pins[match.group(1)] = (match.group(2), match.group(3))
    assert sorted(pins) == sorted(FIRST_PARTY[name])
    for dep, (low, high) in pins.items():
        version = importlib.import_module(f"cvl_{dep}").__version__
        current = _as_tuple(version)[:2]
        assert (
            _as_tuple(low) <= current < _as_tuple(high)
        ), f"cvl-{dep} {version} vs >={low},<{high}"


COMMANDS = ("train", "generate", "evaluate", "sweep", "report", "quickstart")


def _scripts() -> list[tuple[str, str, str]]:
    return [
        (name, script, target)
        for name in sorted(FIRST_PARTY)
        for script, target in _project(name)["project"].get("scripts", {}).items()
    ]


def test_cvl_eval_declares_its_commands_and_the_parser_they_need():
    scripts = _project("eval")["project"]["scripts"]
    assert {f"cvl-{c}" for c in COMMANDS} <= set(scripts)
    # the range of 3rdparty/python/requirements.txt, which the lock resolves
    assert "tyro>=0.8,<2" in _project("eval")["project"]["dependencies"]


@pytest.mark.parametrize("name, script, target", _scripts())
def test_every_console_script_resolves_to_a_callable(name, script, target):
    module_name, _, attribute = target.partition(":")
    assert module_name.startswith(f"cvl_{name}"), f"{script} points outside cvl-{name}"
    function = getattr(importlib.import_module(module_name), attribute)
    assert callable(function), script


@pytest.mark.parametrize("command", COMMANDS)
def test_each_experiment_entry_point_calls_the_console_command(command):
    """One implementation: ``experiments/<command>.py`` only forwards to `cvl_eval.console`."""
    source = (ROOT / "experiments" / f"{command}.py").read_text()
    assert f"return console.{command}(argv)" in source
    assert "tyro" not in source and "cvl_eval.cli" not in source
