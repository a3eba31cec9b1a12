"""The training loop on real (tiny) Meta-World datasets: run folders, exact resume, validation."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from cvl_data import DatasetSpec, DatasetWriter, open_dataset
from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted
from cvl_eval.errors import ConfigError, TrainingStopped
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train

CVL_SMALL = ("latent_dim=8", "num_rff_features=32", "num_action_samples=2")
CAP = ('policy_extraction="ddpgbc"', "bc_q_cap=true")  # the cap and its DDPG+BC step


def _copy(src, dst, has_rewards=True, obs_kind=None):
    """A copy of dataset ``src`` at ``dst``, optionally without rewards or relabelled as pixels."""
    data = open_dataset(src)
    fields = {**data.spec.to_json(), "has_rewards": has_rewards}
    observations = data.observations
    if obs_kind == "pixels":  # a fake pixel dataset: only its spec matters to validation
        fields.update(obs_kind="pixels", obs_shape=[8, 8, 3], obs_dtype="uint8")
        observations = np.zeros((len(observations), 8, 8, 3), np.uint8)
    spec = DatasetSpec.from_json(fields)
    offsets = data.episode_offsets
    with DatasetWriter(dst, spec) as writer:
        for e in range(data.num_episodes):
            a, b = offsets[e], offsets[e + 1]
            writer.add_episode(
                observations[a + e : b + e + 1],
                data.actions[a:b],
                data.rewards[a:b] if has_rewards else None,
                terminated=data.terminated[a:b],
                truncated=data.truncated[a:b],
            )
    return str(dst)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    config = ScriptedConfig("reach", num_episodes=3, noise_sigma=0.3, epsilon=0.1, max_steps=30)
    generate_scripted(root / "reach-v3", config, progress=False, durable=False)
    related = ScriptedConfig("reach-wall", num_episodes=2, noise_sigma=0.3, max_steps=30)
    generate_scripted(root / "reach-wall-full", related, progress=False, durable=False)
    target = str(root / "reach-v3")
    return {
        "target": target,
        "related_free": _copy(root / "reach-wall-full", root / "reach-wall-v3", has_rewards=False),
        "target_free": _copy(target, root / "reach-free", has_rewards=False),
        "fake_pixels": _copy(target, root / "reach-pixels", obs_kind="pixels"),
    }


def _config(data, out, **kw):
    base = dict(
        dataset=data["target"],
        out_dir=str(out),
        algorithm="cvl",
        steps=12,
        hidden=(16, 16),
        batch_size=8,
        overrides=CVL_SMALL,
        log_every=2,
        eval_every=0,
        eval_episodes=1,
        eval_max_steps=10,
        checkpoint_every=4,
        progress=False,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_train_writes_everything_it_promises(data, tmp_path):
    out = tmp_path / "bc"
    config = _config(data, out, algorithm="bc", overrides=(), eval_every=6)
    results = train(config)
    assert sorted(p.name for p in out.iterdir()) == [
        "checkpoints",
        "config.json",
        "evals.jsonl",
        "final",
        "metrics.jsonl",
        "progress.csv",
        "results.json",
        "run.lock",
        "tb",
    ]
    assert json.loads((out / "results.json").read_text()) == results
    assert results["label"] == "bc" and results["task"] == "reach-v3" and results["steps"] == 12
    final = results["final_eval"]
    assert len(final["returns"]) == 1
    assert 0.0 <= final["success_rate"] <= 1.0 and final["mean_length"] == 10
    assert final["mean_normalized_return"] is not None  # Meta-World: normalised by the expert
    assert [e["step"] for e in results["curve"]] == [6, 12]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in metrics] == [2, 4, 6, 8, 10, 12]
    assert {"bc_loss", "nll", "steps_per_s", "phase"} <= set(metrics[0])
    csv_lines = (out / "progress.csv").read_text().splitlines()
    assert len(csv_lines) == 7 and "bc_loss" in csv_lines[0]
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tb").iterdir())
    stored = json.loads((out / "config.json").read_text())
    assert stored["train_config"]["algorithm"] == "bc" and "torch" in stored["versions"]
    from cvl_algos import load_learner

    learner = load_learner(out / "final")
    assert learner.step == 12 and learner.act(np.zeros(39, np.float32)).shape == (4,)
    # a finished run given resume=True is returned as it is, without work
    assert train(_config(data, out, algorithm="bc", overrides=(), eval_every=6, resume=True))


def _tensors(folder):
    return load_file(str(folder / "tensors.safetensors"))


class Crash(Exception):
    """Stands in for a killed process."""


def test_resume_after_interruptions_gives_the_uninterrupted_final_checkpoint(data, tmp_path):
    kw = dict(
        pretrain_datasets=(data["related_free"],),
        pretrain_steps=6,
        steps=10,
        checkpoint_every=4,
    )
    whole = train(_config(data, tmp_path / "whole", **kw))
    assert whole["label"] == "cvl_pretrained" and whole["pretrain_steps"] == 6

    out = tmp_path / "stopped"

    def crash_at(update):
        def callback(info):
            if info.update == update:
                raise Crash(update)

        return callback

    with pytest.raises(Crash):  # killed during pretraining, after the checkpoint at update 4
        train(_config(data, out, **kw), callback=crash_at(5))
    with pytest.raises(Crash):  # killed during finetuning (update 11 = step 5), checkpoint at 8
        train(_config(data, out, resume=True, **kw), callback=crash_at(11))
    with pytest.raises(TrainingStopped):  # a graceful stop (as Ctrl-C) checkpoints at once
        train(_config(data, out, resume=True, **kw), callback=lambda info: info.update == 13)
    resumed = train(_config(data, out, resume=True, **kw))

    a, b = _tensors(tmp_path / "whole" / "final"), _tensors(out / "final")
    assert a.keys() == b.keys() and len(a) > 20
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert resumed["final_eval"]["returns"] == whole["final_eval"]["returns"]
    # logs were rolled back to each checkpoint: the same records as the uninterrupted run
    strip = {"steps_per_s", "time_s"}

    def records(run):
        lines = (run / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(x).items() if k not in strip} for x in lines]

    assert records(out) == records(tmp_path / "whole")
    assert [r["phase"] for r in records(out)][:3] == ["pretrain"] * 3


def _weighted_run_resumes_and_differs(data, tmp_path, kw, uniform):
    """Runs ``kw`` whole and killed after its checkpoint at update 4 then resumed (the same final
    tensors), and with the ``uniform`` overrides instead (other final tensors); the weighted
    run's stored config as a JSON string."""
    train(_config(data, tmp_path / "whole", **kw))

    def crash(info):
        if info.update == 6:
            raise Crash(6)

    with pytest.raises(Crash):
        train(_config(data, tmp_path / "stopped", **kw), callback=crash)
    train(_config(data, tmp_path / "stopped", resume=True, **kw))
    a, b = _tensors(tmp_path / "whole" / "final"), _tensors(tmp_path / "stopped" / "final")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    train(_config(data, tmp_path / "uniform", **{**kw, "overrides": uniform}))
    c = _tensors(tmp_path / "uniform" / "final")
    assert any(not torch.equal(a[k], c[k]) for k in a)
    stored = json.dumps(json.loads((tmp_path / "whole" / "config.json").read_text()))
    assert stored.count('"return_weight_temperature": 0.1') == 1
    return stored


@pytest.mark.parametrize("scope", ["all", "policy"])
def test_return_weighted_anchors_resume_exactly_and_change_the_run(data, tmp_path, scope):
    """``return_weight_temperature`` (with ``return_weight_scope`` "policy": the policy step's
    own anchors) reaches the run's sampler from the overrides: a run killed after its checkpoint
    at update 4 resumes to the uninterrupted run's final tensors, and the weighted run differs
    from the uniform one."""
    uniform = (*CVL_SMALL, 'sampler_mode="uniform"')
    weights = ("return_weight_temperature=0.1",)
    if scope != "all":  # the policy's own anchors carry no futures for the paper's KL form
        uniform += ('policy_extraction="ddpgbc"',)
        weights += (f'return_weight_scope="{scope}"',)
    kw = dict(algorithm="cvl_mc", overrides=uniform + weights, steps=10, checkpoint_every=4)
    stored = _weighted_run_resumes_and_differs(data, tmp_path, kw, uniform)
    assert stored.count('"return_weight_scope"') == (scope != "all")  # the default is not stored
    assert stored.count(f'"return_weight_scope": "{scope}"') == (scope != "all")


@pytest.mark.parametrize("algorithm", ["bc", "iql"])
def test_return_weighted_transitions_resume_exactly_and_change_the_run(data, tmp_path, algorithm):
    """A transition learner's ``return_weight_temperature`` reaches its run's sampler from the
    overrides: a run killed after its checkpoint at update 4 resumes to the uninterrupted run's
    final tensors, the weighted run differs from the uniform one, and the config stores it."""
    kw = dict(
        algorithm=algorithm,
        overrides=("return_weight_temperature=0.1",),
        steps=10,
        checkpoint_every=4,
    )
    _weighted_run_resumes_and_differs(data, tmp_path, kw, uniform=())


def test_cql_uds_pretrains_on_zero_rewards_then_trains(data, tmp_path):
    results = train(
        _config(
            data, tmp_path / "uds", algorithm="cql_uds", overrides=(), pretrain_steps=3, steps=3
        )
    )
    assert results["pretrain_steps"] == 3 and results["steps"] == 3
    phases = [
        json.loads(x)["phase"] for x in (tmp_path / "uds/metrics.jsonl").read_text().splitlines()
    ]
    assert phases == ["pretrain", "pretrain", "train", "train"]  # updates 2, 3 (phase end), 4, 6


def test_reward_free_data_is_fine_for_bc_and_for_cvl_pretraining_only(data, tmp_path):
    from cvl_eval.training.plan import validate

    assert validate(
        _config(data, tmp_path / "a", algorithm="bc", overrides=(), dataset=data["target_free"])
    )
    plan = validate(_config(data, tmp_path / "b", pretrain_datasets=(data["target_free"],)))
    assert plan.pretrain_steps == 50_000 and plan.label == "cvl_pretrained"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"algorithm": "dqn"}, "unknown algorithm 'dqn'"),
        ({"algorithm": "sac"}, "sac is online"),
        ({"task": "drawer-openn"}, "unknown environment 'drawer-openn'"),
        ({"task": "drawer-open"}, "holds task 'reach-v3', not 'drawer-open-v3'"),
        ({"algorithm": "cql", "dataset": "free"}, "has no rewards, but cql needs them"),
        ({"dataset": "free"}, "has no rewards, but cvl needs them"),
        ({"algorithm": "cql_uds", "dataset": "free"}, "has no rewards"),
        (
            {"algorithm": "bc", "dataset": "free", "overrides": ("return_weight_temperature=0.3",)},
            "has no rewards, but return_weight_temperature weighs its episodes by return",
        ),
        (
            {"dataset": "free", "pretrain_datasets": ("free",)},
            "reward-free data can only serve as pretrain_datasets",
        ),
        (
            {"algorithm": "cvl_mc", "overrides": (*CAP, "bc_q_cap_neighbours=61")},
            "has 60 steps outside its longest episode (3 episodes), but bc_q_cap_neighbours=61",
        ),
        (
            {
                "overrides": (*CVL_SMALL, *CAP, "bc_q_cap_neighbours=31"),
                "pretrain_datasets": ("related",),
                "pretrain_include_target": False,
            },
            "the pretraining data has 30 steps outside its longest episode (2 episodes)",
        ),
        (
            {
                "algorithm": "cvl_mc",
                "dataset": "pixels",
                "observations": "auto",
                "overrides": (*CAP, "bc_q_cap_neighbours=8"),
            },
            "holds pixels observations, but bc_q_cap_neighbours=8 searches nearest states",
        ),
        ({"dataset": "pixels", "observations": "state"}, "is a pixel dataset"),
        ({"observations": "pixels"}, "is a state dataset"),
        ({"pretrain_datasets": ("pixels",)}, "is a pixel dataset"),
        ({"algorithm": "bc", "pretrain_datasets": ("free",)}, "bc takes no pretraining data"),
        ({"dataset": "/no/such/dataset"}, "no dataset at /no/such/dataset"),
        ({"overrides": ("lambda_bcc=1",)}, "unknown learner config field(s) ['lambda_bcc']"),
        ({"overrides": ("discount=1.5",)}, "discount must lie in [0, 1)"),
        ({"steps": 0}, "steps = 0 is out of range"),
        ({"device": "cuda:7"} if not torch.cuda.is_available() else {"device": "tpu"}, "device"),
    ],
)
def test_bad_configs_fail_before_any_work(data, tmp_path, changes, message):
    names = {
        "free": data["target_free"],
        "pixels": data["fake_pixels"],
        "related": data["related_free"],
    }

    def resolve(value):
        if isinstance(value, tuple):
            return tuple(names.get(v, v) for v in value)
        return names.get(value, value)

    changes = {k: resolve(v) for k, v in changes.items()}
    out = tmp_path / "run"
    with pytest.raises(ConfigError) as error:
        train(_config(data, out, **{"observations": "state", **changes}))
    assert message in str(error.value)
    assert not out.exists()


def test_neighbour_cap_takes_every_step_outside_the_longest_episode(
    data, tmp_path, monkeypatch, capsys
):
    """The boundary of `check_neighbour_data`: k = the 60 steps outside the longest of three
    30-step episodes trains (the sampler's exact search agrees), 61 is refused above; a search
    over `LONG_SEARCH_STEPS` steps or more shows a bar that ends at the data's steps."""
    import cvl_eval.training.plan

    monkeypatch.setattr(cvl_eval.training.plan, "LONG_SEARCH_STEPS", 90)  # the target's steps
    cap = (*CAP, "bc_q_cap_neighbours=60")
    config = _config(
        data, tmp_path / "run", algorithm="cvl_mc", overrides=cap, steps=2, progress=True
    )
    result = train(config)
    assert result["steps"] == 2
    err = capsys.readouterr().err
    assert "train data: the 60 nearest steps of other episodes: 100%" in err
    assert "90/90" in err


def test_neighbour_cap_refuses_more_steps_than_it_searches(data, tmp_path, monkeypatch):
    import cvl_data.neighbours

    monkeypatch.setattr(cvl_data.neighbours, "MAX_NEIGHBOUR_STEPS", 89)  # the target: 90 steps
    with pytest.raises(ConfigError, match="has 90 steps, but bc_q_cap_neighbours=2 searches"):
        train(
            _config(
                data,
                tmp_path / "run",
                algorithm="cvl_mc",
                overrides=(*CAP, "bc_q_cap_neighbours=2"),
            )
        )
    assert not (tmp_path / "run").exists()


def test_existing_run_folders_need_resume_and_the_same_config(data, tmp_path):
    out = tmp_path / "run"
    train(_config(data, out, algorithm="bc", overrides=(), steps=2))
    with pytest.raises(ConfigError, match="already holds a run; pass resume=True"):
        train(_config(data, out, algorithm="bc", overrides=(), steps=2))
    with pytest.raises(ConfigError, match=r"different config \(steps: 2 -> 3\)"):
        train(_config(data, out, algorithm="bc", overrides=(), steps=3, resume=True))


def test_pixel_dataset_trains_and_evaluates_from_pixels(tmp_path):
    config = ScriptedConfig("reach", num_episodes=2, max_steps=8, image_size=32)
    generate_scripted(
        tmp_path / "reach", config, pixel_path=tmp_path / "pixels", progress=False, durable=False
    )
    for algorithm, overrides in (("bc", ()), ("cvl", CVL_SMALL)):
        results = train(
            TrainConfig(
                dataset=str(tmp_path / "pixels"),
                out_dir=str(tmp_path / algorithm),
                algorithm=algorithm,
                steps=2,
                hidden=(8, 8),
                batch_size=4,
                overrides=overrides,
                observations="pixels",
                eval_every=0,
                eval_episodes=1,
                eval_max_steps=3,
                checkpoint_every=0,
                progress=False,
                tensorboard=False,
            )
        )
        assert results["obs_kind"] == "pixels" and results["final_eval"]["pixels"] is True
        assert results["final_eval"]["mean_length"] == 3
