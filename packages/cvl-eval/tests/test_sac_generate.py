"""SAC replay-buffer generation (the paper's dataset protocol) on a real Meta-World task:
valid datasets, exact resumption after interruptions, pixels alongside states."""

import dataclasses

import numpy as np
import pytest
import torch

from cvl_algos import load_learner
from cvl_algos.sac import SACConfig
from cvl_data import DatasetError, open_dataset
from cvl_eval.datagen.sac.checkpoints import default_checkpoint_dir, final_sac_dir
from cvl_eval.datagen.sac.config import SACDataConfig
from cvl_eval.datagen.sac.generate import generate_sac

TINY = SACConfig(hidden=(16, 16), batch_size=32)
# 6 episodes of 40 steps; the budget of 230 frames cuts the last one to 30 steps.
CONFIG = SACDataConfig(
    "reach", frames=230, warmup_frames=60, sac=TINY, max_episode_steps=40, goals="random"
)


class Interrupted(Exception):
    """Stands in for a crash or Ctrl-C in the middle of a generation."""


def _interrupt_after(k: int):
    def on_episode(e, episode):
        if e + 1 == k:
            raise Interrupted(f"stopped after {k} episodes")

    return on_episode


def _same_datasets(a, b) -> None:
    assert a.num_episodes == b.num_episodes
    for name in ("episode_offsets", "observations", "actions", "rewards", "terminated"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.truncated, b.truncated)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """One uninterrupted generation, shared by the tests below."""
    path = tmp_path_factory.mktemp("whole") / "reach"
    report = generate_sac(path, CONFIG, progress=False, durable=False)
    return path, report


def test_generation_writes_the_whole_replay_buffer(whole):
    path, report = whole
    data = open_dataset(path)  # verify=True: checksums and layout
    assert data.num_steps == CONFIG.frames == report.num_steps == report.frames_this_call
    assert data.num_episodes == 6 == report.num_episodes
    lengths = np.diff(data.episode_offsets)
    np.testing.assert_array_equal(lengths, [40, 40, 40, 40, 40, 30])
    assert data.truncated.sum() == 6 and data.truncated[-1]  # the budget truncates the last one
    assert data.observations.shape == (230 + 6, 39) and data.actions.shape == (230, 4)
    assert np.abs(data.actions).max() <= 1.0
    np.testing.assert_allclose(
        [data.rewards[a:b].sum() for a, b in zip(data.episode_offsets, data.episode_offsets[1:])],
        report.returns,
        rtol=1e-5,
    )
    # consecutive observations within an episode are real env transitions (no gaps)
    ep = data.episode(2)
    assert np.all(np.abs(np.diff(ep["observations"][:, :3], axis=0)) < 0.2)
    prov = data.spec.provenance
    assert prov["generator"] == "cvl_eval.datagen.sac.generate.generate_sac"
    assert prov["config"]["frames"] == 230 and prov["config"]["sac"]["hidden"] == [16, 16]
    assert prov["seed"] == 0 and "torch" in prov["package_versions"]
    # the final SAC is kept; it has done (frames - warmup + 1) updates
    sac = load_learner(final_sac_dir(default_checkpoint_dir(path)))
    assert sac.step == 230 - 60 + 1 and report.sac_dir == str(final_sac_dir(f"{path}.sac"))
    # calling again on a finished generation does no work
    again = generate_sac(path, CONFIG, progress=False)
    assert again.frames_this_call == 0 and again.returns == report.returns


@pytest.mark.parametrize("checkpoint_every,stop_after", [(1, 2), (2, 3)])
def test_interrupted_generation_resumes_exactly(tmp_path, whole, checkpoint_every, stop_after):
    """Stop after some episodes; with checkpoint_every=2 and 3 episodes committed the dataset is
    one episode ahead of the checkpoint, which the resumption replays without rewriting it."""
    path, report = whole
    config = dataclasses.replace(CONFIG, checkpoint_every=checkpoint_every)
    resumed = tmp_path / "reach"
    with pytest.raises(Interrupted):
        generate_sac(resumed, config, progress=False, on_episode=_interrupt_after(stop_after))
    with pytest.raises(DatasetError):
        open_dataset(resumed)  # partial until finished
    again = generate_sac(resumed, config, progress=False, durable=False)
    assert again.resumed_from == stop_after - (stop_after % checkpoint_every)
    _same_datasets(open_dataset(path), open_dataset(resumed))
    assert again.returns == report.returns
    a, b = load_learner(report.sac_dir), load_learner(again.sac_dir)
    assert a.step == b.step
    for x, y in zip(a.critic.parameters(), b.critic.parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_resuming_with_another_config_is_refused(tmp_path):
    with pytest.raises(Interrupted):
        generate_sac(tmp_path / "r", CONFIG, progress=False, on_episode=_interrupt_after(1))
    other = dataclasses.replace(CONFIG, seed=1)
    with pytest.raises(ValueError, match="seed"):
        generate_sac(tmp_path / "r", other, progress=False)


def test_a_checkpoint_from_before_a_config_field_resumes_at_its_default(tmp_path, whole):
    """A generation checkpointed before a config field existed (its ``state.json`` lacks it)
    resumes when the rerun keeps the field's default, to the same data, and is refused when
    the rerun sets another value."""
    import json

    from cvl_eval.datagen.sac.checkpoints import STATE_FILE

    path = tmp_path / "reach"
    with pytest.raises(Interrupted):
        generate_sac(path, CONFIG, progress=False, on_episode=_interrupt_after(2))
    state_file = default_checkpoint_dir(path) / STATE_FILE
    state = json.loads(state_file.read_text())
    del state["config"]["sac"]["policy_ema_tau"]  # as written before the field was added
    state_file.write_text(json.dumps(state))
    averaged = dataclasses.replace(CONFIG, sac=dataclasses.replace(TINY, policy_ema_tau=0.5))
    with pytest.raises(ValueError, match=r"policy_ema_tau': 0.0.*0.5|sac: .*0.5"):
        generate_sac(path, averaged, progress=False)
    again = generate_sac(path, CONFIG, progress=False, durable=False)
    assert again.resumed_from == 2
    _same_datasets(open_dataset(whole[0]), open_dataset(path))


def test_manual_gradients_reach_the_generating_sac(tmp_path):
    """``SACDataConfig.sac`` carries `SACConfig.manual_gradients` to the generating learner
    (and its checkpoint), with either torso; `SACConfig` refuses it with ``compile=True``."""
    manual = dataclasses.replace(TINY, manual_gradients=True)
    config = dataclasses.replace(CONFIG, frames=80, sac=manual)
    report = generate_sac(tmp_path / "reach", config, progress=False, durable=False)
    sac = load_learner(report.sac_dir)
    assert sac.config == manual and sac.manual_update is not None and sac.step == 80 - 60 + 1
    with pytest.raises(ValueError, match="manual_gradients needs compile=False"):
        dataclasses.replace(manual, compile=True)


def test_pixels_alongside_states_share_the_episodes(tmp_path):
    config = SACDataConfig(
        "reach",
        frames=50,
        warmup_frames=20,
        sac=TINY,
        max_episode_steps=20,
        goals="random",
        image_size=32,
    )
    kw = {"pixel_path": tmp_path / "p", "progress": False}
    with pytest.raises(Interrupted):
        generate_sac(tmp_path / "s", config, on_episode=_interrupt_after(1), **kw)
    generate_sac(tmp_path / "s", config, **kw)
    states, pixels = open_dataset(tmp_path / "s"), open_dataset(tmp_path / "p")
    np.testing.assert_array_equal(states.episode_offsets, [0, 20, 40, 50])
    np.testing.assert_array_equal(pixels.episode_offsets, states.episode_offsets)
    np.testing.assert_array_equal(pixels.actions, states.actions)
    np.testing.assert_array_equal(pixels.rewards, states.rewards)
    assert pixels.spec.obs_kind == "pixels" and pixels.observations.shape == (53, 32, 32, 3)
    assert pixels.observations.dtype == np.uint8
    frames = np.asarray(pixels.observations, dtype=np.float32)
    assert frames.std(axis=(1, 2, 3)).min() > 5  # no blank frame
    assert np.abs(np.diff(frames, axis=0)).mean() > 0  # the arm moves


def test_pixels_need_a_metaworld_task(tmp_path):
    config = SACDataConfig("MountainCarContinuous-v0", frames=10, sac=TINY)
    with pytest.raises(ValueError, match="Meta-World"):
        generate_sac(tmp_path / "s", config, pixel_path=tmp_path / "p", progress=False)


def test_generate_config_sets_sacs_sizes_and_refuses_bad_ones(tmp_path):
    from cvl_eval.datagen.dispatch import GenerateConfig, check_generate, generate_datasets
    from cvl_eval.errors import ConfigError

    config = GenerateConfig(
        tasks=("reach",), out_dir=str(tmp_path), kind="sac", frames=30, warmup_frames=10,
        max_steps=20, sac_hidden=(8, 4), sac_batch_size=5, progress=False,
    )  # fmt: skip
    entry = generate_datasets(config)["reach-v3"]
    sac = load_learner(entry["sac_dir"])  # the generating SAC has the sizes asked for
    assert sac.config.hidden == (8, 4) and sac.config.batch_size == 5
    assert sac.config.torso == SACConfig().torso and sac.config.lr == SACConfig().lr
    linear = [m for m in sac.policy.modules() if isinstance(m, torch.nn.Linear)]
    assert linear[0].out_features == 8
    unset = GenerateConfig(tasks=("reach",), kind="sac", frames=30)
    from cvl_eval.datagen.dispatch import sac_config

    assert sac_config(unset, "reach-v3").sac == SACConfig()  # SAC's own sizes by default
    manual = dataclasses.replace(unset, sac_manual_gradients=True)
    assert sac_config(manual, "reach-v3").sac == SACConfig(manual_gradients=True)
    for bad, flag in (({"sac_hidden": ()}, "--sac-hidden"), ({"sac_batch_size": 0}, "--sac-b")):
        with pytest.raises(ConfigError, match=flag):
            check_generate(dataclasses.replace(unset, **bad))


def test_generation_summary_follows_the_episodes(whole, tmp_path):
    from cvl_eval.pipelines.sac_generation import _rolling, summarise_sac_generation

    path, report = whole
    summary = summarise_sac_generation({"reach": path}, tmp_path, window=2)["tasks"]["reach"]
    successes = np.asarray(report.successes, dtype=float)
    assert (summary["episodes"], summary["frames"]) == (6, 230)
    assert summary["success_rate"] == successes.mean()
    assert summary["mean_return_last_2"] == np.mean(report.returns[-2:])
    assert (tmp_path / "sac_generation.png").is_file()
    values = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    naive = [values[max(0, i - 2) : i + 1].mean() for i in range(len(values))]
    np.testing.assert_allclose(_rolling(values, 3), naive)
