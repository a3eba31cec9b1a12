"""`./pants run experiments:paper -- <experiment> [--full]`: the paper's experiments.

Experiments: `metaworld-states` (BC, CQL, CQL+UDS, CVL; table 3 and the rliable figures),
`metaworld-pixels` (BC, CQL, CVL on four tasks from 84x84 images), `pretraining` (CVL pretrained
on related tasks' reward-free data vs tabula rasa, learning curves), `rff-ablation` (CVL with vs
without random Fourier features), `mountain-car` (Q_NCE vs SAC's Q heatmaps). Each runs data
generation, a sweep and the report in `experiments_out/<experiment>` and resumes when re-run.
The default budget is a CPU-sized subset; `--full` is the paper's (all tasks, 5 seeds, SAC
500k-frame datasets, 100k steps). Presets and budgets:
`cvl_eval.pipelines.paper_presets.PRESETS`.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Union

import tyro

from cvl_eval.cli import run
from cvl_eval.pipelines.paper import run_paper_experiment
from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig

EXPERIMENTS = Union[  # noqa: UP007 - tyro's subcommands: one per preset
    tuple(
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
]


def _paper(config: PaperConfig) -> str:
    result = run_paper_experiment(config)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return json.dumps(result["report"], indent=1)


def main(argv: list[str] | None = None) -> int:
    return run(EXPERIMENTS, _paper, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
