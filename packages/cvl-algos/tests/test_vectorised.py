"""Vectorised seeds: K seeds of BC in one `VectorisedLearner` equal each seed trained alone.

Each seed gets its own stream of batches (what its own sampler would give); the comparison is
per update (metrics) and at the end (parameters, Adam state, RNG state, step), including a stop
after 150 updates, a checkpoint per seed, and a restart of the vectorised learner from the K
loaded checkpoints.
"""

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    DEVICES,
    make_transition_batch,
    tiny_learner,
)

from cvl_algos import BCLearner
from cvl_algos.vectorised import VectorisedLearner

SEEDS = (0, 1, 2)
UPDATES = 300


def batch_stream(seed: int, start: int, count: int, device: str):
    """Seed ``seed``'s batches ``start .. start + count - 1`` (its own sampler stream)."""
    return [
        make_transition_batch(seed=10_000 * (seed + 1) + i, device=device)
        for i in range(start, start + count)
    ]


def close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def assert_same_seed_state(alone, vectorised):
    """Parameters, Adam moments and step, RNG state and step counter of two BC learners."""
    assert alone.step == vectorised.step
    assert torch.equal(alone._cpu_gen.get_state(), vectorised._cpu_gen.get_state())
    for (name, p), q in zip(
        alone.policy.named_parameters(), vectorised.policy.parameters(), strict=True
    ):
        close(p, q)
        state_a, state_v = alone.optimizer.state[p], vectorised.optimizer.state[q]
        assert torch.equal(state_a["step"], state_v["step"]), name
        close(state_a["exp_avg"], state_v["exp_avg"])
        close(state_a["exp_avg_sq"], state_v["exp_avg_sq"])


def train_vectorised(vector, start: int, count: int, device: str):
    streams = [batch_stream(s, start, count, device) for s in SEEDS]
    return [vector.update([stream[i] for stream in streams]) for i in range(count)]


@pytest.mark.parametrize("device", DEVICES)
def test_bc_seeds_equal_each_seed_trained_alone(device, tmp_path):
    alone, alone_metrics = [], []
    for seed in SEEDS:
        learner = tiny_learner("bc", seed=seed, device=device)
        torch.manual_seed(123 + seed)  # the global RNG must not matter
        alone_metrics.append([learner.update(b) for b in batch_stream(seed, 0, UPDATES, device)])
        alone.append(learner)

    half = UPDATES // 2
    vector = VectorisedLearner([tiny_learner("bc", seed=s, device=device) for s in SEEDS])
    metrics = train_vectorised(vector, 0, half, device)
    # stop: each seed's checkpoint in its own folder, then a new vectorised learner from them
    folders = [learner.save(tmp_path / f"seed_{k}") for k, learner in enumerate(vector.sync())]
    restarted = VectorisedLearner([BCLearner.load(f, device=device) for f in folders])
    metrics += train_vectorised(restarted, half, UPDATES - half, device)

    for k, learner in enumerate(restarted.sync()):
        assert learner.seed == SEEDS[k]
        assert_same_seed_state(alone[k], learner)
        for step in range(UPDATES):
            for key in ("bc_loss", "nll", "entropy", "grad_norm"):
                close(metrics[step][k][key], alone_metrics[k][step][key])
    # the seeds really differ from each other (not K copies of one)
    first = [next(lr.policy.parameters()) for lr in restarted.learners]
    assert not torch.allclose(first[0], first[1])


def test_grad_norm_is_clipped_per_seed():
    """With a tiny clipping threshold each seed's step uses its own norm: still equal alone."""
    seeds, updates = (0, 1), 20
    alone = []
    for seed in seeds:
        learner = tiny_learner("bc", seed=seed, max_grad_norm=0.05)
        for b in batch_stream(seed, 0, updates, "cpu"):
            learner.update(b)
        alone.append(learner)
    vector = VectorisedLearner([tiny_learner("bc", seed=s, max_grad_norm=0.05) for s in seeds])
    streams = [batch_stream(s, 0, updates, "cpu") for s in seeds]
    for i in range(updates):
        out = vector.update([stream[i] for stream in streams])
        assert all(float(m["grad_norm"]) > 0.05 for m in out)  # clipping is active
    for a, v in zip(alone, vector.sync(), strict=True):
        for p, q in zip(a.policy.parameters(), v.policy.parameters(), strict=True):
            close(p, q)


def test_refuses_what_it_cannot_vectorise():
    with pytest.raises(ValueError, match="gradient stages"):
        VectorisedLearner([tiny_learner("cql", seed=0), tiny_learner("cql", seed=1)])
    with pytest.raises(ValueError, match="share class, config and shapes"):
        VectorisedLearner([tiny_learner("bc", seed=0), tiny_learner("bc", seed=1, lr=1e-2)])
    with pytest.raises(ValueError, match="compile"):
        VectorisedLearner([tiny_learner("bc", seed=0, compile=True)])
    vector = VectorisedLearner([tiny_learner("bc", seed=0), tiny_learner("bc", seed=1)])
    with pytest.raises(ValueError, match="expected 2 batches, got 1"):
        vector.update([make_transition_batch()])
