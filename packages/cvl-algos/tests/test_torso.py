"""Every learner takes ``torso="mlp"`` (plain Linear+ReLU MLPs), saves and loads it identically,
and keeps the paper's DenseNet by default."""

import dataclasses

import numpy as np
import pytest
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    TINY,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    make_transition_batch,  # pants: no-infer-dep
)

from cvl_algos import ALGORITHMS, learner_class, load_learner, make_learner
from cvl_models import DenseMLP, PlainMLP


def _batch(learner):
    if learner.sampler_kind == "contrastive":
        return make_contrastive_batch(0)
    return make_transition_batch(0)


def _mlps(learner):
    return [
        m
        for module in learner.state_modules().values()
        for m in module.modules()
        if isinstance(m, (DenseMLP, PlainMLP))
    ]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_config_documents_torso_and_defaults_to_densenet(name):
    fields = {f.name: f for f in dataclasses.fields(learner_class(name).config_cls)}
    assert fields["torso"].default == "densenet"
    assert all(
        type(m) is DenseMLP for m in _mlps(make_learner(name, (OBS_DIM,), ACTION_DIM, **TINY))
    )


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_plain_torso_checkpoint_round_trip(tmp_path, name):
    learner = make_learner(name, (OBS_DIM,), ACTION_DIM, seed=3, torso="mlp", **TINY)
    mlps = _mlps(learner)
    assert mlps and all(type(m) is PlainMLP for m in mlps)
    batch = _batch(learner)
    learner.update(batch)
    learner.save(tmp_path / name)
    loaded = load_learner(tmp_path / name)
    assert loaded.config == learner.config and loaded.config.torso == "mlp"
    assert_learners_equal(loaded, learner)
    obs = make_transition_batch(1).obs
    np.testing.assert_array_equal(loaded.act(obs), learner.act(obs))
    # the next update continues identically
    learner.update(batch)
    loaded.update(batch)
    assert_learners_equal(loaded, learner)
