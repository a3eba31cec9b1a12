"""`./pants run experiments:generate -- --tasks drawer-open reach --out-dir data`: datasets.

Kinds (`--kind`): `scripted` (Meta-World's scripted expert with Gaussian noise and
epsilon-random actions; quick) and `sac` (the paper's protocol: SAC trained online for
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
