"""Resume never silently throws work away. A checkpoint without its
``trainer.json``, a ``latest.json`` naming a missing folder or garbled: the run continues from
the newest valid checkpoint and says which; with none valid (or a negative or inconsistent step
saved) it is refused in one line naming the file, the logs untouched. Real runs, real
``python -m cvl_eval train --resume`` processes."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

import cvl_eval.__main__  # noqa: F401  (`python -m cvl_eval` in subprocesses; Pants sandbox)
from cvl_eval.errors import TrainingStopped
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
ENV.pop("CVL_DEBUG", None)

RUN = dict(
    algorithm="bc", steps=8, hidden=(8, 8), batch_size=8, eval_every=4, eval_episodes=1,
    eval_max_steps=5, log_every=1, checkpoint_every=2, progress=False, tensorboard=False,
)  # fmt: skip
LOGS = ("metrics.jsonl", "evals.jsonl", "progress.csv")


@pytest.fixture(scope="module")
def stopped(data_root, tmp_path_factory):
    """``stopped(keep)``: a copy of a run stopped after update 7 (checkpoints every 2 updates,
    ``keep`` kept: 7, 6, 4 with keep=3), its logs reaching update 7."""
    runs = {}

    def make(keep, dst):
        if keep not in runs:
            out = tmp_path_factory.mktemp("runs") / f"keep{keep}"
            config = TrainConfig(
                dataset=str(data_root / "reach-v3"), out_dir=str(out), keep_checkpoints=keep, **RUN
            )
            with pytest.raises(TrainingStopped):
                train(config, callback=lambda info: info.update == 7)
            runs[keep] = out
        shutil.copytree(runs[keep], dst)
        return dst

    return make


def _resume(data_root, out, keep):
    flags = ["--dataset", data_root / "reach-v3", "--out-dir", out, "--resume"]
    for key, value in {**RUN, "keep_checkpoints": keep}.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + key.replace("_", "-"))
        else:
            flags += [flag, *(value if isinstance(value, tuple) else [value])]
    command = [sys.executable, "-m", "cvl_eval", "train", *map(str, flags)]
    return subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)


def _updates(out):
    return [json.loads(line)["update"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def _lines_up_to(out, update):
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return [line for line in lines if json.loads(line)["update"] <= update]


def _checkpoint(out, update):
    return out / "checkpoints" / f"step_{update:010d}"


def _resumes_from(data_root, out, update, keep=3):
    """Resume; it must continue from the checkpoint at ``update``, its older logs unchanged."""
    kept = _lines_up_to(out, update)
    done = _resume(data_root, out, keep)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resuming {out} from {_checkpoint(out, update)} (update {update}," in done.stderr
    assert _lines_up_to(out, update) == kept  # the work before the checkpoint was kept as is
    assert _updates(out) == list(range(1, 9))
    return done


def test_a_checkpoint_without_trainer_json_falls_back_to_the_previous_one(
    data_root, tmp_path, stopped
):
    out = stopped(3, tmp_path / "run")
    (_checkpoint(out, 7) / "trainer.json").unlink()
    done = _resumes_from(data_root, out, 6)
    assert f"cannot resume from {_checkpoint(out, 7)}" in done.stderr
    assert "trainer.json: missing" in done.stderr


def test_latest_json_naming_a_missing_checkpoint_falls_back(data_root, tmp_path, stopped):
    out = stopped(3, tmp_path / "run")
    shutil.rmtree(_checkpoint(out, 7))
    _resumes_from(data_root, out, 6)


def test_a_garbled_latest_json_resumes_from_the_newest_checkpoint(data_root, tmp_path, stopped):
    out = stopped(3, tmp_path / "run")
    (out / "checkpoints" / "latest.json").write_text('{"dir": "step_00')
    _resumes_from(data_root, out, 7)


def _logs(out):
    return {name: (out / name).read_bytes() for name in LOGS}


def _refused(data_root, out, *fragments):
    """Resume is refused in one ``error:`` line with ``fragments``; the logs are untouched."""
    before = _logs(out)
    done = _resume(data_root, out, keep=1)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"cannot resume {out}: no valid checkpoint" in errors[0], errors
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert _logs(out) == before and _updates(out) == list(range(1, 8))


def test_no_valid_checkpoint_is_refused_and_the_logs_are_kept(data_root, tmp_path, stopped):
    out = stopped(1, tmp_path / "missing")
    (_checkpoint(out, 7) / "trainer.json").unlink()
    _refused(data_root, out, str(_checkpoint(out, 7) / "trainer.json"), "missing")

    out = stopped(1, tmp_path / "dangling")
    shutil.rmtree(_checkpoint(out, 7))
    _refused(data_root, out, "latest.json names no checkpoint")


def _edit_trainer_state(folder, **changes):
    """Edit a checkpoint's trainer.json and restamp its checksum, as a consistent (but wrong)
    checkpoint would be: only the step checks can catch it."""
    file = folder / "trainer.json"
    file.write_text(json.dumps({**json.loads(file.read_text()), **changes}))
    manifest = json.loads((folder / "checksums.json").read_text())
    manifest["files"]["trainer.json"] = {
        "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
        "bytes": file.stat().st_size,
    }
    (folder / "checksums.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"updates": -1}, "(field 'updates'): expected an int >= 0, got -1"),
        ({"step": -3}, "(field 'step'): expected an int >= 0, got -3"),
        ({"updates": 9, "step": 9}, "(field 'updates'): 9, but the checkpoint folder is step_"),
        ({"step": 5}, "(field 'updates'): 7 != step 5 + pretrain_steps 0"),
        ({"updates": 6, "step": 6}, "(field 'updates'): 6, but the checkpoint folder is step_"),
    ],
)
def test_negative_or_inconsistent_steps_are_refused_naming_the_file(
    data_root, tmp_path, stopped, changes, message
):
    out = stopped(1, tmp_path / "run")
    _edit_trainer_state(_checkpoint(out, 7), **changes)
    _refused(data_root, out, str(_checkpoint(out, 7) / "trainer.json"), message)
