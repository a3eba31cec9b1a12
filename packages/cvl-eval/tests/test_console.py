"""The commands as a pip user runs them: ``python -m cvl_eval <command>`` in a real process (what
the ``cvl-*`` console scripts call), exit codes and ``error:`` lines included."""

import json
import os
import subprocess
import sys

import cvl_eval.__main__ as module_main
from cvl_eval.console import COMMANDS

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _cvl_eval(*args, cwd=None):
    command = [sys.executable, "-m", "cvl_eval", *args]
    return subprocess.run(command, env=ENV, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_every_command_answers_help_in_a_fresh_process():
    assert set(COMMANDS) == {
        "train", "generate", "evaluate", "sweep", "report", "quickstart", "paper", "convert"
    }  # fmt: skip
    done = _cvl_eval("train", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: python -m cvl_eval train" in done.stdout and "--overrides" in done.stdout
    assert module_main.main(["--help"]) == 0
    listing = _cvl_eval()
    assert listing.returncode == 2 and "train,generate,evaluate" in listing.stderr
    unknown = _cvl_eval("trian")
    assert unknown.returncode == 2 and "unknown command 'trian'" in unknown.stderr


def test_generate_then_train_and_a_changed_rerun_is_refused(tmp_path):
    data = tmp_path / "d"
    flags = ["--tasks", "reach", "--episodes", "2", "--max-steps", "10", "--out-dir", str(data)]
    done = _cvl_eval("generate", *flags, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout[done.stdout.index("{") :])["reach-v3"]["episodes"] == 2

    rerun = _cvl_eval("generate", *flags, "--no-progress", "--seed", "1")
    assert rerun.returncode == 2
    assert "error:" in rerun.stderr and "seed: 0 -> 1" in rerun.stderr
    assert str(data / "reach-v3") in rerun.stderr and "--out-dir" in rerun.stderr

    run = tmp_path / "run"
    train = ["--dataset", str(data / "reach-v3"), "--out-dir", str(run), "--algorithm", "bc"]
    tiny = ["--steps", "4", "--hidden", "8", "8", "--batch-size", "8", "--eval-episodes", "1"]
    done = _cvl_eval("train", *train, *tiny, "--eval-max-steps", "5", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["steps"] == 4
    bad = _cvl_eval("train", *train, "--resume", "--overrides", "lr=1e-3x")
    assert bad.returncode == 2 and "override lr='1e-3x' is not a float" in bad.stderr
