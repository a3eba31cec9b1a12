"""The hard suite's dataset kinds on real Meta-World (tiny): ``noisy`` (a per-episode noise level)
and ``stitch`` (behaviours that switch mid-episode, episodes recorded from mid-task on): they
generate with provenance, resume to identical arrays, and refuse bad values in one line."""

import dataclasses

import numpy as np
import pytest

from cvl_data import open_dataset
from cvl_eval.datagen.behaviours import BehaviourDataConfig, generate_behaviour_dataset
from cvl_eval.datagen.dispatch import GenerateConfig, generate_datasets
from cvl_eval.datagen.phases import Switch, parse_switch
from cvl_eval.datagen.sources import parse_source
from cvl_eval.errors import ConfigError

NOISY = BehaviourDataConfig("reach", kind="noisy", num_episodes=4, sigma_max=0.8, max_steps=8)
STITCH = BehaviourDataConfig(
    "drawer-open",
    kind="stitch",
    num_episodes=4,
    sources=("expert,switch=3>random", "expert,start=near+4"),
    max_steps=10,
)


@pytest.mark.parametrize("config", [NOISY, STITCH], ids=["noisy", "stitch"])
def test_a_kind_resumes_after_an_interruption_to_identical_arrays(tmp_path, config, crash_at):
    whole = generate_behaviour_dataset(tmp_path / "whole", config, progress=False, durable=False)
    assert (whole.num_episodes, whole.resumed_from) == (4, 0)
    out = tmp_path / "resumed"
    with pytest.raises(crash_at.error):  # killed after 2 of 4 episodes were committed
        generate_behaviour_dataset(out, config, progress=False, on_episode=crash_at(1))
    assert generate_behaviour_dataset(out, config, progress=False).resumed_from == 2
    data, again = open_dataset(tmp_path / "whole"), open_dataset(out)
    for field in ("observations", "actions", "rewards", "episode_offsets"):
        np.testing.assert_array_equal(getattr(again, field), getattr(data, field))
    assert again.episode_info == data.episode_info
    provenance = again.spec.provenance
    assert provenance["config"]["kind"] == config.kind
    assert provenance["generator"].endswith("generate_behaviour_dataset")


def test_noisy_draws_one_noise_level_per_episode_below_sigma_max(tmp_path):
    plan = NOISY.plan()
    sigmas = [b.noise_sigma for b in plan]
    assert all(0 <= s < 0.8 for s in sigmas) and len(set(sigmas)) == 4
    assert {b.epsilon for b in plan} == {NOISY.random_fraction}
    assert plan[:2] == dataclasses.replace(NOISY, num_episodes=2).plan()  # per-episode pure
    assert dataclasses.replace(NOISY, seed=1).plan() != plan
    labels = {NOISY.source_label(b) for b in plan}
    assert all(label.startswith("expert,sigma ") for label in labels)


def test_stitch_episodes_start_mid_task_and_switch_behaviour():
    approach, finish = (parse_source(s).behaviour for s in STITCH.sources)
    assert approach.switch == Switch(steps=3) and approach.then.kind == "random"
    assert approach.label("drawer-open") == "expert>random"
    assert finish.start == Switch(steps=4, near=0.05)
    assert finish.label("drawer-open") == "expert@near+4"


def test_early_switches_never_solve_the_task(tmp_path):
    config = GenerateConfig(
        tasks=("drawer-open",), out_dir=str(tmp_path), kind="stitch", episodes=6, max_steps=150,
        sources=("expert,sigma=0.1,switch=10>random", "expert,sigma=0.1,switch=10>expert:door-close"),
        progress=False,
    )  # fmt: skip
    entry = generate_datasets(config)["drawer-open-v3"]
    assert entry["success_rate"] == 0.0 and set(entry["sources"]) == {
        "expert>random",
        "expert>expert:door-close",
    }
    # the unswitched expert solves drawer-open within these 150 steps
    expert = dataclasses.replace(config, out_dir=str(tmp_path / "x"), sources=("expert,sigma=0.1",))
    assert generate_datasets(expert)["drawer-open-v3"]["success_rate"] > 0.5


def test_recording_starts_at_the_start_condition(tmp_path):
    config = dataclasses.replace(STITCH, sources=("expert,start=4",), num_episodes=2)
    generate_behaviour_dataset(tmp_path / "d", config, progress=False, durable=False)
    data = open_dataset(tmp_path / "d")
    assert data.num_steps == 2 * (10 - 4)  # 4 unrecorded steps of a 10-step episode


def test_default_stitch_recipes_parse_and_unknown_tasks_are_named():
    from cvl_eval.datagen.hard_suite import STITCH_TASKS, stitch_sources

    for task in STITCH_TASKS:
        sources = [parse_source(s) for s in stitch_sources(task)]
        assert sum(s.weight for s in sources) == pytest.approx(1.0)
        assert not any(s.behaviour.start is None and s.behaviour.then is None for s in sources)
    with pytest.raises(ValueError, match="reach: no default stitch recipe"):
        stitch_sources("reach")


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"kind": "noisy", "sigma_max": 0.0}, "--sigma-max must be > 0, got 0.0"),
        ({"kind": "noisy", "random_fraction": 1.5}, "--random-fraction must lie in [0, 1]"),
        ({"kind": "stitch", "sources": ("expert>random",)}, "'switch=COND' and '>BEHAVIOUR'"),
        ({"kind": "stitch", "sources": ("expert,switch=soon>random",)}, "condition 'soon'"),
        ({"kind": "stitch", "sources": ("expert,start=near",)}, "needs a step limit"),
        ({"kind": "stitch", "max_steps": 20, "sources": ("expert,start=near+30",)}, "lower it"),
        ({"kind": "stitch", "tasks": ("reach",)}, "no default stitch recipe"),
    ],
)
def test_bad_values_are_refused_in_one_line_naming_the_flag(tmp_path, fields, words):
    config = GenerateConfig(**{"tasks": ("drawer-open",), "out_dir": str(tmp_path), **fields})
    with pytest.raises(ConfigError) as error:
        generate_datasets(config)
    message = str(error.value)
    assert words in message and "\n" not in message
    assert not any(tmp_path.iterdir())  # refused before any work


def test_switch_text_round_trips():
    for text in ("near", "near0.03", "40", "near+150", "near0.1+50"):
        assert parse_switch(text).label() == text
    with pytest.raises(ValueError, match="condition 'far'"):
        parse_switch("far")


def test_hard_preset_resolves_to_a_kind_per_task(tmp_path):
    from cvl_eval.pipelines.paper import generate_configs
    from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig, resolve

    config = PaperConfig(experiment="hard", out_dir=str(tmp_path))
    plan = resolve(config)
    budget = plan["budget"]
    assert len(budget.tasks) >= 4 and budget.seeds == (0, 1, 2)
    assert PRESETS["hard"].algorithms == PRESETS["mixed"].algorithms
    assert (budget.hidden, budget.batch_size, budget.steps) == ((128, 128), 256, 10_000)
    assert (budget.eval_every, budget.last_evals) == (2_500, 3)
    assert [budget.kind_of(t) for t in budget.tasks] == ["stitch", "stitch", "noisy", "noisy"]
    configs = {c.kind: c.tasks for c in generate_configs(plan, config)}
    assert configs == {
        "stitch": ("drawer-open-v3", "door-open-v3"),
        "noisy": ("faucet-open-v3", "reach-v3"),
    }
    assert {c.out_dir for c in generate_configs(plan, config)} == {str(tmp_path / "data")}
    one = resolve(PaperConfig(experiment="hard", data_kind="mixture"))["budget"]
    assert {one.kind_of(t) for t in one.tasks} == {"mixture"}  # an explicit kind wins
    full = resolve(PaperConfig(experiment="hard", full=True))["budget"]
    assert full.kind_of("reach-v3") == "noisy" and len(full.seeds) == 5
