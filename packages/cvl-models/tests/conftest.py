"""Shared fixtures for the cvl_models tests (each test file stays independent of the others)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings

torch.set_num_threads(1)

settings.register_profile("cvl", max_examples=30, deadline=None, derandomize=True)
settings.load_profile("cvl")

# CPU always; CUDA too where a GPU is present (no test is skipped without one).
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


def pytest_configure(config: pytest.Config) -> None:
    del config
    torch.manual_seed(0)
