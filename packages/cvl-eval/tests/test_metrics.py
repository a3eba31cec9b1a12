"""rliable aggregates: our wrappers agree with calling rliable directly on the same matrices."""

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from rliable import library as rly
from rliable import metrics as rly_metrics

from cvl_eval.analysis.metrics import (
    AGGREGATE_NAMES,
    BootstrapConfig,
    aggregate_scores,
    fast_probability_of_improvement,
    iqm_over_points,
    performance_profiles,
    probability_of_improvement,
    sample_efficiency,
    score_matrix,
)
from cvl_eval.analysis.plots import write_rliable_report

CONFIG = BootstrapConfig(reps=200, seed=3)


def _scores(seed: int = 0, runs: int = 5, tasks: int = 12) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "CVL": rng.uniform(0.3, 1.1, (runs, tasks)),
        "CQL": rng.uniform(0.1, 0.9, (runs, tasks)),
        "BC": rng.uniform(0.0, 0.8, (runs, tasks)),
    }


def _rliable_aggregate(scores: np.ndarray) -> np.ndarray:
    return np.array(
        [
            rly_metrics.aggregate_median(scores),
            rly_metrics.aggregate_iqm(scores),
            rly_metrics.aggregate_mean(scores),
            rly_metrics.aggregate_optimality_gap(scores),
        ]
    )


def test_aggregates_agree_with_rliable_called_directly():
    scores = _scores()
    ours = aggregate_scores(scores, CONFIG)
    np.random.seed(CONFIG.seed)
    points, intervals = rly.get_interval_estimates(
        scores, _rliable_aggregate, reps=CONFIG.reps, confidence_interval_size=0.95
    )
    for algo in scores:
        for i, metric in enumerate(AGGREGATE_NAMES):
            assert ours[algo][metric]["point"] == pytest.approx(points[algo][i], abs=1e-12)
            assert ours[algo][metric]["low"] == pytest.approx(intervals[algo][0, i], abs=1e-12)
            assert ours[algo][metric]["high"] == pytest.approx(intervals[algo][1, i], abs=1e-12)
        assert ours[algo]["Median"]["low"] <= ours[algo]["Median"]["point"]


def test_performance_profiles_agree_with_rliable():
    scores = _scores(1)
    taus = np.linspace(0, 1.2, 13)
    ours = performance_profiles(scores, taus, CONFIG)
    np.random.seed(CONFIG.seed)
    profiles, cis = rly.create_performance_profile(scores, taus, reps=CONFIG.reps)
    for algo in scores:
        np.testing.assert_allclose(ours[algo]["profile"], profiles[algo], atol=1e-12)
        np.testing.assert_allclose(ours[algo]["low"], cis[algo][0], atol=1e-12)
        np.testing.assert_allclose(ours[algo]["high"], cis[algo][1], atol=1e-12)


def test_probability_of_improvement_agrees_with_rliable():
    scores = _scores(2, tasks=6)
    ours = probability_of_improvement(scores, [("CVL", "CQL"), ("CQL", "BC")], CONFIG)

    def rliable_poi(x, y):
        return np.array([rly_metrics.probability_of_improvement(x, y)])

    np.random.seed(CONFIG.seed)
    pairs = {"CVL,CQL": [scores["CVL"], scores["CQL"]], "CQL,BC": [scores["CQL"], scores["BC"]]}
    points, intervals = rly.get_interval_estimates(pairs, rliable_poi, reps=CONFIG.reps)
    for key in pairs:
        assert ours[key]["point"] == pytest.approx(points[key][0], abs=1e-12)
        assert ours[key]["low"] == pytest.approx(intervals[key][0, 0], abs=1e-12)
        assert ours[key]["high"] == pytest.approx(intervals[key][1, 0], abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    x=arrays(np.float64, (4, 3), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0])),
    y=arrays(np.float64, (3, 3), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0])),
)
def test_fast_probability_of_improvement_equals_rliable_with_ties(x, y):
    expected = rly_metrics.probability_of_improvement(x, y)
    assert fast_probability_of_improvement(x, y) == pytest.approx(expected, abs=1e-12)


def test_sample_efficiency_agrees_with_rliable_iqm_per_point():
    rng = np.random.default_rng(4)
    curves = {"CVL": rng.uniform(0, 1, (4, 5, 6)), "BC": rng.uniform(0, 1, (4, 5, 6))}
    steps = np.arange(6) * 1000
    ours = sample_efficiency(curves, steps, CONFIG)

    def rliable_iqm(scores):
        return np.array([rly_metrics.aggregate_iqm(scores[..., j]) for j in range(6)])

    np.testing.assert_allclose(iqm_over_points(curves["BC"]), rliable_iqm(curves["BC"]))
    np.random.seed(CONFIG.seed)
    points, intervals = rly.get_interval_estimates(curves, rliable_iqm, reps=CONFIG.reps)
    for algo in curves:
        np.testing.assert_allclose(ours[algo]["iqm"], points[algo], atol=1e-12)
        np.testing.assert_allclose(ours[algo]["low"], intervals[algo][0], atol=1e-12)
        np.testing.assert_allclose(ours[algo]["high"], intervals[algo][1], atol=1e-12)


def test_callers_global_rng_is_left_alone():
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    aggregate_scores(_scores(), CONFIG)
    assert np.random.random() == expected


def test_score_matrix_layout_and_checks():
    matrix = score_matrix({"a": [1.0, 2.0], "b": [3.0, 4.0]}, ["a", "b"], lambda t, v: v / 2)
    np.testing.assert_array_equal(matrix, [[0.5, 1.5], [1.0, 2.0]])  # (runs, tasks)
    with pytest.raises(ValueError, match="different numbers of runs"):
        score_matrix({"a": [1.0], "b": [3.0, 4.0]}, ["a", "b"])
    with pytest.raises(ValueError, match="number of tasks"):
        aggregate_scores({"x": np.ones((2, 3)), "y": np.ones((2, 4))}, CONFIG)


def test_report_writes_json_and_pngs(tmp_path):
    scores = _scores(5, tasks=8)
    curves = {a: s[..., None] * np.linspace(0, 1, 4) for a, s in scores.items()}
    paths = write_rliable_report(
        scores, tmp_path, BootstrapConfig(reps=50), curve_dict=curves, steps=[0, 1e4, 2e4, 3e4]
    )
    numbers = json.loads((tmp_path / "rliable.json").read_text())
    assert set(numbers) == {
        "bootstrap",
        "aggregates",
        "performance_profiles",
        "probability_of_improvement",
        "sample_efficiency",
    }
    for key in ("aggregates_png", "profiles_png", "improvement_png", "efficiency_png"):
        with open(paths[key], "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
