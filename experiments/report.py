"""`./pants run experiments:report -- --runs runs/sweep --out-dir runs/sweep/report`.

From run folders (or folders above them) to the per-task tables (Markdown + CSV, best in bold),
learning curves and the rliable figures (aggregate intervals, performance profiles, probability
of improvement, sample efficiency).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.report import ReportConfig, report
from cvl_eval.train_setup import ConfigError


def main(argv: list[str] | None = None) -> int:
    config = tyro.cli(ReportConfig, args=argv, description=__doc__)
    try:
        summary = report(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, path in summary["files"].items():
        print(f"{name:<28} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
