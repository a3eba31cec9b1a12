"""`./pants run experiments:quickstart`: CVL vs BC vs a random policy on one Meta-World task.

The command is `cvl_eval.console.quickstart` (also `cvl-quickstart` and `python -m cvl_eval quickstart`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.quickstart(argv)


if __name__ == "__main__":
    sys.exit(main())
