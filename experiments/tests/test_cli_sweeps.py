"""The sweep and paper-experiment entry points end to end at a tiny budget."""

import json
import os

import pytest
import torch

from cvl_data import open_dataset
from experiments import generate, paper, sweep

torch.set_num_threads(1)


def test_sweep_cli_runs_the_grid_and_writes_the_index(tmp_path, capsys):
    data = tmp_path / "data"
    argv = ["--tasks", "reach", "--out-dir", str(data), "--episodes", "1", "--max-steps", "10"]
    assert generate.main([*argv, "--no-progress"]) == 0
    argv = [
        "--data-root", str(data), "--out-dir", str(tmp_path / "sweep"), "--algorithms", "bc",
        "--tasks", "reach", "--seeds", "0", "1", "--workers", "2", "--steps", "2",
        "--hidden", "8", "8", "--batch-size", "4", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--no-tensorboard",
    ]  # fmt: skip
    assert sweep.main(argv) == 0
    assert "2 runs: 0 already finished, 2 completed" in capsys.readouterr().out
    index = json.loads((tmp_path / "sweep" / "index.json").read_text())
    assert [r["seed"] for r in index["runs"]] == [0, 1]
    assert sweep.main(argv) == 0  # everything finished: skipped
    assert "2 runs: 2 already finished, 0 completed" in capsys.readouterr().out
    assert sweep.main([*argv[:-1], "--algorithms", "bcc"]) == 2
    assert "unknown algorithm 'bcc'" in capsys.readouterr().err


def test_paper_preset_runs_data_sweep_and_report(tmp_path):
    argv = [
        "rff-ablation", "--out-dir", str(tmp_path), "--tasks", "reach", "--seeds", "0",
        "--steps", "2", "--episodes", "1", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl:latent_dim=4", "cvl:num_rff_features=8", "cvl:num_action_samples=1",
        "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1",
        "--last-evals", "1", "--bootstrap-reps", "20", "--no-progress", "--final-episodes", "2",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    record = json.loads((tmp_path / "experiment.json").read_text())
    # --final-episodes: every run's final policy evaluated (2 episodes, its evaluation seed 100)
    # and a second report scored by those episodes
    final = json.loads((tmp_path / "report_final2" / "report.json").read_text())
    assert final["scored_by"] == "2 episodes of the final policy"
    for algo in ("cvl", "cvl_mc"):
        evaluation = tmp_path / "runs" / algo / "reach-v3/seed_0/final/eval_2ep_seed100.json"
        returns = json.loads(evaluation.read_text())["returns"]
        assert len(returns) == 2
        assert final["final_return"][algo]["reach-v3"] == pytest.approx([sum(returns) / 2])
    assert record["report_final"]["report_json"] == str(tmp_path / "report_final2/report.json")
    assert record["experiment"] == "rff_ablation" and record["budget"]["tasks"] == ["reach-v3"]
    assert sorted(os.listdir(tmp_path / "runs")) == [
        "cvl",
        "cvl_mc",
        "index.csv",
        "index.json",
        "sweep.json",
    ]
    for name in ("table.md", "rliable/aggregates.png", "rliable/improvement.png"):
        assert (tmp_path / "report" / name).is_file(), name
    run = json.loads((tmp_path / "runs/cvl/reach-v3/seed_0/config.json").read_text())
    learner = run["learner_overrides"]  # the budget's CPU settings, then the user's on top
    assert learner["num_rff_features"] == 8 and learner["normalize_q"] is True
    assert learner["hidden"] == [8, 8] and learner["lr"] == 1e-3


def test_paper_preset_runs_only_the_learners_asked_for(tmp_path, capsys):
    argv = [
        "rff-ablation", "--out-dir", str(tmp_path), "--tasks", "reach", "--seeds", "0",
        "--steps", "2", "--episodes", "1", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1",
        "--last-evals", "1", "--bootstrap-reps", "20", "--no-progress",
    ]  # fmt: skip
    for wrong in (["sac"], ["cvl_mc", "cvl_mc"]):  # refused before any data is written
        assert paper.main([*argv, "--algorithms", *wrong]) == 2
        assert "--algorithms must name distinct learners of this experiment" in (
            capsys.readouterr().err
        )
        assert not (tmp_path / "data").exists()
    assert paper.main([*argv, "--algorithms", "cvl_mc"]) == 0
    assert sorted(p for p in os.listdir(tmp_path / "runs") if "." not in p) == ["cvl_mc"]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert "cvl_mc" in json.dumps(report) and '"cvl"' not in json.dumps(report)


def test_mixed_preset_runs_every_method_on_a_mixture_and_reports_improvement(tmp_path):
    argv = [
        "mixed", "--out-dir", str(tmp_path), "--tasks", "drawer-open", "--seeds", "0",
        "--steps", "2", "--episodes", "4", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl:latent_dim=4", "cvl:num_rff_features=8", "cvl:num_action_samples=1",
        "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1", "filtered_bc:top_fraction=0.5",
        "--last-evals", "1", "--bootstrap-reps", "20", "--no-progress",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    record = json.loads((tmp_path / "experiment.json").read_text())
    assert record["budget"]["data_kind"] == "mixture"
    sources = record["generation"]["drawer-open-v3"]["sources"]
    assert sorted(sources) == ["expert", "expert:drawer-close", "expert:reach", "random"]
    runs = sorted(p for p in os.listdir(tmp_path / "runs") if "." not in p)
    assert runs == ["bc", "cql", "cvl", "cvl_mc", "filtered_bc", "fql", "iql", "weighted_bc"]
    assert (tmp_path / "report" / "rliable" / "improvement.png").is_file()
    text = (tmp_path / "report" / "rliable" / "rliable.json").read_text()
    assert "probability_of_improvement" in text and "iql" in text
    runs_dir = tmp_path / "runs"
    learner = json.loads((runs_dir / "cvl/drawer-open-v3/seed_0/config.json").read_text())
    assert learner["learner_overrides"]["self_normalized"] is True  # the mixed-data settings
    assert learner["learner_overrides"]["temperature"] == 0.1  # RFF: positive features at 0.1
    assert learner["learner_overrides"]["rff_kind"] == "positive"
    assert learner["learner_overrides"]["num_rff_features"] == 8  # the user's, after the preset's
    mc = json.loads((runs_dir / "cvl_mc/drawer-open-v3/seed_0/config.json").read_text())
    assert mc["learner_overrides"]["temperature"] == 0.1
    assert mc["learner_overrides"]["policy_extraction"] == "ddpgbc"  # the measured default
    assert mc["learner_overrides"]["bc_alpha"] == 0.3
    assert mc["learner_overrides"]["policy_ema_tau"] == 0.001  # acting with the average
    assert learner["learner_overrides"]["policy_ema_tau"] == 0.001
    assert learner["learner_overrides"]["policy_extraction"] == "ddpgbc"  # as without RFF
    fql = json.loads((runs_dir / "fql/drawer-open-v3/seed_0/config.json").read_text())
    assert fql["learner_overrides"]["alpha"] == 10.0  # its screen's choice
    assert "policy_ema_tau" not in fql["learner_overrides"]  # its screen: off
    iql = json.loads((runs_dir / "iql/drawer-open-v3/seed_0/config.json").read_text())
    assert iql["learner_overrides"]["policy_ema_tau"] == 0.001  # its screen: on
    weighted = json.loads((runs_dir / "weighted_bc/drawer-open-v3/seed_0/config.json").read_text())
    assert weighted["train_config"]["algorithm"] == "weighted_bc"
    assert weighted["learner_overrides"]["policy_ema_tau"] == 0.001  # filtered BC's


def test_replay_preset_trains_every_method_on_sacs_replay_buffer(tmp_path):
    argv = [
        "replay", "--out-dir", str(tmp_path), "--tasks", "reach", "--seeds", "0",
        "--frames", "60", "--sac-hidden", "8", "8", "--sac-batch-size", "8",
        "--steps", "2", "--pretrain-steps", "2", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1",
        "cql:cql_num_samples=2", "cql_uds:cql_num_samples=2",
        "--last-evals", "1", "--bootstrap-reps", "20", "--workers", "1", "--no-progress",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    record = json.loads((tmp_path / "experiment.json").read_text())
    assert record["budget"]["data_kind"] == "sac"
    assert record["budget"]["sac_hidden"] == [8, 8] and record["budget"]["sac_batch_size"] == 8
    entry = record["generation"]["reach-v3"]
    assert entry["kind"] == "sac" and entry["transitions"] == 60
    sac = open_dataset(tmp_path / "data" / "reach-v3").spec.provenance["config"]["sac"]
    assert sac["hidden"] == [8, 8] and sac["batch_size"] == 8  # the generating SAC's sizes
    runs = sorted(p for p in os.listdir(tmp_path / "runs") if "." not in p)
    assert runs == ["bc", "cql", "cql_uds", "cvl_mc", "cvl_mc_pretrained", "filtered_bc", "iql"]
    pretrained = tmp_path / "runs/cvl_mc_pretrained/reach-v3/seed_0/config.json"
    assert json.loads(pretrained.read_text())["pretrain_steps"] == 2
    text = (tmp_path / "report" / "rliable" / "rliable.json").read_text()
    assert "cvl_mc_pretrained" in text and "probability_of_improvement" in text
    assert record["sac_generation"]["tasks"]["reach-v3"]["frames"] == 60  # SAC's own curve
    assert (tmp_path / "report" / "sac_generation.png").is_file()


def test_pretraining_preset_scarce_labels_beside_plentiful_reward_free_data(tmp_path):
    argv = [
        "pretraining", "--out-dir", str(tmp_path), "--tasks", "drawer-open", "--seeds", "0",
        "--episodes", "4", "--related-episodes", "1", "--steps", "2", "--pretrain-steps", "2",
        "--eval-every", "0", "--eval-episodes", "1", "--eval-max-steps", "3",
        "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1",
        "--last-evals", "1", "--bootstrap-reps", "20", "--workers", "1", "--no-progress",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    generation = json.loads((tmp_path / "experiment.json").read_text())["generation"]
    target, related = generation["drawer-open-v3"], generation["drawer-close-v3"]
    assert (target["kind"], target["episodes"]) == ("mixture", 4)  # the few labelled episodes
    assert (related["kind"], related["episodes"]) == ("scripted", 1)  # the reward-free pool
    runs = tmp_path / "runs"
    assert sorted(p for p in os.listdir(runs) if "." not in p) == ["cvl_mc", "cvl_mc_pretrained"]
    pretrained = json.loads(
        (runs / "cvl_mc_pretrained/drawer-open-v3/seed_0/config.json").read_text()
    )
    shared = pretrained["train_config"]["pretrain_datasets"]
    assert [os.path.basename(p) for p in shared] == ["drawer-close-v3"]
    assert pretrained["pretrain_steps"] == 2
    plain = json.loads((runs / "cvl_mc/drawer-open-v3/seed_0/config.json").read_text())
    assert plain["train_config"]["pretrain_datasets"] == [] and plain["pretrain_steps"] == 0


def test_paper_presets_resolve_to_the_documented_budgets():
    from cvl_eval.errors import ConfigError
    from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig, resolve

    states = resolve(PaperConfig(experiment="metaworld_states", full=True))
    assert len(states["budget"].tasks) == 50 and states["budget"].seeds == (0, 1, 2, 3, 4)
    assert states["budget"].data_kind == "sac" and states["budget"].frames == 500_000
    pre = resolve(PaperConfig(experiment="pretraining", full=True))
    assert len(pre["budget"].tasks) == 10
    assert "drawer-close-v3" in pre["data_tasks"]  # related tasks' data is generated too
    assert states["budget"].hidden is None and states["budget"].overrides == ()  # paper's sizes
    small = resolve(PaperConfig(experiment="metaworld_states"))["budget"]
    assert (small.hidden, small.batch_size, small.steps) == ((128, 128), 256, 10_000)
    assert PRESETS["metaworld_states"].overrides == PRESETS["mixed"].overrides  # settled defaults
    # CVL's action-contrast term (half the policy's, half uniform negatives) where it was measured,
    # the paper's critic objective elsewhere; everything else shared
    term = 'cvl_mc:action_contrast_source="policy_uniform"'
    assert term in PRESETS["mixed"].overrides and term in PRESETS["hard"].overrides
    assert 'cvl_mc:return_weight_baseline="start_state"' in PRESETS["hard"].overrides
    assert "cvl_mc:bc_q_cap_neighbours=8" in PRESETS["mixed"].overrides
    measured_only = (":action_contrast_", ":return_weight_", ":bc_q_cap")
    plain = tuple(o for o in PRESETS["mixed"].overrides if not any(m in o for m in measured_only))
    assert len(plain) == len(PRESETS["mixed"].overrides) - 7
    for name in ("rff_ablation", "replay", "pretraining"):
        assert PRESETS[name].overrides == plain, name
    pixel_settings = PRESETS["metaworld_pixels"].overrides  # the settled ones, no average
    assert pixel_settings == tuple(o for o in plain if "policy_ema" not in o)
    assert "cvl_mc:policy_ema_tau=0.001" in PRESETS["mixed"].overrides
    assert "cvl:normalize_q=true" in small.overrides and "cql:lr=1e-3" in small.overrides
    assert small.pretrain_steps == 1_000  # CQL+UDS's zero-reward pretraining, not 50k
    mine = resolve(PaperConfig(experiment="metaworld_states", hidden=(8, 8), batch_size=4))
    assert (mine["budget"].hidden, mine["budget"].batch_size) == ((8, 8), 4)
    assert small.data_kind == "mixture"  # the mixed-quality suite; --full keeps SAC's data
    mixed = resolve(PaperConfig(experiment="mixed"))["budget"]
    assert len(mixed.tasks) >= 4 and len(mixed.seeds) >= 3 and mixed.data_kind == "mixture"
    # 10k steps, scored by the pooled last 3 of the evaluations every 2.5k (docs/results.md)
    assert (mixed.steps, mixed.eval_every, mixed.last_evals) == (10_000, 2_500, 3)
    assert "iql:beta=10" in PRESETS["mixed"].overrides
    assert "fql:alpha=10" in PRESETS["mixed"].overrides and "fql" in PRESETS["mixed"].algorithms
    assert resolve(PaperConfig(experiment="mixed", last_evals=4))["budget"].last_evals == 4
    for bad in ({"last_evals": 5}, {"last_evals": 0}, {"steps": 5_000}):
        with pytest.raises(ConfigError, match="--last-evals must be between 1 and"):
            resolve(PaperConfig(experiment="mixed", **bad))
    with pytest.raises(ConfigError, match="--final-episodes must be >= 1, got 0"):
        resolve(PaperConfig(experiment="mixed", final_episodes=0))
    scarce = resolve(PaperConfig(experiment="pretraining"))
    budget = scarce["budget"]
    assert (budget.data_kind, budget.episodes, budget.seeds) == ("mixture", 10, (0, 1, 2))
    assert budget.data_of("drawer-close-v3") == ("scripted", 200)  # a related task's pool
    assert budget.data_of("drawer-open-v3") == ("mixture", 10)
    assert {"drawer-close-v3", "door-lock-v3", "faucet-close-v3"} <= set(scarce["data_tasks"])
    replay = resolve(PaperConfig(experiment="replay"))["budget"]
    assert replay.data_kind == "sac" and replay.frames == 100_000 and len(replay.tasks) >= 3
    assert (replay.sac_hidden, replay.sac_batch_size, replay.steps) == ((128, 128), 256, 10_000)
    assert "cvl_mc:policy_extraction=ddpgbc" in PRESETS["replay"].overrides  # settled defaults
    full_replay = resolve(PaperConfig(experiment="replay", full=True))["budget"]
    assert full_replay.frames == 500_000 and full_replay.sac_hidden is None  # the paper's SAC
    pixels = resolve(PaperConfig(experiment="metaworld_pixels"))
    assert pixels["preset"].pixels and pixels["budget"].tasks == (
        "door-close-v3", "door-open-v3", "drawer-close-v3", "drawer-open-v3",
    )  # fmt: skip


def test_mountain_car_preset_writes_the_heatmaps(tmp_path, capsys):
    argv = [
        "mountain-car", "--out-dir", str(tmp_path), "--frames", "150", "--steps", "4",
        "--eval-every", "0", "--eval-episodes", "1", "--eval-max-steps", "5",
        "--hidden", "8", "8", "--batch-size", "8",
        "--overrides", "cvl:latent_dim=4", "cvl:num_rff_features=8", "cvl:num_action_samples=1",
        "--bootstrap-reps", "20", "--workers", "1", "--no-progress",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    record = json.loads((tmp_path / "experiment.json").read_text())
    heatmaps = record["mountain_car"]["seed_0"]
    assert os.path.isfile(heatmaps["png"]) and -1.0 <= heatmaps["spearman_states"] <= 1.0
    assert record["generation"]["MountainCarContinuous-v0"]["transitions"] == 150
    # 150 warm-up frames (random actions held for 25 steps) do not reach the goal yet (seed 0's
    # first episode does at step 169): the record and stderr say the heatmaps mean little
    assert record["generation"]["MountainCarContinuous-v0"]["success_rate"] == 0
    assert any("never reached the goal" in w for w in record["warnings"])
    assert "warning: Mountain Car: SAC never reached the goal" in capsys.readouterr().err


def test_pixel_preset_trains_bc_cql_cvl_from_images(tmp_path):
    argv = [
        "metaworld-pixels", "--out-dir", str(tmp_path), "--tasks", "drawer-open",
        "--episodes", "1", "--steps", "2", "--eval-every", "0", "--eval-episodes", "1",
        "--eval-max-steps", "3", "--hidden", "8", "8", "--batch-size", "4",
        "--overrides", "cvl_mc:latent_dim=4", "cvl_mc:num_action_samples=1",
        "cql:cql_num_samples=2",
        "--bootstrap-reps", "20", "--no-progress",
    ]  # fmt: skip
    assert paper.main(argv) == 0
    record = json.loads((tmp_path / "experiment.json").read_text())
    assert record["budget"]["tasks"] == ["drawer-open-v3"]
    for algo in ("bc", "cql", "cvl_mc"):  # CVL: the presets' default, without RFF
        run = tmp_path / "runs" / algo / "drawer-open-v3" / "seed_0"
        config = json.loads((run / "config.json").read_text())
        assert config["obs_kind"] == "pixels", algo
        assert (run / "results.json").is_file(), algo
    cvl = json.loads((tmp_path / "runs/cvl_mc/drawer-open-v3/seed_0/config.json").read_text())
    settled = cvl["learner_overrides"]  # the state presets' settled CVL settings
    assert (settled["policy_extraction"], settled["temperature"]) == ("ddpgbc", 0.1)
    assert "policy_ema_tau" not in settled  # 2k steps: acting with the trained policy
    assert (tmp_path / "report" / "rliable" / "aggregates.png").is_file()
