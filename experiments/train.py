"""`./pants run experiments:train -- --dataset data/drawer-open-v3 --out-dir runs/cvl --algorithm cvl`.

Trains one offline algorithm (bc, cql, cql_uds, cvl, cvl_mc; CVL pretrained on reward-free
related-task data with `--pretrain-datasets`) on a state or pixel dataset, with a progress
bar, TensorBoard and CSV logs, periodic evaluation and checkpoints in the run folder.
`--resume` continues a stopped run exactly (Ctrl-C stops gracefully after a checkpoint).
Learner hyperparameters: `--hidden`, `--batch-size`, `--overrides key=value ...`.
"""

from __future__ import annotations

import json
import sys

from cvl_eval.cli import run
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train


def _train(config: TrainConfig) -> str:
    results = train(config)
    summary = {k: results[k] for k in ("label", "task", "seed", "steps", "wall_time_s")}
    summary.update({k: results["final_eval"][k] for k in ("mean_return", "success_rate")})
    return json.dumps({**summary, "run": config.out_dir})


def main(argv: list[str] | None = None) -> int:
    return run(TrainConfig, _train, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
