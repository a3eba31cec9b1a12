"""The per-task table (Markdown, CSV, LaTeX) against hand-made examples, and learning curves."""

import matplotlib

matplotlib.use("Agg")

import json

import numpy as np
import pandas as pd
import pytest

from cvl_eval.analysis.curves import curve_stats, final_returns, plot_learning_curves
from cvl_eval.analysis.tables import (
    TableFormat,
    results_from_records,
    to_csv,
    to_latex_rows,
    to_markdown,
    write_tables,
)

# Two algorithms, two tasks; means/stds worked out by hand (population std, ddof=0):
# BC  reach:  [3000, 3200] -> 3100 +- 100        push: [100, 300, 200] -> 200 +- 81.65
# CVL reach:  [4800, 4900] -> 4850 +- 50         push: [150.5, 150.5] -> 150.5 +- 0
RESULTS = {
    "BC": {"reach-v3": [3000.0, 3200.0], "push-v3": [100.0, 300.0, 200.0]},
    "CVL": {"reach-v3": [4800.0, 4900.0], "push-v3": [150.5, 150.5]},
}

MARKDOWN = """\
| Task | CVL | BC |
|---|---|---|
| reach | **4850 ± 50.0** | 3100 ± 100.0 |
| push | 150 ± 0.0 | **200 ± 81.6** |
"""

CSV = """\
task,CVL_mean,CVL_std,CVL_seeds,BC_mean,BC_std,BC_seeds,best
reach,4850.0000,50.0000,2,3100.0000,100.0000,2,CVL
push,150.5000,0.0000,2,200.0000,81.6497,3,BC
"""

LATEX = """\
reach & \\textbf{4850 $\\pm$ 50.0} & 3100 $\\pm$ 100.0 \\\\
push & 150 $\\pm$ 0.0 & \\textbf{200 $\\pm$ 81.6} \\\\
"""


def test_markdown_csv_and_latex_reproduce_the_hand_made_tables():
    order = {"algorithms": ["CVL", "BC"], "tasks": ["reach-v3", "push-v3"]}
    assert to_markdown(RESULTS, **order) == MARKDOWN
    assert to_csv(RESULTS, **order) == CSV
    assert to_latex_rows(RESULTS, **order) == LATEX


def test_ties_are_all_bold_missing_cells_are_marked_and_ddof_is_configurable():
    results = {"A": {"t": [1.0, 3.0]}, "B": {"t": [2.0, 2.0], "u": [5.0]}}
    fmt = TableFormat(ddof=1, std_decimals=2)
    assert to_markdown(results, fmt=fmt) == (
        "| Task | A | B |\n|---|---|---|\n"
        "| t | **2 ± 1.41** | **2 ± 0.00** |\n"
        "| u | - | **5 ± 0.00** |\n"
    )


def test_records_group_into_results_and_files_are_written(tmp_path):
    records = [
        {"algorithm": a, "task": t, "seed": s, "return": v}
        for a, tasks in RESULTS.items()
        for t, values in tasks.items()
        for s, v in reversed(list(enumerate(values)))
    ]
    assert results_from_records(records) == RESULTS
    paths = write_tables(RESULTS, tmp_path / "table", ["CVL", "BC"], ["reach-v3", "push-v3"])
    assert paths["markdown"].read_text() == MARKDOWN
    assert paths["csv"].read_text() == CSV
    with pytest.raises(ValueError, match="duplicate"):
        results_from_records(records + records[:1])


def _curve_records():
    rows = []
    for algo, slope in (("BC", 1.0), ("CVL", 2.0)):
        for task in ("reach-v3", "push-v3", "door-open-v3"):
            for seed in range(3):
                for step in range(0, 5001, 1000):
                    rows.append(
                        {
                            "algorithm": algo,
                            "task": task,
                            "seed": seed,
                            "step": step,
                            "return": slope * step / 10 + seed,
                        }
                    )
    # seed 2 of CVL on push stopped before step 5000: that point is not averaged
    return [
        r
        for r in rows
        if not (
            r["algorithm"] == "CVL"
            and r["task"] == "push-v3"
            and r["seed"] == 2
            and r["step"] == 5000
        )
    ]


def test_curve_stats_mean_and_std_over_seeds():
    stats = curve_stats(_curve_records())
    row = stats[(stats.task == "reach-v3") & (stats.algorithm == "BC") & (stats.step == 2000)]
    assert row["mean"].item() == pytest.approx(201.0)  # 200 + mean(0, 1, 2)
    assert row["std"].item() == pytest.approx(np.std([0, 1, 2]))
    push_cvl = stats[(stats.task == "push-v3") & (stats.algorithm == "CVL")]
    assert push_cvl["step"].max() == 4000


def test_learning_curve_png_and_final_returns(tmp_path):
    records = pd.DataFrame(_curve_records())
    path = plot_learning_curves(records, tmp_path / "curves.png", ncols=2)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {row["value"] for row in json.loads((tmp_path / "curves.json").read_text())} == {
        "return"
    }
    with_success = records.assign(success=(records["return"] > 600).astype(float))
    plot_learning_curves(with_success, tmp_path / "both.png", ncols=2)
    numbers = json.loads((tmp_path / "both.json").read_text())
    success = [r for r in numbers if r["value"] == "success"]
    expected = curve_stats(with_success, value="success")
    assert len(success) == len(expected) > 0
    assert [r["mean"] for r in success] == pytest.approx(list(expected["mean"]))
    finals = final_returns(records)
    assert finals["BC"]["reach-v3"] == [500.0, 501.0, 502.0]
    assert finals["CVL"]["push-v3"] == [1000.0, 1001.0, 802.0]
