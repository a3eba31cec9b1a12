"""Sweeps: the grid, validation before any process starts, interruption and restart."""

import dataclasses
import json
import multiprocessing
import sys
import time

import pytest

from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.sweep import SweepConfig, expand, sweep
from cvl_eval.pipelines.sweep_plan import overrides_of_learners_run
from cvl_eval.runs.folder import RESULTS_FILE


def _config(data_root, out, **kw):
    base = dict(
        data_root=str(data_root),
        out_dir=str(out),
        algorithms=("bc", "cvl"),
        tasks=("reach",),
        seeds=(0, 1),
        workers=1,
        steps=6,
        hidden=(16, 16),
        batch_size=8,
        overrides=("cvl:latent_dim=8", "cvl:num_rff_features=16", "cvl:num_action_samples=2"),
        log_every=2,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=5,
        checkpoint_every=2,
        tensorboard=False,
    )
    base.update(kw)
    if "overrides" not in kw:  # a sweep refuses settings for a learner it does not run
        base["overrides"] = overrides_of_learners_run(base["overrides"], base["algorithms"])
    return SweepConfig(**base)


def test_grid_folders_overrides_and_related_task_data(data_root, tmp_path):
    config = _config(
        data_root, tmp_path, algorithms=("bc", "cvl_pretrained", "cql_uds"), tasks=("reach-v3",)
    )
    runs = expand(config)
    assert [(r.label, r.task, r.seed) for r in runs] == [
        (a, "reach-v3", s) for a in ("bc", "cvl_pretrained", "cql_uds") for s in (0, 1)
    ]
    by_label = {r.label: r.config for r in runs}
    assert by_label["bc"].out_dir == str(tmp_path / "bc" / "reach-v3" / "seed_1")
    assert by_label["bc"].overrides == () and by_label["bc"].pretrain_datasets == ()
    pretrained = by_label["cvl_pretrained"]
    assert pretrained.algorithm == "cvl" and pretrained.label == "cvl_pretrained"
    assert pretrained.overrides == ("latent_dim=8", "num_rff_features=16", "num_action_samples=2")
    assert pretrained.pretrain_datasets == (str(data_root / "reach-wall-v3"),)  # same domain
    assert by_label["cql_uds"].pretrain_datasets == (str(data_root / "reach-wall-v3"),)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"algorithms": ("bc", "cvll")}, "unknown algorithm 'cvll'"),
        ({"tasks": ("reach", "raech")}, "unknown environment 'raech'"),
        ({"tasks": ("drawer-open",)}, "no dataset at"),
        ({"overrides": ("latent_dim=8",)}, "bc: unknown learner config field(s) ['latent_dim']"),
        ({"workers": 0}, "workers and threads_per_run must be >= 1"),
        ({"ray_address": "auto"}, "ray_address only apply with --backend ray"),
        ({"num_cpus": 2.0, "num_gpus": 1.0}, "num_cpus, num_gpus only apply with --backend ray"),
        ({"backend": "ray", "num_cpus": 0.0}, "num_cpus must be > 0"),
        ({"backend": "ray", "num_gpus": 1.0}, "num_gpus 1.0 reserves GPUs for runs on device"),
    ],
)
def test_bad_sweeps_fail_before_any_process_starts(data_root, tmp_path, changes, message):
    out = tmp_path / "sweep"
    with pytest.raises(ConfigError) as error:
        sweep(_config(data_root, out, **changes), progress=False)
    assert message in str(error.value)
    assert not out.exists()


def test_ray_backend_without_ray_installed_is_a_clear_error(data_root, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: import fails
    out = tmp_path / "sweep"
    with pytest.raises(
        ConfigError, match=r"--backend ray needs Ray: pip install 'cvl-eval\[ray\]'"
    ):
        sweep(_config(data_root, out, backend="ray"), progress=False)
    assert not out.exists()


def test_interrupted_sweep_restarted_skips_finished_runs_and_completes_the_rest(
    data_root, tmp_path
):
    out = tmp_path / "sweep"
    config = _config(data_root, out, algorithms=("bc",), seeds=(0, 1, 2))
    results = [out / "bc" / "reach-v3" / f"seed_{s}" / RESULTS_FILE for s in (0, 1, 2)]

    # A sweep in its own process, one run at a time, stopped once its first run has finished.
    process = multiprocessing.get_context("spawn").Process(target=sweep, args=(config, False))
    process.start()
    deadline = time.monotonic() + 300
    while not results[0].exists() and process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    process.terminate()  # SIGTERM: the sweep stops its running child, which checkpoints
    process.join(120)
    assert results[0].exists()
    done_before = {p: p.stat().st_mtime_ns for p in results if p.exists()}
    assert len(done_before) < len(results)

    record = sweep(dataclasses.replace(config, workers=2), progress=False)
    assert sorted(record["skipped_finished"]) == sorted(str(p.parent) for p in done_before)
    assert len(record["completed"]) == len(results) - len(done_before) and not record["failed"]
    assert all(p.exists() for p in results)
    assert {p: p.stat().st_mtime_ns for p in done_before} == done_before  # not run again

    index = json.loads((out / "index.json").read_text())
    assert index["num_runs"] == 3
    assert [(r["algorithm"], r["seed"]) for r in index["runs"]] == [("bc", 0), ("bc", 1), ("bc", 2)]
    assert all(r["steps"] == 6 and r["return"] is not None for r in index["runs"])
    csv_lines = (out / "index.csv").read_text().splitlines()
    assert csv_lines[0].startswith("run,algorithm,task,seed") and len(csv_lines) == 4
    assert (out / "bc" / "reach-v3" / "seed_1" / "train.log").read_text()


def test_vectorised_seeds_sweep_stops_all_seeds_and_resumes_them_together(data_root, tmp_path):
    """``vectorise_seeds``: bc's seeds train in one process (one log, a pointer in the other's);
    a SIGTERM checkpoints every seed of the group, the restart resumes them together."""
    out = tmp_path / "sweep"
    config = _config(
        data_root,
        out,
        algorithms=("bc",),
        seeds=(0, 1),
        steps=1500,
        checkpoint_every=50,
        vectorise_seeds=True,
    )
    bc = [out / "bc" / "reach-v3" / f"seed_{s}" for s in (0, 1)]
    process = multiprocessing.get_context("spawn").Process(target=sweep, args=(config, False))
    process.start()
    latest = bc[0] / "checkpoints" / "latest.json"
    deadline = time.monotonic() + 300
    while not latest.exists() and process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.terminate()  # SIGTERM: the group checkpoints every seed, then stops
    process.join(120)
    assert not (bc[0] / RESULTS_FILE).exists()
    steps = [json.loads((run / "checkpoints/latest.json").read_text()) for run in bc]
    assert steps[0] == steps[1]  # both seeds stopped at the same update

    record = sweep(config, progress=False)
    assert len(record["completed"]) == 2 and not record["failed"]
    log = (bc[0] / "train.log").read_text()
    assert f"train {bc[0]}, {bc[1]}" in log
    assert log.count("resuming") == 2  # both seeds, in the group's log
    assert "trained with its other seeds" in (bc[1] / "train.log").read_text()


def test_vectorise_seeds_groups_only_runs_that_can_train_together(data_root, tmp_path):
    """Seeds of a learner with stages group by (algorithm, task); iql (no stages) and runs with
    a pretraining phase (cvl_pretrained) stay one run per process."""
    from cvl_eval.pipelines.sweep import _jobs

    config = _config(
        data_root, tmp_path, algorithms=("bc", "iql", "cvl_pretrained"), seeds=(0, 1, 2)
    )
    jobs = _jobs(expand(config), vectorise_seeds=True)
    assert [(job[0].label, [r.seed for r in job]) for job in jobs] == [
        ("bc", [0, 1, 2]),
        *[("iql", [s]) for s in (0, 1, 2)],
        *[("cvl_pretrained", [s]) for s in (0, 1, 2)],
    ]
    assert all(len(job) == 1 for job in _jobs(expand(config), vectorise_seeds=False))
    with pytest.raises(ConfigError, match="vectorise_seeds trains seeds in one local process"):
        expand(dataclasses.replace(config, vectorise_seeds=True, backend="ray"))
