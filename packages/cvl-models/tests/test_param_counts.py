"""The parameter counts quoted in the docstrings are the real ones (default sizes)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from cvl_models import (
    ContrastiveCritic,
    DenseMLP,
    ImpalaEncoder,
    RandomFourierFeatures,
    TanhGaussianPolicy,
    TwinQ,
    critic,
    impala,
    mlp,
    policy,
    q,
)


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _fmt(n: int) -> str:
    return f"{n:_}"


@pytest.mark.parametrize(
    ("build", "doc_modules"),
    [
        (lambda: DenseMLP(43, 64), [mlp]),
        (lambda: DenseMLP(39, 8), [mlp]),
        (lambda: ImpalaEncoder((84, 84, 3)), [impala, ImpalaEncoder]),
        (lambda: ImpalaEncoder((64, 64, 3)), [impala, ImpalaEncoder]),
        (lambda: ImpalaEncoder((32, 32, 3)), [impala]),
        (lambda: TanhGaussianPolicy((39,), 4), [policy, TanhGaussianPolicy]),
        (lambda: TanhGaussianPolicy((2,), 1), [policy, TanhGaussianPolicy]),
        (lambda: TanhGaussianPolicy((84, 84, 3), 4), [policy, TanhGaussianPolicy]),
        (lambda: ContrastiveCritic((39,), 4), [critic, ContrastiveCritic]),
        (lambda: ContrastiveCritic((2,), 1), [critic, ContrastiveCritic]),
        (lambda: ContrastiveCritic((84, 84, 3), 4), [critic, ContrastiveCritic]),
        (lambda: TwinQ((39,), 4), [q, TwinQ]),
        (lambda: TwinQ((2,), 1), [q, TwinQ]),
        (lambda: TwinQ((84, 84, 3), 4), [q, TwinQ]),
    ],
)
def test_docstring_counts(build, doc_modules):
    torch.manual_seed(0)
    n = _count(build())
    for holder in doc_modules:
        assert _fmt(n) in holder.__doc__, (holder, n)


def test_rff_has_no_parameters():
    rff = RandomFourierFeatures(64, 1024)
    assert _count(rff) == 0
    assert sum(b.numel() for b in rff.buffers()) == 66_560
    assert "66_560" in RandomFourierFeatures.__doc__
