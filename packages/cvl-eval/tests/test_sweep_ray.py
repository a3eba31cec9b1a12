"""`sweep --backend ray` on a real local Ray instance (no mocks): 2 algorithms x 2 seeds at a
tiny budget, killed mid-way and restarted (finished runs skipped, the interrupted run resumed
from its checkpoint, the rest completed, the index written); a failed run reported with its
error while the others complete; a SIGTERM to the sweep's process runs its cleanup with Ray
started."""

import dataclasses
import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import pytest

from cvl_eval.pipelines.sweep import SweepConfig, sweep
from cvl_eval.pipelines.sweep_local import exit_on_sigterm
from cvl_eval.pipelines.sweep_plan import overrides_of_learners_run
from cvl_eval.pipelines.sweep_ray import RayBackend
from cvl_eval.runs.folder import RESULTS_FILE


def _config(data_root, out, **kw):
    base = dict(
        data_root=str(data_root),
        out_dir=str(out),
        algorithms=("bc", "cvl"),
        tasks=("reach",),
        seeds=(0, 1),
        workers=1,
        backend="ray",
        steps=600,
        hidden=(16, 16),
        batch_size=8,
        overrides=("cvl:latent_dim=8", "cvl:num_rff_features=16", "cvl:num_action_samples=2"),
        log_every=50,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=5,
        checkpoint_every=10,
        tensorboard=False,
    )
    base.update(kw)
    if "overrides" not in kw:  # a sweep refuses settings for a learner it does not run
        base["overrides"] = overrides_of_learners_run(base["overrides"], base["algorithms"])
    return SweepConfig(**base)


def _wait_for(condition, process, seconds):
    deadline = time.monotonic() + seconds
    while not condition() and process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_ray_sweep_killed_midway_resumes_skips_finished_and_completes(data_root, tmp_path):
    out = tmp_path / "sweep"
    config = _config(data_root, out)
    runs = [out / a / "reach-v3" / f"seed_{s}" for a in ("bc", "cvl") for s in (0, 1)]
    results = [run / RESULTS_FILE for run in runs]

    # The sweep in its own process (a local Ray instance of 1 CPU: one run at a time), killed
    # once the first run has finished and the second has a checkpoint.
    process = multiprocessing.get_context("spawn").Process(target=sweep, args=(config, False))
    process.start()
    second_checkpointed = lambda: (runs[1] / "checkpoints" / "latest.json").exists()  # noqa: E731
    reached = _wait_for(lambda: results[0].exists() and second_checkpointed(), process, 300)
    process.terminate()  # SIGTERM: the sweep cancels its task, whose run checkpoints and stops
    process.join(180)
    assert reached and process.exitcode is not None
    done_before = {p: p.stat().st_mtime_ns for p in results if p.exists()}
    assert results[0] in done_before and len(done_before) < len(results)

    started = time.monotonic()
    record = sweep(_config(data_root, out, workers=2), progress=False)
    print(f"restarted Ray sweep: {time.monotonic() - started:.1f} s")
    assert sorted(record["skipped_finished"]) == sorted(str(p.parent) for p in done_before)
    assert len(record["completed"]) == len(results) - len(done_before) and not record["failed"]
    assert all(p.exists() for p in results)
    assert {p: p.stat().st_mtime_ns for p in done_before} == done_before  # not run again
    if results[1] not in done_before:  # it was interrupted: the restart resumed it
        log = (runs[1] / "train.log").read_text()
        assert log.count("== ") == 2 and f"resuming {runs[1]} from" in log

    index = json.loads((out / "index.json").read_text())
    assert index["num_runs"] == 4 and not index["failed"]
    assert sorted((r["algorithm"], r["seed"]) for r in index["runs"]) == [
        ("bc", 0),
        ("bc", 1),
        ("cvl", 0),
        ("cvl", 1),
    ]
    assert all(r["steps"] == 600 and r["return"] is not None for r in index["runs"])
    assert index["sweep_config"]["backend"] == "ray"


def test_a_failed_ray_run_is_reported_and_the_others_complete(data_root, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_root, data)
    os.truncate(data / "reach-wall-v3" / "actions.npy", 300)  # meta.json is fine: validation passes
    out = tmp_path / "sweep"
    config = _config(data, out, algorithms=("bc",), tasks=("reach", "reach-wall"), seeds=(0,))
    with pytest.raises(RuntimeError, match="1 of 2 runs failed.*DatasetError.*actions.npy"):
        sweep(dataclasses.replace(config, steps=20, workers=2), progress=False)
    assert (out / "bc" / "reach-v3" / "seed_0" / RESULTS_FILE).exists()
    broken = out / "bc" / "reach-wall-v3" / "seed_0"
    (failed,) = json.loads((out / "sweep.json").read_text())["failed"]
    assert failed["run"] == str(broken) and failed["exitcode"] == 1
    assert failed["error"].startswith("cvl_data.errors.DatasetError: ")
    assert "Traceback (most recent call last)" in (broken / "train.log").read_text()


def _hold_a_local_ray(marker: str) -> None:
    """A sweep's process in miniature: the sweep's SIGTERM handler, then a local Ray instance,
    then work whose ``finally`` must run when the process is told to stop."""
    exit_on_sigterm()
    with RayBackend(None, 1, 0, 1):
        try:
            # Inside the try: a SIGTERM sent as soon as the file exists can land while touch()
            # is still returning, and must then reach the finally too.
            Path(marker + ".ready").touch()
            while True:
                time.sleep(0.05)
        finally:
            Path(marker).write_text("stopped")


def test_sigterm_after_ray_starts_runs_the_sweeps_cleanup(tmp_path):
    """Ray's core worker aborts the process on SIGTERM (exit -6) unless the sweep's handler is
    put back after ``ray.init``; the cleanup is what cancels the runs and waits for them."""
    marker = tmp_path / "stopped"
    process = multiprocessing.get_context("spawn").Process(
        target=_hold_a_local_ray, args=(str(marker),)
    )
    process.start()
    ready = Path(str(marker) + ".ready")
    assert _wait_for(ready.exists, process, 300), process.exitcode
    process.terminate()
    process.join(120)
    assert process.exitcode is not None and process.exitcode != -6, process.exitcode
    assert marker.read_text() == "stopped"
