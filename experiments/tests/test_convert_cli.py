"""experiments/convert.py: our folder -> .npz -> folder and -> Minari -> folder, and a bad
endpoint as a one-line error with exit code 2."""

import json

import numpy as np

from cvl_data import DatasetSpec, DatasetWriter, open_dataset
from experiments import convert


def test_convert_cli_round_trips_and_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    spec = DatasetSpec(
        "Meta-World/MT1", "reach-v3", "state", (3,), "float32", (2,), -1.0, 1.0, True
    )
    with DatasetWriter(tmp_path / "ours", spec, durable=False) as writer:
        for T in (3, 5):
            writer.add_episode(
                np.arange((T + 1) * 3).reshape(T + 1, 3),
                np.zeros((T, 2)),
                np.ones(T),
                terminated=np.arange(T) == T - 1,
                truncated=np.zeros(T, bool),
            )
    steps = [
        ("ours", "ours.npz"),
        ("ours.npz", "from_npz"),
        ("from_npz", "minari:cli/reach-v0"),
        ("minari:cli/reach-v0", "from_minari"),
    ]
    for source, target in steps:
        argv = [s if s.startswith("minari:") else str(tmp_path / s) for s in (source, target)]
        assert convert.main(["--from", argv[0], "--to", argv[1]]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["episodes"], summary["steps"]) == (2, 8)
    first, last = open_dataset(tmp_path / "ours"), open_dataset(tmp_path / "from_minari")
    np.testing.assert_array_equal(first.observations, last.observations)
    np.testing.assert_array_equal(first.terminated, last.terminated)

    assert convert.main(["--from", str(tmp_path / "nothing"), "--to", str(tmp_path / "x.npz")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "no such dataset folder" in error
    assert len(error.splitlines()) == 1
