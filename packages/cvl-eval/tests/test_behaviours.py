"""Behaviour datasets (a mixture of sources) through the shared episode loop: a label per
episode, the per-source table, and a resumed generation equal to an uninterrupted one."""

import numpy as np
import pytest

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


class Crash(Exception):
    """Stands in for a killed process."""


def _crash_at(episode):
    def on_episode(e, _):
        if e == episode:
            raise Crash(e)

    return on_episode


def test_mixture_labels_every_episode_and_resumes_exactly(tmp_path):
    whole = generate_behaviour_dataset(tmp_path / "whole", CONFIG, progress=False, durable=False)
    assert (whole.num_episodes, whole.num_steps, whole.resumed_from) == (4, 40, 0)
    data = open_dataset(tmp_path / "whole")
    table = source_table(data)
    assert {label: row["episodes"] for label, row in table.items()} == {"expert": 2, "random": 2}
    assert [info["return"] for info in data.episode_info] == pytest.approx(list(whole.returns))

    out = tmp_path / "resumed"
    with pytest.raises(Crash):  # killed after 2 of 4 episodes were committed
        generate_behaviour_dataset(out, CONFIG, progress=False, on_episode=_crash_at(1))
    resumed = generate_behaviour_dataset(out, CONFIG, progress=False)
    assert resumed.resumed_from == 2
    again = open_dataset(out)
    np.testing.assert_array_equal(again.actions, data.actions)
    np.testing.assert_array_equal(again.observations, data.observations)
    assert again.episode_info == data.episode_info
    assert generate_behaviour_dataset(out, CONFIG, progress=False).resumed_from == 4
