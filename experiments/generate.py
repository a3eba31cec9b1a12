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
import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.generation import GenerateConfig, generate_datasets
from cvl_eval.train_setup import ConfigError


def main(argv: list[str] | None = None) -> int:
    config = tyro.cli(GenerateConfig, args=argv, description=__doc__)
    try:
        result = generate_datasets(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
