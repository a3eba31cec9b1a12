"""A learner's update as data: clipped gradient steps, polyak averages and read-outs, in order.

A learner that declares its update this way (`LearnerBase.gradient_stages`: BC, SAC, CQL,
CQL+UDS, CVL) runs the stages one after another (`LearnerBase.run_stages`), and
`cvl_algos.vectorised.VectorisedLearner` runs the very same stages for K seeds at once. Each
stage sees ``carry``: the metrics and values of the stages before it in this update (SAC's
temperature step reads the actor step's ``entropy``, CVL's policy step the ``psi_future``
latents computed after its critic step).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["ComputeStage", "GradientStage", "PolyakStage", "Stage", "split_path", "submodule"]

Carry = dict[str, torch.Tensor]


@dataclass(frozen=True)
class GradientStage:
    """``loss(batch, carry) -> (loss, metrics)`` minimised by one clipped step of ``optimizer``
    over ``module``'s parameters (names of `LearnerBase.state_modules` / ``state_optimizers``);
    the pre-clipping gradient norm goes into the metrics as ``grad_norm_metric`` (None: not
    reported).

    ``key`` names the stage's random draws: two calls with the same key and batch shapes must
    draw the same kinds and shapes in the same order (a learner that switches losses by step
    gives each loss its own key).
    """

    module: str
    optimizer: str
    loss: Callable[[Any, Carry], tuple[torch.Tensor, dict[str, torch.Tensor]]]
    grad_norm_metric: str | None
    key: Hashable


@dataclass(frozen=True)
class PolyakStage:
    """``target <- (1 - tau) target + tau source`` over parameters (`common.polyak_update`);
    ``target`` names a state module, ``source`` a state module or a submodule of one
    (``"critic.psi_net"``)."""

    target: str
    source: str
    tau: float


@dataclass(frozen=True)
class ComputeStage:
    """``compute(batch, carry) -> (values, metrics)`` without gradients: ``values`` (any
    tensors) go into the carry only, ``metrics`` (0-d) into the carry and the update's metrics.
    It may update buffers of state modules in place (CVL's ``xi`` average) and draws nothing."""

    compute: Callable[[Any, Carry], tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]]


Stage = GradientStage | PolyakStage | ComputeStage


def split_path(path: str) -> tuple[str, str]:
    """``"critic.psi_net"`` -> (state module ``"critic"``, submodule path ``"psi_net"``);
    ``"critic"`` -> ``("critic", "")``."""
    head, _, rest = path.partition(".")
    return head, rest


def submodule(modules: dict[str, nn.Module], path: str) -> nn.Module:
    """The module at ``path`` ("critic" or "critic.psi_net") among a learner's state modules."""
    head, rest = split_path(path)
    return modules[head].get_submodule(rest) if rest else modules[head]
