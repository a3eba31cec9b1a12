"""`GradientStage`: one clipped gradient step of a learner's update, as data.

A learner whose update is a sequence of such stages (BC: one) runs them one after another
(`LearnerBase._train_step`), and `VectorisedLearner` runs the same stages for K seeds at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["GradientStage"]


@dataclass(frozen=True)
class GradientStage:
    """``loss(batch) -> (loss, metrics)`` minimised by one clipped step of ``optimizer`` over
    ``module``'s parameters (names of `LearnerBase.state_modules` / ``state_optimizers``); the
    pre-clipping gradient norm is added to the metrics as ``grad_norm_metric``.

    ``key`` names the stage's random draws: two calls with the same key and batch shapes must
    draw the same kinds and shapes in the same order (a learner that switches losses by step
    gives each loss its own key).
    """

    module: str
    optimizer: str
    loss: Callable[[Any], tuple[torch.Tensor, dict[str, torch.Tensor]]]
    grad_norm_metric: str
    key: Hashable
