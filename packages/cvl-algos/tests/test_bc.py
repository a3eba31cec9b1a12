"""BC: tanh-Gaussian maximum likelihood with entropy bonus 0.1."""

import numpy as np
import pytest
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_modules_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    metrics_by_seed,  # pants: no-infer-dep
    return_weighted_draw,  # pants: no-infer-dep
    tiny_learner,  # pants: no-infer-dep
    tiny_policy,  # pants: no-infer-dep
    write_six_episodes,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos.bc import BCConfig, BCLearner, FilteredBCConfig, WeightedBCConfig, bc_loss


def test_defaults_are_the_papers():
    cfg = BCConfig()
    assert (cfg.lr, cfg.batch_size, cfg.max_grad_norm, cfg.hidden) == (3e-4, 512, 100.0, (256, 256))
    assert cfg.entropy_coef == 0.1


def test_loss_without_entropy_is_negative_log_likelihood(batch):
    policy = tiny_policy()
    loss, metrics = bc_loss(batch.obs, batch.action, policy, entropy_coef=0.0)
    expected = -policy.log_prob(batch.obs, batch.action).mean()
    torch.testing.assert_close(loss, expected)
    assert metrics["entropy"] == 0.0


@settings(max_examples=15, deadline=None)
@given(coef=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_entropy_term_enters_with_minus_sign(coef, seed):
    """L = nll - coef * H with H the policy's own estimate under the same RNG state."""
    batch = make_transition_batch(seed % 7)
    policy = tiny_policy(seed % 3)
    torch.manual_seed(seed)
    loss, _ = bc_loss(batch.obs, batch.action, policy, entropy_coef=coef)
    torch.manual_seed(seed)
    entropy = policy.entropy(batch.obs, num_samples=10).mean()
    nll = -policy.log_prob(batch.obs, batch.action).mean()
    torch.testing.assert_close(loss, nll - coef * entropy)
    assert torch.isfinite(loss)  # actions at exactly +-1 are in the batch


def test_loss_does_not_mutate_batch_and_touches_only_policy(batch):
    policy = tiny_policy()
    before = clone_batch(batch)
    loss, _ = bc_loss(batch.obs, batch.action, policy)
    loss.backward()
    assert_batch_equal(batch, before)
    assert all(p.grad is not None for p in policy.parameters())


def test_update_lowers_loss_on_fixed_batch(batch):
    learner = tiny_learner("bc", lr=3e-3)
    losses = [learner.update(batch)["bc_loss"] for _ in range(60)]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0
    assert learner.step == 60


def test_same_seed_same_metrics(batch):
    runs = metrics_by_seed("bc", batch, (0, 0, 1), updates=3, global_seed=1234)
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_save_load_act_and_resume(tmp_path):
    batches = [make_transition_batch(i) for i in range(6)]
    straight = tiny_learner("bc", seed=3)
    for b in batches:
        straight.update(b)

    first = tiny_learner("bc", seed=3)
    for b in batches[:3]:
        first.update(b)
    first.save(tmp_path / "ck")
    loaded = BCLearner.load(tmp_path / "ck")
    assert loaded.step == 3 and loaded.config == first.config
    obs = batches[0].obs.numpy()
    np.testing.assert_array_equal(first.act(obs), loaded.act(obs))
    # stochastic actions draw from the learner's own RNG, which the checkpoint restores
    np.testing.assert_array_equal(
        first.act(obs, deterministic=False), loaded.act(obs, deterministic=False)
    )
    resumed = BCLearner.load(tmp_path / "ck")
    for b in batches[3:]:
        resumed.update(b)
    assert_modules_equal(straight.policy, resumed.policy)
    assert resumed.step == straight.step == 6


def test_act_is_batched_numpy(batch):
    learner = tiny_learner("bc")
    actions = learner.act(batch.obs.numpy().astype(np.float64))
    assert actions.shape == (batch.obs.shape[0], ACTION_DIM) and actions.dtype == np.float32
    assert np.all(np.abs(actions) < 1)
    single = learner.act(batch.obs[0].numpy())
    np.testing.assert_allclose(single, actions[0], rtol=1e-5, atol=1e-6)


def test_filtered_bc_trains_on_the_top_episodes_only(tmp_path):
    """The learner's training data is cvl_data.top_episodes of the run's dataset."""
    from cvl_data import DatasetSpec, DatasetWriter, open_dataset

    spec = DatasetSpec(
        "Meta-World/MT1", "reach-v3", "state", (5,), "float32", (2,), -1.0, 1.0, True
    )
    with DatasetWriter(tmp_path / "ds", spec, durable=False) as writer:
        for e, reward in enumerate([1.0, 5.0, 2.0, 9.0]):
            writer.add_episode(
                np.full((4, 5), e, np.float32),
                np.zeros((3, 2), np.float32),
                np.full(3, reward, np.float32),
                terminated=np.zeros(3, bool),
                truncated=np.array([False, False, True]),
            )
    dataset = open_dataset(tmp_path / "ds")
    learner = tiny_learner("filtered_bc", top_fraction=0.5)
    assert learner.training_source(dataset).episodes.tolist() == [1, 3]
    assert tiny_learner("bc").training_source(dataset) is dataset


def test_return_weighted_bc_draws_by_return_and_filtered_bc_refuses_the_weights(tmp_path):
    """``return_weight_temperature`` reaches BC's `TransitionSampler`: on six episodes whose
    return ranks them, T = 0.05 draws the best episode's steps about e^4 = 55 times as often as
    the next one's (the uniform default draws all six alike), the start-state baseline goes with
    it, the loss is BC's on whatever was drawn; bad values, and weights on top of filtered BC's
    selection, are refused."""
    weighted, batch = return_weighted_draw("bc", write_six_episodes(tmp_path / "ds"))
    with torch.no_grad():  # the loss is BC's likelihood of the drawn pairs, not re-weighted
        nll = -weighted.policy.log_prob(batch.obs, batch.action).mean()
    assert weighted.update(batch)["nll"] == pytest.approx(float(nll), rel=1e-5)
    advantage = tiny_learner(
        "bc", return_weight_temperature=0.3, return_weight_baseline="start_state"
    )
    assert advantage.sampler_options == {
        "return_weight_temperature": 0.3,
        "return_weight_baseline": "start_state",
    }
    with pytest.raises(ValueError, match="return_weight_temperature must be None or a finite"):
        BCConfig(return_weight_temperature=0.0)
    with pytest.raises(ValueError, match="return_weight_baseline must be one of"):
        BCConfig(return_weight_baseline="start_state")  # without a temperature
    with pytest.raises(ValueError, match="filtered_bc selects its episodes by return already"):
        FilteredBCConfig(return_weight_temperature=0.3)


def test_weighted_bc_draws_by_the_advantage_over_the_start_by_default(tmp_path):
    """`WeightedBCLearner`'s defaults (T = 0.1, start-state baseline) on `write_six_episodes`:
    episode e returns 4e from start state e % 2, so the linear fit on the start is 8 (even) and
    12 (odd) and the advantages -8 / 0 / +8 for e = 0, 2, 4 and 1, 3, 5; min-max normalised, 0 /
    0.5 / 1, so episodes 4 and 5 are drawn alike and e^5 = 148 times as often as 2 and 3 (by the
    return alone, 5 would be drawn e^2 = 7.4 times as often as 4). The loss is BC's; a missing
    temperature is refused."""
    dataset = write_six_episodes(tmp_path / "ds")
    learner = tiny_learner("weighted_bc", batch_size=600)
    assert learner.needs_rewards
    assert learner.sampler_options == {
        "return_weight_temperature": 0.1,
        "return_weight_baseline": "start_state",
    }
    batch = learner.make_sampler(dataset, "cpu", seed=0).sample()
    counts = np.bincount(batch.reward.numpy().astype(int), minlength=6)
    assert counts[4] + counts[5] > 0.95 * 600
    assert 0.7 < counts[4] / counts[5] < 1.4
    assert counts[2] + counts[3] < 0.05 * 600 and counts[0] + counts[1] == 0
    with torch.no_grad():
        nll = -learner.policy.log_prob(batch.obs, batch.action).mean()
    assert learner.update(batch)["nll"] == pytest.approx(float(nll), rel=1e-5)
    with pytest.raises(ValueError, match="weighted_bc draws its transitions by return weights"):
        WeightedBCConfig(return_weight_temperature=None)
