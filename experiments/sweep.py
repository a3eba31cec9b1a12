"""`./pants run experiments:sweep -- --data-root data --out-dir runs/sweep --algorithms bc cvl
--tasks drawer-open reach --seeds 0 1 2 --workers 2`: algorithms x tasks x seeds.

Runs are parallel local processes (`--workers`), one folder each
(`<out-dir>/<algorithm>/<task>/seed_<k>`); finished runs are skipped and interrupted ones resume
when the command is run again; `index.json` / `index.csv` list the results at the end.
`cvl_pretrained` pretrains CVL on the reward-free data of related tasks found in the data root.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.sweep import SweepConfig, sweep
from cvl_eval.train_setup import ConfigError


def main(argv: list[str] | None = None) -> int:
    config = tyro.cli(SweepConfig, args=argv, description=__doc__)
    try:
        record = sweep(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(
        f"{record['runs']} runs: {len(record['skipped_finished'])} already finished, "
        f"{len(record['completed'])} completed; index: {record['index_csv']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
