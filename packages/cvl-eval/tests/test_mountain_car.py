"""Mountain Car: SAC replay generation on the real env, and the CVL-vs-SAC Q heatmaps with their
Spearman correlation (tiny learners)."""

import json

import matplotlib.pyplot as plt
import numpy as np
import pytest

from cvl_algos import load_learner, make_learner
from cvl_algos.sac import SACConfig
from cvl_data import ContrastiveSampler, open_dataset
from cvl_eval.analysis.mountain_car import (
    HeatmapConfig,
    analyze_mountain_car,
    minmax,
    mountain_car_q_analysis,
    symlog,
)
from cvl_eval.datagen.sac.config import sac_data_config
from cvl_eval.datagen.sac.generate import generate_sac
from cvl_eval.envs.defaults import env_defaults
from cvl_eval.envs.make import MOUNTAIN_CAR

SMALL = HeatmapConfig(resolution=12, max_states=150, overlay=50)
TINY_CVL = {"hidden": (16, 16), "latent_dim": 8, "num_rff_features": 64, "batch_size": 32}


@pytest.fixture(scope="module")
def generation(tmp_path_factory):
    """SAC on MountainCarContinuous-v0: 3 episodes of 60 steps, tiny networks."""
    path = tmp_path_factory.mktemp("mc") / "mc"
    config = sac_data_config(
        MOUNTAIN_CAR,
        frames=180,
        warmup_frames=40,
        sac=SACConfig(hidden=(16, 16), batch_size=32),
        max_episode_steps=60,
    )
    report = generate_sac(path, config, progress=False, durable=False)
    return path, report


def _cvl(dataset, name="cvl", steps=3, **overrides):
    cvl = make_learner(
        name, (2,), 1, **{**TINY_CVL, **env_defaults(MOUNTAIN_CAR).learner, **overrides}
    )
    sampler = ContrastiveSampler(dataset, 32, mode="uniform", seed=0)
    for _ in range(steps):  # at least one update: xi starts at zero (Q_NCE = 0)
        cvl.update(sampler.sample())
    assert cvl.config.lambda_bc == 0.0
    return cvl


def test_mountain_car_generation(generation):
    path, report = generation
    data = open_dataset(path)
    assert data.num_steps == 180 and data.spec.obs_shape == (2,) and data.spec.action_shape == (1,)
    assert data.spec.task == MOUNTAIN_CAR and data.spec.provenance["config"]["env"] == MOUNTAIN_CAR
    np.testing.assert_array_equal(np.diff(data.episode_offsets), [60, 60, 60])
    pos, vel = data.observations[:, 0], data.observations[:, 1]
    assert pos.min() >= -1.2 and pos.max() <= 0.6 and np.abs(vel).max() <= 0.07
    assert np.all(data.rewards <= 0)  # the goal is not reached in 60 steps: action costs only
    # warm-up random actions are held for 25 steps (temporally correlated exploration)
    assert data.spec.provenance["config"]["warmup_action_repeat"] == 25
    assert np.all(data.actions[:25] == data.actions[0]) and data.actions[25] != data.actions[0]
    assert data.actions[40:60].std() > 0  # then SAC acts
    assert load_learner(report.sac_dir).obs_shape == (2,)


def test_heatmaps_and_correlation(generation, tmp_path):
    path, report = generation
    data = open_dataset(path)
    cvl, sac = _cvl(data), load_learner(report.sac_dir)
    result = mountain_car_q_analysis(cvl, sac, data, tmp_path, SMALL)
    assert -1.0 <= result.spearman_states <= 1.0 and -1.0 <= result.spearman_pairs <= 1.0
    image = plt.imread(result.png)
    assert image.ndim == 3 and image.shape[1] > image.shape[0] > 200 and image.std() > 0.05
    written = json.loads(result.json.read_text())
    assert written["spearman_states"] == pytest.approx(result.spearman_states)
    assert written["num_states"] == 150 and written["cvl_estimator"] == "rff"
    for grid in (result.cvl_grid, result.sac_grid):
        assert grid.shape == (12, 12) and grid.min() == 0.0 and grid.max() == 1.0


def test_correlation_is_one_for_the_same_q_function(generation, tmp_path):
    """Identity: the same learner on both sides gives rho = 1 (states and pairs)."""
    path, report = generation
    data, sac = open_dataset(path), load_learner(report.sac_dir)
    same = mountain_car_q_analysis(sac, sac, data, tmp_path, SMALL, name="sac_vs_sac")
    assert same.spearman_states == pytest.approx(1.0)
    assert same.spearman_pairs == pytest.approx(1.0)
    # the direct estimator (eq. 11) with the uniform action marginal, CVL against itself
    cvl = _cvl(data, "cvl_mc")
    config = HeatmapConfig(resolution=8, max_states=100, action="uniform", num_actions=5)
    out = mountain_car_q_analysis(cvl, cvl, data, tmp_path, config, name="cvl_vs_cvl")
    assert out.spearman_states == pytest.approx(1.0) and out.spearman_pairs == pytest.approx(1.0)


def test_analysis_from_saved_learners(generation, tmp_path):
    path, report = generation
    cvl = _cvl(open_dataset(path))
    cvl.save(tmp_path / "cvl")
    result = analyze_mountain_car(tmp_path / "cvl", report.sac_dir, path, tmp_path / "out", SMALL)
    assert result.png.exists() and result.json.exists()


def test_normalisation_helpers():
    q = np.array([-10.0, -1.0, 0.0, 1.0, np.e - 1.0, 1e6])
    np.testing.assert_allclose(symlog(q)[2:5], [0.0, np.log(2.0), 1.0])
    assert symlog(q)[0] == -np.log(11.0) and np.all(np.diff(symlog(q)) > 0)
    np.testing.assert_allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(minmax(np.ones(3)), np.zeros(3))


PRESET_TEST_FRAMES = 11_000
"""The largest frame budget of the preset's SAC data that fits the suite: the preset's 10k
warm-up frames of held random actions (1.8 s) plus 1k frames of SAC updates at the paper's sizes
(256x256, batch 512; 47 s in all on 2 busy CPU cores, 12k frames took 65 s). The preset's
default budget, 50k frames, spends ~30 min on SAC updates."""


def test_mountain_car_preset_sac_data_reaches_the_goal(tmp_path):
    """The preset's data generation applies Mountain Car's defaults (held warm-up actions): its
    SAC data reaches the goal (i.i.d. warm-up actions reached it in 0 of 40 episodes)."""
    from cvl_eval.datagen.dispatch import generate_datasets
    from cvl_eval.pipelines.paper import generate_configs
    from cvl_eval.pipelines.paper_presets import PaperConfig, resolve

    config = PaperConfig(
        "mountain_car", out_dir=str(tmp_path), frames=PRESET_TEST_FRAMES, progress=False
    )
    generation = generate_datasets(generate_configs(resolve(config), config)[0])[MOUNTAIN_CAR]
    assert generation["transitions"] == PRESET_TEST_FRAMES
    assert generation["success_rate"] > 0.5
    data = open_dataset(generation["paths"][0])
    assert data.spec.provenance["config"]["warmup_action_repeat"] == 25
    assert np.any(data.rewards > 0)  # the goal's reward is in the data


def test_mountain_car_preset_trains_cvl_on_uniform_batches(tmp_path):
    """The preset's CVL run draws its anchors uniformly over the buffer (with one-episode
    batches, the learner's default, the critic ordered the states by position alone: Spearman
    with SAC's Q 0.64 against 0.86 with uniform ones on the preset's buffer); the paper's budget
    keeps the learner's default."""
    from cvl_algos import learner_class
    from cvl_eval.pipelines.paper import sweep_config
    from cvl_eval.pipelines.paper_presets import PaperConfig, resolve
    from cvl_eval.pipelines.sweep_plan import expand
    from cvl_eval.training.overrides import typed_overrides

    def sampler_mode(full: bool) -> str:
        config = PaperConfig("mountain_car", out_dir=str(tmp_path), full=full, progress=False)
        (run,) = expand(sweep_config(resolve(config), config))
        config_cls = learner_class(run.config.algorithm).config_cls
        overrides = typed_overrides(config_cls, run.config.overrides, run.config.algorithm)
        return overrides.get("sampler_mode", config_cls().sampler_mode)

    assert sampler_mode(full=False) == "uniform"
    assert sampler_mode(full=True) == "episode"
