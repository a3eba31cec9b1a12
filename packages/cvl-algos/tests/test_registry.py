"""make_learner / ALGORITHMS / register / load_learner, and the learner protocol for every name."""

import dataclasses

import numpy as np
import pytest
import torch
from conftest import ACTION_DIM, OBS_DIM, TINY, make_transition_batch  # pants: no-infer-dep

import cvl_algos
from cvl_algos import (
    ALGORITHMS,
    CheckpointError,
    LearnerBase,
    learner_class,
    load_learner,
    make_learner,
    register,
)
from cvl_algos.bc import BCConfig, BCLearner

EXPECTED = {
    "bc": ("BCLearner", "transition"),
    "sac": ("SACLearner", "transition"),
    "cql": ("CQLLearner", "transition"),
    "cql_uds": ("CQLUDSLearner", "transition"),
    "cvl": ("CVLLearner", "contrastive"),
    "cvl_mc": ("CVLMCLearner", "contrastive"),
    "iql": ("IQLLearner", "transition"),
    "filtered_bc": ("FilteredBCLearner", "transition"),
    "weighted_bc": ("WeightedBCLearner", "transition"),
    "fql": ("FQLLearner", "transition"),
}


def test_all_algorithms_registered():
    assert set(EXPECTED) <= set(ALGORITHMS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_make_learner_follows_protocol(name):
    learner = make_learner(name, (OBS_DIM,), ACTION_DIM, seed=1, **TINY)
    cls_name, kind = EXPECTED[name]
    assert type(learner).__name__ == cls_name and isinstance(learner, LearnerBase)
    assert learner.name == name and learner.sampler_kind == kind and learner.step == 0
    assert dataclasses.is_dataclass(learner.config) and learner.config.hidden == (32, 32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        learner.config.hidden = (1,)
    assert learner.config.max_grad_norm == 100.0
    obs = make_transition_batch(0, batch_size=4).obs.numpy()
    assert learner.act(obs).shape == (4, ACTION_DIM)
    assert getattr(cvl_algos, cls_name) is type(learner)


@pytest.mark.parametrize(
    "name", ["bc", "filtered_bc", "weighted_bc", "sac", "cql", "cql_uds", "iql", "fql"]
)
def test_load_learner_dispatches_on_saved_name(tmp_path, name):
    learner = make_learner(name, (OBS_DIM,), ACTION_DIM, seed=3, **TINY)
    learner.update(make_transition_batch(0))
    learner.save(tmp_path / name)
    loaded = load_learner(tmp_path / name)
    assert type(loaded) is type(learner) and loaded.step == 1 and loaded.config == learner.config
    obs = make_transition_batch(1).obs
    np.testing.assert_array_equal(loaded.act(obs), learner.act(obs))


def test_errors():
    with pytest.raises(KeyError):
        make_learner("nope", (OBS_DIM,), ACTION_DIM)
    with pytest.raises(TypeError, match="not_a_field"):
        make_learner("bc", (OBS_DIM,), ACTION_DIM, not_a_field=1)
    with pytest.raises(ValueError):
        register("bc", "somewhere:Else")


def test_register_custom_learner():
    @dataclasses.dataclass(frozen=True)
    class TinyBCConfig(BCConfig):
        hidden: tuple[int, ...] = (8,)

    class TinyBC(BCLearner):
        name = "tiny_bc"
        config_cls = TinyBCConfig

    register("tiny_bc", TinyBC)
    try:
        learner = make_learner("tiny_bc", (OBS_DIM,), ACTION_DIM, device=torch.device("cpu"))
        assert learner_class("tiny_bc") is TinyBC and learner.config.hidden == (8,)
    finally:
        del ALGORITHMS["tiny_bc"]


def test_load_checks_the_learner_class(tmp_path):
    from cvl_algos.bc import BCLearner
    from cvl_algos.cql import CQLLearner
    from cvl_algos.sac import SACLearner

    make_learner("cql", (OBS_DIM,), ACTION_DIM, **TINY).save(tmp_path / "cql")
    assert type(SACLearner.load(tmp_path / "cql")) is CQLLearner  # a subclass is fine
    with pytest.raises(
        CheckpointError, match=r"state\.json \(field 'algorithm'\): holds a CQLLearner"
    ):
        BCLearner.load(tmp_path / "cql")
