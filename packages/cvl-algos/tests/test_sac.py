"""SAC: twin-Q soft TD loss, reparameterised actor loss, temperature loss, learner."""

import dataclasses

import numpy as np
import torch
from conftest import (
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    TINY,  # pants: no-infer-dep
    assert_batch_equal,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    clone_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
    metrics_by_seed,  # pants: no-infer-dep
    tiny_learner,  # pants: no-infer-dep
    tiny_nets,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos.common import Scalar
from cvl_algos.sac import SACConfig, SACLearner, actor_loss, alpha_loss, critic_loss


def _grads_none(module):
    return all(p.grad is None for p in module.parameters())


def _grads_all(module):
    return all(p.grad is not None for p in module.parameters())


def test_defaults():
    cfg = SACConfig()
    assert (cfg.lr, cfg.batch_size, cfg.discount, cfg.max_grad_norm) == (3e-4, 512, 0.99, 100.0)
    assert cfg.hidden == (256, 256) and cfg.tau == 0.005 and cfg.target_entropy is None
    learner = SACLearner((OBS_DIM,), 3, SACConfig(**TINY))
    assert learner.target_entropy == -3.0


def test_critic_loss_touches_only_critic(batch):
    policy, critic, target = tiny_nets()
    before = clone_batch(batch)
    loss, metrics = critic_loss(batch, critic, target, policy, torch.tensor(0.3), 0.99)
    loss.backward()
    assert_batch_equal(batch, before)
    assert _grads_all(critic) and _grads_none(policy) and _grads_none(target)
    assert set(metrics) == {"critic_loss", "q_data", "q_target"}


def test_actor_loss_touches_only_policy(batch):
    policy, critic, _ = tiny_nets()
    before = clone_batch(batch)
    loss, metrics = actor_loss(batch, policy, critic, torch.tensor(0.3))
    loss.backward()
    assert_batch_equal(batch, before)
    assert _grads_all(policy) and _grads_none(critic)
    assert metrics["entropy"].shape == ()


def test_alpha_loss_touches_only_log_alpha():
    log_alpha = Scalar(0.5)
    loss, metrics = alpha_loss(log_alpha(), torch.tensor(-1.0), target_entropy=-2.0)
    loss.backward()
    # entropy above target -> gradient pushes log_alpha down: d loss / d log_alpha = H - H_target
    assert log_alpha.value.grad.item() == 1.0
    torch.testing.assert_close(metrics["alpha"], torch.tensor(0.5).exp())


@settings(max_examples=20, deadline=None)
@given(
    discount=st.floats(0.0, 0.999),
    alpha=st.floats(0.0, 2.0),
    seed=st.integers(0, 1000),
    backup_entropy=st.booleans(),
)
def test_critic_target_matches_hand_computation(discount, alpha, seed, backup_entropy):
    """y = r + gamma (1 - d) (min Qbar(s', a') - alpha log pi(a'|s')), a' drawn with the same RNG."""
    batch = make_transition_batch(seed % 5, batch_size=16, terminal_every=3)
    policy, critic, target = tiny_nets(seed % 3)
    alpha_t = torch.tensor(alpha)
    torch.manual_seed(seed)
    loss, metrics = critic_loss(batch, critic, target, policy, alpha_t, discount, backup_entropy)
    torch.manual_seed(seed)
    with torch.no_grad():
        a_next, logp_next = policy.sample(batch.obs_next)
        v = torch.minimum(*target(batch.obs_next, a_next))
        if backup_entropy:
            v = v - alpha * logp_next
        y = batch.reward + discount * (1 - batch.terminated) * v
        q1, q2 = critic(batch.obs, batch.action)
    torch.testing.assert_close(loss, ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean())
    torch.testing.assert_close(metrics["q_target"], y.mean())


def test_terminal_transitions_regress_to_reward(batch):
    """With every transition terminal the target is the reward, whatever the networks."""
    policy, critic, target = tiny_nets()
    terminal = dataclasses.replace(batch, terminated=torch.ones_like(batch.terminated))
    _, metrics = critic_loss(terminal, critic, target, policy, torch.tensor(1.0), 0.99)
    torch.testing.assert_close(metrics["q_target"], batch.reward.mean())


def test_update_lowers_critic_loss_on_fixed_batch(batch):
    learner = tiny_learner("sac", lr=3e-3)
    losses = [learner.update(batch)["critic_loss"] for _ in range(80)]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert learner.step == 80


def test_target_network_is_polyak_average(batch):
    learner = tiny_learner("sac", tau=0.25)
    target_before = [p.clone() for p in learner.critic_target.parameters()]
    learner.update(batch)
    for old, new, online in zip(
        target_before, learner.critic_target.parameters(), learner.critic.parameters(), strict=True
    ):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * online)


def test_same_seed_same_metrics(batch):
    runs = metrics_by_seed("sac", batch, (5, 5, 6), updates=3)
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_stop_and_resume_equals_straight_run(tmp_path):
    batches = [make_transition_batch(i) for i in range(6)]
    straight = tiny_learner("sac", seed=1)
    for b in batches:
        straight.update(b)
    first = tiny_learner("sac", seed=1)
    for b in batches[:3]:
        first.update(b)
    first.save(tmp_path / "ck")
    obs = batches[0].obs.numpy()
    np.testing.assert_array_equal(SACLearner.load(tmp_path / "ck").act(obs), first.act(obs))
    resumed = SACLearner.load(tmp_path / "ck")
    for b in batches[3:]:
        resumed.update(b)
    assert_learners_equal(straight, resumed)
    assert resumed.step == 6


def test_compiled_updates_draw_eager_numbers(tmp_path):
    """``compile=True`` keeps eager's random draws: the compiled learner follows the eager one
    within float rounding (with inductor's own generator, `fallback_random=False`, it fails)."""
    import torch._inductor.config as inductor_config
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    config = SACConfig(**TINY)
    eager = SACLearner((OBS_DIM,), ACTION_DIM, config, seed=4)
    with temporary_cache_dir(str(tmp_path)), inductor_config.patch(compile_threads=1):
        torch._dynamo.reset()
        compiled = SACLearner(
            (OBS_DIM,), ACTION_DIM, dataclasses.replace(config, compile=True), seed=4
        )
        for i in range(3):
            batch = make_transition_batch(i)
            eager_metrics, compiled_metrics = eager.update(batch), compiled.update(batch)
        torch._dynamo.reset()
    for key in ("critic_loss", "actor_loss", "entropy"):
        torch.testing.assert_close(compiled_metrics[key], eager_metrics[key], rtol=1e-4, atol=1e-5)
    for name, module in eager.state_modules().items():
        other = compiled.state_modules()[name]
        for a, b in zip(module.parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
