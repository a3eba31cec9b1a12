"""Gradient steps per second of CVL, CQL and BC at the paper's sizes, on CPU and on CUDA.

Sizes (paper appendix, table 1-2): Meta-World states (obs 39, actions 4), 256 x 256 DenseNet
MLPs with LayerNorm, batch 512 for CQL and BC, H = 500 anchors for CVL (its default
``batch_size``), Adam at 3e-4, grad clipping at 100. ``--pixels`` switches to 84 x 84 x 3 uint8
observations through the IMPALA encoder.

What is timed: ``learner.update(batch)`` alone (forward, backward, clipping, optimiser and EMA
steps, and the metrics' one host transfer), on one fixed synthetic batch that already lives on
the device; sampling is benchmarked separately (``bench_sampler.py``). CUDA is synchronised
before the clock stops. CQL is timed after its BC warm start (``policy_eval_start=0``: the SAC
actor loss with the critic's Q); ``cql_warmstart`` times the first 40k updates' variant.

Run:

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos \\
        python benchmarks/bench_algos.py [--steps 50] [--devices cpu cuda] [--compile]

Reduced (CPU-budget) sizes of the paper presets' default budgets:

    ... bench_algos.py --hidden 128 128 --batch 256 \
        --cvl-set num_action_samples=4 num_rff_features=512

Prints one table per device with steps/s, seconds per step and the ratio to BC (the baseline,
1.00).
"""

from __future__ import annotations

import argparse
import time

import torch

from cvl_algos import make_learner
from cvl_algos.runtime import process_settings
from cvl_data import ContrastiveBatch, TransitionBatch

PRESET_CVL_MC = {
    "temperature": 0.1,
    "self_normalized": True,
    "normalize_q": True,
    "policy_extraction": "ddpgbc",
    "bc_alpha": 0.3,
    "policy_ema_tau": 0.001,
}

# name shown -> (registry name, config overrides)
ALGOS = {
    "bc": ("bc", {}),
    "cql": ("cql", {"policy_eval_start": 0}),
    "cql_warmstart": ("cql", {}),
    "cvl": ("cvl", {}),
    "cvl_mc": ("cvl_mc", {}),
    # the critic's action-contrastive term (`action_contrast_weight`) with 8 other actions
    "cvl_mc_action_contrast": (
        "cvl_mc",
        {"action_contrast_weight": 1.0, "action_contrast_negatives": 8},
    ),
    # the presets' CVL without RFF on mixed-quality and hard data (`MIXED_OVERRIDES`): without
    # its critic term, with the term's uniform negatives, and with the presets' negatives (half the
    # policy's mode and samples, half uniform)
    "cvl_mc_presets_plain": ("cvl_mc", PRESET_CVL_MC),
    "cvl_mc_presets_uniform": (
        "cvl_mc",
        {
            **PRESET_CVL_MC,
            "action_contrast_weight": 1.0,
            "action_contrast_negatives": 8,
            "action_contrast_source": "uniform",
        },
    ),
    "cvl_mc_presets": (
        "cvl_mc",
        {
            **PRESET_CVL_MC,
            "action_contrast_weight": 1.0,
            "action_contrast_negatives": 8,
            "action_contrast_source": "policy_uniform",
        },
    ),
    # the presets' CVL with RFF (positive features, self-normalised), one draw or a new draw
    # every update (`rff_redraw`)
    "cvl_positive": ("cvl", {"rff_kind": "positive", "self_normalized": True, "temperature": 0.1}),
    "cvl_positive_redraw": (
        "cvl",
        {
            "rff_kind": "positive",
            "self_normalized": True,
            "temperature": 0.1,
            "rff_redraw": True,
            "beta_xi": 0.0,
        },
    ),
}


def _obs(n: int, obs_shape: tuple[int, ...], device: torch.device, gen: torch.Generator):
    if len(obs_shape) == 3:
        return torch.randint(0, 256, (n, *obs_shape), generator=gen).to(torch.uint8).to(device)
    return torch.randn(n, *obs_shape, generator=gen).to(device)


def make_batch(kind: str, size: int, obs_shape, action_dim: int, device: torch.device):
    """A synthetic batch of ``size`` rows on ``device`` in the layout the learner samples."""
    gen = torch.Generator().manual_seed(0)
    action = (torch.rand(size, action_dim, generator=gen) * 2 - 1).to(device)
    reward = torch.rand(size, generator=gen).to(device)
    if kind == "transition":
        return TransitionBatch(
            obs=_obs(size, obs_shape, device, gen),
            action=action,
            reward=reward,
            obs_next=_obs(size, obs_shape, device, gen),
            terminated=torch.zeros(size, device=device),
        )
    return ContrastiveBatch(
        obs_t=_obs(size, obs_shape, device, gen),
        action_t=action,
        reward_t=reward,
        obs_next=_obs(size, obs_shape, device, gen),
        done=torch.zeros(size, device=device),
        obs_future=_obs(size, obs_shape, device, gen),
        reward_future=torch.rand(size, generator=gen).to(device),
        offset=torch.randint(1, 100, (size,), generator=gen).to(device),
        task_id=None,
    )


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench_one(name: str, device: torch.device, args) -> tuple[float, int]:
    """Steps per second of ``name`` on ``device``, and the batch size it used."""
    registry_name, overrides = ALGOS[name]
    obs_shape = (84, 84, 3) if args.pixels else (39,)
    sizes = {}
    if args.hidden:
        sizes["hidden"] = tuple(args.hidden)
    if args.batch:
        sizes["batch_size"] = args.batch
    extra = {**overrides, **sizes}
    if name.startswith("cvl"):
        extra.update(args.cvl_set)
    learner = make_learner(
        registry_name, obs_shape, 4, device=device, seed=0, compile=args.compile, **extra
    )
    size = learner.config.batch_size
    batch = make_batch(learner.sampler_kind, size, obs_shape, 4, device)
    for _ in range(args.warmup):
        learner.update(batch)
    _sync(device)
    start = time.perf_counter()
    for _ in range(args.steps):
        learner.update(batch)
    _sync(device)
    return args.steps / (time.perf_counter() - start), size


def _int_setting(item: str) -> tuple[str, int]:
    key, sep, value = item.partition("=")
    if not sep or not value.lstrip("-").isdigit():
        raise SystemExit(f"--cvl-set: expected KEY=INT, got {item!r}")
    return key, int(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="timed updates per algorithm")
    parser.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    parser.add_argument("--devices", nargs="+", default=None, help="default: cpu (+ cuda)")
    parser.add_argument("--pixels", action="store_true", help="84x84x3 pixels, IMPALA encoder")
    parser.add_argument("--compile", action="store_true", help="torch.compile the losses")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--hidden", type=int, nargs="+", default=None, help="hidden widths")
    parser.add_argument("--batch", type=int, default=None, help="batch size of every learner")
    parser.add_argument(
        "--cvl-set",
        nargs="*",
        default=[],
        metavar="KEY=INT",
        help="integer CVL config overrides, e.g. num_action_samples=4 num_rff_features=512",
    )
    args = parser.parse_args()
    args.cvl_set = dict(_int_setting(item) for item in args.cvl_set)
    with process_settings(args.threads):  # threads, and malloc as training sets it
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark, under the process settings training uses (`cvl_algos.runtime`)."""
    devices = args.devices or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    algos = ["bc", *[a for a in args.algos if a != "bc"]]  # BC first: it is the baseline
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
        f"obs {'84x84x3 pixels' if args.pixels else '(39,)'}, actions 4, "
        f"hidden {'x'.join(map(str, args.hidden or (256, 256)))}, cvl {args.cvl_set or 'paper'}, "
        f"compile={args.compile}, {args.steps} timed steps after {args.warmup} warm-up"
    )
    for name in devices:
        device = torch.device(name)
        label = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
        print(f"\n== {name} ({label})")
        print(f"{'algorithm':<24}{'batch':>7}{'steps/s':>11}{'s/step':>9}{'vs BC':>8}")
        baseline = None
        for algo in algos:
            rate, size = bench_one(algo, device, args)
            baseline = baseline or rate
            print(f"{algo:<24}{size:>7}{rate:>11.3g}{1 / rate:>9.3g}{rate / baseline:>8.2f}")


if __name__ == "__main__":
    main()
