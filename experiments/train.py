"""`./pants run experiments:train -- --dataset data/drawer-open-v3 --out-dir runs/cvl --algorithm cvl`: one offline training run.

The command is `cvl_eval.console.train` (also `cvl-train` and `python -m cvl_eval train`); its
`--help` describes it.
"""

from __future__ import annotations

import sys

from cvl_eval import console


def main(argv: list[str] | None = None) -> int:
    return console.train(argv)


if __name__ == "__main__":
    sys.exit(main())
