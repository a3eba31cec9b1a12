"""`./pants run experiments:generate -- --tasks drawer-open reach --out-dir data`: datasets.

Kinds (`--kind`): `scripted` (Meta-World's scripted expert with Gaussian noise and
epsilon-random actions; quick), `mixture` (whole episodes from several behaviours: the task's
noisy expert, other tasks' experts in this task's environment, random actions, saved checkpoints;
`--sources 'expert,weight=0.25' 'expert:drawer-close,weight=0.5' 'random,weight=0.25'`, default
the task's mixture of the mixed-quality suite; the per-source return and success are printed and
kept in `generation.json`), `curriculum` (a replay-like buffer: the task's expert with noise and
epsilon annealed from `--curriculum-sigma 1.0 0.3` / `--curriculum-epsilon 1.0 0.1`, random to
expert, across the episodes) and `sac` (the paper's protocol: SAC trained online for
`--frames` steps, its whole replay buffer is the dataset; Meta-World tasks and
MountainCarContinuous-v0). `--pixels` also writes 84x84 frames (same episodes) to
`<out-dir>/pixels/<task>`. Datasets land in `<out-dir>/<task>` (the `--data-root` of sweeps);
an interrupted generation resumes when the command is run again.
"""

from __future__ import annotations

import json
import sys

from cvl_eval.cli import run
from cvl_eval.datagen.dispatch import GenerateConfig, generate_datasets


def main(argv: list[str] | None = None) -> int:
    return run(GenerateConfig, lambda c: json.dumps(generate_datasets(c), indent=1), argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
