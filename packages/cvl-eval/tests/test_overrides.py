"""Learner overrides are values of the config field's declared type, or refused before any work:
``normalize_q=False`` is False (it used to be the truthy string "False"), and a value that does
not parse (``lambda_bc={oops``, ``lr=1e-3x``) stops train, sweep, paper and quickstart at once."""

import dataclasses
import json

import pytest

from cvl_algos import load_learner
from cvl_algos.cvl.config import CVLConfig
from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.paper import run_paper_experiment
from cvl_eval.pipelines.paper_presets import PaperConfig, resolve
from cvl_eval.pipelines.quickstart import QuickstartConfig, quickstart
from cvl_eval.pipelines.sweep import SweepConfig, expand, sweep
from cvl_eval.pipelines.sweep_plan import overrides_of_learners_run
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train
from cvl_eval.training.overrides import typed_overrides
from cvl_eval.training.plan import validate

SMALL = ("latent_dim=8", "num_rff_features=16", "num_action_samples=2")


@pytest.mark.parametrize(
    "item, value",
    [
        ("normalize_q=False", False),
        ("normalize_q=TRUE", True),
        ("normalize=false", False),
        ("lr=1e-3", 1e-3),
        ("lr=2", 2.0),
        ("latent_dim=8", 8),
        ("hidden=[64, 32]", (64, 32)),
        ("hidden=64,32", (64, 32)),
        ("q_estimator=mc", "mc"),
        ('q_estimator="mc"', "mc"),  # as json.dumps writes a string
    ],
)
def test_values_take_the_fields_declared_type(item, value):
    key = item.partition("=")[0]
    converted = typed_overrides(CVLConfig, (item,), "cvl")[key]
    assert converted == value and type(converted) is type(value)


@pytest.mark.parametrize(
    "item, expected",
    [
        ("normalize_q=yes", "is not a bool (true or false, any case)"),
        ("normalize_q=0", "is not a bool"),
        ("latent_dim=1.5", "is not an int"),
        ("lambda_bc={oops", "is not a float"),
        ("lr=1e-3x", "is not a float"),
        ("lr=nan", "is not a float"),
        ("q_estimator=rf", "is not one of ['rff', 'mc']"),
        ("hidden=[64,x]", "is not a tuple of an int"),
    ],
)
def test_values_that_do_not_parse_or_fit_are_refused_naming_key_value_and_type(item, expected):
    key, _, text = item.partition("=")
    with pytest.raises(ConfigError) as error:
        typed_overrides(CVLConfig, (item,), "cvl")
    message = str(error.value)
    assert expected in message and f"{key}={text!r}" in message and f"CVLConfig.{key}" in message


def _train_config(data_root, out, **kw):
    base = dict(
        dataset=str(data_root / "reach-v3"),
        out_dir=str(out),
        algorithm="cvl",
        steps=2,
        hidden=(16, 16),
        batch_size=8,
        overrides=SMALL,
        log_every=1,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=5,
        checkpoint_every=2,
        progress=False,
        tensorboard=False,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_a_false_override_trains_with_the_setting_off(data_root, tmp_path):
    out = tmp_path / "run"
    overrides = (*SMALL, "q_estimator=mc", "normalize=False", "normalize_q=TRUE")
    train(_train_config(data_root, out, overrides=overrides))
    recorded = json.loads((out / "config.json").read_text())["learner_overrides"]
    assert recorded["normalize"] is False and recorded["normalize_q"] is True
    learner = load_learner(out / "final")
    assert learner.config.normalize is False and learner.config.normalize_q is True


@pytest.mark.parametrize("item", ["lambda_bc={oops", "lr=1e-3x", "normalize_q=maybe"])
def test_train_refuses_a_bad_value_before_any_work(data_root, tmp_path, item):
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=item.partition("=")[0]):
        train(_train_config(data_root, out, overrides=(*SMALL, item)))
    assert not out.exists()


def _sweep_config(data_root, out, overrides):
    return SweepConfig(
        data_root=str(data_root),
        out_dir=str(out),
        algorithms=("bc", "cvl", "cvl_pretrained"),
        tasks=("reach",),
        seeds=(0,),
        steps=2,
        overrides=overrides,
    )


def test_sweep_scoped_overrides_are_typed_for_each_run(data_root, tmp_path):
    config = _sweep_config(data_root, tmp_path / "sweep", ("cvl:normalize_q=False", "lr=1e-3"))
    plans = {run.label: validate(run.config) for run in expand(config)}
    assert plans["cvl"].overrides["normalize_q"] is False
    assert plans["cvl_pretrained"].overrides["normalize_q"] is False
    assert "normalize_q" not in plans["bc"].overrides and plans["bc"].overrides["lr"] == 1e-3


@pytest.mark.parametrize(
    "item, expected",
    [
        ("cvl:normalize_q=nope", "cvl: override normalize_q='nope' is not a bool"),
        ("lr=1e-3x", "override lr='1e-3x' is not a float"),
        ("cvl_pretrained:lr=1e-3", "'cvl_pretrained' is not an offline algorithm"),
    ],
)
def test_sweep_refuses_a_bad_override_before_any_process(data_root, tmp_path, item, expected):
    out = tmp_path / "sweep"
    with pytest.raises(ConfigError) as error:
        sweep(_sweep_config(data_root, out, (item,)), progress=False)
    assert expected in str(error.value)
    assert not out.exists()


def test_sweep_refuses_an_override_for_a_learner_it_does_not_run(data_root, tmp_path):
    out = tmp_path / "sweep"
    config = dataclasses.replace(
        _sweep_config(data_root, out, ("cql:cql_alpha=1.0",)), algorithms=("bc", "cvl")
    )
    with pytest.raises(ConfigError, match=r"'cql:cql_alpha=1.0': the sweep does not run 'cql'"):
        sweep(config, progress=False)
    assert not out.exists()


def test_overrides_of_learners_run_keep_the_unscoped_and_those_of_the_learners_run(
    data_root, tmp_path
):
    shared = ("lr=1e-3", "cql:cql_alpha=1.0", "cvl:latent_dim=8", "iql:beta=3.0", "bc:lr=3e-4")
    # a pretrained variant's settings are its learner's
    kept = overrides_of_learners_run(shared, ("bc", "cvl_pretrained"))
    assert kept == ("lr=1e-3", "cvl:latent_dim=8", "bc:lr=3e-4")
    assert overrides_of_learners_run(shared, ("iql",)) == ("lr=1e-3", "iql:beta=3.0")
    config = dataclasses.replace(
        _sweep_config(data_root, tmp_path / "sweep", kept), algorithms=("bc", "cvl_pretrained")
    )
    expand(config)  # the sweep accepts what is kept


def test_paper_refuses_a_bad_override_before_generating_data(tmp_path):
    out = tmp_path / "paper"  # the default experiment, metaworld_states, runs cvl_mc
    config = PaperConfig(out_dir=str(out), overrides=("cvl_mc:lambda_bc={oops",), progress=False)
    with pytest.raises(ConfigError, match=r"lambda_bc='\{oops' is not a float"):
        run_paper_experiment(config)
    assert not out.exists()


def test_paper_refuses_an_override_for_a_learner_it_does_not_run(tmp_path):
    out = tmp_path / "paper"
    config = PaperConfig(out_dir=str(out), overrides=("cvl:lambda_bc=0.5",), progress=False)
    with pytest.raises(ConfigError, match=r"does not run 'cvl' \(its learners: .*'cvl_mc'"):
        run_paper_experiment(config)
    assert not out.exists()
    pretrained = PaperConfig("replay", out_dir=str(out), overrides=("cvl_mc:lr=1e-4",))
    assert resolve(pretrained)["preset"].algorithms[-1] == "cvl_mc_pretrained"  # cvl_mc: both


def test_quickstart_refuses_a_bad_cvl_override_before_generating_data(tmp_path):
    out = tmp_path / "qs"
    config = QuickstartConfig(out_dir=str(out), cvl_overrides=("normalize_q=False!",))
    with pytest.raises(ConfigError, match=r"normalize_q='False!' is not a bool"):
        quickstart(config)
    assert not out.exists()
