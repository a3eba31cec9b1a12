"""The RFF estimator's xi step (eq. 12) with the self-normalised ``zeta``: one evaluation of the
random features for both sums (`xi_zeta_estimate`, what the learner does) against two
(`xi_estimate` with the rewards, then with ones), measured in the same run, interleaved.

Batch 256 future latents on the unit sphere, temperature 0.1, for the presets' RFF variant
(4096 FAVOR+ features at latent 64) and the OPRF screen's (16384 features at latent 32). Both
give the same numbers bit for bit (``tests/test_cvl_losses.py``); this prints ms per step and
the speed-up.

    ./pants run benchmarks/bench_rff_xi.py -- [--threads 1] [--repeats 30]
"""

from __future__ import annotations

import argparse
import time

import torch

from cvl_algos.cvl.q import xi_estimate, xi_zeta_estimate
from cvl_algos.malloc import retain_freed_memory
from cvl_models.rff import make_random_features

CASES = (("positive", 64, 4096), ("oprf", 32, 16384))


def two_evaluations(rff, psi, reward):
    return xi_estimate(rff, psi, reward), xi_estimate(rff, psi, torch.ones_like(reward))


def per_step_ms(fn, rff, psi, reward, repeats: int) -> float:
    with torch.no_grad():
        fn(rff, psi, reward)
        start = time.perf_counter()
        for _ in range(repeats):
            fn(rff, psi, reward)
        return (time.perf_counter() - start) / repeats * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as in training (`cvl_algos.runtime.process_settings`)
    gen = torch.Generator().manual_seed(0)
    print(f"batch {args.batch}, {args.threads} thread(s), {args.rounds} interleaved rounds")
    for kind, dim, features in CASES:
        rff = make_random_features(kind, dim, features, temperature=0.1, seed=0)
        psi = torch.nn.functional.normalize(torch.randn(args.batch, dim, generator=gen), dim=1)
        reward = torch.rand(args.batch, generator=gen)
        two, one = [], []
        for _ in range(args.rounds):
            two.append(per_step_ms(two_evaluations, rff, psi, reward, args.repeats))
            one.append(per_step_ms(xi_zeta_estimate, rff, psi, reward, args.repeats))
        best_two, best_one = min(two), min(one)
        print(
            f"{kind:8s} d={dim:3d} D={features:6d}: two evaluations {best_two:6.2f} ms, "
            f"one {best_one:6.2f} ms, speed-up {best_two / best_one:.2f}x"
        )


if __name__ == "__main__":
    main()
