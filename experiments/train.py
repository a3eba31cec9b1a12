"""`./pants run experiments:train -- --dataset data/drawer-open-v3 --out-dir runs/cvl --algorithm cvl`.

Trains one offline algorithm (bc, cql, cql_uds, cvl, cvl_mc; CVL pretrained on reward-free
related-task data with `--pretrain-datasets`) on a state or pixel dataset, with a progress
bar, TensorBoard and CSV logs, periodic evaluation and checkpoints in the run folder.
`--resume` continues a stopped run exactly (Ctrl-C stops gracefully after a checkpoint).
Learner hyperparameters: `--hidden`, `--batch-size`, `--overrides key=value ...`.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.train_setup import ConfigError, TrainConfig, TrainingStopped
from cvl_eval.training import train


def main(argv: list[str] | None = None) -> int:
    config = tyro.cli(TrainConfig, args=argv, description=__doc__)
    try:
        results = train(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except TrainingStopped as stopped:
        print(str(stopped), file=sys.stderr)
        return 130
    summary = {k: results[k] for k in ("label", "task", "seed", "steps", "wall_time_s")}
    summary.update({k: results["final_eval"][k] for k in ("mean_return", "success_rate")})
    print(json.dumps({**summary, "run": config.out_dir}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
