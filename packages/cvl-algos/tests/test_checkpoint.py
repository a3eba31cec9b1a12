"""Checkpoint helpers: pickle-free round trips that resume training bit-identically."""

import json
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from cvl_algos.checkpoint import (
    CheckpointError,
    load_checkpoint,
    read_checkpoint_state,
    save_checkpoint,
)


def _net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))


def _train(net: nn.Module, opt: torch.optim.Optimizer, steps: int, gen: torch.Generator) -> None:
    for _ in range(steps):
        x = torch.randn(16, 3, generator=gen)
        loss = (net(x) - x[:, :2]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_resume_is_bit_identical(tmp_path):
    net, gen = _net(0), torch.Generator().manual_seed(1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2, betas=(0.8, 0.95))
    _train(net, opt, 5, gen)
    save_checkpoint(tmp_path / "ck", {"net": net}, {"opt": opt}, {"step": 5}, {"gen": gen})
    _train(net, opt, 7, gen)

    net2, gen2 = _net(123), torch.Generator().manual_seed(999)
    opt2 = torch.optim.Adam(net2.parameters(), lr=0.5)
    state = load_checkpoint(tmp_path / "ck", {"net": net2}, {"opt": opt2}, "cpu", {"gen": gen2})
    assert state == {"step": 5}
    assert opt2.param_groups[0]["betas"] == (0.8, 0.95)
    assert opt2.param_groups[0]["lr"] == 1e-2
    _train(net2, opt2, 7, gen2)
    for p, q in zip(net.parameters(), net2.parameters(), strict=True):
        assert torch.equal(p, q)
    s1, s2 = opt.state_dict()["state"], opt2.state_dict()["state"]
    for k in s1:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(s1[k][name], s2[k][name])


def test_global_rng_restored(tmp_path):
    torch.manual_seed(3), np.random.seed(3), random.seed(3)
    save_checkpoint(tmp_path / "ck", {}, {}, {})
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(4), np.random.seed(4), random.seed(4)
    load_checkpoint(tmp_path / "ck", {}, {}, "cpu")
    got = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], got[0])
    assert np.array_equal(expected[1], got[1])
    assert expected[2] == got[2]


def test_files_are_safetensors_and_json_only(tmp_path):
    net = _net(0)
    opt = torch.optim.Adam(net.parameters())
    _train(net, opt, 1, torch.Generator().manual_seed(0))
    out = save_checkpoint(tmp_path / "ck", {"net": net}, {"opt": opt}, {"config": {"a": (1, 2)}})
    assert sorted(p.name for p in out.iterdir()) == [
        "checksums.json",
        "state.json",
        "tensors.safetensors",
    ]
    json.loads((out / "state.json").read_text())  # plain JSON, no pickle
    assert read_checkpoint_state(out) == {"config": {"a": (1, 2)}}
    # overwriting replaces atomically and leaves no temp dirs behind
    save_checkpoint(tmp_path / "ck", {"net": net}, {"opt": opt}, {"config": 2})
    assert read_checkpoint_state(out) == {"config": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_mismatch_and_missing_fail_loudly(tmp_path):
    with pytest.raises(CheckpointError):
        read_checkpoint_state(tmp_path / "nothing")
    save_checkpoint(tmp_path / "ck", {"net": _net(0)}, {}, {})
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "ck", {"other": _net(0)}, {}, "cpu")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.text(max_size=5)
    | st.floats(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=20, deadline=None)
@given(state=json_values)
def test_state_round_trip(tmp_path_factory, state):
    path = tmp_path_factory.mktemp("ck") / "ck"
    save_checkpoint(path, {}, {}, {"value": state})
    assert read_checkpoint_state(path) == {"value": state}
