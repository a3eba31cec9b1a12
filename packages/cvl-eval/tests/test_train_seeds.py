"""`train_seeds`: K seeds of one run in one process equal each seed trained alone by `train`,
on real (tiny) Meta-World data: final checkpoints, logged metrics and evaluations, resume."""

import json

import pytest
import torch
from safetensors.torch import load_file

from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted
from cvl_eval.errors import ConfigError, TrainingStopped
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train
from cvl_eval.training.seeds import train_seeds

SMALL = {"cql": ("policy_eval_start=6", "cql_num_samples=3"), "cvl": ("latent_dim=8",)}
TIMES = {"steps_per_s", "time_s"}
# argmax of near-tied logits (repeated future states of an episode batch): a float rounding
# difference flips single anchors, so this discrete metric is compared loosely
DISCRETE = {"critic_accuracy"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    config = ScriptedConfig("reach", num_episodes=3, noise_sigma=0.3, epsilon=0.1, max_steps=30)
    generate_scripted(root / "reach-v3", config, progress=False, durable=False)
    return str(root / "reach-v3")


def config(dataset, out, algorithm, seed, **kw):
    base = dict(
        dataset=dataset,
        out_dir=str(out / f"seed_{seed}"),
        algorithm=algorithm,
        seed=seed,
        steps=12,
        hidden=(16, 16),
        batch_size=8,
        overrides=SMALL.get(algorithm, ()),
        log_every=2,
        eval_every=6,
        eval_episodes=1,
        eval_max_steps=10,
        checkpoint_every=4,
        progress=False,
        tensorboard=False,
    )
    return TrainConfig(**{**base, **kw})


def records(path, name):
    lines = (path / name).read_text().splitlines()
    return [{k: v for k, v in json.loads(x).items() if k not in TIMES} for x in lines]


def assert_runs_close(alone, together):
    a, b = load_file(str(alone / "final/tensors.safetensors")), load_file(
        str(together / "final/tensors.safetensors")
    )
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5, msg=key)
    for name in ("metrics.jsonl", "evals.jsonl"):
        want, got = records(alone, name), records(together, name)
        assert [r["update"] for r in got] == [r["update"] for r in want]
        for w, g in zip(want, got, strict=True):
            assert w.keys() == g.keys()
            for key, value in w.items():
                if key in DISCRETE:
                    assert g[key] == pytest.approx(value, abs=0.25), key
                elif isinstance(value, float):
                    assert g[key] == pytest.approx(value, rel=1e-3, abs=1e-4), key
                elif key not in ("episode_returns",):
                    assert g[key] == value, key


@pytest.mark.parametrize("algorithm", ["cql", "cvl"])
def test_seeds_together_equal_seeds_alone(dataset, tmp_path, algorithm):
    seeds = (0, 1)
    for seed in seeds:
        train(config(dataset, tmp_path / "alone", algorithm, seed))
    results = train_seeds([config(dataset, tmp_path / "together", algorithm, s) for s in seeds])
    assert [r["seed"] for r in results] == list(seeds)
    for seed, result in zip(seeds, results, strict=True):
        folder = tmp_path / "together" / f"seed_{seed}"
        assert json.loads((folder / "results.json").read_text()) == result
        assert_runs_close(tmp_path / "alone" / f"seed_{seed}", folder)


def test_resumed_seeds_continue_together(dataset, tmp_path):
    """Runs stopped at their step-4 checkpoint continue vectorised to the runs' uninterrupted
    results; a finished run among them is returned as it is."""
    seeds = (0, 1, 2)
    for seed in seeds:
        train(config(dataset, tmp_path / "alone", "bc", seed))
    runs = [config(dataset, tmp_path / "together", "bc", s) for s in seeds]
    for run in runs[:2]:
        with pytest.raises(TrainingStopped):
            train(run, callback=lambda info: info.update == 4)
    train(runs[2])  # finished before the group starts
    finished = json.loads((tmp_path / "together/seed_2/results.json").read_text())
    results = train_seeds([TrainConfig(**{**r.__dict__, "resume": True}) for r in runs])
    assert results[2] == finished
    for seed in seeds:
        assert_runs_close(
            tmp_path / "alone" / f"seed_{seed}", tmp_path / "together" / f"seed_{seed}"
        )


def test_refuses_groups_that_are_not_one_run_with_several_seeds(dataset, tmp_path):
    a = config(dataset, tmp_path, "bc", 0)
    with pytest.raises(ConfigError, match="more than its seed"):
        train_seeds([a, config(dataset, tmp_path, "bc", 1, steps=20)])
    with pytest.raises(ConfigError, match="share a folder"):
        train_seeds([a, TrainConfig(**{**a.__dict__, "seed": 1})])
