"""Shared learner pieces: polyak averaging, clipped optimiser steps, frozen calls, RNG scope."""

import copy

import numpy as np
import pytest
import torch
from conftest import ACTION_DIM, OBS_DIM, TINY, make_transition_batch  # pants: no-infer-dep
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from cvl_algos import load_learner, make_learner
from cvl_algos.bc import BCConfig
from cvl_algos.common import (
    config_from_dict,
    config_to_dict,
    frozen_call,
    metrics_to_floats,
    optimizer_step,
    polyak_update,
)
from cvl_algos.cql import CQLConfig


def _net(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 1))


@settings(max_examples=20, deadline=None)
@given(tau=st.floats(0.0, 1.0))
def test_polyak_update_is_lerp(tau):
    target, source = _net(0), _net(1)
    before = copy.deepcopy(target)
    polyak_update(target, source, tau)
    for t, b, s in zip(target.parameters(), before.parameters(), source.parameters(), strict=True):
        torch.testing.assert_close(t, (1 - tau) * b + tau * s)


def test_optimizer_step_clips_global_norm_and_returns_raw_norm():
    net = _net(0)
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    before = [p.clone() for p in net.parameters()]
    loss = 1e6 * net(torch.ones(2, 3)).sum()
    norm = optimizer_step(opt, loss, net.parameters(), max_grad_norm=100.0)
    assert norm > 100.0
    step = torch.sqrt(sum(((p - b) ** 2).sum() for p, b in zip(net.parameters(), before)))
    torch.testing.assert_close(step, torch.tensor(100.0), rtol=1e-4, atol=1e-3)


def test_frozen_call_blocks_parameter_gradients_only():
    net = _net(0)
    x = torch.randn(5, 3, requires_grad=True)
    out = frozen_call(net, x)
    torch.testing.assert_close(out, net(x))
    out.sum().backward()
    assert x.grad is not None and all(p.grad is None for p in net.parameters())
    assert all(p.requires_grad for p in net.parameters())


def test_metrics_to_floats():
    out = metrics_to_floats({"a": torch.tensor(1.5), "b": 2, "c": torch.tensor(3)})
    assert out == {"a": 1.5, "b": 2.0, "c": 3.0} and all(type(v) is float for v in out.values())


def test_config_dict_round_trip():
    for cfg in (BCConfig(hidden=(8, 4)), CQLConfig(target_entropy=-1.5, policy_eval_start=0)):
        assert config_from_dict(type(cfg), config_to_dict(cfg)) == cfg


def test_learner_leaves_global_rng_alone():
    learner = make_learner("cql", (OBS_DIM,), ACTION_DIM, policy_eval_start=1, **TINY)
    batch = make_transition_batch(0)
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    learner.update(batch)
    learner.update(batch)
    learner.act(batch.obs.numpy(), deterministic=False)
    torch.testing.assert_close(torch.rand(3), expected)


def test_stochastic_act_is_reproducible_and_varies():
    a = make_learner("sac", (OBS_DIM,), ACTION_DIM, seed=0, **TINY)
    b = make_learner("sac", (OBS_DIM,), ACTION_DIM, seed=0, **TINY)
    obs = make_transition_batch(0).obs.numpy()
    first = a.act(obs, deterministic=False)
    np.testing.assert_array_equal(first, b.act(obs, deterministic=False))
    assert not np.array_equal(first, a.act(obs, deterministic=False))


@pytest.mark.parametrize(
    "name", ["bc", "filtered_bc", "weighted_bc", "sac", "cql", "cql_uds", "iql"]
)
def test_resume_on_every_device(tmp_path, device, name):
    """Stop + resume (loaded onto the same device) equals an uninterrupted run, bit for bit."""
    batches = [make_transition_batch(i, device=device) for i in range(4)]
    kwargs = dict(device=device, seed=11, **TINY)
    if name.startswith("cql"):
        kwargs["policy_eval_start"] = 3
    straight = make_learner(name, (OBS_DIM,), ACTION_DIM, **kwargs)
    for b in batches:
        straight.update(b)
    first = make_learner(name, (OBS_DIM,), ACTION_DIM, **kwargs)
    for b in batches[:2]:
        first.update(b)
    first.save(tmp_path / "ck")
    resumed = load_learner(tmp_path / "ck", device=device)
    assert resumed.device.type == torch.device(device).type
    for b in batches[2:]:
        resumed.update(b)
    for key, module in straight.state_modules().items():
        other = resumed.state_modules()[key].state_dict()
        for k, v in module.state_dict().items():
            assert torch.equal(v, other[k]), (key, k)
    obs = batches[0].obs.cpu().numpy()
    np.testing.assert_array_equal(
        straight.act(obs, deterministic=False), resumed.act(obs, deterministic=False)
    )
