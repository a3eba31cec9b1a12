"""`./pants run experiments:evaluate -- --checkpoint runs/cvl --episodes 20`: evaluate a learner.

Loads a run folder's final checkpoint (or any `learner.save` folder; give `--task` when it is
not inside a run folder), runs N episodes with fixed seeds on its task and writes the
per-episode returns, successes and lengths as JSON (`--out`; default inside the checkpoint).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.evaluation import EvaluateConfig, evaluate_checkpoint, format_result
from cvl_eval.train_setup import ConfigError


def main(argv: list[str] | None = None) -> int:
    config = tyro.cli(EvaluateConfig, args=argv, description=__doc__)
    try:
        document = evaluate_checkpoint(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_result(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
