"""DenseMLP: shapes, DenseNet connectivity, LayerNorm placement, gradients, batch independence."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from cvl_models import DenseMLP


@pytest.mark.parametrize("batch", [(1,), (5,), (2, 3)])
@pytest.mark.parametrize(
    ("in_dim", "out_dim", "hidden"), [(3, 2, (8, 8)), (7, 1, (16,)), (4, 5, ())]
)
def test_shapes(device, batch, in_dim, out_dim, hidden):
    net = DenseMLP(in_dim, out_dim, hidden).to(device)
    out = net(torch.randn(*batch, in_dim, device=device))
    assert out.shape == (*batch, out_dim)
    assert out.device.type == device.type


def test_dense_connectivity_and_norms():
    net = DenseMLP(5, 3, hidden=(8, 6, 4))
    # layer k > 0 sees the previous output concatenated with the block input; so does the output.
    assert [lin.in_features for lin in net.linears] == [5, 8 + 5, 6 + 5]
    assert [lin.out_features for lin in net.linears] == [8, 6, 4]
    assert net.out.in_features == 4 + 5
    assert [n.normalized_shape for n in net.norms] == [(8,), (6,), (4,)]
    # the output layer is linear: no norm, no activation (negative outputs occur, scale free)
    out = net(torch.randn(64, 5))
    assert (out < 0).any()


def test_matches_hand_written_forward():
    torch.manual_seed(1)
    net = DenseMLP(4, 2, hidden=(6, 5))
    x = torch.randn(9, 4)
    h1 = torch.relu(net.norms[0](net.linears[0](x)))
    h2 = torch.relu(net.norms[1](net.linears[1](torch.cat([h1, x], -1))))
    expected = net.out(torch.cat([h2, x], -1))
    torch.testing.assert_close(net(x), expected)


def test_default_param_count():
    # 67_072 + 512 * in + (257 + in) * out for hidden 256 x 256 (see module docstring)
    for in_dim, out_dim in [(43, 64), (39, 8), (2, 1)]:
        count = sum(p.numel() for p in DenseMLP(in_dim, out_dim).parameters())
        assert count == 67_072 + 512 * in_dim + (257 + in_dim) * out_dim
    assert sum(p.numel() for p in DenseMLP(43, 64).parameters()) == 108_288


def test_gradients_reach_every_parameter(device):
    net = DenseMLP(6, 3, hidden=(16, 16)).to(device)
    out = net(torch.randn(8, 6, device=device))
    (out * torch.randn_like(out)).sum().backward()
    for name, p in net.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(2, 9), index=st.integers(0, 8), seed=st.integers(0, 2**16))
def test_no_leakage_across_batch(batch, index, seed):
    index = index % batch
    gen = torch.Generator().manual_seed(seed)
    net = DenseMLP(5, 4, hidden=(12, 12))
    x = torch.randn(batch, 5, generator=gen)
    other = torch.randn(batch, 5, generator=gen) * 10
    other[index] = x[index]
    torch.testing.assert_close(net(x)[index], net(other)[index])
    torch.testing.assert_close(net(x)[index : index + 1], net(x[index : index + 1])[0:1])


def test_rejects_wrong_width():
    with pytest.raises(ValueError, match="DenseMLP"):
        DenseMLP(4, 2)(torch.randn(3, 5))
    with pytest.raises(ValueError):
        DenseMLP(0, 2)


def test_is_a_module_with_state_dict_roundtrip():
    a, b = DenseMLP(3, 2, (4,)), DenseMLP(3, 2, (4,))
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 3)
    torch.testing.assert_close(a(x), b(x))
    assert isinstance(a, nn.Module)


@settings(max_examples=20, deadline=None)
@given(
    d_shared=st.integers(1, 6),
    d_item=st.integers(1, 4),
    hidden=st.lists(st.integers(1, 9), max_size=3),
    items=st.integers(1, 5),
    batch=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_forward_shared_equals_forward_on_broadcast_concat(
    d_shared, d_item, hidden, items, batch, seed
):
    torch.manual_seed(seed)
    net = DenseMLP(d_shared + d_item, 3, tuple(hidden))
    shared = torch.randn(batch, d_shared, requires_grad=True)
    per_item = torch.randn(items, batch, d_item, requires_grad=True)
    got = net.forward_shared(shared, per_item)
    want = net(torch.cat([shared.expand(items, batch, d_shared), per_item], dim=-1))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # gradients to the parameters and to both inputs agree with the naive concatenation
    inputs = [shared, per_item, *net.parameters()]
    grads_got = torch.autograd.grad(got.square().sum(), inputs)
    grads_want = torch.autograd.grad(want.square().sum(), inputs)
    for a, b in zip(grads_got, grads_want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_forward_shared_rejects_widths_that_do_not_add_up():
    net = DenseMLP(5, 1, (4,))
    with pytest.raises(ValueError, match=r"widths 3 \+ 3 must make in_dim=5"):
        net.forward_shared(torch.zeros(2, 3), torch.zeros(4, 2, 3))
