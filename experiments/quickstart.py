"""`./pants run experiments:quickstart`: CVL vs BC vs a random policy on one Meta-World task, on CPU.

Generates a small noisy-expert dataset (default: drawer-open, 20 episodes), trains CVL and BC
on it, evaluates both and a random policy on the same episodes, and writes a run folder with
metrics JSON, learning curves, an rliable interval plot and a per-task table; prints a summary.
About 3.5 minutes on a 2-core CPU (measured: 217 s with the default 1 torch thread).
Flags choose the task, the budget and the output folder, e.g.
`./pants run experiments:quickstart -- --task reach --steps 2000 --out-dir runs/qs-reach`.
Running it again in the same folder continues (finished stages are skipped).
"""

from __future__ import annotations

import sys

from cvl_eval.cli import run
from cvl_eval.pipelines.quickstart import QuickstartConfig, quickstart


def _quickstart(config: QuickstartConfig) -> None:
    quickstart(config)  # prints its own summary


def main(argv: list[str] | None = None) -> int:
    return run(QuickstartConfig, _quickstart, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
