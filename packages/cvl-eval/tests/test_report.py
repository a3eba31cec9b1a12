"""Reports from real (tiny) run folders: tables, learning curves, rliable figures."""

import csv
import dataclasses
import json
import shutil

import numpy as np
import pytest

from cvl_eval.analysis.report import ReportConfig, report
from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted
from cvl_eval.envs.expert_scores import normalized_score
from cvl_eval.errors import ConfigError
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    config = ScriptedConfig("reach", num_episodes=2, noise_sigma=0.3, max_steps=20)
    generate_scripted(root / "data" / "reach-v3", config, progress=False, durable=False)
    for algorithm in ("bc", "cvl"):
        for seed in (0, 1):
            overrides = ("latent_dim=8", "num_rff_features=16") if algorithm == "cvl" else ()
            train(
                TrainConfig(
                    dataset=str(root / "data" / "reach-v3"),
                    out_dir=str(root / "runs" / algorithm / f"seed_{seed}"),
                    algorithm=algorithm,
                    seed=seed,
                    steps=4,
                    hidden=(16, 16),
                    batch_size=8,
                    overrides=overrides,
                    log_every=2,
                    eval_every=2,
                    eval_episodes=3,
                    eval_max_steps=8,
                    checkpoint_every=0,
                    progress=False,
                    tensorboard=False,
                )
            )
    return root


def test_report_writes_tables_curves_and_rliable_figures(runs_root, tmp_path):
    out = tmp_path / "report"
    summary = report(
        ReportConfig(runs=(str(runs_root / "runs"),), out_dir=str(out), bootstrap_reps=50)
    )
    for name in (
        "table.md",
        "table.csv",
        "success.md",
        "success.csv",
        "learning_curves.png",
        "learning_curves.json",
        "report.json",
        "report.md",
        "rliable/rliable.json",
        "rliable/aggregates.png",
        "rliable/profiles.png",
        "rliable/improvement.png",  # two algorithms: probability of improvement
        "rliable/efficiency.png",  # all runs evaluated at steps 2 and 4
    ):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert summary["algorithms"] == ["bc", "cvl"] and summary["num_runs"] == 4
    assert summary["rliable"] == {
        "tasks": ["reach-v3"],
        "normalized": True,
        "runs_are": "seeds",
        "runs_per_task": {"bc": 2, "cvl": 2},
    }
    # the table holds the mean over seeds of each run's final return, the best in bold
    finals = {
        a: [
            json.loads((runs_root / "runs" / a / f"seed_{s}" / "results.json").read_text())
            for s in (0, 1)
        ]
        for a in ("bc", "cvl")
    }
    rows = list(csv.DictReader((out / "table.csv").open()))
    assert len(rows) == 1 and rows[0]["task"] == "reach"
    for a in ("bc", "cvl"):
        expected = np.mean([r["final_eval"]["mean_return"] for r in finals[a]])
        assert float(rows[0][f"{a}_mean"]) == pytest.approx(expected, abs=1e-4)
    assert rows[0]["best"] in ("bc", "cvl", "bc;cvl")
    assert "**" in (out / "table.md").read_text()
    numbers = json.loads((out / "rliable" / "rliable.json").read_text())
    expected_mean = np.mean(
        [normalized_score("reach", r["final_eval"]["mean_return"]) for r in finals["cvl"]]
    )
    assert numbers["aggregates"]["cvl"]["Mean"]["point"] == pytest.approx(expected_mean)
    assert list(numbers["probability_of_improvement"]) == ["bc,cvl"]
    assert numbers["sample_efficiency"]["bc"]["steps"] == [2.0, 4.0]


def test_episodes_as_runs_and_algorithm_selection(runs_root, tmp_path):
    out = tmp_path / "one"
    summary = report(
        ReportConfig(
            runs=(str(runs_root / "runs" / "cvl" / "seed_0"),),
            out_dir=str(out),
            episodes_as_runs=True,
            bootstrap_reps=50,
        )
    )
    assert summary["rliable"]["runs_per_task"] == {"cvl": 3}  # 3 evaluation episodes
    assert not (out / "rliable" / "improvement.png").exists()  # one algorithm only
    assert (out / "rliable" / "aggregates.png").is_file()


@pytest.mark.parametrize(
    "runs, algorithms, message",
    [
        ("empty", None, "no finished runs"),
        ("missing", None, "no such run folder"),
        ("runs", ("bc", "cql"), "no finished runs of ['cql']"),
    ],
)
def test_bad_report_requests_fail_clearly(runs_root, tmp_path, runs, algorithms, message):
    (tmp_path / "empty").mkdir()
    where = {"empty": tmp_path / "empty", "missing": tmp_path / "nope", "runs": runs_root / "runs"}
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        report(
            ReportConfig(
                runs=(str(where[runs]),), out_dir=str(tmp_path / "out"), algorithms=algorithms
            )
        )


def test_two_runs_of_one_label_task_and_seed_are_refused_before_anything_is_written(
    runs_root, tmp_path
):
    """A second root holding bc's reach seed 0 again (e.g. another dataset of the same task)."""
    shutil.copytree(runs_root / "runs" / "bc" / "seed_0", tmp_path / "other" / "bc" / "seed_0")
    out = tmp_path / "out"
    config = ReportConfig(runs=(str(runs_root / "runs"), str(tmp_path / "other")), out_dir=str(out))
    with pytest.raises(ConfigError, match="two runs of bc on reach-v3 seed 0: .* and "):
        report(config)
    assert not out.exists()
    # cvl is not repeated: its report goes through
    report(dataclasses.replace(config, algorithms=("cvl",), bootstrap_reps=50))


def test_improvement_pairs_are_chosen_and_checked(runs_root, tmp_path):
    out = tmp_path / "pairs"
    config = ReportConfig(
        runs=(str(runs_root / "runs"),), out_dir=str(out), bootstrap_reps=50, pairs=("cvl,bc",)
    )
    report(config)
    numbers = json.loads((out / "rliable" / "rliable.json").read_text())
    assert list(numbers["probability_of_improvement"]) == ["cvl,bc"]  # not the default bc,cvl
    for bad in ("cvl", "cvl,cql", "bc,bc"):
        with pytest.raises(ConfigError, match="--pairs"):
            report(dataclasses.replace(config, pairs=(bad,)))


def test_up_to_step_reads_runs_as_if_they_had_stopped_there(runs_root, tmp_path):
    """``up_to_step=2`` scores each run by its evaluation at step 2 (read here from evals.jsonl
    by hand), drops step 4 from the learning curves, and equals the full report at the last
    step; a step a run did not evaluate at is refused, naming its evals.jsonl."""
    roots = (str(runs_root / "runs"),)
    early = report(
        ReportConfig(runs=roots, out_dir=str(tmp_path / "at2"), bootstrap_reps=50, up_to_step=2)
    )
    assert early["scored_by"] == "the evaluation at step 2"
    for algorithm in ("bc", "cvl"):
        expected = []
        for seed in (0, 1):
            lines = (runs_root / "runs" / algorithm / f"seed_{seed}" / "evals.jsonl").read_text()
            first = json.loads(lines.splitlines()[0])
            assert first["step"] == 2
            expected.append(float(np.mean(first["episode_returns"])))
        assert early["final_return"][algorithm]["reach-v3"] == pytest.approx(expected)
    curves = json.loads((tmp_path / "at2" / "learning_curves.json").read_text())
    assert {row["step"] for row in curves} == {2}
    pooled = dict(runs=roots, bootstrap_reps=50, last_evals=2)
    whole = report(ReportConfig(out_dir=str(tmp_path / "whole"), **pooled))
    at_end = report(ReportConfig(out_dir=str(tmp_path / "at4"), up_to_step=4, **pooled))
    assert at_end["final_return"] == whole["final_return"]
    assert at_end["scored_by"] == "the pooled episodes of the last 2 evaluations up to step 4"
    with pytest.raises(
        ConfigError, match=r"evals.jsonl: no evaluation at --up-to-step 3 \(steps \[2, 4\]\)"
    ):
        report(ReportConfig(runs=roots, out_dir=str(tmp_path / "x"), up_to_step=3))
    with pytest.raises(ConfigError, match="evals.jsonl: 1 evaluations, fewer than --last-evals 2"):
        report(ReportConfig(out_dir=str(tmp_path / "y"), up_to_step=2, **pooled))


def test_scores_pool_the_last_evaluations(runs_root, tmp_path):
    """``last_evals=2`` scores each run by the 2 x 3 episodes of its evaluations at steps 2 and
    4 (read here from evals.jsonl by hand); more evaluations than a run has are refused."""
    summary = report(
        ReportConfig(
            runs=(str(runs_root / "runs"),),
            out_dir=str(tmp_path / "pooled"),
            bootstrap_reps=50,
            last_evals=2,
        )
    )
    assert summary["scored_by"] == "the pooled episodes of the last 2 evaluations"
    for algorithm in ("bc", "cvl"):
        expected = []
        for seed in (0, 1):
            lines = (runs_root / "runs" / algorithm / f"seed_{seed}" / "evals.jsonl").read_text()
            evals = [json.loads(line) for line in lines.splitlines()]
            assert [e["step"] for e in evals] == [2, 4]
            episodes = [r for e in evals for r in e["episode_returns"]]
            assert len(episodes) == 6
            expected.append(float(np.mean(episodes)))
        assert summary["final_return"][algorithm]["reach-v3"] == pytest.approx(expected)
    assert "last 2 evaluations" in (tmp_path / "pooled" / "report.md").read_text()
    with pytest.raises(ConfigError, match="evals.jsonl: 2 evaluations, fewer than --last-evals 3"):
        report(
            ReportConfig(runs=(str(runs_root / "runs"),), out_dir=str(tmp_path / "x"), last_evals=3)
        )


def test_final_episodes_score_each_run_by_its_final_policy(runs_root, tmp_path):
    """``final_episodes=4`` scores each run by the 4 episodes `cvl-evaluate` wrote into its
    ``final/`` (read here by hand); their first 3 have the seeds of the run's last evaluation
    and the same policy, so they repeat its returns. A run without the file is refused with the
    command that writes it; so are sampled actions, another step, and mixing with pooling."""
    from cvl_eval.rollout.checkpoint import EvaluateConfig, evaluate_checkpoint

    shutil.copytree(runs_root / "runs", tmp_path / "runs")
    roots = (str(tmp_path / "runs"),)
    config = ReportConfig(runs=roots, out_dir=str(tmp_path / "out"), final_episodes=4)
    with pytest.raises(ConfigError, match=r"eval_4ep_seed100.json: missing; write it with "):
        report(config)
    runs = sorted((tmp_path / "runs").glob("*/seed_*"))
    for run in runs:
        evaluate_checkpoint(EvaluateConfig(str(run), episodes=4, seed=100, max_steps=8))
    summary = report(dataclasses.replace(config, bootstrap_reps=50))
    assert summary["scored_by"] == "4 episodes of the final policy"
    for algorithm in ("bc", "cvl"):
        expected = []
        for seed in (0, 1):
            run = tmp_path / "runs" / algorithm / f"seed_{seed}"
            returns = json.loads((run / "final" / "eval_4ep_seed100.json").read_text())["returns"]
            last = json.loads((run / "evals.jsonl").read_text().splitlines()[-1])
            assert returns[:3] == pytest.approx(last["episode_returns"], rel=1e-4, abs=1e-4)
            expected.append(float(np.mean(returns)))
        assert summary["final_return"][algorithm]["reach-v3"] == pytest.approx(expected)
    assert "4 episodes of the final policy" in (tmp_path / "out" / "report.md").read_text()
    with pytest.raises(ConfigError, match="drop --last-evals and --up-to-step"):
        report(dataclasses.replace(config, last_evals=2))
    sampled = EvaluateConfig(str(runs[0]), episodes=4, seed=100, max_steps=8, deterministic=False)
    evaluate_checkpoint(sampled)
    with pytest.raises(ConfigError, match=r"eval_4ep_seed100.json: \{'deterministic': False"):
        report(config)
    evaluate_checkpoint(dataclasses.replace(sampled, deterministic=True))
    file = runs[1] / "final" / "eval_4ep_seed100.json"
    document = json.loads(file.read_text())
    file.write_text(json.dumps({**document, "learner_step": 3}))
    with pytest.raises(ConfigError, match=r"\{'learner_step': 3\}, expected 4 episodes .* step 4"):
        report(config)
