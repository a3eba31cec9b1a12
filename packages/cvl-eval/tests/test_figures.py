"""`save_figure`: a whole image or nothing at the path, and the figure closed either way."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from cvl_eval.analysis.figures import save_figure  # noqa: E402


def test_save_figure_writes_a_png_and_no_partial_file(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "sub" / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["curve.png"]
    assert not plt.fignum_exists(fig.number)


def test_a_failed_save_leaves_the_old_file_and_no_partial(tmp_path):
    path = tmp_path / "curve.unknownformat"
    path.write_text("old")
    fig, _ = plt.subplots()
    with pytest.raises(ValueError):  # matplotlib: unsupported format
        save_figure(fig, path)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.unknownformat"]
    assert not plt.fignum_exists(fig.number)
