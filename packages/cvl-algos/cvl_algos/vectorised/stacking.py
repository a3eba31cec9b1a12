"""K modules' parameters stacked ``(K, ...)`` and K Adams' states stacked alike, and back.

Adam is elementwise: one Adam over stacked parameters is K Adams over the slices (same
hyperparameters and step count), so a seed's slice follows exactly its own optimizer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = [
    "stack_adam",
    "stack_buffers",
    "stack_parameters",
    "unstack_adam",
    "unstack_buffers",
    "unstack_parameters",
]

_ADAM_BUFFERS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


def stack_parameters(modules: Sequence[nn.Module]) -> dict[str, nn.Parameter]:
    """``{name: Parameter (K, *shape)}`` from K modules of one architecture (copies)."""
    stacked = _stack([dict(m.named_parameters()) for m in modules], "parameters")
    return {name: nn.Parameter(tensor) for name, tensor in stacked.items()}


def stack_buffers(modules: Sequence[nn.Module]) -> dict[str, torch.Tensor]:
    """``{name: (K, *shape)}`` of K modules' buffers (copies; e.g. each seed's random features
    and its ``xi`` average)."""
    return _stack([dict(m.named_buffers()) for m in modules], "buffers")


@torch.no_grad()
def unstack_parameters(stacked: dict[str, torch.Tensor], modules: Sequence[nn.Module]) -> None:
    """Write slice ``k`` of every stacked parameter into ``modules[k]``, in place."""
    _unstack(stacked, [m.named_parameters() for m in modules])


@torch.no_grad()
def unstack_buffers(stacked: dict[str, torch.Tensor], modules: Sequence[nn.Module]) -> None:
    """Write slice ``k`` of every stacked buffer into ``modules[k]``, in place."""
    _unstack(stacked, [m.named_buffers() for m in modules])


def _stack(per_module: list[dict[str, torch.Tensor]], what: str) -> dict[str, torch.Tensor]:
    names = list(per_module[0])
    if any(list(tensors) != names for tensors in per_module[1:]):
        raise ValueError(f"vectorised seeds: the learners' modules differ in their {what}")
    return {
        name: torch.stack([tensors[name].detach() for tensors in per_module]).clone()
        for name in names
    }


def _unstack(stacked: dict[str, torch.Tensor], per_module: list) -> None:
    for k, named in enumerate(per_module):
        for name, tensor in named:
            tensor.copy_(stacked[name][k])


def stack_adam(
    optimizers: Sequence[torch.optim.Optimizer],
    modules: Sequence[nn.Module],
    stacked: dict[str, nn.Parameter],
) -> torch.optim.Optimizer:
    """One optimizer of the first one's class and hyperparameters over ``stacked``, holding the
    K optimizers' states stacked (all must have taken the same number of steps)."""
    first = optimizers[0]
    if len(first.param_groups) != 1:
        raise ValueError("vectorised seeds: optimizers with several parameter groups")
    params = list(stacked.values())
    optimizer = type(first)(params, **first.defaults)
    states = [_states_by_name(opt, module) for opt, module in zip(optimizers, modules, strict=True)]
    for name, param in stacked.items():
        per_seed = [state.get(name) for state in states]
        if all(s is None for s in per_seed):
            continue
        if any(s is None for s in per_seed) or any(
            not torch.equal(s["step"], per_seed[0]["step"]) for s in per_seed
        ):
            raise ValueError(f"vectorised seeds: {name!r} has different optimizer steps per seed")
        state = {"step": per_seed[0]["step"].clone()}
        for key in _ADAM_BUFFERS:
            if key in per_seed[0]:
                state[key] = torch.stack([s[key] for s in per_seed])
        optimizer.state[param] = state
    return optimizer


def unstack_adam(
    optimizer: torch.optim.Optimizer,
    stacked: dict[str, nn.Parameter],
    optimizers: Sequence[torch.optim.Optimizer],
    modules: Sequence[nn.Module],
) -> None:
    """Give each of the K optimizers its slice of the stacked optimizer's state."""
    for k, (opt, module) in enumerate(zip(optimizers, modules, strict=True)):
        for name, param in module.named_parameters():
            state = optimizer.state.get(stacked[name])
            if not state:
                continue
            opt.state[param] = {"step": state["step"].clone()} | {
                key: state[key][k].clone() for key in _ADAM_BUFFERS if key in state
            }


def _states_by_name(optimizer: torch.optim.Optimizer, module: nn.Module) -> dict[str, dict]:
    by_id = {id(p): n for n, p in module.named_parameters()}
    group = optimizer.param_groups[0]["params"]
    if {id(p) for p in group} != set(by_id):
        raise ValueError("vectorised seeds: an optimizer does not hold exactly its module's params")
    return {by_id[id(p)]: optimizer.state[p] for p in group if p in optimizer.state}
