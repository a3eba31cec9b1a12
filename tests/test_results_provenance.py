"""Every result under docs/results says what produced it: each folder has a PROVENANCE.md that
names the commit, the date and the machine of its runs and lists every file beside it."""

import re
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
FIELDS = {
    "commit": re.compile(r"^- commit: .*\b[0-9a-f]{7,40}\b", re.M),
    "date": re.compile(r"^- date: .*\b20\d\d-\d\d-\d\d\b", re.M),
    "machine": re.compile(r"^- machine: \S", re.M),
    "command": re.compile(r"^- command: \S", re.M),
}


def _folders() -> list[Path]:
    return sorted(p for p in RESULTS.iterdir() if p.is_dir())


def test_there_are_results_to_check():
    assert len(_folders()) >= 5


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: p.name)
def test_each_results_folder_names_commit_date_machine_and_its_files(folder):
    provenance = folder / "PROVENANCE.md"
    assert provenance.is_file(), f"{folder.name}: no PROVENANCE.md"
    text = provenance.read_text()
    for field, pattern in FIELDS.items():
        assert pattern.search(text), f"{folder.name}/PROVENANCE.md: no '- {field}:' line"
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "PROVENANCE.md":
            name = str(path.relative_to(folder))
            assert f"`{name}`" in text, f"{folder.name}/PROVENANCE.md does not list `{name}`"
