"""FLOP bound of an update: its matmul FLOPs against this machine's measured GEMM throughput.

Shared by the throughput benchmarks (`bench_vs_d3rlpy`, `bench_seeds`). ``update_flops`` counts
one call with ``torch.utils.flop_counter.FlopCounterMode`` (matmuls, convolutions, attention:
what it counts), ``gemm_flops_per_s`` times float32 GEMMs of the given shapes at the current
thread count and returns the best rate; ``peak / flops`` is then the steps/s of an update made
of nothing but its matmuls at that rate, an upper bound for any implementation of the same
arithmetic on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch
from torch.utils.flop_counter import FlopCounterMode


def update_flops(step: Callable[[], object]) -> int:
    """FLOPs of one call of ``step`` as ``FlopCounterMode`` counts them."""
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    return counter.get_total_flops()


def gemm_flops_per_s(
    shapes: Iterable[tuple[int, int, int]], repeats: int = 20, device: str = "cpu"
) -> float:
    """Best float32 ``(rows x inner) @ (inner x cols)`` throughput over ``shapes``, FLOP/s, on
    ``device`` (CUDA is synchronised around the timed loop)."""
    best = 0.0
    for rows, inner, cols in shapes:
        a = torch.randn(rows, inner, device=device)
        b = torch.randn(inner, cols, device=device)
        torch.mm(a, b)  # warm-up
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repeats):
            torch.mm(a, b)
        synchronize(device)
        seconds = (time.perf_counter() - start) / repeats
        best = max(best, 2 * rows * inner * cols / seconds)
    return best


def synchronize(device: str | torch.device) -> None:
    """Wait for ``device``'s queued work (CUDA); nothing on CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
