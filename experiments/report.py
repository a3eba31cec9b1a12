"""`./pants run experiments:report -- --runs runs/sweep --out-dir runs/sweep/report`.

From run folders (or folders above them) to the per-task tables (Markdown + CSV, best in bold),
learning curves and the rliable figures (aggregate intervals, performance profiles, probability
of improvement, sample efficiency).
"""

from __future__ import annotations

import sys

from cvl_eval.analysis.report import ReportConfig, report
from cvl_eval.cli import run


def _report(config: ReportConfig) -> str:
    files = report(config)["files"]
    return "\n".join(f"{name:<28} {path}" for name, path in files.items())


def main(argv: list[str] | None = None) -> int:
    return run(ReportConfig, _report, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
