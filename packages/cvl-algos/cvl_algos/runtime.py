"""Process settings for a training job: torch's CPU thread count and glibc's ``malloc``.

One place that sets up a process to train (`cvl_eval`'s training loop, its SAC data generation
and the throughput benchmarks use it), so every one of them measures and runs the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from cvl_algos.malloc import retain_freed_memory

__all__ = ["process_settings"]


@contextlib.contextmanager
def process_settings(num_threads: int | None = None) -> Iterator[None]:
    """torch's CPU thread count set to ``num_threads`` for the block (None or 0: unchanged),
    and glibc's ``malloc`` keeping freed memory for the next update (`cvl_algos.malloc`: a CVL
    training run +12% steps/s on CPU; process-wide, left on after the block; ``CVL_RETAIN_FREED_MEMORY=0``
    disables it)."""
    retain_freed_memory()
    if not num_threads:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
