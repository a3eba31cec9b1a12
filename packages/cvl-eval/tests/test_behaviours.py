"""Behaviour datasets (a mixture of sources) through the shared episode loop: a label per
episode, the per-source table, and a resumed generation equal to an uninterrupted one."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_data import open_dataset
from cvl_eval.datagen.behaviours import (
    BehaviourDataConfig,
    generate_behaviour_dataset,
    source_table,
)

CONFIG = BehaviourDataConfig(
    "reach",
    num_episodes=4,
    sources=("expert,weight=0.5", "random,weight=0.5"),
    max_steps=10,
    goals="random",
)


def test_mixture_labels_every_episode_and_resumes_exactly(tmp_path, crash_at):
    whole = generate_behaviour_dataset(tmp_path / "whole", CONFIG, progress=False, durable=False)
    assert (whole.num_episodes, whole.num_steps, whole.resumed_from) == (4, 40, 0)
    data = open_dataset(tmp_path / "whole")
    table = source_table(data)
    assert {label: row["episodes"] for label, row in table.items()} == {"expert": 2, "random": 2}
    assert [info["return"] for info in data.episode_info] == pytest.approx(list(whole.returns))

    out = tmp_path / "resumed"
    with pytest.raises(crash_at.error):  # killed after 2 of 4 episodes were committed
        generate_behaviour_dataset(out, CONFIG, progress=False, on_episode=crash_at(1))
    resumed = generate_behaviour_dataset(out, CONFIG, progress=False)
    assert resumed.resumed_from == 2
    again = open_dataset(out)
    np.testing.assert_array_equal(again.actions, data.actions)
    np.testing.assert_array_equal(again.observations, data.observations)
    assert again.episode_info == data.episode_info
    assert generate_behaviour_dataset(out, CONFIG, progress=False).resumed_from == 4


def test_parse_source_reads_the_grammar_and_names_bad_text():
    from cvl_eval.datagen.behaviours import parse_source

    source = parse_source("expert:drawer-close,sigma=0.1,eps=0.2,weight=3")
    assert source.weight == 3.0 and source.behaviour.task == "drawer-close-v3"
    assert (source.behaviour.noise_sigma, source.behaviour.epsilon) == (0.1, 0.2)
    assert parse_source("random").behaviour.noise_sigma == 0.0
    assert parse_source("expert").behaviour.noise_sigma == 0.3  # the default noise
    for bad, words in [
        ("teleport", "unknown kind"),
        ("expert,colour=red", "bad option"),
        ("expert,weight=x", "is not a number"),
        ("checkpoint", "needs its folder"),
        ("random:reach", "takes no argument"),
        ("expert,weight=0", "weight > 0"),
    ]:
        with pytest.raises(ValueError, match=words) as error:
            parse_source(bad)
        assert repr(bad) in str(error.value)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.01, 10.0), min_size=1, max_size=6), st.integers(1, 500))
def test_episode_counts_sum_exactly_and_stay_within_one_of_the_share(weights, episodes):
    from cvl_eval.datagen.behaviours import episode_counts

    counts = episode_counts(weights, episodes)
    assert sum(counts) == episodes
    for count, weight in zip(counts, weights, strict=True):
        assert abs(count - episodes * weight / sum(weights)) < 1.0


def test_curriculum_anneals_from_the_start_to_the_end_setting():
    from cvl_eval.datagen.behaviours import curriculum_plan

    plan = curriculum_plan(5, sigma=(1.0, 0.2), epsilon=(1.0, 0.0))
    assert [b.noise_sigma for b in plan] == pytest.approx([1.0, 0.8, 0.6, 0.4, 0.2])
    assert [b.epsilon for b in plan] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])
    assert {b.kind for b in plan} == {"expert"}


def test_mixed_suite_sources_parse_and_unknown_tasks_are_named():
    from cvl_eval.datagen.behaviours import parse_source
    from cvl_eval.datagen.mixed_suite import MIXED_SUITE_TASKS, WRONG_EXPERTS, mixture_sources

    for task in WRONG_EXPERTS:
        sources = [parse_source(s) for s in mixture_sources(task)]
        assert sum(s.weight for s in sources) == pytest.approx(1.0)
        own = [s for s in sources if s.behaviour.kind == "expert" and s.behaviour.task is None]
        assert len(own) == 1 and own[0].weight == 0.25  # the successful minority
    assert set(MIXED_SUITE_TASKS) <= set(WRONG_EXPERTS)
    with pytest.raises(ValueError, match="pick-place: no default mixture"):
        mixture_sources("pick-place")


def test_generate_writes_a_mixture_with_its_source_table_and_skips_it_when_done(tmp_path, capsys):
    from cvl_eval.datagen.dispatch import GenerateConfig, generate_datasets
    from cvl_eval.errors import ConfigError

    config = GenerateConfig(
        tasks=("drawer-open",), out_dir=str(tmp_path), kind="mixture", episodes=4, max_steps=5,
        progress=False,
    )  # fmt: skip
    entry = generate_datasets(config)["drawer-open-v3"]
    table = entry["sources"]  # the suite's four sources, one episode each
    assert sorted(table) == ["expert", "expert:drawer-close", "expert:reach", "random"]
    assert all(row["episodes"] == 1 for row in table.values())
    assert "expert:drawer-close" in capsys.readouterr().out  # the table is printed
    meta = open_dataset(tmp_path / "drawer-open-v3")
    assert [info["source"] for info in meta.episode_info] and meta.num_episodes == 4
    files = {p: p.stat().st_mtime_ns for p in (tmp_path / "drawer-open-v3").rglob("[!.]*")}
    again = generate_datasets(config)["drawer-open-v3"]
    assert (again["transitions"], again["sources"]) == (20, table)
    assert files == {p: p.stat().st_mtime_ns for p in files}  # finished: nothing rewritten

    curriculum = GenerateConfig(
        tasks=("reach",), out_dir=str(tmp_path / "c"), kind="curriculum", episodes=3, max_steps=5,
        curriculum_sigma=(1.0, 0.0), progress=False,
    )  # fmt: skip
    entry = generate_datasets(curriculum)["reach-v3"]
    assert entry["episodes"] == 3 and entry["sources"]["expert"]["episodes"] == 3
    with pytest.raises(ConfigError, match="--sources.*unknown kind"):
        generate_datasets(dataclasses.replace(config, sources=("teleport,weight=1",)))
