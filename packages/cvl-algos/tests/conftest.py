"""Shared helpers for the cvl_algos tests: tiny networks and learners, fixed synthetic batches,
equality checks, devices.

Test files import the helpers below from here (``from conftest import ...``) and never from
each other. Pants cannot map the module name ``conftest`` to this file (its module is
``tests.conftest`` under the package's source root; the BUILD's ``python_test_utils`` target
already ships it with every test), so each imported name carries ``# pants: no-infer-dep``.
"""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import settings

from cvl_algos import load_learner, make_learner
from cvl_data import ContrastiveBatch, TransitionBatch
from cvl_models import TanhGaussianPolicy, TwinQ

torch.set_num_threads(1)

# Deterministic examples and no example database on disk (tests write only under tmp_path).
settings.register_profile("cvl_algos", deadline=None, derandomize=True, database=None)
settings.load_profile("cvl_algos")

# CPU always; CUDA too where a GPU is present (no test is skipped without one).
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]

OBS_DIM = 5
ACTION_DIM = 2
TINY = {"hidden": (32, 32)}


def tiny_policy(seed: int = 0) -> TanhGaussianPolicy:
    """A 32x32 tanh-Gaussian policy for (OBS_DIM,) states, initialised after ``manual_seed``."""
    torch.manual_seed(seed)
    return TanhGaussianPolicy((OBS_DIM,), ACTION_DIM, hidden=(32, 32))


def tiny_nets(seed: int = 0) -> tuple[TanhGaussianPolicy, TwinQ, TwinQ]:
    """``(policy, critic, target critic)``, 32x32 each, built in that order after
    ``manual_seed(seed)`` (the policy equals ``tiny_policy(seed)``)."""
    policy = tiny_policy(seed)
    critic = TwinQ((OBS_DIM,), ACTION_DIM, hidden=(32, 32))
    target = TwinQ((OBS_DIM,), ACTION_DIM, hidden=(32, 32))
    return policy, critic, target


def tiny_learner(name: str, **overrides):
    """``make_learner(name, (OBS_DIM,), ACTION_DIM, **overrides, **TINY)``."""
    return make_learner(name, (OBS_DIM,), ACTION_DIM, **overrides, **TINY)


def metrics_by_seed(name: str, batch, seeds, updates: int, global_seed: int = 0) -> list:
    """Per seed in ``seeds``, in turn: ``tiny_learner(name, seed=seed)``, the global torch RNG
    reseeded to ``global_seed + i`` (run ``i``; it must not matter), then the metrics of
    ``updates`` updates on ``batch``."""
    runs = []
    for seed in seeds:
        learner = tiny_learner(name, seed=seed)
        torch.manual_seed(global_seed + len(runs))
        runs.append([learner.update(batch) for _ in range(updates)])
    return runs


def randomise_layer_norms(learners, seed: int) -> None:
    """Give every DenseNet LayerNorm of ``learners`` (built alike) the same random affine
    parameters, gamma in [0.5, 1.5] and beta in [-0.5, 0.5], instead of their initial 1 and 0,
    so that gradient tests see them."""
    generator = torch.Generator().manual_seed(seed)
    for modules in zip(*(learner.state_modules().values() for learner in learners), strict=True):
        for name, param in modules[0].named_parameters():
            if ".norms." in name:
                value = torch.empty(param.shape).uniform_(0.5, 1.5, generator=generator)
                value -= 1.0 if name.endswith("bias") else 0.0
                with torch.no_grad():
                    for module in modules:
                        module.get_parameter(name).copy_(value)


def make_transition_batch(
    seed: int = 0,
    batch_size: int = 32,
    terminal_every: int = 7,
    device: str = "cpu",
    action_dim: int = ACTION_DIM,
):
    """A deterministic synthetic ``TransitionBatch`` of ``action_dim`` actions: actions in
    [-1, 1] (some exactly +-1), reward a smooth function of (s, a), every
    ``terminal_every``-th transition terminal."""
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch_size, OBS_DIM, generator=gen)
    action = torch.tanh(2.0 * torch.randn(batch_size, action_dim, generator=gen))
    action[0] = 1.0
    action[1] = -1.0
    reward = torch.sin(obs[:, 0]) + action[:, 0] * obs[:, 1]
    obs_next = obs + 0.1 * torch.randn(batch_size, OBS_DIM, generator=gen)
    terminated = (torch.arange(batch_size) % terminal_every == terminal_every - 1).float()
    fields = (obs, action, reward, obs_next, terminated)
    return TransitionBatch(*(t.to(device) for t in fields))


def make_contrastive_batch(
    seed: int = 0, size: int = 16, rewards: bool = True, device: str = "cpu"
) -> ContrastiveBatch:
    """A synthetic ContrastiveBatch whose future states depend on (s, a), so there is signal;
    ``action[0]`` is exactly 1 and the rewards are None when not ``rewards``."""
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(size, OBS_DIM, generator=gen)
    action = torch.tanh(torch.randn(size, ACTION_DIM, generator=gen))
    action[0] = 1.0
    future = obs.clone()
    future[:, :ACTION_DIM] += 2.0 * action
    reward = torch.sin(future[:, 0]) if rewards else None
    fields = dict(
        obs_t=obs,
        action_t=action,
        reward_t=reward,
        obs_next=obs + 0.1,
        done=torch.zeros(size),
        obs_future=future,
        reward_future=reward,
        offset=torch.ones(size, dtype=torch.int64),
        task_id=None,
    )
    return ContrastiveBatch(
        **{k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in fields.items()}
    )


def clone_batch(batch):
    """A deep copy of a batch (to check that losses do not mutate theirs)."""
    return dataclasses.replace(
        batch,
        **{
            f.name: getattr(batch, f.name).clone()
            for f in dataclasses.fields(batch)
            if isinstance(getattr(batch, f.name), torch.Tensor)
        },
    )


def double_batch(batch):
    """``batch`` with its floating-point fields in float64 (for naive float64 references)."""
    fields = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}
    return dataclasses.replace(
        batch,
        **{k: v.double() for k, v in fields.items() if v is not None and v.is_floating_point()},
    )


def assert_batch_equal(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), f.name
        else:
            assert x is y, f.name


def assert_modules_equal(a: torch.nn.Module, b: torch.nn.Module):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


def assert_learners_equal(a, b):
    """Every module of ``a.state_modules()`` equals ``b``'s of the same name."""
    for name, module in a.state_modules().items():
        assert_modules_equal(module, b.state_modules()[name])


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


@pytest.fixture
def batch():
    return make_transition_batch()


def check_save_load_act_resume(
    build: Callable, tmp_path, updates: int = 6, batch_fn: Callable = make_contrastive_batch
):
    """A contrastive learner from ``build()`` saved halfway through ``updates`` updates (batches
    ``batch_fn(i)``): loads equal, acts identically (deterministic and sampled), acts
    deterministically, and resumes bit-equal to the learner trained straight through
    (returned)."""
    batches = [batch_fn(i) for i in range(updates)]
    straight = build()
    metrics = [straight.update(b) for b in batches]
    assert all(np.isfinite(float(v)) for m in metrics for v in m.values())
    first = build()
    for batch in batches[: updates // 2]:
        first.update(batch)
    first.save(tmp_path / "ckpt")
    torch.manual_seed(123)
    loaded = load_learner(tmp_path / "ckpt")  # acting draws from the learner's RNG: a copy acts
    assert_learners_equal(first, loaded)
    assert type(loaded.policy) is type(first.policy)
    obs = np.random.default_rng(0).normal(size=(5, OBS_DIM)).astype(np.float32)
    np.testing.assert_array_equal(first.act(obs), loaded.act(obs))
    np.testing.assert_array_equal(
        first.act(obs, deterministic=False), loaded.act(obs, deterministic=False)
    )
    np.testing.assert_array_equal(loaded.act(obs), loaded.act(obs))  # deterministic acting
    resumed = load_learner(tmp_path / "ckpt")
    for batch in batches[updates // 2 :]:
        resumed.update(batch)
    assert_learners_equal(straight, resumed)
    assert resumed.step == straight.step == updates
    assert np.abs(resumed.act(obs)).max() <= 1.0
    assert resumed.act(obs).shape == (5, ACTION_DIM)
    return straight


def one_line_error(build: Callable) -> str:
    """The message of the ``ValueError`` that ``build()`` raises, asserted to be one line."""
    with pytest.raises(ValueError) as error:
        build()
    message = str(error.value)
    assert "\n" not in message
    return message


def check_vectorised_equals_alone(
    build: Callable, updates: int = 40, seeds=(0, 1), batch_fn: Callable = make_contrastive_batch
) -> None:
    """``build(seed)``'s learners updated together by a `VectorisedLearner` end equal (within
    float rounding) to each seed trained alone on its own contrastive batches (``batch_fn``)."""
    from cvl_algos.vectorised import VectorisedLearner

    streams = [[batch_fn(100 * (s + 1) + i) for i in range(updates)] for s in seeds]
    alone = []
    for seed, stream in zip(seeds, streams, strict=True):
        learner = build(seed)
        for batch in stream:
            learner.update(batch)
        alone.append(learner)
    vector = VectorisedLearner([build(s) for s in seeds])
    for i in range(updates):
        vector.update([stream[i] for stream in streams])
    for k, learner in enumerate(vector.sync()):
        for key, module in alone[k].state_modules().items():
            for (pname, a), b in zip(
                module.state_dict().items(),
                learner.state_modules()[key].state_dict().values(),
                strict=True,
            ):
                torch.testing.assert_close(a.float(), b.float(), rtol=1e-4, atol=1e-5), pname


def write_six_episodes(path):
    """Six 4-step episodes: episode e's rewards are all e (so its return ranks it), its first
    observation e % 2 and its later ones 10 + e."""
    from cvl_data import DatasetSpec, DatasetWriter, open_dataset

    spec = DatasetSpec(
        "Meta-World/MT1", "reach-v3", "state", (5,), "float32", (2,), -1.0, 1.0, True
    )
    with DatasetWriter(path, spec, durable=False) as writer:
        for e in range(6):  # episodes 0, 2, 4 start at 0; 1, 3, 5 at 1; later states by episode
            obs = np.full((5, 5), 10.0 + e, np.float32)
            obs[0] = e % 2
            writer.add_episode(
                obs,
                np.zeros((4, 2), np.float32),
                np.full(4, float(e), np.float32),  # the reward names the episode
                terminated=np.zeros(4, bool),
                truncated=np.array([False, False, False, True]),
            )
    return open_dataset(path)


def return_weighted_draw(name: str, dataset):
    """``tiny_learner(name)`` with ``return_weight_temperature=0.05`` and batches of 600 over
    `write_six_episodes`' ``dataset``, and one batch of its sampler, after checking the draw:
    the best episode's steps about e^4 = 55 times as often as the next one's, where the same
    learner without the weights draws all six alike."""
    weighted = tiny_learner(name, batch_size=600, return_weight_temperature=0.05)
    assert weighted.sampler_options == {"return_weight_temperature": 0.05}
    batch = weighted.make_sampler(dataset, "cpu", seed=0).sample()
    counts = np.bincount(batch.reward.numpy().astype(int), minlength=6)
    assert counts[5] > 0.9 * 600 and counts[4] < counts[5] / 10
    plain = tiny_learner(name, batch_size=600)
    assert plain.sampler_options == {}
    counts = np.bincount(
        plain.make_sampler(dataset, "cpu", seed=0).sample().reward.numpy().astype(int)
    )
    assert counts.min() > 600 / 6 / 2
    return weighted, batch
