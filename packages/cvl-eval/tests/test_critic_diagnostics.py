"""Critic diagnostics: the return-to-go against a naive reference, Spearman rho of
known Q functions, the counterfactual ranking of a Q built to prefer the expert, and `diagnose`
end to end on a tiny real mixture dataset with tiny real learners."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_data import ContrastiveSampler, DatasetSpec, DatasetWriter, open_dataset
from cvl_eval.analysis.critic_diagnostics import (
    counterfactual_ranking,
    diagnose,
    discounted_return_to_go,
    format_diagnostics,
    q_function,
    spearman_with_return_to_go,
)
from cvl_eval.envs.experts import ScriptedExpert

TINY_CVL = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
TINY = {"hidden": (32, 32)}


def naive_return_to_go(rewards, episode_offsets, gamma):
    """Double loop: G_t = sum_{k = t}^{T - 1} gamma^(k - t) r_k inside each episode."""
    out = np.zeros(len(rewards))
    for start, stop in zip(episode_offsets[:-1], episode_offsets[1:]):
        for t in range(start, stop):
            out[t] = sum(gamma ** (k - t) * rewards[k] for k in range(t, stop))
    return out


@settings(max_examples=40)
@given(
    lengths=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    gamma=st.floats(0.0, 1.0),
    data=st.data(),
)
def test_return_to_go_matches_the_double_loop(lengths, gamma, data):
    rewards = np.array(
        data.draw(st.lists(st.floats(-10, 10), min_size=sum(lengths), max_size=sum(lengths)))
    )
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    fast = discounted_return_to_go(rewards, offsets, gamma)
    np.testing.assert_allclose(fast, naive_return_to_go(rewards, offsets, gamma), atol=1e-9)


def test_return_to_go_by_hand():
    rewards = np.array([1.0, 1.0, 1.0, 4.0, 2.0])
    offsets = np.array([0, 3, 5])  # episodes [1, 1, 1] and [4, 2]
    np.testing.assert_allclose(
        discounted_return_to_go(rewards, offsets, 0.5), [1.75, 1.5, 1.0, 5.0, 2.0]
    )
    with pytest.raises(ValueError, match="gamma"):
        discounted_return_to_go(rewards, offsets, 1.5)


@pytest.fixture(scope="module")
def indexed_dataset(tmp_path_factory):
    """Synthetic dataset whose observation's first entry is the global step index (-1 for s_T),
    so a Q function can look up anything per step; two sources."""
    spec = DatasetSpec("Meta-World/MT1", "reach-v3", "state", (3,), "float32", (2,), -1, 1, True)
    path = tmp_path_factory.mktemp("indexed") / "data"
    rng = np.random.default_rng(0)
    with DatasetWriter(path, spec, durable=False) as writer:
        start = 0
        for e, length in enumerate([7, 12, 5, 9]):
            obs = rng.normal(size=(length + 1, 3)).astype(np.float32)
            obs[:, 0] = np.append(np.arange(start, start + length), -1)
            flags = np.arange(length) == length - 1
            writer.add_episode(
                obs,
                rng.uniform(-1, 1, (length, 2)),
                rng.uniform(0, 10, length),
                terminated=np.zeros(length, bool),
                truncated=flags,
                info={"source": "good" if e % 2 else "bad"},
            )
            start += length
    return open_dataset(path)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_spearman_of_the_return_to_go_itself_is_plus_or_minus_one(indexed_dataset, sign):
    ds = indexed_dataset
    rtg = discounted_return_to_go(ds.rewards, ds.episode_offsets, 0.9)

    def q(obs, action):
        assert len(obs) == len(action)
        return sign * rtg[obs[:, 0].astype(np.int64)]

    result = spearman_with_return_to_go(q, ds, gamma=0.9, num_samples=20, seed=3)
    assert result["transitions"] == 20
    assert result["spearman"] == pytest.approx(sign)
    assert set(result["per_source"]) == {"good", "bad"}
    assert sum(row["transitions"] for row in result["per_source"].values()) == 20
    for row in result["per_source"].values():
        assert row["mean_q"] == pytest.approx(sign * row["mean_return_to_go"])
        assert row["spearman"] == pytest.approx(sign)
    everything = spearman_with_return_to_go(q, ds, gamma=0.9, num_samples=10**6)
    assert everything["transitions"] == ds.num_steps  # a subset never exceeds the data


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """A real 4-episode reach mixture (own expert, drawer-close and button-press experts,
    random), 60 steps each: the own expert succeeds, the others fail."""
    from cvl_eval.datagen.behaviours import BehaviourDataConfig, generate_behaviour_dataset
    from cvl_eval.datagen.mixed_suite import mixture_sources

    path = tmp_path_factory.mktemp("mixture") / "reach-v3"
    config = BehaviourDataConfig(
        "reach", num_episodes=4, sources=mixture_sources("reach"), max_steps=60
    )
    generate_behaviour_dataset(path, config, progress=False, durable=False)
    ds = open_dataset(path)
    assert [i["success"] for i in ds.episode_info if i["source"] == "expert"] == [True]
    return ds


SOURCES = {"data", "expert:drawer-close", "expert:button-press", "random"}


def test_a_q_that_prefers_the_expert_action_ranks_it_first(mixture):
    expert = ScriptedExpert("reach")

    def q(obs, action):
        return -np.linalg.norm(action - expert(obs), axis=1).astype(np.float64)

    result = counterfactual_ranking(q, mixture, num_states=40, seed=1, early_steps=30)
    assert set(result["sources"]) == SOURCES and result["skipped"] == {}
    assert (result["states"], result["episodes"], result["task"]) == (40, 1, "reach-v3")
    assert 0 < result["early_states"] < 40 and result["mean_q_expert"] == 0.0
    for label, row in result["sources"].items():
        # ties (the very same action) count one half; every other action is ranked below
        assert row["p_expert_better"] == pytest.approx(1.0 - 0.5 * row["same_action"]), label
        assert row["mean_q"] <= 0.0
    assert result["sources"]["random"]["p_expert_better"] == 1.0
    assert result["sources"]["data"]["p_expert_better_early"] == 1.0  # noisy: never the same

    flipped = counterfactual_ranking(lambda o, a: -q(o, a), mixture, num_states=40, seed=1)
    assert flipped["sources"]["random"]["p_expert_better"] == 0.0


def _trained(name, dataset, steps=3, **overrides):
    learner = make_learner(name, (39,), 4, seed=0, **overrides)
    sampler = ContrastiveSampler(dataset, 64, discount=0.99, mode="uniform", seed=0)
    for _ in range(steps):
        learner.update(sampler.sample())
    return learner


@pytest.mark.parametrize("name", ["cvl", "cvl_mc"])
def test_diagnose_a_tiny_cvl_run(mixture, tmp_path, name):
    _trained(name, mixture, self_normalized=name == "cvl", **TINY_CVL).save(
        tmp_path / "run" / "final"
    )
    result = diagnose(
        tmp_path / "run", mixture.path, num_samples=100, num_states=50, num_futures=64
    )
    json.dumps(result, allow_nan=False)  # JSON-able as it stands
    assert result["algorithm"] == name and result["checkpoint"].endswith("final")
    assert result["step"] == 3  # the checkpoint's update count
    assert ("random features" if name == "cvl" else "Monte-Carlo") in result["q"]
    rtg = result["return_to_go"]
    assert rtg["transitions"] == 100 and -1.0 <= rtg["spearman"] <= 1.0
    assert set(rtg["per_source"]) == {"expert", *SOURCES - {"data"}}
    ranking = result["counterfactual"]
    assert set(ranking["sources"]) == SOURCES and ranking["states"] == 50
    for row in ranking["sources"].values():
        assert set(row) == {"p_expert_better", "p_expert_better_early", "same_action", "mean_q"}
        assert 0.0 <= row["p_expert_better"] <= 1.0 and 0.0 <= row["p_expert_better_early"] <= 1.0
        assert np.isfinite(row["mean_q"])
    assert "P(Q(s, a_expert) > Q(s, a_source))" in format_diagnostics(result)


def test_q_function_reads_the_twin_q_its_policy_reads_and_refuses_bc(mixture):
    obs, action = np.array(mixture.observations[:8]), np.array(mixture.actions[:8])
    for name, module in [("cql", "critic"), ("iql", "critic_target")]:
        learner = make_learner(name, (39,), 4, seed=0, **TINY)
        q = q_function(learner, mixture, batch_size=3)(obs, action)  # batches of 3, 3, 2
        with torch.no_grad():
            q1, q2 = getattr(learner, module)(torch.as_tensor(obs), torch.as_tensor(action))
        assert q.shape == (8,) and q.dtype == np.float64
        np.testing.assert_allclose(q, torch.minimum(q1, q2).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="'bc' has no critic"):
        q_function(make_learner("bc", (39,), 4, **TINY), mixture)
