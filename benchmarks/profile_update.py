"""Where one learner update spends its CPU time: a `torch.profiler` breakdown as Markdown.

Sizes: Meta-World states (obs 39, actions 4), 256 x 256 hidden, batch 512 (CVL: 512 uniform
anchors), 1 torch thread by default; CQL after its warm start (``policy_eval_start=0``).

What is profiled: ``steps`` updates ``learner.update(batch)`` on one fixed synthetic batch
(sampling excluded; ``bench_vs_d3rlpy.py`` times it with sampling), after ``warmup`` untimed
ones. Each ATen op's self CPU time is put in one bucket:

- ``matmul``: ``addmm``, ``addmm_``, ``mm``, ``bmm``, ``baddbmm``, ``addmv``, ``dot`` (forward and
  backward);
- ``optimizer``: every op run inside ``Optimizer.step`` (Adam's arithmetic) or ``zero_grad``;
- ``norm+clip``: ``clip_grad_norm_``'s ops (the per-tensor norms, the scale);
- ``layernorm``: ``native_layer_norm`` and its backward;
- ``elementwise/other``: everything else (activations, the tanh-Gaussian, losses, copies,
  concatenations, reductions, RNG).

``python/dispatch overhead`` is the profiled wall time per update minus the ops' summed self
CPU time: the interpreter, autograd's bookkeeping outside ops and the profiler's own cost (which
inflates it; the unprofiled ms/update is printed for comparison).

Run: ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos python
benchmarks/profile_update.py [--algos bc cql cvl] [--steps 20] >
docs/performance/profile-<commit>.md`` (docs/performance.md, "Profiles", links each one)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.bench_algos import make_batch  # noqa: E402
from cvl_algos import make_learner  # noqa: E402

MATMUL = {
    "aten::addmm",
    "aten::addmm_",  # CQL's hand-written critic adds its chunks' weight gradients up with it
    "aten::mm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::addmv",
    "aten::dot",
}
LAYERNORM = {"aten::native_layer_norm", "aten::native_layer_norm_backward"}
OVERRIDES = {
    "bc": {},
    "cql": {"policy_eval_start": 0},
    "cql_manual": {"policy_eval_start": 0, "manual_gradients": True},  # needs --torso mlp
    "sac": {},
    "cvl": {"sampler_mode": "uniform", "batch_size": 512},
}
LEARNERS = {"cql_manual": "cql"}
"""Profiled names that are a registered learner with other settings."""


def build(name: str, torso: str = "densenet"):
    """The learner and a fixed batch of its kind at the profile's sizes."""
    learner = make_learner(
        LEARNERS.get(name, name),
        (39,),
        4,
        seed=0,
        hidden=(256, 256),
        **({} if torso == "densenet" else {"torso": torso}),
        **OVERRIDES[name],
    )
    batch = make_batch(learner.sampler_kind, learner.config.batch_size, (39,), 4, "cpu")
    return learner, batch


def _enclosing(event) -> str | None:
    """The optimizer or clipping scope an op event runs in, if any."""
    parent = event.cpu_parent
    while parent is not None:
        name = parent.name
        if name.startswith("Optimizer.step") or name.startswith("Optimizer.zero_grad"):
            return "optimizer"
        if "clip_grad_norm" in name:
            return "norm+clip"
        parent = parent.cpu_parent
    return None


def bucket(event) -> str:
    scope = _enclosing(event)
    if scope is not None:
        return scope
    if event.name in MATMUL:
        return "matmul"
    if event.name in LAYERNORM:
        return "layernorm"
    return "elementwise/other"


def profile_learner(name: str, steps: int, warmup: int, torso: str = "densenet") -> dict:
    """Unprofiled ms/update, and per-bucket and per-op self CPU ms per update under the
    profiler, and the profiled wall ms per update."""
    learner, batch = build(name, torso)
    for _ in range(warmup):
        learner.update(batch)
    start = time.perf_counter()
    for _ in range(steps):
        learner.update(batch)
    plain_ms = 1e3 * (time.perf_counter() - start) / steps
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            learner.update(batch)
        wall_ms = 1e3 * (time.perf_counter() - start) / steps
    buckets: dict[str, float] = defaultdict(float)
    ops: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        self_ms = event.self_cpu_time_total / 1e3 / steps
        buckets[bucket(event)] += self_ms
        ops[event.name] += self_ms
    return {"plain_ms": plain_ms, "wall_ms": wall_ms, "buckets": buckets, "ops": ops}


def markdown(name: str, result: dict, top: int) -> str:
    wall, buckets = result["wall_ms"], result["buckets"]
    overhead = wall - sum(buckets.values())
    lines = [
        f"### {name}",
        "",
        f"{result['plain_ms']:.2f} ms/update unprofiled, {wall:.2f} ms/update profiled.",
        "",
        "| bucket | ms/update | share of profiled wall |",
        "|---|---:|---:|",
    ]
    rows = sorted(buckets.items(), key=lambda kv: -kv[1]) + [("python/dispatch overhead", overhead)]
    lines += [f"| {key} | {ms:.2f} | {100 * ms / wall:.0f}% |" for key, ms in rows]
    lines += [
        "",
        f"Top {top} ops by self CPU time:",
        "",
        "| op | ms/update | share |",
        "|---|---:|---:|",
    ]
    for op, ms in sorted(result["ops"].items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| `{op}` | {ms:.2f} | {100 * ms / wall:.0f}% |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=list(OVERRIDES), choices=list(OVERRIDES))
    parser.add_argument("--steps", type=int, default=20, help="profiled updates")
    parser.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--top", type=int, default=12, help="ops listed per learner")
    parser.add_argument(
        "--torso", choices=["densenet", "mlp"], default="densenet", help="the learners' MLP torso"
    )
    args = parser.parse_args()
    with process_settings(args.threads):  # threads, and malloc as training sets it
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark, under the process settings training uses (`cvl_algos.runtime`)."""
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), hidden 256x256, "
        f"torso {args.torso}, batch 512, {args.steps} profiled updates after {args.warmup} "
        "warm-up\n"
    )
    for name in args.algos:
        result = profile_learner(name, args.steps, args.warmup, args.torso)
        print(markdown(name, result, args.top))


if __name__ == "__main__":
    main()
