"""`./pants run experiments:paper -- <experiment> [--full]`: the paper's experiments.

Experiments: `metaworld-states` (BC, CQL, CQL+UDS, CVL; table 3 and the rliable figures),
`metaworld-pixels` (BC, CQL, CVL on four tasks from 84x84 images), `pretraining` (CVL pretrained
on related tasks' reward-free data vs tabula rasa, learning curves), `rff-ablation` (CVL with vs
without random Fourier features), `mountain-car` (Q_NCE vs SAC's Q heatmaps). Each runs data
generation, a sweep and the report in `experiments_out/<experiment>` and resumes when re-run.
The default budget is a CPU-sized subset; `--full` is the paper's (all tasks, 5 seeds, SAC
500k-frame datasets, 100k steps). Presets and budgets: `cvl_eval.paper.PRESETS`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Union

os.environ.setdefault("MUJOCO_GL", "egl")

import tyro

from cvl_eval.paper import PRESETS, PaperConfig, run_paper_experiment
from cvl_eval.train_setup import ConfigError


def main(argv: list[str] | None = None) -> int:
    choices = tuple(
        Annotated[
            PaperConfig,
            tyro.conf.subcommand(
                name.replace("_", "-"),
                default=PaperConfig(experiment=name),
                description=preset.description,
            ),
        ]
        for name, preset in PRESETS.items()
    )
    config = tyro.cli(Union[choices], args=argv, description=__doc__)  # noqa: UP007
    try:
        result = run_paper_experiment(config)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result["report"], indent=1))
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
