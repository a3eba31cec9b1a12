"""The quickstart end to end at a tiny budget (real Meta-World env, tiny networks)."""

import json
import os

import pytest

from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.quickstart import (
    QUICKSTART_CVL_OVERRIDES,
    QuickstartConfig,
    quickstart,
)

TINY = dict(
    task="reach",
    episodes=2,
    steps=4,
    hidden=(16, 16),
    batch_size=8,
    cvl_overrides=(*QUICKSTART_CVL_OVERRIDES, "latent_dim=8", "num_rff_features=16"),
    eval_every=2,
    eval_episodes=2,
    eval_max_steps=10,
    threads=1,
    bootstrap_reps=50,
    progress=False,
)


def test_quickstart_writes_its_run_folder_and_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "qs"
    summary = quickstart(QuickstartConfig(out_dir=str(out), **TINY))
    printed = capsys.readouterr().out
    assert "Quickstart on reach-v3" in printed and "Files:" in printed
    for name in ("CVL", "BC", "RANDOM"):
        assert name in printed

    assert json.loads((out / "summary.json").read_text()) == summary
    assert summary["dataset"]["episodes"] == 2 and summary["dataset"]["transitions"] == 1000
    assert summary["dataset"]["kind"] == "mixture" and "Dataset by source:" in printed
    assert sum(row["episodes"] for row in summary["dataset"]["sources"].values()) == 2
    assert set(summary["policies"]) == {"cvl", "bc", "random"}
    for policy in summary["policies"].values():
        assert policy["episodes"] == 2 and 0.0 <= policy["success"] <= 1.0
    assert summary["cvl_beats_random"] == (
        summary["policies"]["cvl"]["return"] > summary["policies"]["random"]["return"]
    )
    assert summary["cvl_beats_bc"] == (
        summary["policies"]["cvl"]["return"] > summary["policies"]["bc"]["return"]
    )
    assert "BC on return:" in printed and "RANDOM on return:" in printed
    for name in ("summary", "learning_curves", "rliable_intervals", "table", "report"):
        assert os.path.isfile(summary["files"][name]), name
    table = (out / "report" / "table.md").read_text()
    assert "| reach |" in table and "cvl_mc" in table and "random" in table
    config = json.loads((out / "runs" / "cvl_mc" / "config.json").read_text())
    assert config["learner_overrides"]["temperature"] == 0.1  # the mixed-data settings
    assert config["learner_overrides"]["policy_extraction"] == "ddpgbc"
    assert config["learner_overrides"]["action_contrast_source"] == "policy_uniform"
    for run in ("cvl_mc", "bc"):
        assert (out / "runs" / run / "final" / "tensors.safetensors").is_file()
        assert (out / "runs" / run / "progress.csv").is_file()
    # a second call finds every stage finished and only rewrites the report
    again = quickstart(QuickstartConfig(out_dir=str(out), **TINY))
    assert again["policies"] == summary["policies"]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"task": "drawer-opn"}, "unknown environment 'drawer-opn'"),
        ({"task": "MountainCarContinuous-v0"}, "runs on Meta-World tasks"),
        ({"steps": 0}, "steps must be >= 1"),
        ({"seed": -1}, "seed must be >= 0"),
        ({"cvl_overrides": ("lambda_bd=1",)}, r"unknown learner config field\(s\) \['lambda_bd'\]"),
        ({"task": "pick-place"}, "pick-place: no default mixture"),
        ({"sources": ("teleport",)}, "--sources.*unknown kind 'teleport'"),
    ],
)
def test_bad_quickstart_flags_fail_before_any_work(tmp_path, changes, message):
    out = tmp_path / "qs"
    with pytest.raises(ConfigError, match=message):
        quickstart(QuickstartConfig(out_dir=str(out), **{**TINY, **changes}))
    assert not out.exists()
