"""Reliability, data side: generation, conversion, reports and sweeps, each through ``python -m
cvl_eval`` in real processes on real files.

- item 2: a second generation into a data root another one is writing is refused (the data
  root's lock), and leftovers no one will resume are removed;
- item 3: a byte flipped in a ``.partial`` dataset after a ``kill -9`` is refused when the
  generation resumes;
- items 9, 10, 12: bad ``--noise-sigma``, ``--epsilon``, ``--max-steps``, ``--camera`` are one
  line naming the flag, before any folder is made;
- item 13: garbage or truncated ``.npz`` and an HDF5 group are one line (``cvl_eval convert``);
- item 14: a ``results.json`` whose ``task`` is a path is refused by ``cvl-report``;
- item 16: ``cvl-sweep --seeds 0 0`` is refused.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import cvl_eval_cli, one_error_line  # pants: no-infer-dep

import cvl_eval.__main__  # noqa: F401 - puts every command into Pants' sandbox

GEN = ["generate", "--tasks", "reach", "--no-progress"]


def _start_generate(out: Path, *flags) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
    command = [sys.executable, "-m", "cvl_eval", *GEN, "--out-dir", str(out), *map(str, flags)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_committed(partial: Path, episodes: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            progress = json.loads((partial / "progress.json").read_text())
            if progress["num_episodes"] >= episodes:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"no {episodes} committed episodes in {partial}")


def test_second_generation_into_a_busy_root_refused(tmp_path):
    out = tmp_path / "gx"
    first = _start_generate(out, "--episodes", "400", "--max-steps", "20", "--seed", "0")
    try:
        _wait_committed(out / "reach-v3.partial", 1, first)
        second = cvl_eval_cli(*GEN, "--out-dir", out, "--episodes", "4", "--seed", "5")
        one_error_line(second, f"{out} is in use", f"PID {first.pid}", "generate.lock")
    finally:
        first.kill()
        first.wait()
    progress = json.loads((out / "reach-v3.partial" / "progress.json").read_text())
    assert progress["spec"]["provenance"]["config"]["seed"] == 0  # untouched by the second


def test_stale_leftovers_removed(tmp_path):
    out = tmp_path / "gx"
    flags = ["--out-dir", out, "--episodes", "2", "--max-steps", "10"]
    assert cvl_eval_cli(*GEN, *flags).returncode == 0
    (out / "reach-v3.partial.init-99999").mkdir()  # a start that died
    (out / "reach-v3.partial").mkdir()  # a lost race beside the finished dataset
    done = cvl_eval_cli(*GEN, *flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "removing stale" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["generate.lock", "generation.json", "reach-v3"]


def test_flipped_byte_in_partial_refused_on_resume(tmp_path):
    out = tmp_path / "gr"
    flags = ["--episodes", "300", "--max-steps", "20", "--seed", "2"]
    process = _start_generate(out, *flags)
    partial = out / "reach-v3.partial"
    try:
        _wait_committed(partial, 3, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    committed = json.loads((partial / "progress.json").read_text())
    rewards = partial / "rewards.npy"
    data = bytearray(rewards.read_bytes()[: 256 + 4 * committed["num_steps"]])
    data[-3] ^= 0x55  # a byte of the last committed reward
    rewards.write_bytes(bytes(data))
    done = cvl_eval_cli(*GEN, "--out-dir", out, *flags)
    one_error_line(done, str(rewards), "corrupt", "delete")
    assert not (out / "reach-v3").exists()


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--noise-sigma", "-1"], "noise_sigma = -1.0 is out of range: expected >= 0"),
        (["--epsilon", "1.5"], "epsilon = 1.5 is out of range: expected in [0, 1] (--epsilon)"),
        (["--max-steps", "0"], "max_steps = 0 is out of range: expected >= 1 (--max-steps)"),
        (["--pixels", "--camera", "nosuchcam"], "--camera: unknown camera 'nosuchcam'"),
    ],
)
def test_generate_flags_checked_before_any_folder(tmp_path, flags, named):
    done = cvl_eval_cli(*GEN, "--out-dir", tmp_path / "g", "--episodes", "1", *flags)
    one_error_line(done, named)
    assert not (tmp_path / "g").exists()


def test_converter_inputs_are_one_line(tmp_path):
    import h5py

    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(bytes(range(256)) * 2)
    whole = tmp_path / "whole.npz"
    np.savez(whole, observations=np.zeros((4, 3), np.float32), actions=np.zeros((3, 2)))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(whole.read_bytes()[:200])
    grouped = tmp_path / "grouped.hdf5"
    with h5py.File(grouped, "w") as h5:
        h5.create_group("observations")["x"] = np.zeros(3)
        h5["actions"] = np.zeros((3, 2))
    cases = [(garbage, "unreadable .npz"), (truncated, "unreadable .npz")]
    cases.append((grouped, "(field 'observations'): an HDF5 Group, expected a dataset"))
    for source, what in cases:
        done = cvl_eval_cli(
            "convert", "--from", source, "--to", tmp_path / source.stem, "--task", "reach"
        )
        one_error_line(done, str(source), what)
        assert not (tmp_path / source.stem).exists()


def test_report_refuses_a_path_in_a_run_field(tmp_path):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    results = {"label": "bc", "task": "../../x", "seed": 0, "final_eval": {"mean_return": 1.0}}
    (run / "results.json").write_text(json.dumps(results))
    out = tmp_path / "runs" / "report"
    done = cvl_eval_cli("report", "--runs", tmp_path / "runs", "--out-dir", out)
    one_error_line(done, str(run / "results.json"), "(field 'task'): '../../x' is not a plain name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert not out.exists()


def test_sweep_refuses_repeated_seeds(tmp_path):
    flags = ["--data-root", tmp_path / "data", "--out-dir", tmp_path / "sweep"]
    flags += ["--algorithms", "bc", "--tasks", "reach", "--seeds", "0", "0", "--workers", "2"]
    done = cvl_eval_cli("sweep", *flags)
    one_error_line(done, "--seeds: 0 given more than once")
    assert not (tmp_path / "sweep").exists()
