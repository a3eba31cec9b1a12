"""Where the paper's DenseNet torso spends its time beyond a plain MLP: forward + backward of one
network at a SAC update's batch, the DenseNet with and without its LayerNorms, and a plain MLP
with LayerNorms (no dense skips), each against the plain MLP of SB3 and d3rlpy, measured in the
same run.

Every contender is ``(batch, in_dim) -> 1`` with the hidden widths given (a Q head on Meta-World's
39 + 4 inputs by default). Rounds are interleaved; each contender's time is the median over
rounds of the thread's CPU time per forward + backward (``time.thread_time``, so a neighbour's
load does not count). The printed ratio is the contender's time over the plain MLP's.

Run: ``PYTHONPATH=packages/cvl-models python benchmarks/bench_torso_parts.py [--hidden 128 128]
[--batch 256] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from torch import nn

from cvl_models.mlp import DenseMLP, PlainMLP

IN_DIM = 43  # Meta-World state 39 + action 4


def contenders(hidden: tuple[int, ...]) -> dict[str, nn.Module]:
    """The plain MLP, the DenseNet, the DenseNet without LayerNorm, LayerNorm without skips."""
    dense = DenseMLP(IN_DIM, 1, hidden)
    no_norm = copy.deepcopy(dense)
    no_norm.norms = nn.ModuleList(nn.Identity() for _ in no_norm.norms)
    layers: list[nn.Module] = []
    width = IN_DIM
    for h in hidden:
        layers += [nn.Linear(width, h), nn.LayerNorm(h), nn.ReLU(inplace=True)]
        width = h
    norm_no_skip = nn.Sequential(*layers, nn.Linear(width, 1))
    return {
        "plain MLP": PlainMLP(IN_DIM, 1, hidden),
        "DenseNet (paper)": dense,
        "DenseNet without LayerNorm": no_norm,
        "LayerNorm, no dense skips": norm_no_skip,
    }


def seconds_per_pass(module: nn.Module, x: torch.Tensor, passes: int) -> float:
    """Thread CPU seconds per forward + backward of ``module`` on ``x``."""
    start = time.thread_time()
    for _ in range(passes):
        module(x).sum().backward()
    return (time.thread_time() - start) / passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--passes", type=int, default=200, help="passes per round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    nets = contenders(tuple(args.hidden))
    x = torch.randn(args.batch, IN_DIM)
    for net in nets.values():
        seconds_per_pass(net, x, 20)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in nets}
    for _ in range(args.rounds):
        for name, net in nets.items():
            times[name].append(seconds_per_pass(net, x, args.passes))
    base = statistics.median(times["plain MLP"])
    print(
        f"torch {torch.__version__}, 1 thread, batch {args.batch}, hidden {tuple(args.hidden)}, "
        f"in {IN_DIM}; forward + backward, median of {args.rounds} rounds x {args.passes}"
    )
    print(f"{'torso':<30}{'us/pass':>10}{'vs plain':>10}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<30}{1e6 * median:>10.0f}{median / base:>9.2f}x")


if __name__ == "__main__":
    main()
