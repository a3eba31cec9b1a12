"""`./pants run experiments:report -- --runs runs/sweep --out-dir runs/sweep/report`: tables and figures.

The command is `cvl_eval.console.report` (also `cvl-report` and `python -m cvl_eval report`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.report(argv)


if __name__ == "__main__":
    sys.exit(main())
