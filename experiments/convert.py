"""`./pants run experiments:convert -- --from minari:<id or folder> --to data/<task>`: datasets
in and out of our format.

Endpoints: `minari:<id or folder>` (a local Minari dataset; as a target, an id written under
`MINARI_DATASETS_PATH`, default `~/.minari/datasets`), a D4RL-style `<file>.npz` (both ways) or
`<file>.hdf5` (source), and our dataset folder (one side is always ours). Examples:

    --from minari:mujoco/hopper/expert-v0 --to data/hopper
    --from data/reach-v3 --to minari:cvl/reach-v0
    --from hopper.hdf5 --to data/hopper --task Hopper-v5 --env-id Hopper-v5 \\
        --action-low -1 --action-high 1
    --from data/reach-v3 --to reach.npz

Minari needs `pip install 'cvl-data[minari]'`. Prints a JSON summary; errors exit with 2.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Annotated

import tyro

from cvl_data import ConvertOptions, convert
from cvl_eval.cli import run


@dataclass(frozen=True)
class ConvertArgs:
    """Source, target, and what the source may not say about itself."""

    from_: Annotated[str, tyro.conf.arg(name="from")]
    """Source: minari:<id or folder>, <file>.npz, <file>.hdf5, or our dataset folder."""
    to: str
    """Target: our dataset folder, minari:<id>, or <file>.npz."""
    options: Annotated[ConvertOptions, tyro.conf.arg(name="")] = ConvertOptions()


def main(argv: list[str] | None = None) -> int:
    """Errors (`DatasetError`, `OSError`, ...) print one ``error:`` line and exit 2, as every
    command does (`cvl_eval.cli.run`; ``--debug`` shows the traceback)."""

    def work(args: ConvertArgs) -> str:
        return json.dumps(convert(args.from_, args.to, args.options), indent=1)

    return run(ConvertArgs, work, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
