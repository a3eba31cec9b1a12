"""Write then read: random episodes (lengths, shapes, dtypes, rewards or not) come back exactly."""

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_data import DatasetSpec, DatasetWriter, open_dataset, task_domain

SETTINGS = settings(max_examples=30, deadline=None, database=None)
OBS_DTYPES = ["float32", "float64", "float16", "int16", "uint8", "int64"]


@st.composite
def specs_and_episodes(draw):
    pixels = draw(st.booleans())
    if pixels:
        obs_shape = (
            draw(st.integers(1, 6)),
            draw(st.integers(1, 6)),
            draw(st.sampled_from([1, 3])),
        )
        obs_dtype = "uint8"
    else:
        obs_shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
        obs_dtype = draw(st.sampled_from(OBS_DTYPES))
    action_shape = (draw(st.integers(1, 4)),)
    has_rewards = draw(st.booleans())
    spec = DatasetSpec(
        env_id="Meta-World/MT1",
        task=draw(st.sampled_from(["drawer-open-v3", "reach-v3", "MountainCarContinuous-v0"])),
        obs_kind="pixels" if pixels else "state",
        obs_shape=obs_shape,
        obs_dtype=obs_dtype,
        action_shape=action_shape,
        action_low=-2.0,
        action_high=[2.0] * action_shape[0],
        has_rewards=has_rewards,
        provenance={"generator": "hypothesis", "seed": draw(st.integers(0, 99)), "noise": 0.3},
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    episodes = []
    for T in draw(st.lists(st.integers(1, 12), min_size=1, max_size=6)):
        if np.dtype(obs_dtype).kind == "f":
            obs = rng.normal(size=(T + 1, *obs_shape)).astype(obs_dtype)
        else:
            info = np.iinfo(obs_dtype)
            obs = rng.integers(max(info.min, -1000), min(info.max, 1000), (T + 1, *obs_shape))
            obs = obs.astype(obs_dtype)
        episodes.append(
            {
                "observations": obs,
                "actions": rng.uniform(-2, 2, (T, *action_shape)).astype(np.float32),
                "rewards": rng.normal(size=T).astype(np.float32) if has_rewards else None,
                "terminated": rng.random(T) < 0.5,
                "truncated": rng.random(T) < 0.5,
            }
        )
    return spec, episodes


@SETTINGS
@given(case=specs_and_episodes())
def test_write_then_read_round_trips_exactly(case, tmp_path_factory):
    spec, episodes = case
    path = tmp_path_factory.mktemp("rt") / "ds"
    with DatasetWriter(path, spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(**episode)
        assert writer.num_episodes == len(episodes)
    dataset = open_dataset(path)
    assert dataset.spec == spec
    assert dataset.num_episodes == len(episodes)
    assert dataset.num_steps == sum(len(e["actions"]) for e in episodes)
    assert (dataset.rewards is None) == (not spec.has_rewards)
    assert dataset.observations.dtype == np.dtype(spec.obs_dtype)
    assert isinstance(dataset.observations, np.memmap)
    for e, episode in enumerate(episodes):
        stored = dataset.episode(e)
        for name, value in episode.items():
            if value is None:
                assert stored[name] is None
            else:
                assert stored[name].dtype == value.dtype
                np.testing.assert_array_equal(stored[name], value, strict=True)
    # the documented index rule: episode e's observations are rows offsets[e]+e .. offsets[e+1]+e
    offsets = dataset.episode_offsets
    for e, episode in enumerate(episodes):
        rows = dataset.observations[offsets[e] + e : offsets[e + 1] + e + 1]
        np.testing.assert_array_equal(rows, episode["observations"])


def test_metadata_records_schema_spec_provenance_and_checksums(tmp_path, make_spec):
    spec = make_spec(provenance={"generator": "sac", "policy": "replay", "seed": 3})
    with DatasetWriter(tmp_path / "ds", spec) as writer:
        writer.add_episode(
            np.zeros((3, 3)), np.zeros((2, 2)), [1.0, 2.0], terminated=[0, 0], truncated=[0, 1]
        )
    meta = json.loads((tmp_path / "ds" / "meta.json").read_text())
    assert meta["schema_version"] == 1 and meta["format"] == "cvl-dataset"
    assert meta["spec"]["provenance"] == {"generator": "sac", "policy": "replay", "seed": 3}
    assert meta["domain"] == task_domain(spec.task) == "drawer"
    assert meta["num_episodes"] == 1 and meta["num_steps"] == 2
    assert set(meta["package_versions"]) >= {"cvl_data", "numpy", "python"}
    assert set(meta["fields"]) == {
        "observations",
        "actions",
        "rewards",
        "terminated",
        "truncated",
        "episode_offsets",
    }
    assert all(len(f["sha256"]) == 64 for f in meta["fields"].values())
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == sorted(
        [f["file"] for f in meta["fields"].values()] + ["meta.json"]
    )


def test_reward_free_dataset_has_no_rewards_file(tmp_path, make_spec):
    spec = make_spec(has_rewards=False)
    with DatasetWriter(tmp_path / "ds", spec) as writer:
        writer.add_episode(np.ones((2, 3)), np.zeros((1, 2)), terminated=[1], truncated=[0])
    dataset = open_dataset(tmp_path / "ds")
    assert dataset.rewards is None and not (tmp_path / "ds" / "rewards.npy").exists()
    np.testing.assert_array_equal(dataset.terminated, [True])


def test_float64_observations_are_stored_in_the_spec_dtype(tmp_path, make_spec):
    obs = np.linspace(0, 1, 9).reshape(3, 3)  # float64, as gym returns
    with DatasetWriter(tmp_path / "ds", make_spec()) as writer:
        writer.add_episode(obs, np.zeros((2, 2)), [0.0, 1.0], terminated=[0, 0], truncated=[0, 1])
    stored = open_dataset(tmp_path / "ds").observations
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, obs.astype(np.float32))


def test_spec_json_round_trip_and_bounds(make_spec):
    spec = make_spec(action_low=[-1, -0.5], action_high=(1, 0.5))
    assert spec.action_low == (-1.0, -0.5) and spec.action_high == (1.0, 0.5)
    assert DatasetSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    _low, high = spec.action_bounds()
    np.testing.assert_array_equal(high, [1.0, 0.5])
