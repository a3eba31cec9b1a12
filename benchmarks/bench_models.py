"""Forward+backward throughput of the cvl_models critic and policy at the paper's sizes.

Paper sizes (appendix, tables 1-2): batch 512, 256 x 256 DenseNet MLPs with LayerNorm,
Meta-World states (39,) and actions (4,), latent 64. One "step" is a forward pass, a loss and
a backward pass (no optimizer step):

- critic: ``logits = critic.logits(s, a, s+)`` (B x B), InfoNCE loss (eq. 9-10), backward.
- policy: ``policy.sample(s)`` plus ``policy.log_prob(s, a_data)``, a BC-style loss, backward
  (two passes through the network, as the API makes them).

Each is compared with a baseline measured in the same run: the same computation with plain
``nn.Sequential`` MLPs of the same widths (Linear-ReLU-Linear-ReLU-Linear: no dense
connections, no LayerNorm, no l2 normalisation, no tanh-Gaussian maths; the policy baseline
also makes two passes). The ratio
``ours / baseline`` (steps/s) is the cost of the paper's architecture.

Usage::

    python benchmarks/bench_models.py                  # CPU, and CUDA when present
    python benchmarks/bench_models.py --device cpu --steps 50 --threads 1 --pixels
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

import torch
from torch import nn

from cvl_models import ContrastiveCritic, TanhGaussianPolicy

OBS_DIM, ACTION_DIM, LATENT, HIDDEN = 39, 4, 64, (256, 256)


def plain_mlp(in_dim: int, out_dim: int, hidden=HIDDEN) -> nn.Sequential:
    layers: list[nn.Module] = []
    prev = in_dim
    for width in hidden:
        layers += [nn.Linear(prev, width), nn.ReLU()]
        prev = width
    return nn.Sequential(*layers, nn.Linear(prev, out_dim))


def infonce(logits: torch.Tensor) -> torch.Tensor:
    return (torch.logsumexp(logits, dim=1) - logits.diagonal()).mean()


def make_cases(obs_shape, batch: int, device: torch.device, with_baseline: bool = True):
    """(name, step function, parameters) for ours and the plain baselines."""
    torch.manual_seed(0)
    if len(obs_shape) == 3:
        obs = torch.randint(0, 256, (batch, *obs_shape), dtype=torch.uint8, device=device)
        future = torch.randint(0, 256, (batch, *obs_shape), dtype=torch.uint8, device=device)
    else:
        obs = torch.randn(batch, *obs_shape, device=device)
        future = torch.randn(batch, *obs_shape, device=device)
    action = torch.rand(batch, ACTION_DIM, device=device) * 2 - 1
    cases: list[tuple[str, Callable[[], torch.Tensor], nn.Module]] = []

    critic = ContrastiveCritic(obs_shape, ACTION_DIM, latent_dim=LATENT, hidden=HIDDEN).to(device)
    cases.append(
        ("critic (DenseNet+LN, l2)", lambda: infonce(critic.logits(obs, action, future)), critic)
    )
    policy = TanhGaussianPolicy(obs_shape, ACTION_DIM, hidden=HIDDEN).to(device)

    def policy_step() -> torch.Tensor:
        _, log_prob = policy.sample(obs)
        return log_prob.mean() - policy.log_prob(obs, action).mean()

    cases.append(("policy (tanh-Gaussian)", policy_step, policy))
    if not with_baseline:
        return cases

    phi_plain = plain_mlp(OBS_DIM + ACTION_DIM, LATENT).to(device)
    psi_plain = plain_mlp(OBS_DIM, LATENT).to(device)
    plain_critic = nn.ModuleList([phi_plain, psi_plain])

    def plain_critic_step() -> torch.Tensor:
        phi = phi_plain(torch.cat([obs, action], dim=-1))
        return infonce(phi @ psi_plain(future).T)

    cases.append(("baseline critic (Sequential)", plain_critic_step, plain_critic))
    pi_plain = plain_mlp(OBS_DIM, 2 * ACTION_DIM).to(device)

    def plain_policy_step() -> torch.Tensor:
        first, second = pi_plain(obs), pi_plain(obs)
        return first.mean() + (second[:, :ACTION_DIM] - action).square().mean()

    cases.append(("baseline policy (Sequential)", plain_policy_step, pi_plain))
    return cases


def time_step(step: Callable[[], torch.Tensor], module: nn.Module, steps: int, device) -> float:
    """Seconds per forward+backward step (best of 5 rounds after warm-up: least disturbed)."""

    def one() -> None:
        module.zero_grad(set_to_none=True)
        step().backward()

    for _ in range(max(3, steps // 10)):
        one()
    rounds = []
    for _ in range(5):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            one()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        rounds.append((time.perf_counter() - start) / steps)
    return min(rounds)


def run(device: torch.device, batch: int, steps: int, pixels: bool) -> None:
    print(
        f"\n== device {device} ({describe(device)}), batch {batch}, {steps} steps x 5 rounds, best"
    )
    print(f"{'case':32s} {'params':>10s} {'ms/step':>9s} {'steps/s':>9s} {'samples/s':>11s}")
    results = {}
    for name, step, module in make_cases((OBS_DIM,), batch, device):
        sec = time_step(step, module, steps, device)
        results[name] = sec
        params = sum(p.numel() for p in module.parameters())
        print(f"{name:32s} {params:>10,d} {sec * 1e3:9.2f} {1 / sec:9.1f} {batch / sec:11,.0f}")
    for ours, base in [
        ("critic (DenseNet+LN, l2)", "baseline critic (Sequential)"),
        ("policy (tanh-Gaussian)", "baseline policy (Sequential)"),
    ]:
        ratio = results[base] / results[ours]
        print(f"ratio {ours} / baseline: {ratio:.2f}x the baseline's steps/s")
    if pixels:
        pix_batch = batch if device.type == "cuda" else min(batch, 64)
        print(f"-- pixels 84x84x3 (IMPALA encoders), batch {pix_batch}")
        for name, step, module in make_cases((84, 84, 3), pix_batch, device, with_baseline=False):
            sec = time_step(step, module, max(2, steps // 5), device)
            params = sum(p.numel() for p in module.parameters())
            print(
                f"{name:32s} {params:>10,d} {sec * 1e3:9.2f} {1 / sec:9.1f} "
                f"{pix_batch / sec:11,.0f}"
            )


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--pixels", action="store_true", help="also time 84x84 IMPALA models")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    load = os.getloadavg()
    print(f"torch {torch.__version__}, cpu count {os.cpu_count()}, load {load}")
    if load[0] > (os.cpu_count() or 1) and torch.get_num_threads() > 1:
        print("note: the machine is busy; multi-threaded CPU timings then mostly measure thread")
        print("      synchronisation stalls. --threads 1 gives stabler numbers.")
    devices = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    if args.device != "auto":
        devices = [args.device]
    for name in devices:
        run(torch.device(name), args.batch, args.steps, args.pixels)


if __name__ == "__main__":
    main()
