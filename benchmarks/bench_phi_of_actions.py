"""phi of K actions at each state: the shared-columns pass against the repeated-input pass.

`cvl_models.critic.StateActionEmbedding.of_actions` scores ``K`` actions at each of ``B`` states
(the critic's uniform action term: 8 negatives per anchor; the policy loss: 4 samples per state).
It encodes each state once and computes the state's columns of every DenseNet layer once
(`DenseMLP.forward_shared`). The baseline, measured in the same run and interleaved with it, is
the same network on the concatenation ``[encoder(s) repeated K times; a]`` through its plain
``forward`` (`StateActionEmbedding.head`). One step: forward, a scalar loss on the latents,
backward to the parameters. Prints both rates and the ratio ``shared / repeated``.

Usage::

    python benchmarks/bench_phi_of_actions.py                      # Meta-World sizes, 1 thread
    python benchmarks/bench_phi_of_actions.py --hidden 256 256 --actions 8 --batch 256
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import torch
from einops import repeat

from cvl_models import ContrastiveCritic


def rate(step: Callable[[], None], steps: int) -> float:
    """Steps per second of ``steps`` calls of ``step``."""
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--actions", type=int, default=8, help="K actions per state")
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--obs-dim", type=int, default=39)
    parser.add_argument("--action-dim", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100, help="steps per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    critic = ContrastiveCritic((args.obs_dim,), args.action_dim, latent_dim=64, hidden=args.hidden)
    net = critic.phi_net
    obs = torch.randn(args.batch, args.obs_dim)
    actions = torch.rand(args.actions, args.batch, args.action_dim) * 2 - 1

    def shared() -> None:
        critic.zero_grad(set_to_none=True)
        net.of_actions(obs, actions).square().sum().backward()

    def repeated_pass() -> torch.Tensor:
        return net.head(repeat(net.encoder(obs), "b e -> k b e", k=args.actions), actions)

    def repeated() -> None:
        critic.zero_grad(set_to_none=True)
        repeated_pass().square().sum().backward()

    with torch.no_grad():
        gap = (net.of_actions(obs, actions) - repeated_pass()).abs().max()
    for step in (shared, repeated):
        rate(step, 10)  # warm-up
    ratios, fast, slow = [], [], []
    for _ in range(args.rounds):  # interleaved: both see the same machine load
        fast.append(rate(shared, args.steps))
        slow.append(rate(repeated, args.steps))
        ratios.append(fast[-1] / slow[-1])
    print(
        f"phi of {args.actions} actions x {args.batch} states, {args.obs_dim}+{args.action_dim} "
        f"inputs, DenseNet {args.hidden}, {args.threads} thread(s), {platform.processor() or platform.machine()}, "
        f"torch {torch.__version__}; max |shared - repeated| = {gap:.2e}"
    )
    print(
        f"  shared columns  {statistics.median(fast):8.1f} steps/s (median of {args.rounds} rounds)"
    )
    print(f"  repeated input  {statistics.median(slow):8.1f} steps/s")
    print(
        f"  ratio shared / repeated: {statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
