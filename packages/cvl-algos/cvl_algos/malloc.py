"""Keep freed memory in the process: glibc ``malloc`` settings for training loops.

Every update allocates and frees the same large tensors (CQL's 31 actions x batch x width
activations, CVL's batch x batch logits and their gradients). By default glibc's ``malloc``
serves blocks above a moving threshold with fresh ``mmap``s and returns free memory at the top
of its heap to the OS, so the next update's first write to those pages faults them in again
(the kernel zeroes each 4 KiB page). Measured on the 2-core CPU machine (1 thread, 256 x 256,
batch 512, drawer-open data): a bare CVL update loop had ~30k minor page faults and ~55 ms of
system time per update, and with `retain_freed_memory` fewer than one fault and 1.3-1.5x the
steps/s (A/B in separate processes); a real ``cvl-train`` CVL run went from 5.8-6.3 to 6.7
steps/s (+12%). How much a process gains depends on what it allocated before (glibc raises its
mmap threshold as large blocks are freed); BC and CQL moved within noise. Values are untouched
(where memory comes from changes no number), and the peak resident memory of those runs moved
by ~1% (525 -> 531 MB for CVL).

The two settings (``mallopt``): ``M_MMAP_THRESHOLD`` = 32 MiB (glibc's maximum; larger blocks
still get their own ``mmap``) and ``M_TRIM_THRESHOLD`` = 1 GiB (freed memory up to that stays
in the heap for the next update). They are process-wide and apply to later allocations.
Training (`cvl_eval`) and the throughput benchmarks call `retain_freed_memory` once per
process; ``CVL_RETAIN_FREED_MEMORY=0`` in the environment turns it off (glibc's defaults).
Elsewhere than glibc (macOS, musl) it does nothing and says so by returning False.
"""

from __future__ import annotations

import ctypes
import os
import platform

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "ENV_VAR", "retain_freed_memory"]

MMAP_THRESHOLD = 32 * 2**20
"""Bytes; blocks up to this come from the heap (glibc refuses more: ``HEAP_MAX_SIZE / 2``)."""
TRIM_THRESHOLD = 2**30
"""Bytes of free memory at the top of the heap kept before any is returned to the OS."""
ENV_VAR = "CVL_RETAIN_FREED_MEMORY"
"""Set to ``0`` to leave glibc's defaults alone."""

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
_M_MMAP_THRESHOLD = -3
_applied = False


def retain_freed_memory() -> bool:
    """Set glibc's ``malloc`` to keep freed memory for reuse (module docstring); True when the
    settings are in force in this process, False when not (not glibc, or ``ENV_VAR=0``).
    Idempotent."""
    global _applied
    if _applied:
        return True
    if os.environ.get(ENV_VAR, "1").strip() == "0":
        return False
    if platform.system() != "Linux":
        return False
    libc = ctypes.CDLL(None)  # the C library this interpreter runs on
    if not hasattr(libc, "gnu_get_libc_version"):  # not glibc (e.g. musl)
        return False
    # both: setting the trim threshold alone also freezes the mmap threshold at its 128 KiB
    # start, which sends more blocks to mmap, not fewer (measured: ~2.5x the faults)
    ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    _applied = ok
    return ok
