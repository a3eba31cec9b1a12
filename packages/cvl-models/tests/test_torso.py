"""The torso switch: `PlainMLP` (parameter count in closed form, the Linear+ReLU forward it
claims, ``forward_shared``), `make_mlp`, and every network building its MLP through it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from cvl_models import (
    ContrastiveCritic,
    DenseMLP,
    PlainMLP,
    TanhGaussianPolicy,
    TwinQ,
    ValueNetwork,
    make_mlp,
)


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def plain_count(in_dim: int, out_dim: int, hidden: tuple[int, ...]) -> int:
    """``sum_k (h_{k-1} + 1) h_k + (h_L + 1) out_dim`` with ``h_0 = in_dim``."""
    widths = (in_dim, *hidden, out_dim)
    return sum((a + 1) * b for a, b in zip(widths, widths[1:]))


@given(
    in_dim=st.integers(1, 50),
    out_dim=st.integers(1, 9),
    hidden=st.lists(st.integers(1, 64), max_size=3),
)
def test_plain_param_count_is_the_closed_form(in_dim, out_dim, hidden):
    assert _count(PlainMLP(in_dim, out_dim, tuple(hidden))) == plain_count(
        in_dim, out_dim, tuple(hidden)
    )


@pytest.mark.parametrize(("in_dim", "out_dim"), [(43, 1), (39, 8), (39, 1)])
def test_plain_default_count_matches_docstring_formula(in_dim, out_dim):
    assert _count(PlainMLP(in_dim, out_dim)) == 66_048 + 256 * in_dim + 257 * out_dim


def test_plain_is_linear_relu():
    torch.manual_seed(0)
    net = PlainMLP(5, 3, (8, 6))
    seq = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3))
    seq.load_state_dict(
        {k: v for k, v in zip(seq.state_dict(), net.state_dict().values(), strict=True)}
    )
    x = torch.randn(4, 5)
    torch.testing.assert_close(net(x), seq(x), rtol=0, atol=0)


@pytest.mark.parametrize("cls", [DenseMLP, PlainMLP])
@given(
    d_shared=st.integers(1, 4),
    d_item=st.integers(1, 4),
    hidden=st.lists(st.integers(1, 9), max_size=3),
    seed=st.integers(0, 2**16),
)
def test_forward_shared_equals_forward(cls, d_shared, d_item, hidden, seed):
    torch.manual_seed(seed)
    net = cls(d_shared + d_item, 3, tuple(hidden))
    shared, per_item = torch.randn(2, d_shared), torch.randn(5, 2, d_item)
    want = net(torch.cat([shared.expand(5, 2, d_shared), per_item], dim=-1))
    torch.testing.assert_close(net.forward_shared(shared, per_item), want, rtol=1e-5, atol=1e-5)


def test_make_mlp():
    assert type(make_mlp(4, 2)) is DenseMLP
    assert type(make_mlp(4, 2, (8,), "densenet")) is DenseMLP
    assert type(make_mlp(4, 2, (8,), "mlp")) is PlainMLP
    with pytest.raises(ValueError, match="unknown torso 'resnet'"):
        make_mlp(4, 2, (8,), "resnet")


@pytest.mark.parametrize(
    ("build", "mlps", "expected"),
    [
        # (network, its MLPs, parameter count at the default 256 x 256 widths)
        (
            lambda t: TanhGaussianPolicy((39,), 4, torso=t),
            lambda n: [n.net],
            plain_count(39, 8, (256, 256)),
        ),
        (
            lambda t: TwinQ((39,), 4, torso=t),
            lambda n: [n.q1.mlp, n.q2.mlp],
            2 * plain_count(43, 1, (256, 256)),
        ),
        (lambda t: ValueNetwork((39,), torso=t), lambda n: [n.mlp], plain_count(39, 1, (256, 256))),
        (
            lambda t: ContrastiveCritic((39,), 4, torso=t),
            lambda n: [n.phi_net.mlp, n.psi_net.mlp],
            plain_count(43, 64, (256, 256)) + plain_count(39, 64, (256, 256)),
        ),
    ],
)
def test_networks_build_their_mlp_with_the_torso(build, mlps, expected):
    assert all(type(m) is DenseMLP for m in mlps(build("densenet")))
    plain = build("mlp")
    assert all(type(m) is PlainMLP for m in mlps(plain))
    assert _count(plain) == expected
