"""`VectorisedLearner`: one update step for K seeds of one learner with ``torch.func.vmap``.

Per update and gradient stage (`cvl_algos.stages`): each seed's random draws are taken from its
own generator (`tape`), ``vmap(grad(loss))`` gives every seed's gradients at once, each seed's
gradient norm is clipped on its own (as ``clip_grad_norm_`` does for one), and one Adam over
the stacked parameters steps all seeds (`stacking`); polyak stages average the stacked tensors,
compute stages run under ``vmap`` and update the stacked buffers in place. Seed ``k``'s
parameters, buffers, Adam state, RNG and step then equal, within float rounding, those of the
same learner trained alone on the same batches (tests check BC, CQL and CVL over a few hundred
updates).

The K learners keep their own samplers and checkpoints: after `sync` each ``learners[k]`` holds
its seed's state and saves, acts and loads as a learner trained alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import detach_metrics
from cvl_algos.stages import GradientStage, PolyakStage, split_path
from cvl_algos.vectorised.stacking import (
    stack_adam,
    stack_buffers,
    stack_parameters,
    unstack_adam,
    unstack_buffers,
    unstack_parameters,
)
from cvl_algos.vectorised.tape import Draw, RecordingSource, TapeSource, draw_tape
from cvl_models.noise import noise_source

__all__ = ["VectorisedLearner", "unsupported"]


class _Call(nn.Module):
    """Holds a learner's state modules so `functional_call` can swap all their parameters while
    a stage's function (a method reading ``learner.policy`` etc.) runs."""

    def __init__(self, modules: dict[str, nn.Module]) -> None:
        super().__init__()
        self.inner = nn.ModuleDict(modules)

    def forward(self, fn, batch, carry):
        return fn(batch, carry)


class VectorisedLearner:
    """K learners of one class and config (one per seed), updated together.

    Args:
        learners: built as usual (``make_learner(name, ..., seed=s)`` or loaded from their
            checkpoints), all at the same step; their class must declare `gradient_stages`.
        compile: ``torch.compile`` each stage's vmapped function (compiled once per stage and
            batch shape; the first update pays the compile time).
    """

    def __init__(self, learners: Sequence[LearnerBase], compile: bool = False) -> None:
        self.learners = list(learners)
        self.compile = bool(compile)
        reason = unsupported(self.learners)
        if reason is not None:
            raise ValueError(reason)
        first = self.learners[0]
        modules = [learner.state_modules() for learner in self.learners]
        self.module_names = list(modules[0])
        self.params = {
            name: stack_parameters([m[name] for m in modules]) for name in self.module_names
        }
        self.buffers = {
            name: stack_buffers([m[name] for m in modules]) for name in self.module_names
        }
        stages = first.update_stages()
        steps = [s for s in stages if isinstance(s, GradientStage)]
        self._optimized = {s.optimizer: s.module for s in steps}  # optimizer -> its module
        optimizers = [learner.state_optimizers() for learner in self.learners]
        self.optimizers = {
            name: stack_adam(
                [o[name] for o in optimizers], [m[module] for m in modules], self.params[module]
            )
            for name, module in self._optimized.items()
        }
        updated = {s.module for s in steps} | {
            s.target for s in stages if isinstance(s, PolyakStage)
        }
        with_params = {name for name in self.module_names if self.params[name]}
        if not with_params <= updated:
            raise ValueError(
                f"VectorisedLearner: {first.name}'s state modules {sorted(with_params)} are "
                f"not all updated by its stages ({sorted(updated)})"
            )
        self._holder = _Call(modules[0])
        self._draws: dict[Any, list[Draw]] = {}
        self._fns: dict[Any, Any] = {}

    @property
    def num_seeds(self) -> int:
        return len(self.learners)

    @property
    def step(self) -> int:
        return self.learners[0].step

    def update(self, batches: Sequence[Any]) -> list[dict[str, torch.Tensor]]:
        """One update of every seed, seed ``k`` on ``batches[k]`` (from its own sampler);
        returns each seed's metrics as detached 0-d tensors (no host sync)."""
        if len(batches) != self.num_seeds:
            raise ValueError(f"update: expected {self.num_seeds} batches, got {len(batches)}")
        for batch in batches:
            self.learners[0].check_update_batch(batch)
        fields, none_fields = _stack_batches(batches)
        batch = (type(batches[0]), fields, none_fields)
        carry: dict[str, torch.Tensor] = {}
        metrics: dict[str, torch.Tensor] = {}
        for stage in self.learners[0].update_stages():
            if isinstance(stage, PolyakStage):
                self._polyak(stage)
                continue
            if isinstance(stage, GradientStage):
                stage_metrics = self._gradient_step(stage, batch, carry)
            else:
                values, stage_metrics = self._vmapped(stage, "compute", batch, carry)
                carry.update(values)
            carry.update(stage_metrics)
            metrics.update(stage_metrics)
        for learner in self.learners:
            learner.step += 1
        device = self.learners[0].device
        return [
            detach_metrics({key: value[k] for key, value in metrics.items()}, device)
            for k in range(self.num_seeds)
        ]

    def sync(self) -> list[LearnerBase]:
        """Write each seed's parameters and optimizer state into its learner; returns them
        (ready to save, act or evaluate as if trained alone)."""
        for name in self.module_names:
            modules = [learner.state_modules()[name] for learner in self.learners]
            unstack_parameters(self.params[name], modules)
            unstack_buffers(self.buffers[name], modules)
        for name, module in self._optimized.items():
            unstack_adam(
                self.optimizers[name],
                self.params[module],
                [learner.state_optimizers()[name] for learner in self.learners],
                [learner.state_modules()[module] for learner in self.learners],
            )
        return self.learners

    # -- stages ------------------------------------------------------------------------------

    def _gradient_step(self, stage: GradientStage, batch, carry) -> dict[str, torch.Tensor]:
        grads, metrics = self._vmapped(stage, "grad", batch, carry)
        norms = self._clip_and_step(stage, grads)
        if stage.grad_norm_metric is not None:
            metrics[stage.grad_norm_metric] = norms
        return metrics

    @torch.no_grad()
    def _polyak(self, stage: PolyakStage) -> None:
        """The polyak average on the stacked parameters (elementwise: every seed's own)."""
        head, rest = split_path(stage.source)
        prefix = f"{rest}." if rest else ""
        source = {n[len(prefix) :]: p for n, p in self.params[head].items() if n.startswith(prefix)}
        target = self.params[stage.target]
        if set(source) != set(target):
            raise ValueError(f"polyak stage: {stage.source!r} and {stage.target!r} differ")
        names = list(target)
        torch._foreach_lerp_([target[n] for n in names], [source[n] for n in names], stage.tau)

    def _vmapped(self, stage, mode: str, batch, carry):
        """Run ``stage`` for every seed: ``mode`` "grad" gives (grads of the stage's module,
        metrics), "compute" (values, metrics); each with a leading seed dimension. Buffers are
        passed as they are, so a compute stage's in-place update reaches the stacked ones."""
        batch_type, fields, none_fields = batch
        module = stage.module if mode == "grad" else None
        trainable = {
            f"inner.{module}.{n}": p.detach() for n, p in self.params.get(module, {}).items()
        }
        frozen = {
            f"inner.{m}.{n}": p.detach()
            for m in self.module_names
            if m != module
            for n, p in self.params[m].items()
        }
        frozen.update(
            {f"inner.{m}.{n}": b for m in self.module_names for n, b in self.buffers[m].items()}
        )
        key = (mode, getattr(stage, "key", None), tuple((k, v.shape) for k, v in fields.items()))
        args = (trainable, frozen, fields, carry)
        if key not in self._draws and mode == "compute":
            self._draws[key] = []  # draws nothing; a recording pass would update buffers twice
        if key not in self._draws:
            recorder = RecordingSource()
            self._make_fn(stage, mode, batch_type, none_fields, recorder)(*args, [])
            self._draws[key] = recorder.draws
        if key not in self._fns:
            fn = self._make_fn(stage, mode, batch_type, none_fields, self._draws[key])
            self._fns[key] = torch.compile(fn) if self.compile else fn
        return self._fns[key](*args, draw_tape(self._draws[key], self.learners))

    def _make_fn(self, stage, mode, batch_type, none_fields, draws):
        """The vmapped function (trainable, frozen, fields, carry, tape) -> outputs; ``draws``
        is a `RecordingSource` (the recording pass) or the recorded draws to replay."""
        holder = self._holder
        fn = stage.loss if mode == "grad" else stage.compute

        def run(trainable, frozen, fields, carry, tape):
            batch = batch_type(**fields, **dict.fromkeys(none_fields))
            recording = isinstance(draws, RecordingSource)
            source = draws if recording else TapeSource(draws, tape)
            with noise_source(source):
                out = torch.func.functional_call(
                    holder, {**trainable, **frozen}, (fn, batch, carry)
                )
            if not recording:
                source.check_used_up()
            return out

        if mode == "grad":
            return torch.func.vmap(torch.func.grad(run, has_aux=True), randomness="error")
        return torch.func.vmap(torch.no_grad()(run), randomness="error")

    def _clip_and_step(self, stage: GradientStage, grads) -> torch.Tensor:
        """Each seed's global gradient norm (K,), clipped per seed as ``clip_grad_norm_`` does,
        then one step of the stacked optimizer; returns the norms before clipping."""
        params = self.params[stage.module]
        grads = [grads[f"inner.{stage.module}.{n}"] for n in params]
        per_param = [torch.linalg.vector_norm(g.reshape(len(g), -1), dim=1) for g in grads]
        norms = torch.linalg.vector_norm(torch.stack(per_param), dim=0)
        max_norm = self.learners[0].config.max_grad_norm
        scale = None
        if max_norm is not None and max_norm > 0:
            scale = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
        for param, grad in zip(params.values(), grads, strict=True):
            if scale is not None:
                grad = grad * scale.reshape(-1, *([1] * (grad.ndim - 1)))
            param.grad = grad
        optimizer = self.optimizers[stage.optimizer]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return norms.detach()


def _stack_batches(batches: Sequence[Any]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The batches' tensor fields stacked ``(K, ...)`` and the names of their None fields."""
    names = [f.name for f in dataclasses.fields(batches[0])]
    fields, none_fields = {}, []
    for name in names:
        values = [getattr(b, name) for b in batches]
        if all(v is None for v in values):
            none_fields.append(name)
        elif any(v is None for v in values):
            raise ValueError(f"update: batch field {name!r} is None for some seeds only")
        else:
            fields[name] = torch.stack(values)
    return fields, none_fields


def unsupported(learners: Sequence[LearnerBase]) -> str | None:
    """Why ``learners`` cannot be trained as one `VectorisedLearner`, or None when they can."""
    if not learners:
        return "VectorisedLearner: needs at least one learner"
    first = learners[0]
    if not first.declares_stages():
        return (
            f"VectorisedLearner: {first.name!r} does not declare its update as gradient stages "
            "(LearnerBase.gradient_stages); vectorised seeds are not available for it"
        )
    if getattr(first.config, "compile", False):
        return "VectorisedLearner: config.compile is not supported with vectorised seeds"
    if getattr(first.config, "manual_gradients", False):
        return (
            "VectorisedLearner: config.manual_gradients is not supported with vectorised seeds "
            "(vmap needs autograd's stages); set manual_gradients=False"
        )
    if getattr(first.config, "rff_redraw", False):
        return (
            "VectorisedLearner: config.rff_redraw is not supported with vectorised seeds (it "
            "redraws each seed's random features in place every update); train one seed at a time"
        )
    for learner in learners[1:]:
        same = (type(learner), learner.config, learner.obs_shape, learner.action_dim)
        if same != (type(first), first.config, first.obs_shape, first.action_dim):
            return (
                "VectorisedLearner: all learners must share class, config and shapes; "
                f"{learner.name} seed {learner.seed} differs from seed {first.seed}"
            )
        if learner.device != first.device or learner.step != first.step:
            return (
                f"VectorisedLearner: seed {learner.seed} is at step {learner.step} on "
                f"{learner.device}, seed {first.seed} at step {first.step} on {first.device}"
            )
    return None
