"""D4RL-style dicts and files in, `.npz` out: episode boundaries from terminals and timeouts,
the final next-observation kept, and ambiguous data refused naming the array and the index."""

import dataclasses

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_data import (
    DatasetError,
    DatasetSpec,
    DatasetWriter,
    convert,
    export_npz,
    import_d4rl,
    open_dataset,
)

SPEC_ARGS = {"env_id": "Meta-World/MT1", "task": "reach-v3", "action_low": -1.0, "action_high": 1.0}
# Episodes of 4, 3 and 5 steps, ended by a timeout (mid-array), a terminal, a timeout; the
# timeout at index 3 is mid-stream: the next row continues from the same state (no reset).
LENGTHS, ENDS = [4, 3, 5], ["timeout", "terminal", "timeout"]


def hand_made(lengths=LENGTHS, ends=ENDS, seed=0) -> tuple[dict, list[np.ndarray]]:
    """A D4RL dict and each episode's T + 1 states (state k of episode e is 100 e + k)."""
    rng = np.random.default_rng(seed)
    states = [100.0 * e + np.arange(T + 1) for e, T in enumerate(lengths)]
    states = [np.stack([s, -s], axis=1).astype(np.float32) for s in states]
    if len(lengths) > 1:
        states[1][0] = states[0][-1]  # episode 1 starts where the mid-stream timeout left off
    flat = {
        "observations": np.concatenate([s[:-1] for s in states]),
        "next_observations": np.concatenate([s[1:] for s in states]),
        "actions": rng.uniform(-1, 1, (sum(lengths), 3)).astype(np.float32),
        "rewards": rng.normal(size=sum(lengths)).astype(np.float32),
        "terminals": np.zeros(sum(lengths), bool),
        "timeouts": np.zeros(sum(lengths), bool),
    }
    for stop, end in zip(np.cumsum(lengths), ends, strict=True):
        flat["terminals" if end == "terminal" else "timeouts"][stop - 1] = True
    return flat, states


def test_hand_made_dict_with_mid_episode_timeouts(tmp_path):
    flat, states = hand_made()
    data = open_dataset(import_d4rl(flat, tmp_path / "ds", **SPEC_ARGS))
    np.testing.assert_array_equal(data.episode_offsets, [0, 4, 7, 12])
    for e, T in enumerate(LENGTHS):
        episode, start = data.episode(e), sum(LENGTHS[:e])
        np.testing.assert_array_equal(episode["observations"], states[e])  # s_T kept
        np.testing.assert_array_equal(episode["actions"], flat["actions"][start : start + T])
        np.testing.assert_array_equal(episode["rewards"], flat["rewards"][start : start + T])
        assert episode["terminated"].tolist() == [False] * (T - 1) + [ENDS[e] == "terminal"]
        assert episode["truncated"].tolist() == [False] * (T - 1) + [ENDS[e] == "timeout"]
    assert data.spec.obs_shape == (2,) and data.spec.action_shape == (3,)
    facts = data.spec.provenance["d4rl"]
    assert facts == {
        "source": "D4RL dict",
        "rows": 12,
        "next_observations": True,
        "trailing_truncated": False,
        "dropped_steps": 0,
    }


def test_npz_and_hdf5_files_import_like_the_dict(tmp_path):
    flat, _ = hand_made()
    np.savez(tmp_path / "d.npz", **flat)
    with h5py.File(tmp_path / "d.hdf5", "w") as h5:
        for name, array in flat.items():
            h5[name] = array
        h5["infos/qpos"] = np.zeros((12, 3))  # D4RL extras are ignored
    expected = open_dataset(import_d4rl(flat, tmp_path / "dict", **SPEC_ARGS))
    for name in ("d.npz", "d.hdf5"):
        summary = convert(
            str(tmp_path / name), str(tmp_path / name.replace(".", "_")), options=convert_options()
        )
        data = open_dataset(summary["to"])
        assert summary["episodes"] == 3
        for field in ("observations", "actions", "rewards", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(data, field), getattr(expected, field))


def convert_options(**changes):
    from cvl_data import ConvertOptions

    bounds = {"action_low": (-1.0,), "action_high": (1.0,)}
    return ConvertOptions(env_id="Meta-World/MT1", task="reach-v3", **bounds, **changes)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (
            lambda d: d.update(actions=d["actions"][:-1]),
            r"'actions'\): 11 rows, but 'observations' has 12",
        ),
        (lambda d: d.update(rewards=d["rewards"][:, None]), r"'rewards'\): shape \(12, 1\)"),
        (
            lambda d: d["terminals"].__setitem__(0, True) or d.update(terminals=d["terminals"] * 2),
            r"'terminals'\): index 0 holds 2",
        ),
        (
            lambda d: d["next_observations"].__setitem__(5, 99.0),
            r"'next_observations'\): index 5 differs from observations\[6\].*ambiguous",
        ),
        (lambda d: d.pop("timeouts"), r"missing array\(s\) \['timeouts'\]"),
        (
            lambda d: d["timeouts"].__setitem__(11, False),
            r"indices 7\.\.11\) has no terminal or timeout at index 11: a trailing partial",
        ),
        (
            lambda d: d.pop("next_observations"),
            r"'next_observations'\): missing.*ends at index 3.*drop_final_steps",
        ),
        (lambda d: d.update(observations=d["observations"][:0]), r"'observations'\): no rows"),
        (
            lambda d: d.update(observations=d["observations"][:, 0]),
            r"'observations'\): shape \(12,\), expected \(12, \.\.\.\)",
        ),
    ],
)
def test_ambiguous_or_inconsistent_arrays_are_refused(tmp_path, change, pattern):
    flat, _ = hand_made()
    change(flat)
    with pytest.raises(DatasetError, match=pattern):
        import_d4rl(flat, tmp_path / "ds", **SPEC_ARGS)
    assert list(tmp_path.iterdir()) == []


def test_trailing_partial_episode_kept_truncated_when_asked(tmp_path):
    flat, states = hand_made()
    flat["timeouts"][-1] = False
    data = open_dataset(import_d4rl(flat, tmp_path / "ds", trailing="truncate", **SPEC_ARGS))
    assert data.num_steps == 12 and data.truncated[-1] and not data.terminated[-1]
    np.testing.assert_array_equal(data.episode(2)["observations"], states[2])
    assert data.spec.provenance["d4rl"]["trailing_truncated"] is True


def test_without_next_observations_episodes_end_one_step_early_when_asked(tmp_path):
    flat, states = hand_made(lengths=[4, 1, 5], ends=["timeout", "terminal", "terminal"])
    del flat["next_observations"]
    data = open_dataset(import_d4rl(flat, tmp_path / "ds", drop_final_steps=True, **SPEC_ARGS))
    np.testing.assert_array_equal(data.episode_offsets, [0, 3, 7])  # the 1-step episode is gone
    np.testing.assert_array_equal(data.episode(0)["observations"], states[0][:-1])
    np.testing.assert_array_equal(data.episode(1)["observations"], states[2][:-1])
    assert data.truncated.tolist() == [False, False, True, False, False, False, True]
    assert not data.terminated.any()
    assert data.spec.provenance["d4rl"]["dropped_steps"] == 3


def test_plain_file_needs_the_spec_fields(tmp_path):
    flat, _ = hand_made()
    with pytest.raises(DatasetError, match="no 'cvl_spec' recorded, so give task, action_high"):
        import_d4rl(flat, tmp_path / "ds", env_id="x", action_low=-1.0)


def test_pickled_npz_and_unknown_files_are_refused(tmp_path):
    flat, _ = hand_made()
    np.savez(tmp_path / "p.npz", **{**flat, "rewards": np.array([object()] * 12)})
    with pytest.raises(DatasetError, match=r"p\.npz: unreadable \.npz .*pickle"):
        import_d4rl(tmp_path / "p.npz", tmp_path / "ds", **SPEC_ARGS)
    (tmp_path / "d.csv").write_text("1,2")
    with pytest.raises(DatasetError, match=r"d\.csv: unknown extension"):
        import_d4rl(tmp_path / "d.csv", tmp_path / "ds", **SPEC_ARGS)


@st.composite
def flagged_episodes(draw):
    """Episodes whose flags sit on their last step only (what a flat file can express)."""
    episodes = []
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for T in draw(st.lists(st.integers(1, 7), min_size=1, max_size=5)):
        end = draw(st.sampled_from(["terminated", "truncated", "both"]))
        episodes.append(
            {
                "observations": rng.normal(size=(T + 1, 2)),
                "actions": rng.uniform(-1, 1, (T, 3)),
                "rewards": rng.normal(size=T),
                "terminated": (np.arange(T) == T - 1) & (end != "truncated"),
                "truncated": (np.arange(T) == T - 1) & (end != "terminated"),
            }
        )
    return episodes


@settings(max_examples=20, deadline=None, database=None)
@given(episodes=flagged_episodes(), has_rewards=st.booleans())
def test_ours_npz_ours_round_trip(tmp_path_factory, episodes, has_rewards):
    spec = DatasetSpec(
        obs_kind="state",
        obs_shape=(2,),
        obs_dtype="float32",
        action_shape=(3,),
        has_rewards=has_rewards,
        provenance={"generator": "tests"},
        **SPEC_ARGS,
    )
    folder = tmp_path_factory.mktemp("npz")
    with DatasetWriter(folder / "a", spec, durable=False) as writer:
        for episode in episodes:
            writer.add_episode(
                **{**episode, "rewards": episode["rewards"] if has_rewards else None}
            )
    export_npz(folder / "a", folder / "a.npz")
    back = open_dataset(import_d4rl(folder / "a.npz", folder / "b", durable=False))
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
        assert (a is None and b is None) or np.array_equal(a, b), name
    provenance = dict(back.spec.provenance)
    assert provenance.pop("d4rl")["dropped_steps"] == 0
    assert dataclasses.replace(back.spec, provenance=provenance) == spec


def test_export_refuses_flags_a_flat_file_cannot_place(tmp_path, make_spec):
    with DatasetWriter(tmp_path / "a", make_spec()) as writer:
        writer.add_episode(
            np.zeros((4, 3)),
            np.zeros((3, 2)),
            [0.0] * 3,
            terminated=[True, False, False],
            truncated=[False, False, True],
        )
    with pytest.raises(DatasetError, match="episode 0 has a terminated/truncated flag set before"):
        export_npz(tmp_path / "a", tmp_path / "a.npz")
    with DatasetWriter(tmp_path / "b", make_spec()) as writer:
        writer.add_episode(
            np.zeros((3, 3)),
            np.zeros((2, 2)),
            [0.0] * 2,
            terminated=[False, False],
            truncated=[False, False],
        )
    with pytest.raises(DatasetError, match=r"episode 0 .*flag missing on its last step \(step 1\)"):
        export_npz(tmp_path / "b", tmp_path / "b.npz")
    assert not (tmp_path / "a.npz").exists() and not (tmp_path / "b.npz").exists()
