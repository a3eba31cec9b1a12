"""Where the losses' random draws come from: torch's global RNG, or a tape of per-seed draws.

Every random draw of a training update (policy samples, CQL's uniform actions) goes through
:func:`standard_normal` / :func:`uniform`. Outside :func:`noise_source` they are exactly
``torch.randn`` / ``torch.rand`` (the learner's generator is swapped into the global RNG, see
`cvl_algos.base`). Under ``torch.func.vmap`` one global RNG cannot give each seed the draws it
would take alone, so the vectorised learner (`cvl_algos.vectorised`) records the draws of an
update once (kind, shape, dtype), draws each seed's from that seed's generator in the same order
outside ``vmap``, and replays them inside: a seed trained among K gets the very numbers it gets
alone. A draw that bypasses these functions raises inside ``vmap`` (its default
``randomness="error"``), so nothing draws from the wrong stream silently.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from typing import Protocol

import torch

__all__ = [
    "NoiseSource",
    "noise_source",
    "observation_seed",
    "standard_normal",
    "uniform",
    "uniform_actions",
]


class NoiseSource(Protocol):
    """Serves a draw of ``kind`` ("normal" or "uniform") and ``shape``; see `noise_source`."""

    def draw(
        self, kind: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device
    ) -> torch.Tensor: ...


_SOURCES: list[NoiseSource] = []
"""The active sources, innermost last (a plain list: ``torch.compile`` traces it, not a
``ContextVar``)."""


@contextlib.contextmanager
def noise_source(source: NoiseSource) -> Iterator[None]:
    """Serve every :func:`standard_normal` / :func:`uniform` of the block from ``source``."""
    _SOURCES.append(source)
    try:
        yield
    finally:
        _SOURCES.pop()


def standard_normal(
    shape: Sequence[int], dtype: torch.dtype | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``torch.randn(shape)``, or the current noise source's draw."""
    return _draw("normal", shape, dtype, device)


def uniform(
    shape: Sequence[int], dtype: torch.dtype | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``torch.rand(shape)`` (uniform on [0, 1)), or the current noise source's draw."""
    return _draw("uniform", shape, dtype, device)


def uniform_actions(
    shape: Sequence[int], dtype: torch.dtype | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Actions uniform on the action box ``[-1, 1)^A`` (``shape`` ends in A): ``2 u - 1`` with
    ``u`` from :func:`uniform`."""
    return uniform(shape, dtype, device) * 2.0 - 1.0


def observation_seed(obs: torch.Tensor, salt: int) -> int:
    """A seed in [0, 2^63) that is a pure function of ``salt`` and ``obs``'s shape, dtype and
    values: acting noise drawn from it is new at every observation and the same for the same one,
    so acting stays reproducible without a generator that carries state between calls. Reads
    ``obs`` on the host (one sync)."""
    data = obs.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{int(salt)}|{tuple(obs.shape)}|{obs.dtype}|".encode())
    digest.update(data.numpy().tobytes())
    return int.from_bytes(digest.digest(), "little") & ((1 << 63) - 1)


def _draw(kind, shape, dtype, device) -> torch.Tensor:
    shape = tuple(int(s) for s in shape)
    dtype = dtype or torch.get_default_dtype()
    device = torch.device(device)
    if _SOURCES:
        return _SOURCES[-1].draw(kind, shape, dtype, device)
    if kind == "normal":
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.rand(shape, dtype=dtype, device=device)
