"""`PlainMLP`'s forward as one ``torch.autograd.Function`` with a hand-written backward.

A benchmark-only experiment (`bench_sac_update_variants.py`, variant ``fused_mlp``): can most of
`cvl_algos.sac_manual`'s gain be had while the losses, `frozen_call`, optimisers and checkpoints
stay as they are? Autograd then records one node per network call instead of three per layer
(``t``, ``addmm``, ``relu_``), and the network's backward is a loop of explicit products.

Forward (`PlainMLPFunction.forward`), for an input ``h_0`` flattened to ``(N, in)`` and layers
``k = 1..L+1`` (``L`` hidden)::

    h_k = relu(addmm(b_k, h_{k-1}, W_k^T))  (k <= L),   out = addmm(b_{L+1}, h_L, W_{L+1}^T)

the ops of `PlainMLP.forward` (``nn.Linear`` on a 2-d input is ``addmm(b, x, W^T)``; the ReLU is
in place on the product), in the same order: the same output bit for bit (``--check``).
The hidden activations ``h_1..h_L`` are returned as extra, non-differentiable outputs: the
``setup_context`` form that ``torch.func`` transforms need (``vmap``, ``grad``) saves only
inputs and outputs, so intermediates must be outputs.

Backward, given ``G = dLoss/d out`` (N, out), for ``k = L+1 .. 1``::

    dW_k = G^T h_{k-1},   db_k = sum_n G,   G <- threshold_backward(G W_k, h_{k-1}, 0)  (k > 1)

and ``dLoss/d h_0 = G W_1`` at ``k = 1``; each only when ``ctx.needs_input_grad`` asks for it,
and the loop stops below the lowest layer anything is asked of (under `frozen_call` no weight
gradient is computed, only the input's; a target network under ``no_grad`` records nothing).

``generate_vmap_rule = True``: under ``torch.func.vmap`` torch runs ``forward`` and ``backward``
on batched tensors (all their ops have batching rules), so `VectorisedLearner` can vmap it.

`fused_forward` is a drop-in replacement for `PlainMLP.forward` (same input check and cast):
the benchmark patches it in for its variant's turns only. Only ``forward``; ``forward_shared``
(CQL's many-action pass) stays autograd's.

`gradchecks` runs ``torch.autograd.gradcheck`` in float64 on a tiny instance (all inputs; a 3-d
input; the input only, as under `frozen_call`; the upper layers only), and ``gradgradcheck``.

Results (torch 2.13, CPU; `bench_sac_update_variants.py --check`): outputs, gradients and the
parameters after 100 SAC updates equal ``current_mlp``'s bit for bit (the backward runs the
products autograd runs), also under `VectorisedLearner` (``vmap(grad)``, 2 seeds, 5 updates);
every ``gradcheck`` passes. Speed: none. 464 -> 405 dispatched ops per SAC update, but
0.96-0.98x ``current_mlp`` at 128 x 128, batch 256 and 0.99x at 256 x 256, batch 512 (thread
CPU time, loaded 2-core machine; ``manual_mlp`` 1.41-1.42x and 1.13x in the same runs): the
per-layer autograd nodes this removes are replaced by a Python ``forward``/``setup_context``/
``backward`` per network call costing about as much. With the stock ``apply`` (no `fast_apply`,
parameters through ``nn.Module.__getattr__``, the Function also under ``no_grad``) it was 0.91x.

Limits: double backward through the parameters is wrong, silently (``gradgradcheck`` fails: the
saved activations are non-differentiable outputs, so ``create_graph=True`` misses their
dependence on the weights; nothing in packages/ uses ``create_graph``); with respect to the
input alone it is right (ReLU is piecewise linear). Under ``torch.compile`` (``compile=True``)
it traces without graph breaks only because `fused_forward` bypasses the Function when nothing
needs a graph: dynamo's no-grad path for a ``setup_context`` Function calls ``forward`` with a
ctx as first argument (``AttributeError: 'Function' object has no attribute 'ndim'``) and falls
back to eager for the whole loss.
"""

from __future__ import annotations

import weakref

import torch
from torch._functorch.utils import unwrap_dead_wrappers
from torch.autograd.function import _SingleLevelFunction

from cvl_models._checks import check_trailing
from cvl_models.mlp import PlainMLP

__all__ = [
    "PlainMLPFunction",
    "fast_apply",
    "fused_forward",
    "gradchecks",
    "needs_graph",
    "plain_parameters",
]

threshold_backward = torch.ops.aten.threshold_backward
_PARAMETER_DICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fast_apply(cls: type[torch.autograd.Function], *args: torch.Tensor):
    """``cls.apply(*args)`` for a ``setup_context`` Function whose ``forward`` has no default
    arguments. Stock ``apply`` binds them with ``inspect.signature`` on every call (torch 2.13,
    `torch.autograd.function.Function.apply`): ~30-50 us per call here, more than the autograd
    bookkeeping the fusion saves. Eagerly and outside ``torch.func`` transforms this does what
    ``apply`` does after the binding (unwrap dead functorch wrappers, then the C++ ``apply``);
    under a transform (``custom_function_call``, which the vmap rule needs) or ``torch.compile``
    (dynamo traces ``apply`` itself) it calls the stock ``apply``."""
    if torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active():
        return cls.apply(*args)
    args = unwrap_dead_wrappers(args)
    return super(_SingleLevelFunction, cls).apply(*args)  # the C++ apply, bound to cls


class PlainMLPFunction(torch.autograd.Function):
    """``(x, W_1, b_1, ..., W_{L+1}, b_{L+1}) -> (out, h_1, ..., h_L)`` (module docstring);
    ``x`` is ``(*batch, in)``, ``out`` ``(*batch, out)``, ``h_k`` ``(N, h_k)`` with ``N`` the
    flattened batch."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor, *params: torch.Tensor):
        h = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
        hidden = []
        for k in range(0, len(params) - 2, 2):
            h = torch.addmm(params[k + 1], h, params[k].t()).relu_()
            hidden.append(h)
        out = torch.addmm(params[-1], h, params[-2].t())
        if x.ndim != 2:
            out = out.view(*x.shape[:-1], out.shape[-1])
        return (out, *hidden)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        x, *params = inputs
        ctx.mark_non_differentiable(*output[1:])
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, *params[::2], *output[1:])

    @staticmethod
    def backward(ctx, grad_out, *_):
        x, *rest = ctx.saved_tensors
        layers = len(rest) // 2 + 1
        weights, hidden = rest[:layers], rest[layers:]
        needs = ctx.needs_input_grad
        grads: list[torch.Tensor | None] = [None] * len(needs)
        if grad_out is None:
            return tuple(grads)
        flat = x.ndim != 2
        inputs = [x.reshape(-1, x.shape[-1]) if flat else x, *hidden]  # each layer's input
        lowest = next(
            (k for k in range(layers) if needs[1 + 2 * k] or needs[2 + 2 * k]),
            layers,
        )
        if needs[0]:
            lowest = 0
        grad = grad_out.reshape(-1, grad_out.shape[-1]) if flat else grad_out
        for k in range(layers - 1, lowest - 1, -1):
            if needs[1 + 2 * k]:
                grads[1 + 2 * k] = grad.t().mm(inputs[k])
            if needs[2 + 2 * k]:
                grads[2 + 2 * k] = grad.sum(0)
            if k > lowest:
                grad = threshold_backward(grad.mm(weights[k]), inputs[k], 0)
            elif k == 0 and needs[0]:
                grad = grad.mm(weights[0])
                grads[0] = grad.view(x.shape) if flat else grad
        return tuple(grads)


def plain_parameters(net: PlainMLP) -> list[torch.Tensor]:
    """``[W_1, b_1, ..., W_{L+1}, b_{L+1}]`` of a `PlainMLP` (its parameter order), read from
    its linear layers' ``_parameters`` dicts, where `torch.func.functional_call` (`frozen_call`,
    `VectorisedLearner`) also puts the tensors it swaps in: ~1 us instead of ~8.5 us through
    ``nn.Module.__getattr__``; the dicts are looked up once per network (not under
    ``torch.compile``, which would guard on the cache and recompile when it fills)."""
    if torch.compiler.is_compiling():
        return [p for lin in (*net.linears, net.out) for p in (lin.weight, lin.bias)]
    dicts = _PARAMETER_DICTS.get(net)
    if dicts is None:
        dicts = _PARAMETER_DICTS[net] = [lin._parameters for lin in (*net.linears, net.out)]
    return [p for d in dicts for p in (d["weight"], d["bias"])]


def needs_graph(*args: torch.Tensor) -> bool:
    """Whether a Function call on ``args`` must be recorded: grad mode on and some input
    requiring grad, or any ``torch.func`` transform active (its wrappers decide)."""
    if torch._C._are_functorch_transforms_active():
        return True
    return torch.is_grad_enabled() and any(a.requires_grad for a in args)


def fused_forward(self: PlainMLP, x: torch.Tensor) -> torch.Tensor:
    """`PlainMLP.forward` through `PlainMLPFunction` (same check, cast and output). With nothing
    to record (no grad mode or no input requiring grad: the target critic, the next-state
    policy sample) it runs the Function's forward ops directly, without the Function."""
    check_trailing(x, (self.in_dim,), "PlainMLP input")
    args = (x.to(self.out.weight.dtype), *plain_parameters(self))
    if needs_graph(*args):
        return fast_apply(PlainMLPFunction, *args)[0]
    return PlainMLPFunction.forward(*args)[0]


def gradchecks() -> dict[str, bool]:
    """float64 ``gradcheck`` of `PlainMLPFunction` on ``PlainMLP(5, 3, (4, 6))`` (module
    docstring), and ``gradgradcheck`` (expected to fail; see Limits)."""
    generator = torch.Generator().manual_seed(0)
    net = PlainMLP(5, 3, (4, 6)).double()
    params = [p.detach().clone() for p in plain_parameters(net)]
    x = torch.randn(7, 5, dtype=torch.float64, generator=generator)

    def out(x, *params):
        return PlainMLPFunction.apply(x, *params)[0]

    def run(check, x, params):
        return bool(check(out, (x, *params), raise_exception=False))

    leaf = [p.clone().requires_grad_() for p in params]
    return {
        "all inputs": run(torch.autograd.gradcheck, x.clone().requires_grad_(), leaf),
        "3-d input": run(
            torch.autograd.gradcheck,
            torch.randn(2, 7, 5, dtype=torch.float64, generator=generator).requires_grad_(),
            leaf,
        ),
        "input only": run(torch.autograd.gradcheck, x.clone().requires_grad_(), params),
        "upper layers only": run(
            torch.autograd.gradcheck,
            x,
            [p.clone().requires_grad_(i >= 2) for i, p in enumerate(params)],
        ),
        "gradgradcheck (double backward)": run(
            torch.autograd.gradgradcheck, x.clone().requires_grad_(), leaf
        ),
    }
