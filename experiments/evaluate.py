"""`./pants run experiments:evaluate -- --checkpoint runs/cvl --episodes 20`: evaluate a learner.

The command is `cvl_eval.console.evaluate` (also `cvl-evaluate` and `python -m cvl_eval evaluate`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.evaluate(argv)


if __name__ == "__main__":
    sys.exit(main())
