"""`./pants run experiments:sweep -- --data-root data --out-dir runs/sweep`: algorithms x tasks x seeds.

The command is `cvl_eval.console.sweep` (also `cvl-sweep` and `python -m cvl_eval sweep`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.sweep(argv)


if __name__ == "__main__":
    sys.exit(main())
