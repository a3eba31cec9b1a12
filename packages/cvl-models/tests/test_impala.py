"""IMPALA encoder and make_encoder: sizes, scaling, gradients, batch independence."""

from __future__ import annotations

import pytest
import torch

from cvl_models import FlatEncoder, ImpalaEncoder, make_encoder


def _images(batch, shape, seed=0, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (*batch, *shape), generator=gen, dtype=torch.uint8).to(device)


@pytest.mark.parametrize(
    ("shape", "feature_hw"),
    [((84, 84, 3), (11, 11)), ((64, 64, 3), (8, 8)), ((32, 32, 3), (4, 4)), ((36, 50, 1), (5, 7))],
)
def test_sizes(shape, feature_hw):
    enc = ImpalaEncoder(shape)
    assert enc.feature_shape == (32, *feature_hw)
    out = enc(_images((2,), shape))
    assert out.shape == (2, 256)
    assert enc.out_dim == 256
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("batch", [(1,), (3,), (2, 2)])
def test_batch_shapes(device, batch):
    enc = ImpalaEncoder((32, 40, 3), out_dim=16).to(device)
    out = enc(_images(batch, (32, 40, 3), device=device))
    assert out.shape == (*batch, 16)


def test_architecture():
    enc = ImpalaEncoder((64, 64, 3))
    assert [stage.conv.out_channels for stage in enc.stages] == [16, 32, 32]
    for stage in enc.stages:
        assert stage.conv.kernel_size == (3, 3)
        assert stage.pool.kernel_size == 3 and stage.pool.stride == 2
        assert len([m for m in stage.children() if type(m).__name__ == "ResidualBlock"]) == 2
    # conv stack 97_168 + 144 C, head 32 h w 256 + 768 (module docstring)
    count = sum(p.numel() for p in enc.parameters())
    assert count == 97_168 + 144 * 3 + 32 * 8 * 8 * 256 + 768 == 622_656
    big = ImpalaEncoder((84, 84, 3))
    assert sum(p.numel() for p in big.parameters()) == 1_089_600


def test_scales_uint8_inside():
    enc = ImpalaEncoder((32, 32, 3), out_dim=8)
    img = _images((2,), (32, 32, 3), seed=3)
    # a float input on the same [0, 255] scale gives the same features as the uint8 image
    torch.testing.assert_close(enc(img), enc(img.float()))
    # channel-last in, channels-first inside: equals the stages applied to the scaled NCHW image
    x = img.permute(0, 3, 1, 2).float() / 255.0
    feats = torch.relu(enc.stages(x)).flatten(1)
    expected = torch.relu(enc.head_norm(enc.head(feats)))
    torch.testing.assert_close(enc(img), expected)


def test_gradients_reach_every_parameter(device):
    enc = ImpalaEncoder((32, 32, 3), out_dim=8).to(device)
    out = enc(_images((4,), (32, 32, 3), device=device))
    (out * torch.randn_like(out)).sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_no_leakage_across_batch():
    enc = ImpalaEncoder((32, 32, 1), out_dim=8)
    a = _images((4,), (32, 32, 1), seed=1)
    b = _images((4,), (32, 32, 1), seed=2)
    b[2] = a[2]
    torch.testing.assert_close(enc(a)[2], enc(b)[2])
    torch.testing.assert_close(enc(a)[2], enc(a[2:3])[0])


def test_make_encoder():
    flat = make_encoder((7,))
    assert isinstance(flat, FlatEncoder) and flat.out_dim == 7
    x = torch.randn(3, 7)
    torch.testing.assert_close(flat(x), x)
    assert flat(torch.ones(2, 7, dtype=torch.int64)).dtype == torch.float32
    assert sum(p.numel() for p in flat.parameters()) == 0
    pix = make_encoder((32, 32, 3))
    assert isinstance(pix, ImpalaEncoder) and pix.out_dim == 256
    assert make_encoder((32, 32, 3)) is not pix  # fresh weights each call
    with pytest.raises(ValueError):
        make_encoder((4, 4))


def test_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="ImpalaEncoder"):
        ImpalaEncoder((32, 32, 3))(_images((2,), (3, 32, 32)))
    with pytest.raises(ValueError, match="FlatEncoder"):
        make_encoder((5,))(torch.zeros(5))
