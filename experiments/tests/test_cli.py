"""The experiments/ entry points: each CLI's main with argv at a tiny budget, and bad flags."""

import json
import os

import pytest
import torch

from experiments import evaluate, generate, quickstart, report, train

torch.set_num_threads(1)

TINY_TRAIN = ["--steps", "4", "--hidden", "16", "16", "--batch-size", "8", "--eval-every", "2"]
TINY_EVAL = ["--eval-episodes", "1", "--eval-max-steps", "5", "--no-progress"]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    argv = ["--tasks", "reach", "--out-dir", str(root), "--episodes", "2", "--max-steps", "20"]
    assert generate.main([*argv, "--no-progress"]) == 0
    return root


def test_generate_writes_datasets_and_a_log(data_root):
    from cvl_data import open_dataset

    data = open_dataset(data_root / "reach-v3")
    assert data.num_episodes == 2 and data.num_steps == 40
    log = json.loads((data_root / "generation.json").read_text())
    assert log["reach-v3"]["transitions"] == 40 and log["reach-v3"]["kind"] == "scripted"


def test_train_evaluate_report(data_root, tmp_path, capsys):
    run = tmp_path / "runs" / "bc"
    argv = ["--dataset", str(data_root / "reach-v3"), "--out-dir", str(run), "--algorithm", "bc"]
    assert train.main([*argv, *TINY_TRAIN, *TINY_EVAL]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["label"] == "bc" and printed["steps"] == 4
    assert (run / "results.json").is_file() and (run / "final" / "state.json").is_file()
    # --resume on a finished run returns at once
    assert train.main([*argv, *TINY_TRAIN, *TINY_EVAL, "--resume"]) == 0

    out = tmp_path / "eval.json"
    argv = ["--checkpoint", str(run), "--episodes", "2", "--max-steps", "5", "--out", str(out)]
    assert evaluate.main(argv) == 0
    document = json.loads(out.read_text())
    assert document["env_name"] == "reach-v3" and len(document["returns"]) == 2
    assert document["algorithm"] == "bc" and document["learner_step"] == 4

    argv = ["--runs", str(tmp_path / "runs"), "--out-dir", str(tmp_path / "report")]
    assert report.main([*argv, "--bootstrap-reps", "20"]) == 0
    for name in ("table.md", "table.csv", "learning_curves.png", "rliable/aggregates.png"):
        assert (tmp_path / "report" / name).is_file(), name


def test_quickstart_cli(tmp_path, capsys):
    argv = [
        "--task", "reach", "--episodes", "2", "--steps", "2", "--hidden", "16", "16",
        "--batch-size", "8", "--eval-every", "1", "--eval-episodes", "2", "--eval-max-steps", "5",
        "--threads", "1", "--bootstrap-reps", "20", "--no-progress", "--out-dir", str(tmp_path),
    ]  # fmt: skip
    assert quickstart.main(argv) == 0
    assert "CVL" in capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["policies"]) == {"cvl", "bc", "random"}
    assert os.path.isfile(summary["files"]["rliable_intervals"])


@pytest.mark.parametrize(
    "cli, argv, message",
    [
        (train, ["--algorithm", "dqn"], "unknown algorithm 'dqn'"),
        (train, ["--algorithm", "cql", "--dataset", "FREE"], "has no rewards, but cql needs them"),
        (train, ["--observations", "pixels"], "is a state dataset"),
        (train, ["--task", "reachh"], "unknown environment 'reachh'"),
        (generate, ["--tasks", "reachh"], "unknown environment 'reachh'"),
        (generate, ["--tasks", "MountainCarContinuous-v0"], "scripted experts and pixel datasets"),
        (quickstart, ["--task", "reachh"], "unknown environment 'reachh'"),
        (
            quickstart,
            ["--task", "reach", "--episodes", "1"],
            "episodes must be >= 2 with CVL's bc_q_cap_neighbours=8",
        ),
        (evaluate, ["--checkpoint", "NOWHERE"], "no such checkpoint or run folder"),
        (report, ["--runs", "NOWHERE"], "no such run folder"),
    ],
)
def test_bad_flags_fail_at_once_with_a_clear_message(
    data_root, tmp_path, capsys, cli, argv, message
):
    if "FREE" in argv:
        from cvl_data import DatasetWriter, open_dataset

        source = open_dataset(data_root / "reach-v3")
        spec = type(source.spec).from_json({**source.spec.to_json(), "has_rewards": False})
        with DatasetWriter(tmp_path / "free", spec) as writer:
            o = source.episode_offsets
            for e in range(source.num_episodes):
                writer.add_episode(
                    source.observations[o[e] + e : o[e + 1] + e + 1],
                    source.actions[o[e] : o[e + 1]],
                    None,
                    terminated=source.terminated[o[e] : o[e + 1]],
                    truncated=source.truncated[o[e] : o[e + 1]],
                )
    out = tmp_path / "out"
    names = {"FREE": str(tmp_path / "free"), "NOWHERE": str(tmp_path / "nowhere")}
    argv = [names.get(a, a) for a in argv]
    defaults = {
        train: ["--dataset", str(data_root / "reach-v3"), "--out-dir", str(out)],
        generate: ["--out-dir", str(out)],
        quickstart: ["--out-dir", str(out)],
        evaluate: [],
        report: ["--out-dir", str(out)],
    }[cli]
    assert cli.main([*defaults, *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_invalid_flag_values_are_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        generate.main(["--tasks", "reach", "--kind", "replay"])
    assert exit_info.value.code == 2
