"""Return-weighted sampling (`cvl_data.weighting`) against a naive softmax and empirical counts."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from test_samplers import anchor_steps, naive_contrastive  # pants: no-infer-dep

from cvl_data import ContrastiveSampler, TransitionSampler
from cvl_data.weighting import draw_weighted_steps, return_weighted_step_cdf, return_weights

SETTINGS = settings(max_examples=25, deadline=None, database=None)
returns_st = st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12)


def naive_step_probabilities(dataset, temperature: float) -> np.ndarray:
    """Per step: softmax over all steps of its episode's min-max normalised return / T."""
    offsets = dataset.episode_offsets
    returns = np.array(
        [np.sum(dataset.rewards[a:b], dtype=np.float64) for a, b in zip(offsets[:-1], offsets[1:])]
    )
    span = returns.max() - returns.min()
    normalised = (returns - returns.min()) / span if span > 0 else np.zeros_like(returns)
    per_step = np.concatenate(
        [[g] * (b - a) for g, a, b in zip(normalised, offsets[:-1], offsets[1:])]
    )
    logits = per_step / temperature
    e = np.exp(logits - logits.max())
    return e / e.sum()


@SETTINGS
@given(returns=returns_st, temperature=st.floats(0.01, 100.0))
def test_return_weights_are_the_softmax_of_normalised_returns(returns, temperature):
    weights = return_weights(np.array(returns), temperature)
    span = max(returns) - min(returns)
    if span <= 1e-9 * max(1.0, max(abs(g) for g in returns)):  # equal up to rounding
        assert np.all(weights == 1.0)
        return
    normalised = (np.array(returns) - min(returns)) / span
    softmax = np.exp(normalised / temperature) / np.exp(normalised / temperature).sum()
    assert weights.max() == pytest.approx(1.0)
    np.testing.assert_allclose(weights / weights.sum(), softmax, rtol=1e-9, atol=1e-300)


def test_weighted_draws_follow_the_weights():
    weights = torch.tensor([0.5, 0.0, 2.0, 1.0, 0.25], dtype=torch.float64)
    generator = torch.Generator().manual_seed(3)
    steps = draw_weighted_steps(torch.cumsum(weights, 0), 200_000, generator)
    counts = np.bincount(steps.numpy(), minlength=5)
    assert counts[1] == 0  # a weightless step is never drawn
    expected = (weights / weights.sum()).numpy() * len(steps)
    keep = expected > 0
    assert chisquare(counts[keep], expected[keep]).pvalue > 1e-3


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 30), min_size=2, max_size=6),
    temperature=st.floats(0.05, 5.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_step_cdf_matches_the_naive_probabilities(write_encoded, lengths, temperature, seed):
    dataset = write_encoded(lengths, seed=seed % 7)
    cdf = return_weighted_step_cdf(dataset, temperature, torch.device("cpu"))
    probabilities = torch.diff(cdf, prepend=cdf.new_zeros(1)) / cdf[-1]
    np.testing.assert_allclose(
        probabilities.numpy(), naive_step_probabilities(dataset, temperature), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("kind", ["contrastive", "transition"])
def test_samplers_draw_anchors_in_proportion_to_return_weights(write_encoded, kind):
    dataset = write_encoded([7, 3, 12, 20, 5], seed=2)
    temperature = 0.3
    if kind == "contrastive":
        sampler = ContrastiveSampler(dataset, 1000, seed=5, return_weight_temperature=temperature)
    else:
        sampler = TransitionSampler(dataset, 1000, seed=5, return_weight_temperature=temperature)
    steps = np.concatenate([anchor_steps(dataset, sampler.sample()) for _ in range(100)])
    counts = np.bincount(steps, minlength=dataset.num_steps)
    expected = naive_step_probabilities(dataset, temperature) * len(steps)
    assert chisquare(counts, expected).pvalue > 1e-3
    uniform = np.full(dataset.num_steps, len(steps) / dataset.num_steps)
    assert chisquare(counts, uniform).pvalue < 1e-6  # the weights really change the draw


@pytest.mark.parametrize("scope", ["critic", "policy"])
def test_a_scope_weighs_one_side_and_draws_the_other_uniformly(write_encoded, scope):
    """``return_weight_scope`` "critic": the critic's anchors follow the weights and the policy's
    own anchors are uniform; "policy" the other way round. Each policy anchor's observation,
    action and top-episode flag are those of one step of the data."""
    dataset = write_encoded([7, 3, 12, 20, 5], seed=2)
    temperature = 0.3
    sampler = ContrastiveSampler(
        dataset,
        1000,
        seed=5,
        return_weight_temperature=temperature,
        return_weight_scope=scope,
        behaviour_top_fraction=0.4,
    )
    critic_steps, policy_steps = [], []
    for _ in range(100):
        batch = sampler.sample()
        policy = batch.for_policy()
        assert policy.obs_t.shape == batch.obs_t.shape
        steps = anchor_steps(dataset, policy)
        for i in range(0, len(steps), 97):
            reference = naive_contrastive(dataset, int(steps[i]), 1)
            np.testing.assert_array_equal(policy.action_t[i].numpy(), reference["action_t"])
        flags = sampler.behaviour_weight[torch.as_tensor(steps)]
        assert torch.equal(policy.behaviour_weight, flags)
        critic_steps.append(anchor_steps(dataset, batch))
        policy_steps.append(steps)
    weighted = naive_step_probabilities(dataset, temperature)
    uniform = np.full(dataset.num_steps, 1.0 / dataset.num_steps)
    drawn = {"critic": critic_steps, "policy": policy_steps}
    for side, steps in drawn.items():
        counts = np.bincount(np.concatenate(steps), minlength=dataset.num_steps)
        expected, other = (weighted, uniform) if side == scope else (uniform, weighted)
        assert chisquare(counts, expected * counts.sum()).pvalue > 1e-3, side
        assert chisquare(counts, other * counts.sum()).pvalue < 1e-6, side


def test_the_default_scope_trains_the_policy_on_the_critics_anchors(write_encoded):
    dataset = write_encoded([9, 4, 15], seed=3)
    batch = ContrastiveSampler(dataset, 64, seed=2, return_weight_temperature=0.2).sample()
    assert batch.policy_obs_t is None and batch.for_policy() is batch


def test_a_large_temperature_tends_to_uniform_anchors(write_encoded):
    dataset = write_encoded([7, 1, 12, 30], seed=1)
    sampler = ContrastiveSampler(dataset, 1000, seed=11, return_weight_temperature=1e6)
    steps = np.concatenate([anchor_steps(dataset, sampler.sample()) for _ in range(100)])
    assert chisquare(np.bincount(steps, minlength=dataset.num_steps)).pvalue > 1e-3


def test_weighted_batches_keep_the_sampler_contract(write_encoded):
    """Same seed, same batches; the futures stay in the anchor's episode."""
    dataset = write_encoded([9, 4, 15], seed=3)
    a = ContrastiveSampler(dataset, 64, seed=2, return_weight_temperature=0.2)
    b = ContrastiveSampler(dataset, 64, seed=2, return_weight_temperature=0.2)
    for _ in range(3):
        x, y = a.sample(), b.sample()
        assert torch.equal(x.obs_t, y.obs_t) and torch.equal(x.obs_future, y.obs_future)
        steps = anchor_steps(dataset, x)
        episode = np.searchsorted(dataset.episode_offsets, steps, side="right") - 1
        assert np.all(steps + x.offset.numpy() <= dataset.episode_offsets[episode + 1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"return_weight_temperature": 0.0}, "return_weight_temperature must be None or a finite"),
        ({"return_weight_temperature": float("inf")}, "must be None or a finite number > 0"),
        ({"return_weight_temperature": True}, "must be None or a finite number > 0"),
        ({"return_weight_temperature": 0.1, "mode": "episode"}, "weighs uniform anchors"),
        ({"return_weight_scope": "policy"}, "'critic' or 'policy' only with return_weight_temp"),
        ({"return_weight_temperature": 0.1, "return_weight_scope": "both"}, "scope must be one"),
    ],
)
def test_refusals(write_encoded, kwargs, message):
    dataset = write_encoded([3, 4])
    with pytest.raises(ValueError, match=message):
        ContrastiveSampler(dataset, 8, **kwargs)


def test_refuses_data_without_rewards(write_encoded):
    dataset = write_encoded([3, 4], has_rewards=False)
    with pytest.raises(ValueError, match="weighs episodes by return; .* has no rewards"):
        TransitionSampler(dataset, 8, return_weight_temperature=0.1)


@SETTINGS
@given(lengths=st.lists(st.integers(1, 9), min_size=3, max_size=12), seed=st.integers(0, 99))
def test_start_state_advantages_are_least_squares_residuals(write_encoded, lengths, seed):
    """The advantages are orthogonal to every start feature and the constant (the normal
    equations), and returns that are an affine function of the start have none: every episode
    then weighs the same."""
    from cvl_data.weighting import start_state_advantages

    dataset = write_encoded(lengths, seed=seed % 7)
    offsets = dataset.episode_offsets
    starts = dataset.observations[offsets[:-1] + np.arange(len(lengths))].astype(np.float64)
    design = np.concatenate([starts.reshape(len(lengths), -1), np.ones((len(lengths), 1))], 1)
    returns = np.random.default_rng(seed).normal(size=len(lengths)) * 100
    advantages = start_state_advantages(dataset, returns)
    np.testing.assert_allclose(design.T @ advantages, 0.0, atol=1e-6 * np.abs(returns).sum())
    affine = design @ np.random.default_rng(seed + 1).normal(size=design.shape[1])
    fitted = start_state_advantages(dataset, affine)
    np.testing.assert_allclose(fitted, 0.0, atol=1e-6 * max(1.0, np.abs(affine).max()))
    assert np.all(return_weights(fitted, 0.1) == 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"return_weight_baseline": "bogus", "return_weight_temperature": 0.1}, "must be one of"),
        ({"return_weight_baseline": "start_state"}, "'start_state' only with"),
    ],
)
def test_baseline_refusals(write_encoded, kwargs, message):
    dataset = write_encoded([3, 4])
    with pytest.raises(ValueError, match=message):
        ContrastiveSampler(dataset, 8, **kwargs)


def test_start_state_baseline_refuses_pixels(write_encoded):
    dataset = write_encoded([3, 4], obs_kind="pixels", obs_shape=(6, 5, 3), obs_dtype="uint8")
    with pytest.raises(ValueError, match="fits the return on state observations; .* 'pixels'"):
        TransitionSampler(
            dataset, 8, return_weight_temperature=0.1, return_weight_baseline="start_state"
        )
