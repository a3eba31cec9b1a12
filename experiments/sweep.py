"""`./pants run experiments:sweep -- --data-root data --out-dir runs/sweep --algorithms bc cvl
--tasks drawer-open reach --seeds 0 1 2 --workers 2`: algorithms x tasks x seeds.

Runs are parallel local processes (`--workers`), one folder each
(`<out-dir>/<algorithm>/<task>/seed_<k>`); finished runs are skipped and interrupted ones resume
when the command is run again; `index.json` / `index.csv` list the results at the end.
`cvl_pretrained` pretrains CVL on the reward-free data of related tasks found in the data root.
"""

from __future__ import annotations

import sys

from cvl_eval.cli import run
from cvl_eval.pipelines.sweep import SweepConfig, sweep


def _sweep(config: SweepConfig) -> str:
    record = sweep(config)
    return (
        f"{record['runs']} runs: {len(record['skipped_finished'])} already finished, "
        f"{len(record['completed'])} completed; index: {record['index_csv']}"
    )


def main(argv: list[str] | None = None) -> int:
    return run(SweepConfig, _sweep, argv, __doc__, failure=RuntimeError)


if __name__ == "__main__":
    sys.exit(main())
