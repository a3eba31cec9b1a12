"""The SAC update variants `bench_sac_update_variants.py` times and `sac_update_checks.py`
checks, each a learner built by `make_variant` (seed 0) whose forward `patched` sets for its turns:


- ``current``: `SACLearner` as it is;
- ``reference``: the optimiser steps as before the lean clip (``clip_grad_norm_`` over
  ``module.parameters()`` and `polyak_update` walking the modules at every step);
- ``no_cat``: ``current`` with a concatenation-free DenseNet layer (``x W_x^T + b`` then
  ``addmm_`` of ``z W_z^T``, from column blocks of the same weight: same parameters and
  checkpoints, different summation order), patched into `DenseMLP.forward` for its turns only;
- ``compiled``: ``current`` with ``compile=True`` (inductor, eager's random draws: the same
  computation up to float rounding); its compilation happens in the untimed round;
- ``current_mlp``: ``current`` with ``torso="mlp"`` (plain Linear+ReLU MLPs, SB3's architecture);
- ``manual_mlp``: ``current_mlp`` with ``manual_gradients=True``: the same update with
  hand-written backward passes instead of autograd (`cvl_algos.sac_manual.ManualSACUpdate`:
  explicit products on saved activations, ReLU masks, the same clipped fused-Adam steps);
- ``manual_dense``: ``current`` (the DenseNet with LayerNorm) with ``manual_gradients=True``:
  the same hand-written update with the DenseNet's helpers (`cvl_algos.sac_manual_torso`,
  ``dense_*``: hand-written LayerNorm backward, the input gradient summed over every layer);
- ``fused_mlp``: ``current_mlp`` with `PlainMLP.forward` patched, for its turns only, to
  `fused_mlp.fused_forward`: each network call one ``torch.autograd.Function`` with a
  hand-written backward (the losses, `frozen_call` and the steps unchanged).

Synthetic Meta-World-sized transitions (obs 39, actions 4) in a `ReplayBuffer` of 5000
(`make_buffer`).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.fused_mlp import fused_forward
from cvl_algos import make_learner
from cvl_algos.common import polyak_update
from cvl_algos.sac import SACLearner
from cvl_algos.stages import PolyakStage, submodule
from cvl_data import ReplayBuffer
from cvl_models import mlp

OBS_DIM, ACTION_DIM, CAPACITY = 39, 4, 5000
VARIANTS = (
    "current",
    "reference",
    "no_cat",
    "compiled",
    "current_mlp",
    "manual_mlp",
    "fused_mlp",
    "manual_dense",
)


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


@contextlib.contextmanager
def patched(name: str):
    """Within: `DenseMLP.forward` and `PlainMLP.forward` as variant ``name`` runs them (the
    library's outside ``no_cat`` and the fused variants)."""
    dense, plain = mlp.DenseMLP.forward, mlp.PlainMLP.forward
    if name == "no_cat":
        mlp.DenseMLP.forward = no_cat_forward
    if name == "fused_mlp":
        mlp.PlainMLP.forward = fused_forward
    try:
        yield
    finally:
        mlp.DenseMLP.forward, mlp.PlainMLP.forward = dense, plain


def make_variant(name: str, hidden: tuple[int, ...], batch_size: int):
    sizes = {"hidden": hidden, "batch_size": batch_size}
    if name == "reference":
        return ReferenceStepsSAC((OBS_DIM,), ACTION_DIM, SACLearner.config_cls(**sizes), "cpu", 0)
    extra = {"compile": True} if name == "compiled" else {}
    if name == "manual_mlp":
        extra = {"torso": "mlp", "manual_gradients": True}
    if name == "manual_dense":
        extra = {"manual_gradients": True}
    if name in ("current_mlp", "fused_mlp"):
        extra = {"torso": "mlp"}
    return make_learner("sac", (OBS_DIM,), ACTION_DIM, "cpu", 0, **sizes, **extra)


def make_buffer() -> ReplayBuffer:
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(CAPACITY, (OBS_DIM,), ACTION_DIM)
    buffer.add_many(
        rng.standard_normal((CAPACITY, OBS_DIM)),
        rng.uniform(-1, 1, (CAPACITY, ACTION_DIM)),
        rng.standard_normal(CAPACITY),
        rng.standard_normal((CAPACITY, OBS_DIM)),
        np.zeros(CAPACITY),
    )
    return buffer
