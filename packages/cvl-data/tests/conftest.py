"""Shared test setup and fixtures.

One torch thread per test process (Pants runs test files in parallel). Fixtures return small
factory functions so test files stay independent (no imports between test files).

Datasets made by `write_encoded` carry their own indices, so a test can tell exactly which
rows a sampler returned: ``observations[r, 0] == r`` (the global observation row),
``rewards[i] == i + 0.5`` (the global step) and ``actions[i, 0] == (i % 997) / 997``.
"""

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("MUJOCO_GL", "egl")
torch.set_num_threads(1)


def _spec(**overrides):
    from cvl_data import DatasetSpec

    fields = {
        "env_id": "Meta-World/MT1",
        "task": "drawer-open-v3",
        "obs_kind": "state",
        "obs_shape": (3,),
        "obs_dtype": "float32",
        "action_shape": (2,),
        "action_low": -1.0,
        "action_high": 1.0,
        "has_rewards": True,
        "provenance": {"generator": "tests", "seed": 0},
    }
    fields.update(overrides)
    return DatasetSpec(**fields)


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin has set up its factory
def pytest_configure(config: pytest.Config) -> None:
    """Keep Hypothesis' storage (its constants cache, written while test modules are collected)
    under pytest's tmp root instead of ``.hypothesis/`` in the working directory."""
    from hypothesis.configuration import set_hypothesis_home_dir

    factory = getattr(config, "_tmp_path_factory", None)  # set by pytest's tmp_path plugin
    if factory is not None:
        set_hypothesis_home_dir(factory.mktemp("hypothesis-home"))


@pytest.fixture
def make_spec() -> Callable:
    """``make_spec(**overrides) -> DatasetSpec`` (state, (3,), float32, 2-d actions in [-1, 1])."""
    return _spec


def _encoded_episodes(lengths: Sequence[int], spec, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    episodes, step, row = [], 0, 0
    for T in lengths:
        obs = rng.normal(size=(T + 1, *spec.obs_shape)).astype(spec.obs_dtype)
        obs.reshape(T + 1, -1)[:, 0] = np.arange(row, row + T + 1)
        steps = np.arange(step, step + T)
        actions = rng.uniform(-1, 1, size=(T, *spec.action_shape)).astype(np.float32)
        actions.reshape(T, -1)[:, 0] = (steps % 997) / 997
        episodes.append(
            {
                "observations": obs,
                "actions": actions,
                "rewards": (steps + 0.5).astype(np.float32) if spec.has_rewards else None,
                "terminated": rng.random(T) < 0.3,
                "truncated": np.arange(T) == T - 1,
            }
        )
        step, row = step + T, row + T + 1
    return episodes


@pytest.fixture
def encoded_episodes() -> Callable:
    """``encoded_episodes(lengths, spec, seed=0) -> list of add_episode kwargs``."""
    return _encoded_episodes


@pytest.fixture(scope="session")
def write_encoded(tmp_path_factory) -> Callable:
    """``write_encoded(lengths, **spec_overrides) -> Dataset``: a fresh encoded dataset on disk.

    Session-scoped (for Hypothesis); every call writes under a new folder of pytest's tmp root.
    """
    from cvl_data import DatasetWriter, open_dataset

    def write(lengths: Sequence[int], seed: int = 0, **overrides):
        spec = _spec(**overrides)
        path = Path(tmp_path_factory.mktemp("encoded")) / "ds"
        with DatasetWriter(path, spec, durable=False) as writer:
            for episode in _encoded_episodes(lengths, spec, seed):
                writer.add_episode(**episode)
        return open_dataset(path)

    return write


@pytest.fixture
def file_digests() -> Callable:
    """``file_digests(folder) -> {name: bytes}``: every file's content, to prove nothing changed."""

    def digests(folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}

    return digests
