"""The packaged expert table, score normalisation, and the command that recomputes the table."""

import json

import numpy as np
import pytest

from cvl_eval.envs.expert_scores import expert_return, load_expert_table, normalized_score
from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.envs.make import TASK_NAMES
from cvl_eval.rollout.expert_table import main


def test_packaged_table_covers_all_fifty_tasks():
    table = load_expert_table()
    assert sorted(table["tasks"]) == sorted(TASK_NAMES)
    assert table["meta"]["episodes_per_task"] >= 5
    for task, row in table["tasks"].items():
        assert row["mean_return"] > 0, task
        assert 0.0 <= row["success_rate"] <= 1.0
    rates = [row["success_rate"] for row in table["tasks"].values()]
    assert np.mean(rates) > 0.9  # the scripted experts solve nearly every task


def test_normalized_score_divides_by_the_expert_return():
    reference = expert_return("drawer-open-v3")
    assert expert_return("drawer-open") == reference
    assert normalized_score("drawer-open", reference) == pytest.approx(1.0)
    assert normalized_score("drawer-open", 0.0) == 0.0
    raw = np.array([reference / 2, reference * 2])
    np.testing.assert_allclose(normalized_score("drawer-open", raw), [0.5, 2.0])
    with pytest.raises(KeyError):
        expert_return("MountainCarContinuous-v0")


def test_scripted_expert_is_batched_and_in_bounds():
    expert = ScriptedExpert("reach")
    obs = np.random.default_rng(0).normal(size=(3, 39)).astype(np.float32)
    actions = expert(obs)
    assert actions.shape == (3, 4) and actions.dtype == np.float32
    assert np.abs(actions).max() <= 1.0
    np.testing.assert_array_equal(actions[1], expert.act_one(obs[1]))
    with pytest.raises(ValueError, match=r"\(N, 39\)"):
        expert(obs[0])


def test_entry_point_recomputes_the_table(tmp_path, capsys):
    out = tmp_path / "experts.json"
    args = ["--episodes", "2", "--max-steps", "60", "--processes", "1", "--out", str(out)]
    assert main([*args, "--tasks", "reach", "button-press"]) == 0
    table = json.loads(out.read_text())
    assert sorted(table["tasks"]) == ["button-press-v3", "reach-v3"]
    assert table["tasks"]["reach-v3"]["num_episodes"] == 2
    assert table["tasks"]["reach-v3"]["success_rate"] == 1.0
    assert table["meta"]["max_steps"] == 60
    assert "wrote" in capsys.readouterr().out
