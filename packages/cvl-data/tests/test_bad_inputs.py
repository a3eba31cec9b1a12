"""Every bad dataset gets one clear DatasetError that names the file and the field."""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cvl_data import DatasetError, DatasetWriter, episode_lengths, open_dataset

LENGTHS = [4, 3, 5]  # 12 steps, 15 observation rows


@pytest.fixture
def good(write_encoded) -> Path:
    return write_encoded(LENGTHS).path


def load_meta(path: Path) -> dict:
    return json.loads((path / "meta.json").read_text())


def save_meta(path: Path, meta: dict) -> None:
    (path / "meta.json").write_text(json.dumps(meta))


def rewrite(path: Path, field: str, array: np.ndarray, restamp: bool = True) -> None:
    """Replace a field's file; with ``restamp`` also its checksum, so content checks run."""
    np.save(path / f"{field}.npy", array)
    if restamp:
        meta = load_meta(path)
        digest = hashlib.sha256((path / f"{field}.npy").read_bytes()).hexdigest()
        meta["fields"][field]["sha256"] = digest
        save_meta(path, meta)


def expect_error(path: Path, *fragments: str, verify: bool = True) -> str:
    with pytest.raises(DatasetError) as info:
        open_dataset(path, verify=verify)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def test_good_dataset_opens(good):
    assert open_dataset(good).num_steps == 12


def test_missing_folder(tmp_path):
    expect_error(tmp_path / "nope", str(tmp_path / "nope"), "no such dataset")


def test_missing_meta_file(good):
    (good / "meta.json").unlink()
    expect_error(good, str(good / "meta.json"), "missing file")


def test_meta_not_json(good):
    (good / "meta.json").write_text("{not json")
    expect_error(good, str(good / "meta.json"), "not valid JSON")


@pytest.mark.parametrize("field", ["observations", "actions", "rewards", "episode_offsets"])
def test_missing_field_file(good, field):
    (good / f"{field}.npy").unlink()
    expect_error(good, str(good / f"{field}.npy"), f"field '{field}'", "missing file")


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_unknown_schema_version(good, version):
    meta = load_meta(good)
    meta["schema_version"] = version
    save_meta(good, meta)
    expect_error(good, str(good / "meta.json"), "field 'schema_version'", "unknown schema version")


def test_bad_spec_field(good):
    meta = load_meta(good)
    meta["spec"]["obs_kind"] = "voxels"
    save_meta(good, meta)
    expect_error(good, str(good / "meta.json"), "'spec'", "obs_kind")


@pytest.mark.parametrize(
    ("field", "rows"),
    [("actions", 11), ("rewards", 13), ("terminated", 11), ("truncated", 13), ("observations", 14)],
)
def test_fields_of_mismatched_length(good, field, rows):
    array = np.load(good / f"{field}.npy")
    resized = np.resize(array, (rows, *array.shape[1:]))
    rewrite(good, field, resized)
    expect_error(good, str(good / f"{field}.npy"), f"field '{field}'", "mismatched lengths")


def test_wrong_dtype(good):
    rewrite(good, "actions", np.load(good / "actions.npy").astype(np.float64))
    expect_error(good, str(good / "actions.npy"), "field 'actions'", "dtype float64")


@pytest.mark.parametrize(
    ("offsets", "why"),
    [
        ([0, 4, 4, 12], "not strictly increasing"),
        ([0, 7, 4, 12], "not strictly increasing"),
        ([1, 4, 7, 12], "first offset must be 0"),
        ([0, 4, 7, 11], "does not cover"),
        ([0, 4, 7, 13], "does not cover"),
    ],
)
def test_bad_episode_offsets(good, offsets, why):
    rewrite(good, "episode_offsets", np.array(offsets, dtype=np.int64))
    expect_error(good, str(good / "episode_offsets.npy"), "field 'episode_offsets'", why)
    with pytest.raises(DatasetError, match=re.escape(str(good / "episode_offsets.npy"))):
        episode_lengths(good)  # the offsets-only reader refuses them too


def test_episode_lengths_from_the_offsets_alone(good):
    assert episode_lengths(good).tolist() == LENGTHS
    (good / "episode_offsets.npy").write_bytes(b"not an npy file")
    with pytest.raises(
        DatasetError, match=r"episode_offsets.npy \(field 'episode_offsets'\): unreadable"
    ):
        episode_lengths(good)
    rewrite(good, "episode_offsets", np.array([0, 4, 7, 9, 12], dtype=np.int64))
    with pytest.raises(DatasetError, match=r"5 rows, but meta.json says num_episodes \+ 1 = 4"):
        episode_lengths(good)  # one offset more than meta.json's num_episodes + 1


@pytest.mark.parametrize("field", ["observations", "actions", "rewards"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values(good, field, bad):
    array = np.array(np.load(good / f"{field}.npy"))
    array.reshape(len(array), -1)[5, -1] = bad
    rewrite(good, field, array)
    message = expect_error(good, str(good / f"{field}.npy"), f"field '{field}'", "non-finite")
    assert "row 5" in message


@pytest.mark.parametrize(("value", "side"), [(1.5, "action_high"), (-1.01, "action_low")])
def test_actions_outside_declared_bounds(good, value, side):
    actions = np.array(np.load(good / "actions.npy"))
    actions[7, 1] = value
    rewrite(good, "actions", actions)
    message = expect_error(good, str(good / "actions.npy"), "field 'actions'", side)
    assert "row 7" in message


def test_empty_dataset(good):
    for field, dtype, shape in [
        ("observations", np.float32, (0, 3)),
        ("actions", np.float32, (0, 2)),
        ("rewards", np.float32, (0,)),
        ("terminated", np.bool_, (0,)),
        ("truncated", np.bool_, (0,)),
    ]:
        rewrite(good, field, np.zeros(shape, dtype))
    rewrite(good, "episode_offsets", np.zeros(1, np.int64))
    meta = load_meta(good)
    meta["num_episodes"], meta["num_steps"] = 0, 0
    save_meta(good, meta)
    expect_error(good, str(good / "meta.json"), "empty dataset")


def test_non_boolean_flags(good):
    rewrite(good, "terminated", np.zeros(12, np.int8))
    expect_error(good, str(good / "terminated.npy"), "field 'terminated'", "dtype int8")


def test_checksum_mismatch_is_caught_by_default_and_by_the_full_check(good):
    rewards = np.array(np.load(good / "rewards.npy"))
    rewards[0] += 1.0
    rewrite(good, "rewards", rewards, restamp=False)
    for verify in (False, True):
        message = expect_error(good, str(good / "rewards.npy"), "field 'rewards'", verify=verify)
        assert "checksum mismatch" in message


def test_content_errors_are_caught_behind_matching_checksums(good):
    rewrite(good, "observations", np.full((15, 3), np.nan, np.float32))
    expect_error(good, str(good / "observations.npy"), "non-finite", verify=False)


# ---------------------------------------------------------------- the writer refuses bad episodes


def episode(T=3, **changes):
    values = {
        "observations": np.zeros((T + 1, 3), np.float32),
        "actions": np.zeros((T, 2), np.float32),
        "rewards": np.zeros(T, np.float32),
        "terminated": np.zeros(T, bool),
        "truncated": np.zeros(T, bool),
    }
    values.update(changes)
    return values


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"observations": np.zeros((4, 4))}, r"observations=.*shape"),
        ({"observations": np.zeros((1, 3))}, r"observations=.*T \+ 1 >= 2"),
        ({"actions": np.zeros((2, 2))}, r"actions=.*shape"),
        ({"actions": np.full((3, 2), 2.0)}, r"actions=.*action_high"),
        ({"actions": np.full((3, 2), np.nan)}, r"actions=.*non-finite"),
        ({"observations": np.full((4, 3), np.inf)}, r"observations=.*non-finite"),
        ({"rewards": None}, r"rewards=.*required"),
        ({"rewards": np.array([0, np.nan, 0])}, r"rewards=.*non-finite"),
        ({"terminated": None}, r"terminated=.*required"),
        ({"truncated": np.array([0, 2, 0])}, r"truncated=.*booleans"),
        ({"observations": np.zeros((4, 3), complex)}, r"observations=.*cannot be stored"),
    ],
)
def test_writer_rejects_bad_episodes(tmp_path, make_spec, changes, pattern):
    with DatasetWriter(tmp_path / "ds", make_spec()) as writer:
        with pytest.raises(DatasetError, match=pattern):
            writer.add_episode(**episode(**changes))
        writer.add_episode(**episode())  # the writer is still usable
    assert open_dataset(tmp_path / "ds").num_episodes == 1


def test_writer_rejects_rewards_for_reward_free_spec(tmp_path, make_spec):
    writer = DatasetWriter(tmp_path / "ds", make_spec(has_rewards=False))
    with pytest.raises(DatasetError, match=re.escape("has_rewards=False")):
        writer.add_episode(**episode())


def test_pixels_must_be_uint8(tmp_path, make_spec):
    spec = make_spec(obs_kind="pixels", obs_shape=(4, 4, 3), obs_dtype="uint8")
    with DatasetWriter(tmp_path / "ds", spec) as writer:
        with pytest.raises(DatasetError, match="cannot be stored as uint8"):
            writer.add_episode(**episode(observations=np.zeros((4, 4, 4, 3), np.float32)))
        with pytest.raises(DatasetError, match="outside the range of uint8"):
            writer.add_episode(**episode(observations=np.full((4, 4, 4, 3), 300, np.int64)))
        writer.add_episode(**episode(observations=np.zeros((4, 4, 4, 3), np.uint8)))
    with pytest.raises(DatasetError, match="obs_dtype"):
        make_spec(obs_kind="pixels", obs_shape=(4, 4, 3), obs_dtype="float32")


def test_meta_record_disagrees_with_file(good):
    meta = load_meta(good)
    meta["fields"]["truncated"]["shape"] = [11]
    save_meta(good, meta)
    expect_error(good, str(good / "truncated.npy"), "field 'truncated'", "meta.json records")
