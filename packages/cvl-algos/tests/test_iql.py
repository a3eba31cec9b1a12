"""IQL: expectile value, TD critic towards V(s'), advantage-weighted policy regression."""

import numpy as np
import pytest
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    return_weighted_draw,  # pants: no-infer-dep
    tiny_learner,  # pants: no-infer-dep
    tiny_nets,  # pants: no-infer-dep
    write_six_episodes,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos.iql import (
    IQLConfig,
    awr_policy_loss,
    expectile_loss,
    iql_critic_loss,
    iql_value_loss,
)
from cvl_models import ValueNetwork


def _value(seed: int = 0) -> ValueNetwork:
    torch.manual_seed(seed + 100)
    return ValueNetwork((OBS_DIM,), hidden=(32, 32))


def test_defaults_are_the_iql_papers():
    cfg = IQLConfig()
    assert (cfg.expectile, cfg.beta, cfg.max_weight, cfg.tau) == (0.7, 3.0, 100.0, 0.005)


@settings(max_examples=25, deadline=None)
@given(
    diff=st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=20),
    tau=st.floats(0.01, 0.99),
)
def test_expectile_loss_against_naive_reference(diff, tau):
    """|tau - 1(u < 0)| u^2 elementwise; tau = 0.5 is half the squared error."""
    u = torch.tensor(diff, dtype=torch.float64)
    expected = torch.tensor(
        [(tau if x >= 0 else 1 - tau) * x * x for x in diff], dtype=torch.float64
    )
    torch.testing.assert_close(expectile_loss(u, tau), expected)
    torch.testing.assert_close(expectile_loss(u, 0.5), 0.5 * u.square())


def test_expectile_value_is_the_expectile():
    """Minimising the expectile loss over a constant gives the tau-expectile of the samples."""
    gen = torch.Generator().manual_seed(0)
    samples = torch.randn(4000, generator=gen) * 3.0 + 1.0
    v = torch.zeros((), requires_grad=True)
    opt = torch.optim.Adam([v], lr=0.05)
    for _ in range(1500):
        opt.zero_grad()
        expectile_loss(samples - v, 0.9).mean().backward()
        opt.step()
    # the tau-expectile e solves tau E[(X - e)+] = (1 - tau) E[(e - X)+]
    e = v.detach()
    above, below = (samples - e).clamp(min=0).mean(), (e - samples).clamp(min=0).mean()
    torch.testing.assert_close(0.9 * above, 0.1 * below, atol=2e-3, rtol=0)
    assert e > samples.mean()


def test_losses_touch_only_their_network_and_leave_batch_alone(batch):
    policy, critic, target = tiny_nets()
    value = _value()
    before = clone_batch(batch)
    for loss_fn, owner in (
        (lambda: iql_value_loss(batch, value, target, 0.7)[0], value),
        (lambda: iql_critic_loss(batch, critic, value, 0.99)[0], critic),
        (lambda: awr_policy_loss(batch, policy, target, value, 3.0, 100.0)[0], policy),
    ):
        for module in (policy, critic, target, value):
            module.zero_grad(set_to_none=True)
        loss_fn().backward()
        for module in (policy, critic, target, value):
            grads = [p.grad is not None for p in module.parameters()]
            assert all(grads) if module is owner else not any(grads), type(module).__name__
    assert_batch_equal(batch, before)


def test_critic_target_uses_value_of_next_state(batch):
    _, critic, _ = tiny_nets()
    value = _value()
    loss, _ = iql_critic_loss(batch, critic, value, 0.9)
    with torch.no_grad():
        y = batch.reward + 0.9 * (1 - batch.terminated) * value(batch.obs_next)
        q1, q2 = critic(batch.obs, batch.action)
    torch.testing.assert_close(loss, ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean())


def test_awr_with_zero_beta_is_behaviour_cloning(batch):
    policy, _, target = tiny_nets()
    value = _value()
    loss, metrics = awr_policy_loss(batch, policy, target, value, beta=0.0, max_weight=100.0)
    torch.testing.assert_close(loss, -policy.log_prob(batch.obs, batch.action).mean())
    assert float(metrics["weight_mean"]) == 1.0


def test_awr_weights_are_clipped(batch):
    policy, _, target = tiny_nets()
    value = _value()
    # V far below Q: every advantage is large, every weight hits the clip
    _, metrics = awr_policy_loss(batch, policy, target, lambda obs: value(obs) - 1e3, 3.0, 7.0)
    assert float(metrics["weight_clipped"]) == 1.0 and float(metrics["weight_mean"]) == 7.0


def test_update_lowers_value_and_critic_losses():
    learner = tiny_learner("iql", lr=3e-3)
    batch = make_transition_batch(2, batch_size=64)
    first = learner.update(batch)
    for _ in range(150):
        last = learner.update(batch)
    assert last["critic_loss"] < first["critic_loss"]
    assert np.isfinite(list(last.values())).all()


def test_acts_within_bounds():
    learner = tiny_learner("iql", seed=4)
    obs = make_transition_batch(0, batch_size=6).obs.numpy()
    actions = learner.act(obs)
    assert actions.shape == (6, ACTION_DIM) and np.all(np.abs(actions) <= 1)


def test_return_weighted_transitions_from_the_config(tmp_path):
    """``return_weight_temperature`` reaches the learner's `TransitionSampler`: on six episodes
    whose return ranks them, T = 0.05 draws the best episode's steps about e^4 = 55 times as
    often as the next one's; the default draws all six alike; bad values are refused."""
    weighted, batch = return_weighted_draw("iql", write_six_episodes(tmp_path / "ds"))
    assert np.isfinite(list(weighted.update(batch).values())).all()
    with pytest.raises(ValueError, match="return_weight_temperature must be None or a finite"):
        IQLConfig(return_weight_temperature=-0.5)
    with pytest.raises(ValueError, match="return_weight_baseline must be one of"):
        IQLConfig(return_weight_temperature=0.5, return_weight_baseline="initial")
