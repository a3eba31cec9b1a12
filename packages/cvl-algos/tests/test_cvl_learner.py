"""CVLLearner: defaults, learning on a fixed batch, determinism, checkpoints, pretraining."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    write_six_episodes,  # pants: no-infer-dep
)

from cvl_algos import load_learner, make_learner
from cvl_algos.cvl import (
    CVLConfig,
    CVLLearner,
    CVLMCConfig,
    CVLMCLearner,
    xi_ema,
    xi_estimate,
)
from cvl_algos.pretraining import pretrain_then_finetune
from cvl_data import ContrastiveBatch

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
ESTIMATORS = ["cvl", "cvl_mc"]


def make_batch(seed: int = 0, size: int = 16, rewards: bool = True, device: str = "cpu"):
    """A synthetic ContrastiveBatch whose future states depend on (s, a), so there is signal."""
    return make_contrastive_batch(seed, size, rewards, device)


class Batches:
    """Deterministic stream of synthetic batches with a ``sample()`` method (a sampler stand-in
    for the loop; the learner, not the sampler, is under test)."""

    def __init__(self, rewards: bool, seed: int = 0):
        self.rewards, self.count, self.seed = rewards, 0, seed

    def sample(self) -> ContrastiveBatch:
        self.count += 1
        return make_batch(self.seed + self.count, rewards=self.rewards)


def test_defaults_are_the_papers() -> None:
    cfg = CVLConfig()
    assert (cfg.lr, cfg.discount, cfg.max_grad_norm, cfg.hidden) == (3e-4, 0.99, 100.0, (256, 256))
    assert (cfg.batch_size, cfg.sampler_mode) == (500, "episode")
    assert (cfg.temperature, cfg.normalize, cfg.lambda_partition) == (1.0, True, 1e-3)
    assert (cfg.num_action_samples, cfg.lambda_bc, cfg.q_estimator) == (10, 0.1, "rff")
    assert cfg.normalize_q is False
    assert CVLMCConfig().q_estimator == "mc"
    with pytest.raises(ValueError):
        CVLConfig(q_estimator="rff", normalize=False)  # lemma 1 needs unit latents
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]


def test_registry_builds_both_variants() -> None:
    rff = make_learner("cvl", (OBS_DIM,), ACTION_DIM, **TINY)
    mc = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **TINY)
    assert type(rff) is CVLLearner and rff.config.q_estimator == "rff"
    assert type(mc) is CVLMCLearner and mc.config.q_estimator == "mc"
    assert rff.sampler_kind == mc.sampler_kind == "contrastive"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_update_lowers_critic_loss_on_fixed_batch(name: str, device: str) -> None:
    learner = make_learner(name, (OBS_DIM,), ACTION_DIM, device=device, lr=3e-3, **TINY)
    batch = make_batch(device=device)
    metrics = [learner.update(batch) for _ in range(60)]
    losses = [m["critic_loss"] for m in metrics]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3
    assert metrics[-1]["critic_accuracy"] > 0.5
    assert all(np.isfinite(v) for m in metrics for v in m.values())
    assert learner.step == 60 and learner.pretrain_steps == 0
    assert ("xi_norm" in metrics[-1]) == (name == "cvl")


@pytest.mark.parametrize("name", ESTIMATORS)
def test_same_seed_same_metrics(name: str) -> None:
    runs = []
    for seed in (0, 0, 1):
        learner = make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY)
        torch.manual_seed(1000 + len(runs))  # the global RNG must not matter
        runs.append([learner.update(make_batch(i)) for i in range(3)])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_xi_starts_at_first_estimate_then_averages() -> None:
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, beta_xi=0.9, **TINY)
    estimates = []
    for seed in (0, 1):
        batch = make_batch(seed)
        learner.update(batch)
        with torch.no_grad():
            psi = learner.psi_target(batch.obs_future)
            estimates.append(xi_estimate(learner.rff, psi, batch.reward_future))
        if seed == 0:
            torch.testing.assert_close(learner.xi_state.xi, estimates[0])
    expected = xi_ema(estimates[0], estimates[1], 0.9)
    torch.testing.assert_close(learner.xi_state.xi, expected)
    assert int(learner.xi_state.count) == 2


def test_mc_learner_leaves_xi_alone() -> None:
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **TINY)
    learner.update(make_batch())
    assert int(learner.xi_state.count) == 0 and not learner.xi_state.xi.any()


def test_pretrain_update_trains_only_the_critic() -> None:
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, lr=3e-3, **TINY)
    policy_before = {k: v.clone() for k, v in learner.policy.state_dict().items()}
    psi_target_before = {k: v.clone() for k, v in learner.psi_target.state_dict().items()}
    critic_before = {k: v.clone() for k, v in learner.critic.state_dict().items()}
    batch = make_batch(rewards=False)
    losses = [learner.pretrain_update(batch)["critic_loss"] for _ in range(30)]
    assert losses[-1] < losses[0]
    assert (learner.step, learner.pretrain_steps) == (0, 30)
    for k, v in learner.policy.state_dict().items():
        assert torch.equal(v, policy_before[k]), k
    assert int(learner.xi_state.count) == 0 and not learner.xi_state.xi.any()
    assert any(not torch.equal(v, critic_before[k]) for k, v in learner.critic.state_dict().items())
    moved = learner.psi_target.state_dict()
    assert any(not torch.equal(moved[k], v) for k, v in psi_target_before.items())
    with pytest.raises(ValueError, match="pretrain_update"):
        learner.update(batch)


def test_pretrain_then_finetune_counts_and_resumes(tmp_path) -> None:
    """A run stopped during pretraining and resumed equals one that never stopped."""
    overrides = dict(TINY, pretrain_steps=3)
    full = make_learner("cvl", (OBS_DIM,), ACTION_DIM, **overrides)
    phases = []
    pretrain_then_finetune(
        full,
        Batches(rewards=False),
        Batches(rewards=True, seed=100),
        finetune_steps=2,
        callback=lambda phase, step, m: phases.append((phase, step)),
    )
    assert phases == [("pretrain", 1), ("pretrain", 2), ("pretrain", 3)] + [
        ("finetune", 1),
        ("finetune", 2),
    ]
    pre, fine = Batches(rewards=False), Batches(rewards=True, seed=100)
    part = make_learner("cvl", (OBS_DIM,), ACTION_DIM, **overrides)
    pretrain_then_finetune(part, pre, fine, finetune_steps=0, pretrain_steps=2)
    part.save(tmp_path / "ckpt")
    resumed = load_learner(tmp_path / "ckpt")
    assert (resumed.pretrain_steps, resumed.step) == (2, 0)
    pretrain_then_finetune(resumed, pre, fine, finetune_steps=2)
    assert_learners_equal(full, resumed)
    with pytest.raises(ValueError):
        pretrain_then_finetune(resumed, pre, fine, finetune_steps=2, pretrain_steps=5)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_save_load_act_identical(name: str, tmp_path, device: str) -> None:
    learner = make_learner(name, (OBS_DIM,), ACTION_DIM, device=device, seed=3, **TINY)
    learner.pretrain_update(make_batch(0, rewards=False, device=device))
    for i in range(3):
        learner.update(make_batch(i, device=device))
    learner.save(tmp_path / "ckpt")
    loaded = load_learner(tmp_path / "ckpt", device=device)
    assert type(loaded) is type(learner) and loaded.config == learner.config
    assert (loaded.step, loaded.pretrain_steps) == (3, 1)
    assert_learners_equal(learner, loaded)
    obs = np.random.default_rng(0).normal(size=(7, OBS_DIM)).astype(np.float32)
    np.testing.assert_array_equal(learner.act(obs), loaded.act(obs))
    np.testing.assert_array_equal(
        learner.act(obs, deterministic=False), loaded.act(obs, deterministic=False)
    )
    assert learner.act(obs).shape == (7, ACTION_DIM)
    assert np.all(np.abs(learner.act(obs, deterministic=False)) < 1.0)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_stop_and_resume_equals_uninterrupted_run(name: str, tmp_path, device: str) -> None:
    batches = [make_batch(i, device=device) for i in range(6)]
    straight = make_learner(name, (OBS_DIM,), ACTION_DIM, device=device, seed=5, **TINY)
    for batch in batches:
        straight.update(batch)
    first = make_learner(name, (OBS_DIM,), ACTION_DIM, device=device, seed=5, **TINY)
    for batch in batches[:3]:
        first.update(batch)
    first.save(tmp_path / "ckpt")
    del first
    torch.manual_seed(999)  # whatever happens to the global RNG in between
    resumed = load_learner(tmp_path / "ckpt", device=device)
    for batch in batches[3:]:
        last = resumed.update(batch)
    assert_learners_equal(straight, resumed)
    for name_opt, opt in straight.state_optimizers().items():
        other = resumed.state_optimizers()[name_opt].state_dict()["state"]
        for idx, state in opt.state_dict()["state"].items():
            for key, value in state.items():
                assert torch.equal(value, other[idx][key]), (name_opt, idx, key)
    assert resumed.step == straight.step == 6
    assert np.isfinite(last["policy_loss"])


def test_q_values_of_both_estimators_agree_for_many_features() -> None:
    """After one labelled update, xi is one batch's estimate, so Q_rff ~= Q_direct on that batch
    (lemma 1) when D is large."""
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, **dict(TINY, num_rff_features=2**15))
    batch = make_batch(0, size=32)
    learner.update(batch)
    q_rff = learner.q_values(batch.obs_t, batch.action_t, estimator="rff")
    q_mc = learner.q_values(
        batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future, estimator="mc"
    )
    scale = np.e / (1 - learner.config.discount)
    assert torch.max(torch.abs(q_rff - q_mc)).item() < 0.1 * scale


def test_pixel_observations_flow_through() -> None:
    shape = (16, 16, 3)
    learner = make_learner("cvl", shape, ACTION_DIM, **dict(TINY, hidden=(8,)))
    gen = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (4, *shape), generator=gen).to(torch.uint8)
    batch = ContrastiveBatch(
        obs_t=pixels,
        action_t=torch.zeros(4, ACTION_DIM),
        reward_t=torch.ones(4),
        obs_next=pixels,
        done=torch.zeros(4),
        obs_future=pixels.flip(0),
        reward_future=torch.ones(4),
        offset=torch.ones(4, dtype=torch.int64),
        task_id=None,
    )
    metrics = learner.update(batch)
    assert all(np.isfinite(v) for v in metrics.values())
    assert learner.act(pixels.numpy()).shape == (4, ACTION_DIM)


def test_shared_start_sampler_from_the_config(tmp_path) -> None:
    """``sampler_mode="shared_start"`` builds blocks of ``batch_size / start_groups`` anchors
    whose episodes share their first observation; other values are refused."""
    dataset = write_six_episodes(tmp_path / "ds")
    learner = make_learner(
        "cvl_mc", (5,), 2, batch_size=12, sampler_mode="shared_start", start_groups=3, **TINY
    )
    sampler = learner.make_sampler(dataset, "cpu", seed=0)
    assert sampler.mode == "shared_start" and sampler.start_groups == 3
    for _ in range(10):
        episodes = sampler.sample().reward_t.numpy().astype(int).reshape(3, 4)
        assert all(len({e % 2 for e in block}) == 1 for block in episodes)
    with pytest.raises(ValueError, match="start_groups must divide batch_size 12"):
        make_learner("cvl_mc", (5,), 2, batch_size=12, sampler_mode="shared_start", start_groups=5)
    with pytest.raises(ValueError, match="sampler_mode must be"):
        make_learner("cvl_mc", (5,), 2, sampler_mode="grouped")


def test_top_episode_flags_from_the_config(tmp_path) -> None:
    """``bc_top_fraction=0.5`` gives the learner's sampler the flags of the three episodes of
    highest return, and the learner trains on its batches; at 1 the batches carry none."""
    dataset = write_six_episodes(tmp_path / "ds")
    top = {"policy_extraction": "ddpgbc", "sampler_mode": "uniform", "batch_size": 12}
    learner = make_learner("cvl_mc", (5,), 2, bc_top_fraction=0.5, **top, **TINY)
    batch = learner.make_sampler(dataset, "cpu", seed=0).sample()
    np.testing.assert_array_equal(batch.behaviour_weight.numpy(), batch.reward_t.numpy() >= 3)
    assert all(np.isfinite(v) for v in learner.update(batch).values())
    plain = make_learner("cvl_mc", (5,), 2, **top, **TINY)
    assert plain.make_sampler(dataset, "cpu", seed=0).sample().behaviour_weight is None


@pytest.mark.parametrize("algo", ESTIMATORS)
def test_return_weighted_anchors_from_the_config(tmp_path, algo: str) -> None:
    """``return_weight_temperature`` reaches the learner's sampler: on six episodes whose return
    ranks them, T = 0.05 draws the best episode's anchors about e^(1 / (5 T)) = 55 times as often
    as the next one's; the learner trains on its batches. Other sampler modes and bad
    temperatures are refused."""
    dataset = write_six_episodes(tmp_path / "ds")
    cfg = {"sampler_mode": "uniform", "batch_size": 500, "return_weight_temperature": 0.05}
    learner = make_learner(algo, (5,), 2, **cfg, **TINY)
    assert learner.sampler_options == {"return_weight_temperature": 0.05}
    sampler = learner.make_sampler(dataset, "cpu", seed=0)
    batch = sampler.sample()
    counts = np.bincount(batch.reward_t.numpy().astype(int), minlength=6)
    assert counts[5] > 0.9 * 500 and counts[4] < counts[5] / 10
    assert all(np.isfinite(v) for v in learner.update(batch).values())
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="return_weight_temperature must be None or a finite"):
            make_learner(algo, (5,), 2, **{**cfg, "return_weight_temperature": bad})
    with pytest.raises(ValueError, match="it needs sampler_mode='uniform', got 'episode'"):
        make_learner(algo, (5,), 2, **{**cfg, "sampler_mode": "episode"})
    advantage = make_learner(algo, (5,), 2, **cfg, return_weight_baseline="start_state")
    assert advantage.sampler_options == {
        "return_weight_temperature": 0.05,
        "return_weight_baseline": "start_state",
    }
    # episodes 0, 2, 4 start at 0 and 1, 3, 5 at 1, episode e's return 4e: against the fit on
    # the start, the best of each start (4 and 5) lead alike, 4 no longer 55 times behind 5
    batch = advantage.make_sampler(dataset, "cpu", seed=0).sample()
    counts = np.bincount(batch.reward_t.numpy().astype(int), minlength=6)
    assert counts[4] + counts[5] > 0.9 * 500 and abs(int(counts[4]) - int(counts[5])) < 100
    with pytest.raises(ValueError, match="'start_state' only with return_weight_temperature"):
        make_learner(algo, (5,), 2, sampler_mode="uniform", return_weight_baseline="start_state")


@pytest.mark.parametrize("algo", ESTIMATORS)
def test_a_weight_scope_gives_the_policy_step_its_own_anchors(tmp_path, algo: str) -> None:
    """With ``return_weight_scope`` the sampler draws the policy step's own anchors, and the
    policy step trains on them: the same critic anchors with other policy anchors move the
    critic identically and the policy differently; the critic's own anchors passed as the
    policy's give exactly the update without them. The paper's KL form, which reads the
    anchors' futures, and a scope without a temperature are refused."""
    cfg = {"sampler_mode": "uniform", "policy_extraction": "ddpgbc", **TINY}
    weighted = {"return_weight_temperature": 0.3, "return_weight_scope": "policy"}
    learner = make_learner(algo, (5,), 2, **cfg, **weighted)
    assert learner.sampler_options == {
        "return_weight_temperature": 0.3,
        "return_weight_scope": "policy",
    }
    batch = learner.make_sampler(write_six_episodes(tmp_path / "ds"), "cpu", seed=0).sample()
    assert batch.policy_obs_t is not None and batch.for_policy() is not batch

    base = make_batch(1)
    other = make_batch(2)
    variants = {
        "none": base,
        "own": dataclasses.replace(base, policy_obs_t=base.obs_t, policy_action_t=base.action_t),
        "other": dataclasses.replace(
            base, policy_obs_t=other.obs_t, policy_action_t=other.action_t
        ),
    }
    learners = {}
    for name, variant in variants.items():
        torch.manual_seed(0)
        learners[name] = make_learner(algo, (OBS_DIM,), ACTION_DIM, seed=0, **cfg)
        torch.manual_seed(1)
        learners[name].update(variant)
    assert_learners_equal(learners["none"], learners["own"])
    for (_, a), (_, b) in zip(
        learners["none"].critic.state_dict().items(), learners["other"].critic.state_dict().items()
    ):
        assert torch.equal(a, b)
    moved = [
        not torch.equal(a, b)
        for a, b in zip(learners["none"].policy.parameters(), learners["other"].policy.parameters())
    ]
    assert any(moved)
    with pytest.raises(ValueError, match="policy_extraction='kl' reads the critic's futures"):
        make_learner(algo, (5,), 2, **{**cfg, **weighted, "policy_extraction": "kl"})
    with pytest.raises(ValueError, match="'critic' or 'policy' only with return_weight_temp"):
        make_learner(algo, (5,), 2, **cfg, return_weight_scope="critic")


@pytest.mark.parametrize("algo", ESTIMATORS)
def test_critic_updates_freezes_the_critic_and_trains_the_policy(algo: str) -> None:
    """With ``critic_updates=2`` the critic and psi_target move in the first 2 updates and not
    after, while the policy keeps training; a negative count and TD InfoNCE are refused."""
    learner = make_learner(
        algo, (OBS_DIM,), ACTION_DIM, seed=0, **TINY, critic_updates=2, policy_extraction="ddpgbc"
    )

    def snapshot() -> dict[str, torch.Tensor]:
        modules = {"critic": learner.critic, "psi": learner.psi_target, "pi": learner.policy}
        return {
            f"{k}.{n}": p.detach().clone()
            for k, m in modules.items()
            for n, p in m.named_parameters()
        }

    def moved(before, after, prefix: str) -> bool:
        return any(not torch.equal(before[k], after[k]) for k in before if k.startswith(prefix))

    batches = Batches(rewards=True)
    states = [snapshot()]
    for _ in range(4):
        metrics = learner.update(batches.sample())
        states.append(snapshot())
        assert ("critic_loss" in metrics) == (learner.step <= 2)
    for k in (1, 2):
        assert moved(states[k - 1], states[k], "critic.") and moved(
            states[k - 1], states[k], "psi."
        )
    for k in (3, 4):
        assert not moved(states[k - 1], states[k], "critic.")
        assert not moved(states[k - 1], states[k], "psi.")
        assert moved(states[k - 1], states[k], "pi.")
    with pytest.raises(ValueError, match="critic_updates"):
        CVLConfig(critic_updates=-1)
    with pytest.raises(ValueError, match="critic_updates"):
        CVLMCConfig(critic_updates=5, critic_objective="td_infonce")
