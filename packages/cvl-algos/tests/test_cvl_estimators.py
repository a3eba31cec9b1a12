"""CVL's critic objective and random-feature kinds (`CVLConfig.critic_objective`, `rff_kind`,
`rff_orthogonal`): binary NCE against a naive loop, positive features as eq. 12's estimator,
and the learner's checkpoints, resumption and vectorised seeds with them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import load_learner, make_learner
from cvl_algos.cvl.losses import binary_nce_partition_loss
from cvl_algos.vectorised import VectorisedLearner
from cvl_models.rff import PositiveRandomFeatures

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
VARIANTS = [
    ("cvl", {"rff_kind": "positive"}),
    ("cvl", {"rff_kind": "positive", "rff_orthogonal": True, "self_normalized": True}),
    ("cvl", {"rff_orthogonal": True}),
    ("cvl", {"rff_kind": "oprf", "self_normalized": True, "temperature": 0.2}),
    ("cvl_mc", {"critic_objective": "binary"}),
]


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2**16), lam=st.floats(0.0, 0.1))
def test_binary_nce_matches_naive_loops(n: int, seed: int, lam: float) -> None:
    logits = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    loss, metrics = binary_nce_partition_loss(logits, lam)
    total, partition = 0.0, 0.0
    for i in range(n):
        for j in range(n):
            p = 1.0 / (1.0 + math.exp(-float(logits[i, j])))
            total += -math.log(p) if i == j else -math.log(1.0 - p)
        partition += math.log(sum(math.exp(float(logits[i, j])) for j in range(n))) ** 2
    expected = total / (n * n) + lam * partition / n
    assert abs(float(loss) - expected) < 1e-9
    assert abs(float(metrics["critic_partition"]) - partition / n) < 1e-9


def test_positive_feature_q_approximates_direct_q() -> None:
    """With many positive features, eq. 12 after one labelled update ~= eq. 11 on that batch."""
    overrides = dict(TINY, num_rff_features=2**15, rff_kind="positive")
    learner = make_learner("cvl", (OBS_DIM,), ACTION_DIM, **overrides)
    assert isinstance(learner.rff, PositiveRandomFeatures)
    batch = make_contrastive_batch(0, 32)
    learner.update(batch)
    q_rff = learner.q_values(batch.obs_t, batch.action_t, estimator="rff")
    q_mc = learner.q_values(
        batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future, estimator="mc"
    )
    scale = float(q_mc.abs().mean())
    assert float((q_rff - q_mc).abs().max()) < 0.1 * scale


@pytest.mark.parametrize(("name", "overrides"), VARIANTS)
def test_checkpoint_resume_and_vectorised_seeds(name: str, overrides: dict, tmp_path) -> None:
    batches = [make_contrastive_batch(i) for i in range(6)]

    def build(seed: int = 2):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)

    straight = build()
    metrics = [straight.update(b) for b in batches]
    assert all(np.isfinite(float(v)) for m in metrics for v in m.values())
    first = build()
    for batch in batches[:3]:
        first.update(batch)
    first.save(tmp_path / "ckpt")
    resumed = load_learner(tmp_path / "ckpt")
    for batch in batches[3:]:
        resumed.update(batch)
    assert_learners_equal(straight, resumed)

    vector = VectorisedLearner([build(0), build(1)])
    alone = [build(0), build(1)]
    for i, batch in enumerate(batches):
        vector.update([batch, batches[-1 - i]])
        alone[0].update(batch)
        alone[1].update(batches[-1 - i])
    for k, learner in enumerate(vector.sync()):
        for key, module in alone[k].state_modules().items():
            other = learner.state_modules()[key].state_dict()
            for pname, value in module.state_dict().items():
                torch.testing.assert_close(
                    value.float(), other[pname].float(), rtol=1e-4, atol=1e-5
                )
