"""Each seed's random draws for a vectorised update, in the order it would draw them alone.

`RecordingSource` learns the kinds and shapes an update stage draws (through
`cvl_models.noise`, serving zeros); `draw_tape` takes those draws from each seed's own generator, outside ``vmap``,
stacked ``(K, *shape)``; inside ``vmap`` `TapeSource` hands each seed its slice in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from cvl_models.noise import standard_normal, uniform

__all__ = ["Draw", "RecordingSource", "TapeSource", "draw_tape"]


@dataclass(frozen=True)
class Draw:
    """One random draw: ``kind`` ("normal" / "uniform"), shape, dtype, device."""

    kind: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device


@dataclass
class RecordingSource:
    """A noise source that records the draws asked of it and serves zeros."""

    draws: list[Draw] = field(default_factory=list)

    def draw(self, kind, shape, dtype, device) -> torch.Tensor:
        self.draws.append(Draw(kind, shape, dtype, device))
        return torch.zeros(shape, dtype=dtype, device=device)


class TapeSource:
    """Serves the recorded draws from ``tape`` (one tensor per draw, in order), checking each."""

    def __init__(self, draws: Sequence[Draw], tape: Sequence[torch.Tensor]) -> None:
        self.draws, self.tape, self.position = list(draws), list(tape), 0

    def draw(self, kind, shape, dtype, device) -> torch.Tensor:
        if self.position >= len(self.draws):
            raise RuntimeError(
                f"vectorised update: draw {self.position + 1} ({kind} {shape}) was not recorded; "
                "the stage's draws must depend only on its key and the batch shapes"
            )
        want = self.draws[self.position]
        if (want.kind, want.shape, want.dtype) != (kind, shape, dtype):
            raise RuntimeError(
                f"vectorised update: draw {self.position + 1} is {kind} {shape} {dtype}, the "
                f"recorded one {want.kind} {want.shape} {want.dtype}"
            )
        value = self.tape[self.position]
        self.position += 1
        return value

    def check_used_up(self) -> None:
        if self.position != len(self.draws):
            raise RuntimeError(
                f"vectorised update: {len(self.draws) - self.position} recorded draws unused"
            )


def draw_tape(draws: Sequence[Draw], learners: Sequence) -> list[torch.Tensor]:
    """``draws`` taken from each learner's own RNG (its ``rng_scope``), stacked ``(K, *shape)``:
    the numbers each seed would draw in the same update trained alone."""
    if not draws:  # nothing to draw: leave every seed's RNG alone (no state swaps)
        return []
    per_seed = []
    for learner in learners:
        with learner.rng_scope():
            per_seed.append([_take(d) for d in draws])
    return [torch.stack(column) for column in zip(*per_seed, strict=True)]


def _take(draw: Draw) -> torch.Tensor:
    fn = standard_normal if draw.kind == "normal" else uniform
    return fn(draw.shape, dtype=draw.dtype, device=draw.device)
