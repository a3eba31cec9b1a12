"""The flags of ``cvl-convert`` (`cvl_eval.console.convert`): source, target, and what the
source may not say about itself (`cvl_data.ConvertOptions`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated

import tyro

from cvl_data import ConvertOptions
from cvl_data import convert as convert_dataset

__all__ = ["ConvertArgs", "run_convert"]


@dataclass(frozen=True)
class ConvertArgs:
    """Source, target, and what the source may not say about itself."""

    from_: Annotated[str, tyro.conf.arg(name="from")]
    """Source: minari:<id or folder>, <file>.npz, <file>.hdf5, or our dataset folder."""
    to: str
    """Target: our dataset folder, minari:<id>, or <file>.npz."""
    options: Annotated[ConvertOptions, tyro.conf.arg(name="")] = ConvertOptions()


def run_convert(args: ConvertArgs) -> str:
    """Convert; the JSON summary the command prints."""
    return json.dumps(convert_dataset(args.from_, args.to, args.options), indent=1)
