"""Minari in and out: real Minari datasets (made by `minari.DataCollector` around a real
Meta-World env, and by Minari's own buffer API), round trips checked field by field."""

import dataclasses
import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym
import metaworld  # noqa: F401 (registers the Meta-World envs)
import minari
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from hypothesis import given, settings
from hypothesis import strategies as st
from minari.data_collector import EpisodeBuffer

from cvl_data import (
    DatasetError,
    DatasetSpec,
    DatasetWriter,
    convert,
    export_minari,
    import_minari,
    open_dataset,
)

EPISODE_STEPS = [7, 4, 5]  # 7: the time limit; 4 and 5: reset early (Minari marks truncated)


class JsonableSpec(gym.Wrapper):
    """Meta-World registers its envs with lambda entry points, which gymnasium cannot serialise
    for Minari's metadata; present the same spec without the entry point."""

    @property
    def spec(self) -> EnvSpec:
        inner = self.env.spec
        return EnvSpec(
            inner.id, kwargs=dict(inner.kwargs), max_episode_steps=inner.max_episode_steps
        )


@pytest.fixture(scope="module")
def minari_root(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        root = tmp_path_factory.mktemp("minari")
        patch.setenv("MINARI_DATASETS_PATH", str(root))
        yield root


@pytest.fixture(scope="module")
def collected(minari_root):
    """A Minari dataset of 3 random-action episodes of Meta-World reach-v3 (no download)."""
    env = gym.make("Meta-World/MT1", env_name="reach-v3", seed=0, max_episode_steps=7)
    collector = minari.DataCollector(JsonableSpec(env))
    env.action_space.seed(0)
    for episode, steps in enumerate(EPISODE_STEPS):
        collector.reset(seed=10 + episode)
        for _ in range(steps):
            collector.step(env.action_space.sample())
    dataset = collector.create_dataset(
        "tests/reach-random-v0",
        algorithm_name="random",
        author="cvl tests",
        author_email="tests@example.org",
        code_permalink="packages/cvl-data/tests/test_minari.py",
        description="random actions on reach-v3",
    )
    collector.close()
    return dataset


def assert_same_episode(ours: dict, theirs, rewards_rounded: bool = True) -> None:
    np.testing.assert_array_equal(ours["observations"], theirs.observations)  # T + 1, exact
    assert ours["observations"].dtype == theirs.observations.dtype
    np.testing.assert_array_equal(ours["actions"], theirs.actions)
    expected = theirs.rewards.astype(np.float32) if rewards_rounded else theirs.rewards
    np.testing.assert_array_equal(ours["rewards"], expected)
    np.testing.assert_array_equal(ours["terminated"], theirs.terminations)
    np.testing.assert_array_equal(ours["truncated"], theirs.truncations)


def test_minari_to_ours_maps_every_field(collected, tmp_path):
    data = open_dataset(import_minari("tests/reach-random-v0", tmp_path / "reach"))
    assert data.num_episodes == 3 and data.num_steps == sum(EPISODE_STEPS)
    for e, theirs in enumerate(collected.iterate_episodes()):
        assert len(data.episode(e)["observations"]) == EPISODE_STEPS[e] + 1
        assert_same_episode(data.episode(e), theirs)
        assert theirs.truncations[-1] and not theirs.terminations.any()
    spec = data.spec
    assert (spec.env_id, spec.task, spec.obs_shape, spec.obs_dtype) == (
        "Meta-World/MT1",
        "reach-v3",
        (39,),
        "float64",
    )
    assert spec.action_low == (-1.0,) * 4 and spec.action_high == (1.0,) * 4
    recorded = spec.provenance["minari"]
    assert recorded["dataset_id"] == "tests/reach-random-v0"
    assert json.loads(recorded["env_spec"])["kwargs"] == {"env_name": "reach-v3", "seed": 0}
    assert recorded["author"] == ["cvl tests"] and recorded["algorithm_name"] == "random"
    assert recorded["episode_seeds"] == [10, 11, 12] and recorded["infos_dropped"] is False


def test_minari_ours_minari_round_trip(collected, minari_root, tmp_path):
    import_minari(collected, tmp_path / "reach")
    folder = export_minari(tmp_path / "reach", "tests/reach-random-v1")
    assert folder == minari_root / "tests" / "reach-random-v1"
    back = minari.load_dataset("tests/reach-random-v1")
    assert back.total_episodes == collected.total_episodes
    assert back.total_steps == collected.total_steps
    for theirs, again in zip(collected.iterate_episodes(), back.iterate_episodes(), strict=True):
        ours = {
            "observations": again.observations,
            "actions": again.actions,
            "rewards": again.rewards,
            "terminated": again.terminations,
            "truncated": again.truncations,
        }
        assert_same_episode(ours, theirs)
    assert back.env_spec == collected.env_spec
    assert back.observation_space == collected.observation_space
    assert back.action_space == collected.action_space
    before, after = (d.storage.metadata for d in (collected, back))
    for key in ("algorithm_name", "author", "author_email", "code_permalink", "description"):
        assert after[key] == before[key], key
    seeds = [m["seed"] for m in back.storage.get_episode_metadata(range(3))]
    assert seeds == [10, 11, 12]


@st.composite
def small_datasets(draw):
    pixels = draw(st.booleans())
    shape = (
        (draw(st.integers(1, 3)), draw(st.integers(1, 3)), 3)
        if pixels
        else (draw(st.integers(1, 4)),)
    )
    dtype = "uint8" if pixels else draw(st.sampled_from(["float32", "float64", "int16"]))
    spec = DatasetSpec(
        env_id="Meta-World/MT1",
        task="reach-v3",
        obs_kind="pixels" if pixels else "state",
        obs_shape=shape,
        obs_dtype=dtype,
        action_shape=(draw(st.integers(1, 3)),),
        action_low=-2.0,
        action_high=2.0,
        has_rewards=draw(st.booleans()),
        provenance={"generator": "hypothesis", "seed": draw(st.integers(0, 9))},
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    episodes = []
    for T in draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)):
        episodes.append(
            {
                "observations": (rng.normal(size=(T + 1, *shape)) * 50).astype(dtype),
                "actions": rng.uniform(-2, 2, (T, *spec.action_shape)),
                "rewards": rng.normal(size=T) if spec.has_rewards else None,
                "terminated": rng.random(T) < 0.4,
                "truncated": rng.random(T) < 0.4,
            }
        )
    return spec, episodes


@settings(max_examples=12, deadline=None, database=None)
@given(case=small_datasets())
def test_ours_minari_ours_round_trip(case, minari_root, tmp_path_factory):
    spec, episodes = case
    folder = tmp_path_factory.mktemp("ours")
    with DatasetWriter(folder / "a", spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
    dataset_id = f"rt/{folder.name}-v0"
    export_minari(folder / "a", dataset_id)
    back = open_dataset(import_minari(dataset_id, folder / "b", durable=False))
    first = open_dataset(folder / "a")
    for name in (
        "observations",
        "actions",
        "rewards",
        "terminated",
        "truncated",
        "episode_offsets",
    ):
        a, b = getattr(first, name), getattr(back, name)
        assert (a is None and b is None) or (np.array_equal(a, b) and a.dtype == b.dtype), name
    provenance = dict(back.spec.provenance)
    assert provenance.pop("minari")["dataset_id"] == dataset_id
    assert dataclasses.replace(back.spec, provenance=provenance) == spec


def buffers_dataset(dataset_id: str, obs_space, action_space, observations, actions):
    """A real Minari dataset of one 2-step episode, made by Minari's buffer API."""
    buffer = EpisodeBuffer(
        observations=observations,
        actions=actions,
        rewards=[0.0, 1.0],
        terminations=[False, True],
        truncations=[False, False],
    )
    return minari.create_dataset_from_buffers(
        dataset_id,
        [buffer],
        observation_space=obs_space,
        action_space=action_space,
        algorithm_name="tests",
        author="t",
        author_email="t@e.org",
        code_permalink="-",
        description="-",
    )


def test_dict_observations_are_refused(minari_root, tmp_path):
    obs_space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-1, 1, (2,)), "vel": gym.spaces.Box(-1, 1, (2,))}
    )
    obs = {"pos": np.zeros((3, 2), np.float32), "vel": np.zeros((3, 2), np.float32)}
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    buffers_dataset("bad/dict-obs-v0", obs_space, action_space, obs, np.zeros((2, 2), np.float32))
    with pytest.raises(DatasetError, match=r"'bad/dict-obs-v0' \(field 'observations'\).*Dict"):
        import_minari("bad/dict-obs-v0", tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_discrete_actions_are_refused(minari_root, tmp_path):
    obs_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    buffers_dataset(
        "bad/discrete-v0", obs_space, gym.spaces.Discrete(3), np.zeros((3, 2), np.float32), [0, 2]
    )
    with pytest.raises(DatasetError, match=r"'bad/discrete-v0' \(field 'actions'\).*discrete"):
        import_minari("bad/discrete-v0", tmp_path / "x")


def test_out_of_bounds_actions_name_the_episode_and_leave_nothing(minari_root, tmp_path):
    space = gym.spaces.Box(-1, 1, (2,), np.float32)
    actions = np.array([[0.0, 0.0], [0.0, 3.0]], np.float32)
    buffers_dataset("bad/bounds-v0", space, space, np.zeros((3, 2), np.float32), actions)
    with pytest.raises(DatasetError, match=r"'bad/bounds-v0': no env_spec.*give the task"):
        import_minari("bad/bounds-v0", tmp_path / "x")
    with pytest.raises(DatasetError, match=r"'bad/bounds-v0' episode 0: .*actions.*row 1 value 3"):
        import_minari("bad/bounds-v0", tmp_path / "x", task="reach-v3", env_id="Meta-World/MT1")
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_existing_and_malformed_ids(collected, tmp_path):
    import_minari(collected, tmp_path / "reach")
    with pytest.raises(DatasetError, match="already exists"):
        export_minari(tmp_path / "reach", "tests/reach-random-v0")
    with pytest.raises(DatasetError, match="Malformed dataset ID"):
        export_minari(tmp_path / "reach", "no spaces allowed")


def test_unknown_id_is_a_clean_error(minari_root, tmp_path):
    with pytest.raises(DatasetError, match="'nope/missing-v0'.*not found locally"):
        import_minari("nope/missing-v0", tmp_path / "x")


def test_convert_both_ways_by_id_and_by_folder(collected, minari_root, tmp_path):
    summary = convert(f"minari:{collected.spec.data_path}", str(tmp_path / "a"))
    assert summary["episodes"] == 3 and summary["steps"] == sum(EPISODE_STEPS)
    assert summary["task"] == "reach-v3"
    convert(str(tmp_path / "a"), "minari:tests/reach-random-v2")
    convert("minari:tests/reach-random-v2", str(tmp_path / "b"))
    a, b = open_dataset(tmp_path / "a"), open_dataset(tmp_path / "b")
    np.testing.assert_array_equal(a.observations, b.observations)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    with pytest.raises(DatasetError, match="unsupported"):
        convert("minari:tests/reach-random-v2", "minari:tests/other-v0")
