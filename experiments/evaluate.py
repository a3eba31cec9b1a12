"""`./pants run experiments:evaluate -- --checkpoint runs/cvl --episodes 20`: evaluate a learner.

Loads a run folder's final checkpoint (or any `learner.save` folder; give `--task` when it is
not inside a run folder), runs N episodes with fixed seeds on its task and writes the
per-episode returns, successes and lengths as JSON (`--out`; default inside the checkpoint).
"""

from __future__ import annotations

import sys

from cvl_eval.cli import run
from cvl_eval.rollout.checkpoint import EvaluateConfig, evaluate_checkpoint, format_result


def main(argv: list[str] | None = None) -> int:
    return run(EvaluateConfig, lambda c: format_result(evaluate_checkpoint(c)), argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
