"""`./pants run experiments:paper -- <experiment> [--full]`: the paper's experiments.

The command is `cvl_eval.console.paper` (also `cvl-paper` and `python -m cvl_eval paper`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.paper(argv)


if __name__ == "__main__":
    sys.exit(main())
