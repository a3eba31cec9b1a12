"""Scripted dataset generation through cvl_data's writer, including resuming."""

import numpy as np
import pytest

from cvl_data import DatasetError, open_dataset
from cvl_eval.datagen.scripted import ScriptedConfig, generate_scripted

CONFIG = ScriptedConfig("reach", num_episodes=4, noise_sigma=0.3, epsilon=0.1, max_steps=12)


class Interrupted(Exception):
    """Stands in for a crash or Ctrl-C in the middle of a generation."""


def _interrupt_after(k: int):
    def on_episode(e, episode):
        if e + 1 == k:
            raise Interrupted(f"stopped after {k} episodes")

    return on_episode


def test_generation_writes_a_valid_dataset(tmp_path):
    report = generate_scripted(tmp_path / "reach", CONFIG, progress=False, durable=False)
    data = open_dataset(tmp_path / "reach")  # verify=True: checksums and layout
    assert data.num_episodes == 4 and data.num_steps == 4 * 12 == report.num_steps
    assert data.spec.task == "reach-v3" and data.spec.obs_shape == (39,)
    assert data.observations.shape == (4 * 12 + 4, 39)
    assert data.actions.shape == (48, 4) and np.abs(data.actions).max() <= 1.0
    assert data.truncated.sum() == 4 and not data.terminated.any()
    np.testing.assert_allclose(
        [data.rewards[a:b].sum() for a, b in zip(data.episode_offsets, data.episode_offsets[1:])],
        report.returns,
        rtol=1e-5,
    )
    assert data.spec.provenance["config"]["noise_sigma"] == 0.3
    # a second call on the finished dataset is a no-op
    again = generate_scripted(tmp_path / "reach", CONFIG, progress=False)
    assert again.resumed_from == 4 and again.returns == ()


def test_interrupted_generation_resumes_without_duplicates_or_gaps(tmp_path):
    whole = tmp_path / "whole"
    generate_scripted(whole, CONFIG, progress=False, durable=False)

    resumed = tmp_path / "resumed"
    with pytest.raises(Interrupted):
        generate_scripted(resumed, CONFIG, progress=False, on_episode=_interrupt_after(2))
    with pytest.raises(DatasetError):
        open_dataset(resumed)  # a partial dataset is refused until finished
    report = generate_scripted(resumed, CONFIG, progress=False, durable=False)
    assert report.resumed_from == 2 and len(report.returns) == 2

    a, b = open_dataset(whole), open_dataset(resumed)
    assert b.num_episodes == 4
    np.testing.assert_array_equal(a.episode_offsets, b.episode_offsets)
    np.testing.assert_array_equal(a.observations, b.observations)
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.rewards, b.rewards)


def test_a_dataset_recorded_before_a_config_field_existed_is_the_same_generation(tmp_path):
    """A finished dataset whose recorded config predates a field (``goals`` removed from its
    provenance) is reported by a rerun at the field's default and refused at another value."""
    import dataclasses
    import json

    path = tmp_path / "reach"
    generate_scripted(path, CONFIG, progress=False, durable=False)
    meta = json.loads((path / "meta.json").read_text())
    config = meta["spec"]["provenance"]["config"]
    assert config.pop("goals") == "mt1"
    (path / "meta.json").write_text(json.dumps(meta))
    again = generate_scripted(path, CONFIG, progress=False)
    assert again.resumed_from == CONFIG.num_episodes and again.returns == ()
    with pytest.raises(ValueError, match="goals: 'mt1' -> 'random'"):
        generate_scripted(path, dataclasses.replace(CONFIG, goals="random"), progress=False)


def test_one_run_writes_the_state_and_the_pixel_dataset(tmp_path):
    config = ScriptedConfig("reach", num_episodes=2, max_steps=5, image_size=32)
    with pytest.raises(Interrupted):
        generate_scripted(
            tmp_path / "s",
            config,
            pixel_path=tmp_path / "p",
            progress=False,
            on_episode=_interrupt_after(1),
        )
    generate_scripted(tmp_path / "s", config, pixel_path=tmp_path / "p", progress=False)
    states, pixels = open_dataset(tmp_path / "s"), open_dataset(tmp_path / "p")
    assert pixels.spec.obs_kind == "pixels" and pixels.observations.shape == (12, 32, 32, 3)
    assert pixels.observations.dtype == np.uint8 and pixels.observations.std() > 5
    assert states.observations.shape == (12, 39)
    np.testing.assert_array_equal(states.actions, pixels.actions)
    np.testing.assert_array_equal(states.rewards, pixels.rewards)


def test_noise_free_expert_data_is_expert_behaviour(tmp_path):
    config = ScriptedConfig("reach", num_episodes=2, noise_sigma=0.0, max_steps=100)
    report = generate_scripted(tmp_path / "clean", config, progress=False, durable=False)
    assert all(report.successes)


def test_config_rejects_non_metaworld_and_bad_noise():
    with pytest.raises(ValueError, match="Meta-World tasks only"):
        ScriptedConfig("MountainCarContinuous-v0")
    with pytest.raises(ValueError):
        ScriptedConfig("reach", epsilon=1.5)
