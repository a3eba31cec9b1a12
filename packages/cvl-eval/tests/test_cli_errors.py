"""The package's errors reach a user of ``python -m cvl_eval`` as one line
``error: <message>`` (naming the file or flag) and exit status 2, never a traceback (``--debug``
or ``CVL_DEBUG=1`` shows it); a failed start leaves nothing that blocks the corrected command;
resume compares paths resolved. Real datasets, real processes."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import one_error_line as _error_line  # pants: no-infer-dep

# The tests run `python -m cvl_eval`: this import puts the package's __main__ (and through it
# every command) into Pants' test sandbox, which only holds what the test file imports.
import cvl_eval.__main__  # noqa: F401

# Absolute entries: some commands run with another working directory (Pants puts relative
# source roots on sys.path).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
ENV.pop("CVL_DEBUG", None)

TINY = [
    "--algorithm", "bc", "--steps", "4", "--hidden", "8", "8", "--batch-size", "8",
    "--eval-every", "0", "--eval-episodes", "1", "--eval-max-steps", "5", "--no-progress",
    "--no-tensorboard",
]  # fmt: skip


def _cvl_eval(*args, cwd=None, env=None):
    command = [sys.executable, "-m", "cvl_eval", *map(str, args)]
    return subprocess.run(
        command, env=env or ENV, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _train(dataset, out, *extra, cwd=None):
    return _cvl_eval("train", "--dataset", dataset, "--out-dir", out, *TINY, *extra, cwd=cwd)


def _rewrite(folder, field, array):
    """Replace a field's file and its checksum in meta.json: content checks must catch it."""
    np.save(folder / f"{field}.npy", array)
    meta = json.loads((folder / "meta.json").read_text())
    digest = hashlib.sha256((folder / f"{field}.npy").read_bytes()).hexdigest()
    meta["fields"][field]["sha256"] = digest
    (folder / "meta.json").write_text(json.dumps(meta))


def _corrupt(folder, kind):
    if kind == "nan":
        observations = np.load(folder / "observations.npy")
        observations[3, 2] = np.nan
        _rewrite(folder, "observations", observations)
    elif kind == "out_of_bounds":
        actions = np.load(folder / "actions.npy")
        actions[2, 0] = 5.0
        _rewrite(folder, "actions", actions)
    elif kind == "offsets":
        offsets = np.load(folder / "episode_offsets.npy")
        offsets[1] += 100
        _rewrite(folder, "episode_offsets", offsets)
    else:  # a truncated array file (its checksum restamped: only the content check sees it)
        file = folder / "actions.npy"
        file.write_bytes(file.read_bytes()[:-16])
        meta = json.loads((folder / "meta.json").read_text())
        meta["fields"]["actions"]["sha256"] = hashlib.sha256(file.read_bytes()).hexdigest()
        (folder / "meta.json").write_text(json.dumps(meta))


CORRUPTIONS = {
    "nan": ("observations.npy", "non-finite value"),
    "out_of_bounds": ("actions.npy", "> action_high"),
    "offsets": ("episode_offsets.npy", "not strictly increasing"),
    "truncated": ("actions.npy", "unreadable .npy"),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_dataset_content_errors_are_one_line_and_the_corrected_rerun_starts(
    data_root, tmp_path, kind
):
    bad = tmp_path / "bad"
    shutil.copytree(data_root / "reach-v3", bad)
    _corrupt(bad, kind)
    out = tmp_path / "run"
    file, what = CORRUPTIONS[kind]
    _error_line(_train(bad, out), str(bad / file), what)
    assert not (out / "config.json").exists()  # the failed start left nothing but its lock
    if kind == "nan":  # the corrected command (same out-dir, no --resume) runs
        done = _train(data_root / "reach-v3", out)
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout.strip().splitlines()[-1])["steps"] == 4


def test_debug_flag_and_env_show_the_traceback(data_root, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(data_root / "reach-v3", bad)
    _corrupt(bad, "nan")
    flag = _train(bad, tmp_path / "a", "--debug")
    env = _cvl_eval(
        "train", "--dataset", bad, "--out-dir", tmp_path / "b", *TINY,
        env={**ENV, "CVL_DEBUG": "1"},
    )  # fmt: skip
    for done in (flag, env):
        assert done.returncode == 2 and "Traceback" in done.stderr, done.stderr[-3000:]
        assert done.stderr.strip().splitlines()[-1].startswith("error: ")
        assert "DatasetError" in done.stderr


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--batch-size", "0"], "bc: batch_size = 0 is out of range: expected >= 1 (--batch-size"),
        (
            ["--algorithm", "cql", "--batch-size", "0"],
            "cql: batch_size = 0 is out of range: expected >= 1 (--batch-size",
        ),
        (["--hidden", "0"], "hidden = [0]: every width must be >= 1 (--hidden"),
        (["--seed", "-1"], "seed = -1 is out of range: expected >= 0 (--seed)"),
    ],
)
def test_bad_sizes_and_seeds_are_refused_before_any_work(data_root, tmp_path, flags, message):
    out = tmp_path / "run"
    _error_line(_train(data_root / "reach-v3", out, *flags), message)
    assert not out.exists()


def test_the_partial_folder_of_an_unfinished_dataset_is_refused(data_root, tmp_path):
    from cvl_data import DatasetWriter, open_dataset

    source = open_dataset(data_root / "reach-v3")
    end = int(source.episode_offsets[1])
    writer = DatasetWriter(tmp_path / "unfinished", source.spec)  # never finished
    writer.add_episode(
        np.asarray(source.observations[: end + 1]),
        np.asarray(source.actions[:end]),
        np.asarray(source.rewards[:end]),
        terminated=np.asarray(source.terminated[:end]),
        truncated=np.asarray(source.truncated[:end]),
    )
    partial = tmp_path / "unfinished.partial"
    assert partial.is_dir()
    _error_line(_train(partial, tmp_path / "run"), str(partial), "unfinished dataset")


def test_an_unwritable_output_folder_is_named(data_root, tmp_path):
    if os.geteuid() != 0:  # a read-only folder: chmod blocks every user but root
        parent = tmp_path / "read-only"
        parent.mkdir()
        parent.chmod(0o555)
        out = parent / "run"
        _error_line(_train(data_root / "reach-v3", out), str(out), "Permission denied")
        parent.chmod(0o755)
    # as root too: an output folder inside a regular file cannot be created
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = blocker / "run"
    _error_line(_train(data_root / "reach-v3", out), str(out), "Not a directory")


def _can_mount_tmpfs(target):
    command = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
               f"mount -t tmpfs -o size=16k tmpfs {target}"]  # fmt: skip
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_a_full_disk_names_the_file(data_root, tmp_path):
    """A real full file system: a 16 KiB tmpfs (in a user namespace, no root needed), filled."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if shutil.which("unshare") is None or not _can_mount_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs in a user namespace here (unshare --user --mount)")
    out = disk / "run"
    train = [
        sys.executable, "-m", "cvl_eval", "train", "--dataset", str(data_root / "reach-v3"),
        "--out-dir", str(out), *TINY,
    ]  # fmt: skip
    script = (
        f'mount -t tmpfs -o size=16k tmpfs "{disk}" && '
        f'(dd if=/dev/zero of="{disk}/filler" bs=1k count=64 2>/dev/null; true) && '
        + " ".join(f"'{a}'" for a in train)
    )
    command = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
    _error_line(done, str(out), "No space left on device")


def test_resume_compares_resolved_paths_and_a_moved_run_resumes(data_root, tmp_path):
    shutil.copytree(data_root / "reach-v3", tmp_path / "data")
    (tmp_path / "runs").mkdir()
    first = _train("./data", "./runs/x", "--checkpoint-every", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    same = _train("data", "runs/x", "--checkpoint-every", "2", "--resume", cwd=tmp_path)
    assert same.returncode == 0, same.stderr[-3000:]  # finished: its results, no work

    moved = tmp_path / "runs" / "moved"
    (tmp_path / "runs" / "x").rename(moved)
    (moved / "results.json").unlink()  # unfinished again: continues from its checkpoint
    shutil.rmtree(moved / "final")
    done = _train(tmp_path / "data", moved, "--checkpoint-every", "2", "--resume", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"from {moved / 'checkpoints' / 'step_0000000002'} (update 2" in done.stderr
    assert json.loads((moved / "results.json").read_text())["steps"] == 4


def test_a_run_recorded_before_a_config_field_existed_resumes(data_root, tmp_path):
    """A run folder whose ``config.json`` predates a field of the train config (here
    ``keep_checkpoints``, removed from the record) resumes when the rerun keeps the field's
    default, and is refused when it sets another value."""
    out = tmp_path / "run"
    first = _train(data_root / "reach-v3", out, "--checkpoint-every", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    record = json.loads((out / "config.json").read_text())
    del record["train_config"]["keep_checkpoints"]
    (out / "config.json").write_text(json.dumps(record))
    (out / "results.json").unlink()  # unfinished again: continues from its checkpoint
    shutil.rmtree(out / "final")
    other = _train(data_root / "reach-v3", out, "--checkpoint-every", "2", "--keep-checkpoints",
                   "3", "--resume", cwd=tmp_path)  # fmt: skip
    _error_line(other, str(out), "keep_checkpoints: 1 -> 3")
    done = _train(data_root / "reach-v3", out, "--checkpoint-every", "2", "--resume", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((out / "results.json").read_text())["steps"] == 4
