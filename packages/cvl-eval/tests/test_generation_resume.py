"""A generation rerun into a folder that holds data (finished or partial) must ask for that data:
another config is refused, naming the fields and the path, and nothing is written."""

import dataclasses

import pytest

from cvl_data import open_committed, open_dataset
from cvl_eval.datagen.behaviours import BehaviourDataConfig, generate_behaviour_dataset
from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted
from cvl_eval.errors import ConfigError

CONFIG = ScriptedConfig("reach", num_episodes=3, noise_sigma=0.3, epsilon=0.1, max_steps=10)


class Interrupted(Exception):
    """Stands in for a crash or Ctrl-C after the first episode."""


def _stop_after_first(e, episode):
    raise Interrupted("stopped after 1 episode")


def _partial(path, generate, config):
    with pytest.raises(Interrupted):
        generate(path, config, progress=False, durable=False, on_episode=_stop_after_first)
    assert open_committed(path).num_episodes == 1


def test_partial_rerun_with_other_noise_is_refused_and_the_same_one_finishes(tmp_path):
    path = tmp_path / "reach-v3"
    _partial(path, generate_scripted, CONFIG)
    other = dataclasses.replace(CONFIG, noise_sigma=0.5)
    with pytest.raises(ConfigError) as error:
        generate_scripted(path, other, progress=False, durable=False)
    message = str(error.value)
    assert str(path) in message and "unfinished" in message and "--out-dir" in message
    assert "noise_sigma: 0.3 -> 0.5" in message
    assert open_committed(path).num_episodes == 1  # nothing appended
    # progress bar and durability do not count: the same config finishes it
    report = generate_scripted(path, CONFIG, progress=True, durable=True)
    assert report.resumed_from == 1 and open_dataset(path).num_episodes == 3


def test_finished_rerun_with_another_seed_is_refused(tmp_path):
    path = tmp_path / "reach-v3"
    generate_scripted(path, CONFIG, progress=False, durable=False)
    before = (path / "meta.json").read_text()
    with pytest.raises(ConfigError, match=r"seed: 0 -> 1.*another --out-dir"):
        generate_scripted(path, dataclasses.replace(CONFIG, seed=1), progress=False)
    with pytest.raises(ConfigError, match="num_episodes: 3 -> 4"):
        generate_scripted(path, dataclasses.replace(CONFIG, num_episodes=4), progress=False)
    # the camera / frame size of a pixel twin do not shape a state dataset
    same = dataclasses.replace(CONFIG, image_size=32, camera="topview")
    assert generate_scripted(path, same, progress=False).returns == ()
    assert (path / "meta.json").read_text() == before


def test_partial_mixture_rerun_with_other_sources_is_refused(tmp_path):
    path = tmp_path / "reach-v3"
    config = BehaviourDataConfig(
        "reach", num_episodes=3, sources=("expert,weight=1", "random,weight=1"), max_steps=10
    )
    _partial(path, generate_behaviour_dataset, config)
    other = dataclasses.replace(config, sources=("random,weight=1",))
    with pytest.raises(ConfigError, match="sources: .*'expert,weight=1'.* -> .*random"):
        generate_behaviour_dataset(path, other, progress=False)
    assert open_committed(path).num_episodes == 1


def test_another_kind_into_a_finished_dataset_is_refused(tmp_path):
    path = tmp_path / "reach-v3"
    generate_scripted(path, CONFIG, progress=False, durable=False)
    config = BehaviourDataConfig("reach", num_episodes=3, max_steps=10)
    with pytest.raises(ConfigError, match=r"generator: 'cvl_eval.datagen.scripted"):
        generate_behaviour_dataset(path, config, progress=False)
