"""`./pants run experiments:generate -- --tasks drawer-open reach --out-dir data`: datasets.

The command is `cvl_eval.console.generate` (also `cvl-generate` and `python -m cvl_eval generate`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.generate(argv)


if __name__ == "__main__":
    sys.exit(main())
