"""Same-run throughput of our BC and CQL against d3rlpy 2.8.1's, plus our CVL and a FLOP bound.

Same data, same sizes, same thread count: one Meta-World state dataset (obs 39, actions 4;
the issue's is 50k transitions of drawer-open, ``python -m cvl_eval generate --tasks drawer-open
--kind mixture --episodes 100 --out-dir DIR``), 256 x 256 hidden layers, batch 512, Adam at
3e-4, 1 torch thread by default.

What is timed, per contender and round: whole training steps until ``seconds`` have passed,
each one batch drawn by the library's own sampler from the whole dataset plus one update on it (d3rlpy:
``ReplayBuffer.sample_transition_batch(512)`` then ``algo.update(batch)``, which is what its
``fit`` loop does per step minus logging; ours: ``sampler.sample()`` then ``learner.update``).
Contenders take turns for ``rounds`` rounds (interleaved, so a noisy neighbour hurts all of them
alike); each round gives one steps/s per contender and the table shows the median and the
min-max over rounds. Ratios are of medians.

Contenders (both libraries build fresh networks with seed 0; updates before the timed rounds
are ``warmup`` untimed steps; ``--torso mlp`` gives ours d3rlpy's plain Linear+ReLU MLPs, equal
architecture, instead of the paper's DenseNet with LayerNorm):

- ``bc``: ours, tanh-Gaussian max likelihood with a 10-sample entropy bonus, DenseNet+LayerNorm;
- ``d3rlpy_bc``: deterministic policy, MSE (d3rlpy's default ``policy_type``);
- ``d3rlpy_bc_stoch``: ``policy_type="stochastic"`` (Gaussian max likelihood), the same
  policy type as ours;
- ``cql``: ours after its BC warm start (``policy_eval_start=0``), fixed ``cql_alpha=1``,
  10 + 10 + 10 sampled actions per state;
- ``cql_manual``: ``cql`` with ``manual_gradients=True`` (hand-written gradients,
  `cvl_algos.cql_manual`; either torso);
- ``d3rlpy_cql``: ``conservative_weight=1``, ``alpha_learning_rate=0`` (fixed weight, as ours),
  ``n_action_samples=10``, all learning rates 3e-4, deterministic backup (both defaults);
- ``cvl`` / ``cvl_mc``: ours only, batches of 512 uniform anchors (``sampler_mode="uniform"``).

The FLOP bound: FLOPs of one update of each contender counted by
``torch.utils.flop_counter.FlopCounterMode`` (matmuls only: that is what it counts), divided
into the measured float32 matmul throughput of this machine at the thread count (best of a few
GEMM shapes of the networks), i.e. the steps/s an update made of nothing but its matmuls at
that throughput would reach. Each ratio line also prints its ceiling: our learner at its FLOP
bound against the other contender as measured, the best ratio any implementation of our update's
arithmetic could reach on this machine (`flop_bound`).

d3rlpy is optional and benchmark-only: it is not in the Pants lockfile. Without it the script
prints how to get it and still times ours. Run (from the repository root):

    python3.11 -m venv /tmp/venv-d3
    /tmp/venv-d3/bin/pip install torch==2.13.0 d3rlpy==2.8.1 einops safetensors
    /tmp/venv-d3/bin/pip install --no-deps -e packages/cvl-data -e packages/cvl-models \\
        -e packages/cvl-algos
    /tmp/venv-d3/bin/python benchmarks/bench_vs_d3rlpy.py --dataset DIR [--rounds 5 --seconds 3]

or without d3rlpy, ours only:

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos \\
        python benchmarks/bench_vs_d3rlpy.py --dataset DIR
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cvl_algos.malloc import retain_freed_memory
from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.flop_bound import gemm_flops_per_s, update_flops  # noqa: E402

HIDDEN = (256, 256)
BATCH = 512
LR = 3e-4
D3RLPY_HINT = (
    "d3rlpy is not importable: only our learners are timed. To compare, install it in a "
    "separate venv: `pip install torch==2.13.0 d3rlpy==2.8.1` (see this script's docstring)."
)


@dataclass
class Contender:
    """One timed learner: ``step()`` samples a batch and updates once; ``flop_step()`` is the
    update alone on one fixed batch (what the FLOP counter sees)."""

    name: str
    step: Callable[[], object]
    flop_step: Callable[[], object]


# ----------------------------------------------------------------------------- ours

LEARNERS = {"cql_manual": "cql"}
"""Contenders that are a registered learner with other settings (`our_contender`)."""


def our_contender(name: str, dataset, seed: int = 0, torso: str = "densenet") -> Contender:
    """Our learner ``name`` at the benchmark's sizes and ``torso`` with its own sampler over
    ``dataset``."""
    from cvl_algos import make_learner

    overrides = {"hidden": HIDDEN, "batch_size": BATCH, "lr": LR, "torso": torso}
    if name.startswith("cql"):
        overrides["policy_eval_start"] = 0
    if name == "cql_manual":  # the same CQL, its gradients hand-written (cvl_algos.cql_manual)
        overrides["manual_gradients"] = True
    if name.startswith("cvl"):
        overrides["sampler_mode"] = "uniform"
    spec = dataset.spec
    learner = make_learner(
        LEARNERS.get(name, name), spec.obs_shape, spec.action_shape[0], seed=seed, **overrides
    )
    sampler = learner.make_sampler(dataset, "cpu", seed)
    fixed = sampler.sample()
    return Contender(name, lambda: learner.update(sampler.sample()), lambda: learner.update(fixed))


# ----------------------------------------------------------------------------- d3rlpy


def d3rlpy_available() -> bool:
    try:
        import d3rlpy  # noqa: F401  # pants: no-infer-dep
    except ImportError:
        return False
    return True


def d3rlpy_buffer(dataset):
    """Our dataset as a d3rlpy ``MDPDataset``: the same transitions, episodes ended by a
    timeout (or a terminal where ours has one) so next-observations stay within episodes."""
    import d3rlpy  # pants: no-infer-dep

    obs, actions, rewards, terminals, timeouts = _flat_episodes(dataset)
    return d3rlpy.dataset.MDPDataset(
        observations=obs,
        actions=actions,
        rewards=rewards,
        terminals=terminals,
        timeouts=timeouts,
        action_space=d3rlpy.ActionSpace.CONTINUOUS,
    )


def _flat_episodes(dataset):
    """Per-step arrays (N, ...) of every episode: observation s_t (the final observation of each
    episode is dropped, d3rlpy stores none), action, reward, terminal and timeout flags."""
    from cvl_data.device_data import DeviceData

    data = DeviceData.load(dataset, torch.device("cpu"))
    obs = data.observations.index_select(0, data.obs_row).numpy()
    terminals = data.terminated.numpy().astype(np.float32)
    ends = data.episode_offsets[1:] - 1
    timeouts = np.zeros_like(terminals)
    timeouts[ends] = 1.0 - terminals[ends]
    return (
        obs.astype(np.float32),
        data.actions.numpy().astype(np.float32),
        data.rewards.numpy().astype(np.float32),
        terminals,
        timeouts,
    )


def d3rlpy_contender(name: str, buffer, seed: int = 0) -> Contender:
    """d3rlpy's BC (deterministic or stochastic) or CQL at the benchmark's sizes."""
    import d3rlpy  # pants: no-infer-dep

    d3rlpy.seed(seed)
    encoder = d3rlpy.models.VectorEncoderFactory(hidden_units=list(HIDDEN))
    if name == "d3rlpy_cql":
        config = d3rlpy.algos.CQLConfig(
            batch_size=BATCH,
            actor_learning_rate=LR,
            critic_learning_rate=LR,
            temp_learning_rate=LR,
            alpha_learning_rate=0.0,
            conservative_weight=1.0,
            n_action_samples=10,
            actor_encoder_factory=encoder,
            critic_encoder_factory=encoder,
        )
    else:
        policy_type = "stochastic" if name == "d3rlpy_bc_stoch" else "deterministic"
        config = d3rlpy.algos.BCConfig(
            batch_size=BATCH, learning_rate=LR, policy_type=policy_type, encoder_factory=encoder
        )
    algo = config.create(device=False)
    algo.build_with_dataset(buffer)
    fixed = buffer.sample_transition_batch(BATCH)
    return Contender(
        name,
        lambda: algo.update(buffer.sample_transition_batch(BATCH)),
        lambda: algo.update(fixed),
    )


# ----------------------------------------------------------------------------- measuring


def interleaved_rates(
    contenders: list[Contender], rounds: int, seconds: float, warmup: int
) -> dict[str, list[float]]:
    """Steps/s of each contender in each round: whole steps until ``seconds`` have passed;
    contenders take turns within a round."""
    for contender in contenders:
        for _ in range(warmup):
            contender.step()
    rates: dict[str, list[float]] = {c.name: [] for c in contenders}
    for _ in range(rounds):
        for contender in contenders:
            steps, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                contender.step()
                steps += 1
            rates[contender.name].append(steps / elapsed)
    return rates


# ----------------------------------------------------------------------------- report

RATIOS = (
    ("bc", "d3rlpy_bc", "BC ours / d3rlpy deterministic BC"),
    ("bc", "d3rlpy_bc_stoch", "BC ours / d3rlpy stochastic BC (same policy type)"),
    ("cql", "d3rlpy_cql", "CQL ours / d3rlpy CQL"),
    ("cql_manual", "d3rlpy_cql", "CQL ours manual grads / d3rlpy CQL"),
    ("cql_manual", "cql", "CQL ours manual grads / autograd"),
    ("cvl", "cql", "CVL ours / CQL ours"),
    ("cvl_mc", "cql", "CVL-MC ours / CQL ours"),
)


def print_table(rates: dict[str, list[float]], flops: dict[str, int], peak: float) -> None:
    """Median steps/s with the min-max over rounds, GFLOP per update and the FLOP bound."""
    print(
        f"{'learner':<17}{'median':>9}{'min':>9}{'max':>9}{'GFLOP':>8}{'bound/s':>9}{'%bound':>8}"
    )
    for name, values in rates.items():
        median = statistics.median(values)
        gflop = flops[name] / 1e9
        bound = peak / flops[name] if flops[name] else float("nan")
        print(
            f"{name:<17}{median:>9.1f}{min(values):>9.1f}{max(values):>9.1f}"
            f"{gflop:>8.2f}{bound:>9.1f}{100 * median / bound:>7.0f}%"
        )
    print(f"\n{'':<52}{'ratio':>7}{'ceiling':>9}")
    for ours, theirs, label in RATIOS:
        if ours in rates and theirs in rates:
            theirs_rate = statistics.median(rates[theirs])
            ratio = statistics.median(rates[ours]) / theirs_rate
            # ours at its FLOP bound against theirs as measured: no implementation of our
            # update's arithmetic on this machine can reach a higher ratio
            ceiling = peak / flops[ours] / theirs_rate if flops[ours] else float("nan")
            print(f"{label:<52}{ratio:>6.2f}x{ceiling:>8.2f}x")


def build_contenders(args, dataset) -> list[Contender]:
    """Ours first, then d3rlpy's where importable and asked for."""
    contenders = [our_contender(name, dataset, torso=args.torso) for name in args.ours]
    if args.d3rlpy and d3rlpy_available():
        buffer = d3rlpy_buffer(dataset)
        contenders += [d3rlpy_contender(name, buffer) for name in args.d3rlpy]
    elif args.d3rlpy:
        print(D3RLPY_HINT)
    return contenders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="a cvl_data state dataset folder")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timed rounds")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="seconds per contender per round"
    )
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--ours", nargs="*", default=["bc", "cql", "cvl", "cvl_mc"])
    parser.add_argument(
        "--torso",
        choices=["densenet", "mlp"],
        default="densenet",
        help="our MLP torso: the paper's DenseNet+LayerNorm, or plain Linear+ReLU as d3rlpy's",
    )
    parser.add_argument(
        "--d3rlpy", nargs="*", default=["d3rlpy_bc", "d3rlpy_bc_stoch", "d3rlpy_cql"]
    )
    args = parser.parse_args()
    with process_settings(args.threads):  # threads, and malloc as training sets it
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark, under the process settings training uses (`cvl_algos.runtime`)."""
    from cvl_data import open_dataset

    dataset = open_dataset(args.dataset)
    contenders = build_contenders(args, dataset)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), dataset "
        f"{args.dataset} ({dataset.num_steps} transitions), hidden {HIDDEN}, batch {BATCH}, "
        f"{args.rounds} rounds x {args.seconds:g} s after {args.warmup} warm-up steps, "
        f"our torso {args.torso}"
        f", malloc retains freed memory: {retain_freed_memory()}"
    )
    flops = {c.name: update_flops(c.flop_step) for c in contenders}
    # the networks' shapes: batch 512 and CQL's 30 x 512 rows, 256-wide layers
    peak = gemm_flops_per_s([(BATCH, 256, 256), (30 * BATCH, 256, 256), (BATCH, 299, 256)])
    print(f"matmul throughput: {peak / 1e9:.1f} GFLOP/s\n")
    rates = interleaved_rates(contenders, args.rounds, args.seconds, args.warmup)
    print_table(rates, flops, peak)


if __name__ == "__main__":
    main()
