"""`VectorisedLearner`: one update step for K seeds of one learner with ``torch.func.vmap``.

Per update and stage (`GradientStage`): each seed's random draws are taken from its own
generator (`tape`), ``vmap(grad(loss))`` gives every seed's gradients at once, each seed's
gradient norm is clipped on its own (as ``clip_grad_norm_`` does for one), and one Adam over
the stacked parameters steps all seeds (`stacking`). Seed ``k``'s parameters, Adam state, RNG
and step then equal, within float rounding, those of the same learner trained alone on the same
batches (tests check BC over a few hundred updates).

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
from cvl_algos.stages import GradientStage
from cvl_algos.vectorised.stacking import (
    stack_adam,
    stack_parameters,
    unstack_adam,
    unstack_parameters,
)
from cvl_algos.vectorised.tape import Draw, RecordingSource, TapeSource, draw_tape
from cvl_models.noise import noise_source

__all__ = ["VectorisedLearner"]


class _Call(nn.Module):
    """Holds a learner's state modules so `functional_call` can swap all their parameters while
    a stage's loss (a method reading ``learner.policy`` etc.) runs."""

    def __init__(self, modules: dict[str, nn.Module]) -> None:
        super().__init__()
        self.inner = nn.ModuleDict(modules)

    def forward(self, fn, batch):
        return fn(batch)


class VectorisedLearner:
    """K learners of one class and config (one per seed), updated together.

    Args:
        learners: built as usual (``make_learner(name, ..., seed=s)`` or loaded from their
            checkpoints), all at the same step; their class must declare `gradient_stages`.
    """

    def __init__(self, learners: Sequence[LearnerBase], compile: bool = False) -> None:
        self.learners = list(learners)
        self.compile = bool(compile)
        self._fns: dict[Any, Any] = {}
        _check_compatible(self.learners)
        first = self.learners[0]
        self.stages: tuple[GradientStage, ...] = first.gradient_stages()
        modules = [learner.state_modules() for learner in self.learners]
        self.module_names = list(modules[0])
        self.params = {
            name: stack_parameters([m[name] for m in modules]) for name in self.module_names
        }
        optimizers = [learner.state_optimizers() for learner in self.learners]
        self.optimizers = {
            s.optimizer: stack_adam(
                [o[s.optimizer] for o in optimizers],
                [m[s.module] for m in modules],
                self.params[s.module],
            )
            for s in self.stages
        }
        staged = {s.module for s in self.stages}
        if set(self.module_names) != staged:
            raise ValueError(
                f"VectorisedLearner: {first.name}'s state modules {sorted(self.module_names)} "
                f"are not all trained by its gradient stages ({sorted(staged)})"
            )
        self._holder = _Call(modules[0])
        self._draws: dict[Any, list[Draw]] = {}

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
        fields, none_fields = _stack_batches(batches)
        batch_type = type(batches[0])
        metrics: dict[str, torch.Tensor] = {}
        for stage in self.stages:
            metrics.update(self._run_stage(stage, batch_type, fields, none_fields))
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
            unstack_parameters(
                self.params[name], [lrn.state_modules()[name] for lrn in self.learners]
            )
        for stage in self.stages:
            unstack_adam(
                self.optimizers[stage.optimizer],
                self.params[stage.module],
                [learner.state_optimizers()[stage.optimizer] for learner in self.learners],
                [learner.state_modules()[stage.module] for learner in self.learners],
            )
        return self.learners

    # -- one stage ----------------------------------------------------------------------------

    def _run_stage(self, stage, batch_type, fields, none_fields) -> dict[str, torch.Tensor]:
        trainable = {f"inner.{stage.module}.{n}": p for n, p in self.params[stage.module].items()}
        frozen = {
            f"inner.{m}.{n}": p.detach()
            for m in self.module_names
            if m != stage.module
            for n, p in self.params[m].items()
        }
        key = (stage.key, tuple((k, tuple(v.shape)) for k, v in fields.items()))
        if key not in self._draws:
            recorder = RecordingSource()
            self._grad_fn(stage, batch_type, none_fields, recorder.draws, record=recorder)(
                {k: v.detach() for k, v in trainable.items()}, frozen, fields, []
            )
            self._draws[key] = recorder.draws
        draws = self._draws[key]
        tape = draw_tape(draws, self.learners)
        if key not in self._fns:
            fn = self._grad_fn(stage, batch_type, none_fields, draws)
            self._fns[key] = torch.compile(fn) if self.compile else fn
        grads, metrics = self._fns[key](
            {k: v.detach() for k, v in trainable.items()}, frozen, fields, tape
        )
        norms = self._clip_and_step(stage, trainable, grads)
        metrics[stage.grad_norm_metric] = norms
        return metrics

    def _grad_fn(self, stage, batch_type, none_fields, draws, record=None):
        """``vmap(grad(loss))`` of ``stage`` over seeds: (trainable, frozen, fields, tape) ->
        (grads, metrics), every output with a leading seed dimension."""
        holder = self._holder

        def loss(trainable, frozen, fields, tape):
            batch = batch_type(**fields, **dict.fromkeys(none_fields))
            source = record if record is not None else TapeSource(draws, tape)
            with noise_source(source):
                value, metrics = torch.func.functional_call(
                    holder, {**trainable, **frozen}, (stage.loss, batch)
                )
            if record is None:
                source.check_used_up()
            return value, metrics

        return torch.func.vmap(torch.func.grad(loss, has_aux=True), randomness="error")

    def _clip_and_step(self, stage, trainable, grads) -> torch.Tensor:
        """Each seed's global gradient norm (K,), clipped per seed as ``clip_grad_norm_`` does,
        then one step of the stacked optimizer; returns the norms before clipping."""
        names = list(trainable)
        per_param = [torch.linalg.vector_norm(grads[n].flatten(1), dim=1) for n in names]
        norms = torch.linalg.vector_norm(torch.stack(per_param), dim=0)
        max_norm = self.learners[0].config.max_grad_norm
        scale = None
        if max_norm is not None and max_norm > 0:
            scale = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
        for name in names:
            grad = grads[name]
            if scale is not None:
                grad = grad * scale.reshape(-1, *([1] * (grad.ndim - 1)))
            trainable[name].grad = grad
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


def _check_compatible(learners: Sequence[LearnerBase]) -> None:
    if not learners:
        raise ValueError("VectorisedLearner: needs at least one learner")
    first = learners[0]
    if first.gradient_stages() is None:
        raise ValueError(
            f"VectorisedLearner: {first.name!r} does not declare its update as gradient stages "
            "(LearnerBase.gradient_stages); vectorised seeds are not available for it"
        )
    if getattr(first.config, "compile", False):
        raise ValueError("VectorisedLearner: config.compile is not supported with vectorised seeds")
    for learner in learners[1:]:
        same = (type(learner), learner.config, learner.obs_shape, learner.action_dim)
        if same != (type(first), first.config, first.obs_shape, first.action_dim):
            raise ValueError(
                "VectorisedLearner: all learners must share class, config and shapes; "
                f"{learner.name} seed {learner.seed} differs from seed {first.seed}"
            )
        if learner.device != first.device or learner.step != first.step:
            raise ValueError(
                f"VectorisedLearner: seed {learner.seed} is at step {learner.step} on "
                f"{learner.device}, seed {first.seed} at step {first.step} on {first.device}"
            )
