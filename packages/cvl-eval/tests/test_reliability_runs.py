"""Reliability, training and evaluation side: nothing silently mixed, nothing executed from a file.
Each test runs ``python -m cvl_eval`` in a real process on real files.

- item 1: a resume on a dataset replaced at the same path is refused;
- item 4: a camera that does not exist is refused before the first update;
- item 5: a symbolic link planted as ``run.lock`` is not followed;
- item 6: a checkpoint naming a module of its choosing never imports it; one without
  ``checksums.json`` is refused unless ``--allow-unverified-checkpoint``;
- item 8: ``--overrides lr=-1`` is one line naming ``lr``, leaving no folder;
- items 10, 11: ``cvl-evaluate --max-steps 0`` / ``--seed -3`` are one line naming the flag;
- item 15: a full disk while metrics are written is one line naming the file, no thread
  traceback (a small tmpfs in a user and mount namespace of its own).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cvl_eval_cli, one_error_line  # pants: no-infer-dep

import cvl_eval.__main__  # noqa: F401 - puts every command into Pants' sandbox
from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted

TINY = [
    "--algorithm", "bc", "--hidden", "8", "8", "--batch-size", "8", "--eval-episodes", "1",
    "--eval-max-steps", "5", "--no-progress", "--num-threads", "1",
]  # fmt: skip


def _dataset(path: Path, seed: int, episodes: int = 2, max_steps: int = 20, pixels=None) -> Path:
    config = ScriptedConfig("reach", num_episodes=episodes, max_steps=max_steps, seed=seed)
    generate_scripted(path, config, pixel_path=pixels, progress=False, durable=False)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished tiny BC run (its dataset beside it)."""
    root = tmp_path_factory.mktemp("run")
    data = _dataset(root / "reach-v3", seed=1)
    done = cvl_eval_cli(
        "train", "--dataset", data, "--out-dir", root / "run", "--steps", "4", *TINY
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "run"


def test_resume_on_replaced_dataset_refused(tmp_path):
    from cvl_eval.errors import TrainingStopped
    from cvl_eval.training.config import TrainConfig
    from cvl_eval.training.loop import train

    data = _dataset(tmp_path / "d" / "reach-v3", seed=1)
    flags = ["--dataset", data, "--out-dir", tmp_path / "run", "--steps", "20", *TINY]
    flags += ["--checkpoint-every", "5", "--eval-every", "0", "--no-tensorboard"]
    config = TrainConfig(
        dataset=str(data), out_dir=str(tmp_path / "run"), algorithm="bc", steps=20,
        hidden=(8, 8), batch_size=8, eval_episodes=1, eval_max_steps=5, progress=False,
        num_threads=1, checkpoint_every=5, eval_every=0, tensorboard=False,
    )  # fmt: skip
    with pytest.raises(TrainingStopped):  # stopped after update 10, checkpointed
        train(config, callback=lambda info: info.step >= 10)
    record = json.loads((tmp_path / "run" / "config.json").read_text())["data_identity"]
    shutil.move(data, tmp_path / "original")
    _dataset(data, seed=7, episodes=3, max_steps=15)  # another dataset at the same path

    refused = cvl_eval_cli("train", *flags, "--resume")
    one_error_line(refused, str(data), "not the data the run started on", "data_identity")
    assert not (tmp_path / "run" / "results.json").exists()

    shutil.rmtree(data)
    shutil.move(tmp_path / "original", data)  # the original back: the resume goes on
    done = cvl_eval_cli("train", *flags, "--resume")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["data_identity"] == record and results["steps"] == 20


def test_unknown_camera_refused_before_any_work(tmp_path):
    data = _dataset(tmp_path / "reach-v3", 1, 1, 5, pixels=tmp_path / "pixels" / "reach-v3")
    out = tmp_path / "run"
    flags = ["--dataset", data.parent / "pixels" / "reach-v3", "--out-dir", out, "--steps", "2"]
    done = cvl_eval_cli("train", *flags, *TINY, "--camera", "nosuchcam")
    one_error_line(done, "--camera", "'nosuchcam'", "corner")
    assert not out.exists()


def test_symlinked_run_lock_not_followed(tmp_path, run_dir):
    victim = tmp_path / "victim"
    victim.write_text("IMPORTANT\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "run.lock").symlink_to(victim)
    data = run_dir.parent / "reach-v3"
    done = cvl_eval_cli(
        "train", "--dataset", data, "--out-dir", tmp_path / "x", "--steps", "2", *TINY
    )
    one_error_line(done, "run.lock", "symbolic link")
    crafted = tmp_path / "crafted"
    shutil.copytree(run_dir, crafted)
    (crafted / "results.json").unlink()
    (crafted / "run.lock").unlink()
    (crafted / "run.lock").symlink_to(victim)
    resumed = cvl_eval_cli(
        "train", "--dataset", data, "--out-dir", crafted, "--steps", "4", *TINY, "--resume"
    )
    one_error_line(resumed, "run.lock", "symbolic link")
    assert victim.read_text() == "IMPORTANT\n"


def _restamp(folder: Path) -> None:
    from cvl_algos.checkpoint_files import write_manifest

    write_manifest(folder, [p.name for p in folder.iterdir() if p.name != "checksums.json"])


def test_checkpoint_is_data_never_code(tmp_path, run_dir):
    checkpoint = tmp_path / "ck"
    shutil.copytree(run_dir / "final", checkpoint)
    state = json.loads((checkpoint / "state.json").read_text())
    state["state"].update(algorithm="evil", learner_class="evilmod.Evil")
    (checkpoint / "state.json").write_text(json.dumps(state))
    _restamp(checkpoint)
    marker = tmp_path / "ran"
    (tmp_path / "evilmod.py").write_text(f"open({str(marker)!r}, 'w')\nclass Evil:\n    pass\n")
    flags = ["--checkpoint", checkpoint, "--task", "reach", "--episodes", "1", "--max-steps", "5"]
    done = cvl_eval_cli("evaluate", *flags, cwd=tmp_path)
    one_error_line(done, "state.json", "unknown algorithm 'evil'")
    assert not marker.exists()


def test_checkpoint_without_checksums_needs_the_flag(tmp_path, run_dir):
    checkpoint = tmp_path / "ck"
    shutil.copytree(run_dir / "final", checkpoint)
    (checkpoint / "checksums.json").unlink()
    flags = ["--checkpoint", checkpoint, "--task", "reach", "--episodes", "1", "--max-steps", "5"]
    done = cvl_eval_cli("evaluate", *flags)
    one_error_line(done, "checksums.json: missing", "--allow-unverified-checkpoint")
    allowed = cvl_eval_cli("evaluate", *flags, "--allow-unverified-checkpoint")
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert "CheckpointWarning" in allowed.stderr


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--max-steps", "0"], "max_steps = 0 is out of range: expected >= 1 (--max-steps)"),
        (["--seed", "-3"], "seed = -3 is out of range: expected >= 0 (--seed)"),
    ],
)
def test_evaluate_flags_checked_first(run_dir, flags, named):
    done = cvl_eval_cli("evaluate", "--checkpoint", run_dir, "--episodes", "1", *flags)
    one_error_line(done, named)


def test_negative_learning_rate_leaves_no_folder(tmp_path, run_dir):
    out = tmp_path / "run"
    flags = ["--dataset", run_dir.parent / "reach-v3", "--out-dir", out, "--steps", "2"]
    done = cvl_eval_cli("train", *flags, *TINY, "--overrides", "lr=-1")
    one_error_line(done, "bc: lr = -1.0 is out of range", "--overrides lr=")
    assert not out.exists()


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _namespaces_work(), reason="needs unshare -rm (user+mount namespaces)")
def test_full_disk_during_metrics_is_one_line(tmp_path, run_dir):
    disk = tmp_path / "disk"
    disk.mkdir()
    train = [
        sys.executable, "-m", "cvl_eval", "train", "--dataset", run_dir.parent / "reach-v3",
        "--out-dir", disk / "run", "--steps", "400", "--log-every", "1", "--eval-every", "0",
        "--checkpoint-every", "0", *TINY,
    ]  # fmt: skip
    # 96 KiB: room for the config and the first logs; metrics.jsonl and the event file fill it
    script = f"mount -t tmpfs -o size=96k tmpfs {disk} && exec " + " ".join(map(str, train))
    env = {
        "PYTHONPATH": ":".join(str(Path(p).absolute()) for p in sys.path),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    line = one_error_line(done, "No space left on device", str(disk / "run"))
    assert "Exception in thread" not in done.stderr, done.stderr[-3000:]
    assert line.split(":")[1].strip().startswith(str(disk / "run")), line
