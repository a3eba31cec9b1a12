"""FLOP bound of an update: its matmul FLOPs against this machine's measured GEMM throughput.

Shared by the throughput benchmarks (`bench_vs_d3rlpy`, `bench_seeds`). ``update_flops`` counts
one call with ``torch.utils.flop_counter.FlopCounterMode`` (matmuls, convolutions, attention:
what it counts), ``gemm_flops_per_s`` times float32 GEMMs of the given shapes at the current
thread count and returns the best rate; ``peak / flops`` is then the steps/s of an update made
of nothing but its matmuls at that rate, an upper bound for any implementation of the same
arithmetic on this machine.

``gemm_replay_seconds`` is the tighter bound: it records the matrix products one call makes
(``mm``, ``addmm``, ``bmm``, ``baddbmm``) with copies of their operands, in their layouts, and
times running exactly those products again. An update's products are not all the square,
cache-friendly shapes ``gemm_flops_per_s`` measures: a backward pass also multiplies by
transposed activations (the weight gradients), by a width-1 output layer's gradient (an outer
product) and through a narrow input layer, which run below the best rate. The replay time is
what the update's matmuls alone cost at their own shapes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

MATMULS = (
    torch.ops.aten.mm.default,
    torch.ops.aten.mm.out,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
    torch.ops.aten.addmm_.default,
)
"""The ATen matrix products `gemm_replay_seconds` records (``mm.out``: the hand-written
gradients of `cvl_algos.sac_manual`; ``addmm_``: `cvl_algos.cql_manual`'s chunks)."""


def _inplace_addmm_flops(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """``2 m k n`` of ``self.addmm_(a, b)``, ``a`` (m, k), ``b`` (k, n)."""
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


INPLACE_MATMULS = {torch.ops.aten.addmm_: _inplace_addmm_flops}
"""In-place products ``FlopCounterMode`` does not count by itself: ``addmm_``, which
`cvl_algos.cql_manual` uses to add its chunks' weight gradients up."""


def update_flops(step: Callable[[], object]) -> int:
    """FLOPs of one call of ``step`` as ``FlopCounterMode`` counts them, plus the in-place
    products it leaves out (`INPLACE_MATMULS`)."""
    counter = FlopCounterMode(display=False, custom_mapping=INPLACE_MATMULS)
    with counter:
        step()
    return counter.get_total_flops()


def dispatched_ops(step: Callable[[], object]) -> int:
    """ATen operators one call of ``step`` dispatches (forward, backward and optimiser ops as
    the dispatcher sees them, views and detaches included; kernels a fused op runs inside
    count once). Where an update is not bound by its matmuls, each op costs microseconds of
    dispatch and bookkeeping whatever its size, so the count says how much there is to pay."""
    counter = _OpCounter()
    with counter:
        step()
    return counter.count


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


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


class _MatmulRecorder(TorchDispatchMode):
    """Records each matrix product a block dispatches, with copies of its tensor operands (an
    ``out=`` tensor too, so a replay writes into its copy)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[object, list[object], dict[str, object]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in MATMULS:
            operands = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
            copied = {
                k: v.detach().clone() if isinstance(v, torch.Tensor) else v
                for k, v in kwargs.items()
            }
            self.calls.append((func, operands, copied))
        return func(*args, **kwargs)


def gemm_replay_seconds(
    step: Callable[[], object], repeats: int = 20, device: str = "cpu"
) -> tuple[float, int]:
    """Fastest of ``repeats`` replays of the matrix products of one call of ``step`` (operands
    copied in their layouts; `MATMULS`), in seconds, and how many products there were (the
    fastest, as a bound should be: a neighbour's load only slows a replay down). ``step`` runs
    once, recorded."""
    recorder = _MatmulRecorder()
    with recorder:
        step()
    calls = recorder.calls

    def replay() -> None:
        for func, operands, kwargs in calls:
            func(*operands, **kwargs)

    replay()  # warm-up
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        replay()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return min(times), len(calls)


def synchronize(device: str | torch.device) -> None:
    """Wait for ``device``'s queued work (CUDA); nothing on CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
