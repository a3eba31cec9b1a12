"""Same-run microbenchmark of SAC update variants: ms per update (sampling included), interleaved.

Setup: synthetic Meta-World-sized transitions (obs 39, actions 4) in a `ReplayBuffer` of 5000,
1 torch thread, `process_settings` as SAC generation sets it, each variant its own learner
(seed 0) and sampler generator. Each round runs ``updates`` updates of every variant in turn;
the table gives the median ms/update over the rounds (the first round, untimed, warms up) and
each variant's speed against ``reference``. Times are the thread's CPU time
(``time.thread_time``): on a shared machine, time spent waiting for a core is not counted, so
neighbours' load moves the numbers much less than wall time (cache sharing still counts).
Variants:

- ``current``: `SACLearner` as it is;
- ``reference``: the optimiser steps as before the lean clip (``clip_grad_norm_`` over
  ``module.parameters()`` and `polyak_update` walking the modules at every step);
- ``no_cat``: ``current`` with a concatenation-free DenseNet layer (``x W_x^T + b`` then
  ``addmm_`` of ``z W_z^T``, from column blocks of the same weight: same parameters and
  checkpoints, different summation order), patched into `DenseMLP.forward` for its turns only;
- ``compiled``: ``current`` with ``compile=True`` (inductor, eager's random draws: the same
  computation up to float rounding); its compilation happens in the untimed round.

It also prints each variant's largest parameter difference from ``current`` after all rounds
(0 where the arithmetic is the same).

Run from the repository root:

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos \\
        python benchmarks/bench_sac_update_variants.py [--hidden 128 128] [--batch-size 256] \\
        [--rounds 15] [--variants current reference no_cat]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from cvl_algos import make_learner
from cvl_algos.common import polyak_update
from cvl_algos.runtime import process_settings
from cvl_algos.sac import SACLearner
from cvl_algos.stages import PolyakStage, submodule
from cvl_data import ReplayBuffer
from cvl_models import mlp

OBS_DIM, ACTION_DIM, CAPACITY = 39, 4, 5000
VARIANTS = ("current", "reference", "no_cat", "compiled")


class ReferenceStepsSAC(SACLearner):
    """SAC with the optimiser steps and polyak averages as before the lean clip."""

    def clip_and_step(self, optimizer, loss, module):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(module.parameters(), self.config.max_grad_norm)
        optimizer.step()
        return norm.detach()

    def run_stages(self, stages, batch):
        polyaks = [s for s in stages if isinstance(s, PolyakStage)]
        metrics = super().run_stages([s for s in stages if not isinstance(s, PolyakStage)], batch)
        modules = self.state_modules()
        for stage in polyaks:  # SAC's polyak stage is its last: same order
            polyak_update(modules[stage.target], submodule(modules, stage.source), stage.tau)
        return metrics


def _no_cat_linear(linear, z, x):
    if z is None:
        return F.linear(x, linear.weight, linear.bias)
    width = z.shape[-1]
    out = F.linear(x, linear.weight[:, width:], linear.bias)
    if out.ndim == 2:
        return out.addmm_(z, linear.weight[:, :width].t())
    return out.add_(F.linear(z, linear.weight[:, :width]))


def no_cat_forward(self, x):
    """`DenseMLP.forward` without the concatenation: ``W [z; x] = W_z z + W_x x``."""
    x = x.to(self.out.weight.dtype)
    z = None
    for linear, norm in zip(self.linears, self.norms, strict=True):
        z = self.act(norm(_no_cat_linear(linear, z, x)))
    return _no_cat_linear(self.out, z, x)


def make_variant(name: str, hidden: tuple[int, ...], batch_size: int):
    sizes = {"hidden": hidden, "batch_size": batch_size}
    if name == "reference":
        return ReferenceStepsSAC((OBS_DIM,), ACTION_DIM, SACLearner.config_cls(**sizes), "cpu", 0)
    extra = {"compile": True} if name == "compiled" else {}
    return make_learner("sac", (OBS_DIM,), ACTION_DIM, "cpu", 0, **sizes, **extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds")
    parser.add_argument("--updates", type=int, default=30, help="updates per variant per round")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS[:3]), choices=VARIANTS)
    args = parser.parse_args()
    hidden, batch = tuple(args.hidden), args.batch_size
    with process_settings(1):
        rng = np.random.default_rng(0)
        buffer = ReplayBuffer(CAPACITY, (OBS_DIM,), ACTION_DIM)
        buffer.add_many(
            rng.standard_normal((CAPACITY, OBS_DIM)),
            rng.uniform(-1, 1, (CAPACITY, ACTION_DIM)),
            rng.standard_normal(CAPACITY),
            rng.standard_normal((CAPACITY, OBS_DIM)),
            np.zeros(CAPACITY),
        )
        learners = {name: make_variant(name, hidden, batch) for name in args.variants}
        generators = {name: torch.Generator().manual_seed(1) for name in args.variants}
        seconds: dict[str, list[float]] = {name: [] for name in args.variants}
        dense_forward = mlp.DenseMLP.forward
        for round_ in range(args.rounds + 1):
            for name, learner in learners.items():
                mlp.DenseMLP.forward = no_cat_forward if name == "no_cat" else dense_forward
                start = time.thread_time()
                for _ in range(args.updates):
                    learner.update(buffer.sample(batch, generators[name]))
                if round_:
                    seconds[name].append((time.thread_time() - start) / args.updates)
        mlp.DenseMLP.forward = dense_forward
    print(
        f"torch {torch.__version__}, 1 thread, SAC hidden {hidden}, batch {batch}, "
        f"{args.rounds} rounds x {args.updates} updates per variant (+1 untimed round)\n"
    )
    base = statistics.median(seconds.get("reference", seconds[args.variants[0]]))
    params = {
        n: torch.cat([p.detach().flatten() for p in learners[n].critic.parameters()])
        for n in args.variants
    }
    print(
        f"{'variant':<11}{'CPU ms/update':>14}{'min':>8}{'max':>8}{'speed':>8}{'max |dparam|':>14}"
    )
    for name in args.variants:
        values = seconds[name]
        diff = (params[name] - params[args.variants[0]]).abs().max().item()
        print(
            f"{name:<11}{1e3 * statistics.median(values):>14.3f}{1e3 * min(values):>8.3f}"
            f"{1e3 * max(values):>8.3f}{base / statistics.median(values):>7.3f}x{diff:>14.2e}"
        )


if __name__ == "__main__":
    main()
