"""`./pants run experiments:convert -- --from minari:<id or folder> --to data/<task>`: datasets
in and out of our format.

The command is `cvl_eval.console.convert` (also `cvl-convert` and `python -m cvl_eval convert`);
its `--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.convert(argv)


if __name__ == "__main__":
    sys.exit(main())
