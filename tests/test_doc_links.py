"""Every link to a heading of a markdown file (``file.md#anchor`` or ``#anchor``) in the README,
docs/*.md and the packages' READMEs points at a heading that exists, by GitHub's anchor rule
(lower case, punctuation other than ``-`` and ``_`` dropped, spaces to ``-``)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.*)$", re.M)


def anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _documents() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return docs + sorted(ROOT.glob("packages/*/README.md"))


def test_the_anchor_rule():
    assert anchor("A critic that must tell actions apart (`x_y`; a gain)") == (
        "a-critic-that-must-tell-actions-apart-x_y-a-gain"
    )
    assert anchor("One-episode batches (the paper's H = 500)") == (
        "one-episode-batches-the-papers-h--500"
    )


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_heading_link_resolves(document):
    text = document.read_text()
    for match in LINK.finditer(text):
        target = document.parent / match.group(1) if match.group(1) else document
        assert target.is_file(), f"{document.name}: link {match.group(0)} to a missing file"
        anchors = {anchor(h) for h in HEADING.findall(target.read_text())}
        assert match.group(2) in anchors, f"{document.name}: no heading for {match.group(0)}"
