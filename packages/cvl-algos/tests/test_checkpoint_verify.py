"""Verified checkpoints: corrupt, truncated or edited checkpoints give one
`CheckpointError` naming the file and what is wrong; checkpoints without checksums are refused
unless the caller opts in, then load with a `CheckpointWarning`; a checkpoint
never makes the loader import code. Every case damages real checkpoint files written by a real
learner."""

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import tiny_learner  # pants: no-infer-dep
from torch import nn

from cvl_algos import (
    CheckpointError,
    CheckpointWarning,
    load_learner,
    read_checkpoint_json,
    verify_checkpoint,
)
from cvl_algos.bc import BCLearner
from cvl_algos.checkpoint import load_checkpoint, save_checkpoint
from cvl_algos.checkpoint_files import write_manifest


@pytest.fixture
def saved(tmp_path) -> Path:
    """A BC learner's checkpoint, with a trainer-like extra JSON file."""
    return tiny_learner("bc", seed=3).save(tmp_path / "ck", extra_files={"trainer.json": {"u": 7}})


def truncate(file: Path, keep: float = 0.5) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: int(len(data) * keep)])


def flip_byte(file: Path, offset_from_end: int = 100) -> None:
    data = bytearray(file.read_bytes())
    data[max(0, len(data) - offset_from_end)] ^= 0xFF
    file.write_bytes(bytes(data))


def edit_json(file: Path, change) -> None:
    document = json.loads(file.read_text())
    change(document)
    file.write_text(json.dumps(document, indent=1))


def legacy(folder: Path) -> Path:
    """The checkpoint as written before checksums existed: the same files, no manifest."""
    (folder / "checksums.json").unlink()
    return folder


def expect(folder: Path, *fragments: str, allow_unverified: bool = False) -> str:
    with pytest.raises(CheckpointError) as info:
        load_learner(folder, allow_unverified=allow_unverified)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert "\n" not in message
    return message


def test_intact_checkpoint_verifies_and_loads(saved):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CheckpointWarning for a checkpoint with checksums
        assert verify_checkpoint(saved) is True
        assert load_learner(saved).step == 0
    assert read_checkpoint_json(saved, "trainer.json") == {"u": 7}
    manifest = json.loads((saved / "checksums.json").read_text())
    assert sorted(manifest["files"]) == ["state.json", "tensors.safetensors", "trainer.json"]


MISMATCH = "does not match checksums.json"


def edit_state(change):
    return lambda file: edit_json(file, lambda d: change(d["state"]))


@pytest.mark.parametrize(
    ("file", "damage", "what"),
    [
        ("tensors.safetensors", truncate, "bytes, recorded"),
        ("tensors.safetensors", flip_byte, f"{MISMATCH}: sha256 differs"),  # overwritten weights
        ("state.json", truncate, "bytes, recorded"),
        ("state.json", edit_state(lambda s: s["config"].update(lr=0.5)), MISMATCH),
        ("state.json", edit_state(lambda s: s.update(algorithm="cql")), MISMATCH),
        ("trainer.json", flip_byte, f"{MISMATCH}: sha256 differs"),
        ("checksums.json", truncate, "not valid JSON"),
        ("tensors.safetensors", lambda f: f.unlink(), "missing (incomplete checkpoint)"),
    ],
)
def test_damaged_checkpoint_is_one_error_naming_the_file(saved, file, damage, what):
    damage(saved / file)
    expect(saved, f"{saved / file}: ", what)
    with pytest.raises(CheckpointError, match=re.escape(what)):
        verify_checkpoint(saved)


@pytest.mark.parametrize(
    ("file", "damage", "named", "what"),
    [
        ("tensors.safetensors", truncate, "tensors.safetensors", "unreadable safetensors"),
        ("state.json", truncate, "state.json", "not valid JSON"),
        ("state.json", edit_state(lambda s: s.update(algorithm="dqn")), "state.json",
         "(field 'algorithm'): unknown algorithm 'dqn'"),
        ("state.json", edit_state(lambda s: s["config"].update(nope=1)), "state.json",
         "do not build a BCLearner"),
        ("state.json", edit_state(lambda s: s.update(obs_shape=[7])), "tensors.safetensors",
         "has shape (32, 5), the module expects (32, 7)"),
        ("state.json", edit_state(lambda s: s.update(step=-3)), "state.json",
         "(field 'step'): expected an int >= 0"),
        ("state.json", lambda f: edit_json(f, lambda d: d.update(format_version=9)), "state.json",
         "(field 'format_version')"),
        ("state.json", lambda f: edit_json(f, lambda d: d.pop("rng")), "state.json",
         "missing field(s) ['rng']"),
    ],
)  # fmt: skip
def test_checkpoint_without_checksums_still_fails_cleanly(saved, file, damage, named, what):
    damage(legacy(saved) / file)
    with pytest.warns(CheckpointWarning):
        expect(saved, f"{saved / named}", what, allow_unverified=True)


def test_checkpoint_without_checksums_refused_unless_allowed(saved):
    before = tiny_learner("bc", seed=3).act(np.zeros(5, np.float32))
    legacy(saved)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expect(saved, f"{saved / 'checksums.json'}: missing", "--allow-unverified-checkpoint")
        with pytest.raises(CheckpointError, match="checksums.json: missing"):
            verify_checkpoint(saved)
    with pytest.warns(
        CheckpointWarning, match="no checksums.json .* without checksum verification"
    ):
        assert verify_checkpoint(saved, allow_unverified=True) is False
    with pytest.warns(CheckpointWarning):
        loaded = load_learner(saved, allow_unverified=True)
    np.testing.assert_array_equal(loaded.act(np.zeros(5, np.float32)), before)
    loaded.save(saved)  # re-saving gives it checksums
    assert verify_checkpoint(saved) is True


def test_wrong_shapes_name_the_module_and_tensor(tmp_path):
    torch.manual_seed(0)
    save_checkpoint(tmp_path / "ck", {"net": nn.Linear(3, 4)}, {}, {})
    other = nn.Linear(3, 5)
    weight = other.weight.detach().clone()
    with pytest.raises(CheckpointError, match=r"module 'net' tensor 'weight' has shape \(4, 3\), "
                       r"the module expects \(5, 3\)"):  # fmt: skip
        load_checkpoint(tmp_path / "ck", {"net": other}, {})
    assert torch.equal(other.weight, weight)  # nothing loaded
    with pytest.raises(CheckpointError, match=r"missing \['0.bias'"):
        load_checkpoint(tmp_path / "ck", {"net": nn.Sequential(nn.Linear(3, 4))}, {})


def test_wrong_algorithm_class_is_a_checkpoint_error(tmp_path):
    tiny_learner("cql").save(tmp_path / "cql")
    with pytest.raises(CheckpointError, match=r"state\.json \(field 'algorithm'\): holds a CQL"):
        BCLearner.load(tmp_path / "cql")


def test_verify_touches_no_global_rng(saved):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    verify_checkpoint(saved)
    assert torch.equal(torch.rand(3), expected)


def test_extra_file_names_are_checked(tmp_path):
    for name in ("state.json", "notes.txt", "sub/x.json"):
        with pytest.raises(ValueError, match="extra file names"):
            save_checkpoint(tmp_path / "ck", {}, {}, {}, extra_files={name: 1})
    assert not (tmp_path / "ck").exists()


def test_checkpoint_never_imports_the_class_it_names(saved, tmp_path, monkeypatch):
    """A checkpoint naming an unregistered algorithm and a module of its choosing is refused
    without importing that module (it would write a marker file if it ran)."""
    marker = tmp_path / "ran"
    (tmp_path / "evilmod.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nclass Evil:\n    name = 'evil'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    edit_state(lambda s: s.update(algorithm="evil", learner_class="evilmod.Evil"))(
        saved / "state.json"
    )
    write_manifest(saved, [p.name for p in saved.iterdir() if p.name != "checksums.json"])
    for load in (load_learner, lambda d: BCLearner.load(d)):
        with pytest.raises(CheckpointError, match="unknown algorithm 'evil'.*never code"):
            load(saved)
    assert not marker.exists()
