"""The optional Weights & Biases logger, for real and offline (``WANDB_MODE=offline``): the run's
files in ``<run>/wandb``, every metric and evaluation of ``metrics.jsonl`` / ``evals.jsonl`` at
the same step, the config, one W&B run id per run folder that a resumed run continues; off by
default; a clear error where wandb is not installed."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import cvl_eval.pipelines.sweep_worker  # noqa: F401 - the child imports it (Pants: in the sandbox)
import cvl_eval.training.seeds  # noqa: F401 - the child imports it (Pants: in the sandbox)
from cvl_data.jsonio import to_json_data
from cvl_eval.errors import ConfigError
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train
from cvl_eval.training.wandb_sink import wandb_run_id


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    # W&B's own limits (90 s for init, 30 s for its service to start) were exceeded once on
    # this 2-core machine with four other busy processes; a shared CI machine gets more time.
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "600")
    monkeypatch.setenv("WANDB_X_SERVICE_WAIT", "300")


def _config(data_root, out, **kw):
    base = dict(
        dataset=str(data_root / "reach-v3"),
        out_dir=str(out),
        algorithm="bc",
        steps=8,
        hidden=(8, 8),
        batch_size=8,
        log_every=2,
        eval_every=4,
        eval_episodes=1,
        eval_max_steps=5,
        checkpoint_every=4,
        progress=False,
        tensorboard=False,
        wandb=True,
        wandb_project="cvl-test",
    )
    return TrainConfig(**{**base, **kw})


def _records(path):
    """The protobuf records of a ``.wandb`` file (LevelDB log format: 32 KiB blocks of chunks,
    each with a 7-byte header: crc32, length, type 1 full / 2 first / 3 middle / 4 last)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B datastore file"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if left < 7 or (length == 0 and kind == 0):  # block trailer / padding
            pos += left
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
            pending = b""


def _history(run_file):
    """``{step: {key: value}}`` of the history records, and the run's config; asserts that the
    file holds the run's exit record (the run was finished and its file flushed)."""
    history, config, kinds = {}, {}, []
    for record in _records(run_file):
        kind = record.WhichOneof("record_type")
        kinds.append(kind)
        if kind == "history":
            items = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json)
                for i in record.history.item
            }
            step = items.pop("_step")
            history.setdefault(step, {}).update(
                {k: v for k, v in items.items() if not k.startswith("_")}
            )
        elif kind == "run":
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
    assert "exit" in kinds, f"{run_file}: no exit record; records: {kinds}"
    return history, config


TRAIN_IN_CHILD = textwrap.dedent(
    """
    import json, sys
    from cvl_eval.errors import TrainingStopped
    from cvl_eval.pipelines.sweep_worker import config_from_json
    from cvl_eval.training.loop import train

    config, stop_at = config_from_json(json.loads(sys.argv[1])), int(sys.argv[2])
    try:
        train(config, callback=lambda info: info.update == stop_at)
    except TrainingStopped:
        pass
    """
)


def _train_in_process(config, stop_at=-1):
    """Train ``config`` in a fresh interpreter (stopping gracefully after ``stop_at`` updates)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
    command = [sys.executable, "-c", TRAIN_IN_CHILD, json.dumps(to_json_data(config)), str(stop_at)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _run_files(out):
    return sorted((out / "wandb").glob("offline-run-*/run-*.wandb"))


def test_wandb_logs_what_the_run_logs_and_a_resumed_run_continues_it(data_root, tmp_path):
    # As runs are used (one process each: the CLI, a sweep's child), a run stopped gracefully
    # after 5 updates, then resumed by another process.
    out = tmp_path / "run"
    _train_in_process(_config(data_root, out), stop_at=5)
    (first,) = _run_files(out)
    run_id = wandb_run_id(out)
    assert first.name == f"run-{run_id}.wandb" and first.parent.name.endswith(run_id)

    _train_in_process(_config(data_root, out, resume=True))  # continues the same W&B run
    files = _run_files(out)
    assert len(files) == 2 and all(f.name == f"run-{run_id}.wandb" for f in files)

    history, config = {}, {}
    for run_file in files:
        part, part_config = _history(run_file)
        for step, values in part.items():
            history.setdefault(step, {}).update(values)
        config.update(part_config)
    _assert_history_is_the_runs(out, history)
    assert config["algorithm"] == "bc" and config["steps"] == 8 and config["out_dir"] == str(out)


def _assert_history_is_the_runs(out, history):
    """The W&B history equals the run's ``metrics.jsonl`` and ``evals.jsonl``, step by step."""
    expected = {}
    for line in (out / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        skip = ("phase", "update", "step", "pretrain_step")
        values = {f"{record['phase']}/{k}": v for k, v in record.items() if k not in skip}
        expected.setdefault(record["update"], {}).update(values)
    for line in (out / "evals.jsonl").read_text().splitlines():
        record = json.loads(line)
        values = {f"eval/{k}": record[k] for k in ("return", "success", "length")}
        expected.setdefault(record["update"], {}).update(values)
    assert sorted(expected) == sorted(history)
    for step, values in expected.items():
        for key, value in values.items():
            assert history[step][key] == pytest.approx(value), (step, key)


SEEDS_IN_CHILD = textwrap.dedent(
    """
    import json, sys
    from cvl_eval.pipelines.sweep_worker import config_from_json
    from cvl_eval.training.seeds import train_seeds

    train_seeds([config_from_json(c) for c in json.loads(sys.argv[1])])
    """
)


def test_seeds_trained_together_each_log_their_own_wandb_run(data_root, tmp_path):
    """`train_seeds` (``--vectorise-seeds``) opens one W&B run per seed in one process; each
    holds exactly its own run's metrics (an older wandb would hand back the first run)."""
    outs = [tmp_path / f"seed_{s}" for s in (0, 1)]
    configs = [to_json_data(_config(data_root, out, seed=s)) for s, out in enumerate(outs)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}
    command = [sys.executable, "-c", SEEDS_IN_CHILD, json.dumps(configs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for out in outs:
        (run_file,) = _run_files(out)
        assert run_file.name == f"run-{wandb_run_id(out)}.wandb"
        history, config = _history(run_file)
        _assert_history_is_the_runs(out, history)
        assert config["out_dir"] == str(out)


def test_wandb_is_off_by_default(data_root, tmp_path):
    out = tmp_path / "run"
    train(_config(data_root, out, wandb=False))
    assert not (out / "wandb").exists()


def test_wandb_missing_is_a_clear_error_before_any_work(data_root, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed: import fails
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"--wandb needs Weights & Biases: pip install"):
        train(_config(data_root, out))
    assert not out.exists()
