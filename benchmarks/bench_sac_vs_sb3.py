"""Same-run SAC data collection: ours (`cvl_eval.datagen.sac`) against Stable-Baselines3's SAC.

Setup: Meta-World drawer-open, 1 torch thread, 256 x 256 hidden layers, batch 512 by default
(``--hidden 128 128 --batch-size 256``: the SAC-replay preset's sizes), Adam at 3e-4, one update
per collected frame once the warm-up frames are collected. Every contender runs at the same
sizes.

Contenders (each with its own env, replay buffer and networks, seed 0):

- ``ours``: the loop `generate_sac` runs per episode (`run_sac_episode`: act, env step, store in
  the replay buffer, update), the paper's DenseNet + LayerNorm torso; episodes are not written
  to disk (SB3 writes nothing either);
- ``ours_mlp``: the same with the plain Linear+ReLU torso (``torso="mlp"``), SB3's architecture;
- ``ours_mlp_manual``: ``ours_mlp`` with ``manual_gradients=True`` (the update's gradients by
  hand-written backward passes, `cvl_algos.sac_manual`; equal to autograd's up to rounding);
- ``ours_manual`` (not run by default): ``ours`` (the DenseNet + LayerNorm) with
  ``manual_gradients=True`` (the same hand-written update with the DenseNet's helpers,
  `cvl_algos.sac_manual_torso`);
- ``ours_compiled`` and ``ours_mlp_compiled`` (not run by default): ``ours`` and ``ours_mlp``
  with ``compile=True`` (the losses under ``torch.compile``, random draws eager's). They compile
  at their first update, the last warm-up frame, so their warm-up rates include the
  compilation; their bounds take the eager twin's warm-up rate (the same env, acting and
  storing) when the twin runs too;
- ``sb3``: ``stable_baselines3.SAC("MlpPolicy", net_arch=hidden, batch_size=batch,
  train_freq=1, gradient_steps=1, learning_starts=warm-up)``, continued with
  ``learn(100, reset_num_timesteps=False)`` per turn. SB3 clips no gradients; ours clips at 100.

What is timed: a contender collects one episode per turn, 100 frames (the env's time limit is
set to 100 for both, so that turns are short and a neighbour's load changes hit every contender
alike; resets cost the same on both sides); contenders take turns. The first 5 turns are the
warm-up (500 uniform random actions, no updates: ours ``warmup_frames``, SB3
``learning_starts``), reported on their own; the next ``rounds`` turns are the steady state (an
action from the policy and one update per frame). The table shows the median frames/s over the
steady rounds with their min-max; ratios are of medians. ``cpu f/s`` is the same turns' frames
per second of the thread's CPU time (``time.thread_time``): on a machine shared with other jobs
it leaves out the time spent waiting for a core, so it is the steadier estimate of the rate on a
core of one's own (the ``cpu ratio`` column compares those).

FLOP bound (`flop_bound`): the matmul FLOPs of one update of each contender on a fixed batch
(``FlopCounterMode``), divided into this machine's measured GEMM throughput at the thread count,
gives the updates/s of an update made only of matmuls. A collected frame also steps the env and
stores the transition, which the warm-up frames measure (the same work without the update), so
the frame bound is ``1 / (flops / peak + 1 / warm-up rate)``. The replay bound puts the time of
the update's own matrix products, replayed at their shapes and layouts (`gemm_replay_seconds`),
in place of ``flops / peak``: the tighter bound, since a backward pass's products (weight
gradients, the width-1 output layer, the narrow input layer) run below the best GEMM rate. Each
ratio line prints both ceilings: ours at each frame bound against the other contender as
measured. ``ops`` counts the ATen operators one update dispatches (`flop_bound.dispatched_ops`):
where the replay bound is far above the measured rate, per-op dispatch and bookkeeping is what
the rest of the time goes to, and fewer ops is what would pay.

SB3 is optional and benchmark-only (not in the Pants lockfile); install it beside torch 2.13.0:
``pip install stable-baselines3 'torch==2.13.0'``. Run from the repository root:

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval \\
        python benchmarks/bench_sac_vs_sb3.py [--rounds 10] [--contenders ours ours_mlp sb3] \\
        [--hidden 128 128] [--batch-size 256]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cvl_algos.runtime import process_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
from benchmarks.flop_bound import (  # noqa: E402
    dispatched_ops,
    gemm_flops_per_s,
    gemm_replay_seconds,
    update_flops,
)

TASK = "drawer-open"
HIDDEN = (256, 256)
BATCH = 512
LR = 3e-4
TURN = 100  # frames per turn: the episode's time limit (Meta-World's own is 500)
WARMUP = 500  # random frames before the first update: 5 turns
SB3_MISSING = (
    "stable-baselines3 is not importable: install it beside torch 2.13.0 "
    "(`pip install stable-baselines3 'torch==2.13.0'`) or leave `sb3` out of --contenders."
)


@dataclass
class Contender:
    """``episode()`` collects one more episode (500 frames); ``flop_step()`` is one update on a
    fixed batch (what the FLOP counter sees)."""

    name: str
    episode: Callable[[], None]
    flop_step: Callable[[], object]


def our_collection(
    name: str,
    frames_total: int,
    seed: int = 0,
    episode_steps: int | None = TURN,
    hidden: tuple[int, ...] = HIDDEN,
    batch_size: int = BATCH,
):
    """Env, learner, replay buffer and `SACDataConfig` of our SAC collection with the torso of
    ``name`` (``ours*``: the default DenseNet, ``ours_mlp*``: the plain MLP; ``*_manual``:
    ``manual_gradients=True``, ``*_compiled``: ``compile=True``) at sizes ``hidden`` and
    ``batch_size``, episodes of ``episode_steps`` frames (None: Meta-World's 500) after
    ``WARMUP`` random ones."""
    from cvl_algos import make_learner
    from cvl_algos.sac import SACConfig
    from cvl_data import ReplayBuffer
    from cvl_eval.datagen.sac.config import SACDataConfig
    from cvl_eval.envs.make import make_env

    torso = {"torso": "mlp"} if name.startswith("ours_mlp") else {}  # else the default, DenseNet
    compile_ = {"compile": True} if name.endswith("_compiled") else {}
    manual = {"manual_gradients": True} if name.endswith("_manual") else {}
    sac = SACConfig(hidden=hidden, batch_size=batch_size, lr=LR, **torso, **compile_, **manual)
    config = SACDataConfig(
        TASK,
        frames=frames_total,
        warmup_frames=WARMUP,
        sac=sac,
        seed=seed,
        max_episode_steps=episode_steps,
    )
    env = make_env(config.env, **config.env_options())
    action_dim = int(np.prod(env.action_space.shape))
    obs_shape = env.observation_space.shape
    learner = make_learner("sac", obs_shape, action_dim, "cpu", seed, **dataclasses.asdict(sac))
    return env, learner, ReplayBuffer(frames_total, obs_shape, action_dim), config


def our_contender(
    name: str, rounds: int, hidden: tuple[int, ...], batch_size: int, seed: int = 0
) -> Contender:
    """Our SAC collection loop (`run_sac_episode`) with the torso of ``name``."""
    from cvl_eval.datagen.sac.episode import run_sac_episode

    env, learner, buffer, config = our_collection(
        name, WARMUP + TURN * rounds, seed, hidden=hidden, batch_size=batch_size
    )
    state = {"frames": 0, "episode": 0}

    def episode() -> None:
        _, state["frames"] = run_sac_episode(
            env, learner, buffer, config, state["episode"], state["frames"], None, lambda: None
        )
        state["episode"] += 1

    counted = learner
    if config.sac.compile:  # the FLOP counter and the replay see eager ops: an eager twin
        from cvl_algos import make_learner

        sac = dataclasses.replace(config.sac, compile=False)
        counted = make_learner(
            "sac", buffer.obs_shape, buffer.action_dim, "cpu", seed, **dataclasses.asdict(sac)
        )

    def flop_step():
        return counted.update(buffer.sample(batch_size, torch.Generator().manual_seed(0)))

    return Contender(name, episode, flop_step)


def sb3_available() -> bool:
    try:
        import stable_baselines3  # noqa: F401  # pants: no-infer-dep
    except ImportError:
        return False
    return True


def sb3_contender(
    rounds: int, hidden: tuple[int, ...], batch_size: int, seed: int = 0
) -> Contender:
    """Stable-Baselines3's SAC on the same env at the same sizes."""
    from stable_baselines3 import SAC  # pants: no-infer-dep

    from cvl_eval.envs.make import make_env

    model = SAC(
        "MlpPolicy",
        make_env(TASK, seed=seed, max_episode_steps=TURN),
        learning_rate=LR,
        buffer_size=WARMUP + TURN * rounds,
        learning_starts=WARMUP,
        batch_size=batch_size,
        train_freq=1,
        gradient_steps=1,
        policy_kwargs={"net_arch": list(hidden)},
        seed=seed,
        device="cpu",
    )

    def episode() -> None:
        model.learn(TURN, reset_num_timesteps=False, progress_bar=False)

    return Contender("sb3", episode, lambda: model.train(gradient_steps=1, batch_size=batch_size))


def interleaved_rates(
    contenders: list[Contender], rounds: int
) -> tuple[dict[str, float], dict[str, list[float]], dict[str, list[float]]]:
    """Warm-up frames/s (the first ``WARMUP`` frames, taking turns), and steady frames/s per
    round of each contender: per wall second and per second of the thread's CPU time."""
    warmup_seconds = {c.name: 0.0 for c in contenders}
    steady: dict[str, list[float]] = {c.name: [] for c in contenders}
    steady_cpu: dict[str, list[float]] = {c.name: [] for c in contenders}
    for turn in range(WARMUP // TURN + rounds):
        for contender in contenders:
            start, start_cpu = time.perf_counter(), time.thread_time()
            contender.episode()
            seconds = time.perf_counter() - start
            cpu_seconds = time.thread_time() - start_cpu
            if turn < WARMUP // TURN:
                warmup_seconds[contender.name] += seconds
            else:
                steady[contender.name].append(TURN / seconds)
                steady_cpu[contender.name].append(TURN / cpu_seconds)
    return {name: WARMUP / s for name, s in warmup_seconds.items()}, steady, steady_cpu


def print_table(
    warmup, steady, steady_cpu, flops, peak, replay, ops
) -> dict[str, tuple[float, float]]:
    """Frames/s, GFLOP and dispatched ATen ops per update and the bounds; returns each
    contender's frame bounds (at the best GEMM rate, and at its own matmuls replayed)."""
    width = max(14, 2 + max(len(name) for name in steady))
    print(
        f"{'contender':<{width}}{'warm-up':>9}{'steady':>9}{'min':>8}{'max':>8}{'cpu f/s':>9}"
        f"{'GFLOP':>8}{'frame bound':>13}{'%bound':>8}{'replay ms':>11}{'replay bound':>14}"
        f"{'%replay':>9}{'ops':>6}"
    )
    bounds = {}
    for name, values in steady.items():
        median = statistics.median(values)
        # the compiled contender's warm-up includes its compilation (module docstring)
        eager = name.removesuffix("_compiled")
        warm = warmup[eager] if eager != name and eager in warmup else warmup[name]
        flop_bound = 1.0 / (flops[name] / peak + 1.0 / warm)
        replay_bound = 1.0 / (replay[name] + 1.0 / warm)
        bounds[name] = (flop_bound, replay_bound)
        print(
            f"{name:<{width}}{warmup[name]:>9.0f}{median:>9.1f}{min(values):>8.1f}{max(values):>8.1f}"
            f"{statistics.median(steady_cpu[name]):>9.1f}"
            f"{flops[name] / 1e9:>8.2f}{flop_bound:>13.1f}{100 * median / flop_bound:>7.0f}%"
            f"{1e3 * replay[name]:>11.2f}{replay_bound:>14.1f}{100 * median / replay_bound:>8.0f}%"
            f"{ops[name]:>6}"
        )
    return bounds


def print_ratios(steady, steady_cpu, bounds) -> None:
    """Each pair's ratio of median steady frames/s, with ours at its frame bounds as ceilings,
    and the ratio of median frames per CPU second."""
    pairs = (
        ("ours", "sb3", "ours (DenseNet+LayerNorm) / SB3 (plain MLP)"),
        ("ours_mlp", "sb3", "ours (plain MLP) / SB3 (plain MLP)"),
        ("ours_mlp", "ours", "ours plain MLP / ours DenseNet"),
        ("ours_mlp_manual", "sb3", "ours plain MLP manual grads / SB3 (plain MLP)"),
        ("ours_mlp_manual", "ours_mlp", "ours plain MLP manual grads / autograd"),
        ("ours_manual", "sb3", "ours DenseNet manual grads / SB3 (plain MLP)"),
        ("ours_manual", "ours", "ours DenseNet manual grads / autograd"),
        ("ours_compiled", "sb3", "ours DenseNet compiled / SB3 (plain MLP)"),
        ("ours_compiled", "ours", "ours DenseNet compiled / eager"),
        ("ours_mlp_compiled", "sb3", "ours plain MLP compiled / SB3 (plain MLP)"),
        ("ours_mlp_compiled", "ours_mlp", "ours plain MLP compiled / eager"),
    )
    print(f"\n{'':<46}{'ratio':>7}{'ceiling':>9}{'replay ceiling':>16}{'cpu ratio':>11}")
    for ours, theirs, label in pairs:
        if ours in steady and theirs in steady:
            theirs_rate = statistics.median(steady[theirs])
            ratio = statistics.median(steady[ours]) / theirs_rate
            flop_bound, replay_bound = bounds[ours]
            cpu = statistics.median(steady_cpu[ours]) / statistics.median(steady_cpu[theirs])
            print(
                f"{label:<46}{ratio:>6.2f}x{flop_bound / theirs_rate:>8.2f}x"
                f"{replay_bound / theirs_rate:>15.2f}x{cpu:>10.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="steady turns of 100 frames")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument(
        "--contenders",
        nargs="+",
        default=["ours", "ours_mlp", "sb3"],
        choices=[
            "ours",
            "ours_mlp",
            "ours_mlp_manual",
            "ours_manual",
            "ours_compiled",
            "ours_mlp_compiled",
            "sb3",
        ],
        help="ours: the DenseNet+LayerNorm torso (default); ours_mlp: the plain MLP torso; "
        "ours_mlp_manual: the plain MLP with manual_gradients=True; ours_manual: the DenseNet "
        "with manual_gradients=True; *_compiled: the same with compile=True",
    )
    parser.add_argument(
        "--hidden", type=int, nargs="+", default=list(HIDDEN), help="hidden widths, all nets"
    )
    parser.add_argument("--batch-size", type=int, default=BATCH, help="SAC's update batch")
    args = parser.parse_args()
    if "sb3" in args.contenders and not sb3_available():
        sys.exit(SB3_MISSING)
    with process_settings(args.threads):  # threads, and malloc as generation sets them
        run(args)


def run(args: argparse.Namespace) -> None:
    """The benchmark, under the process settings SAC generation uses (`cvl_algos.runtime`)."""
    hidden, batch = tuple(args.hidden), args.batch_size
    contenders = [
        (
            sb3_contender(args.rounds, hidden, batch)
            if name == "sb3"
            else our_contender(name, args.rounds, hidden, batch)
        )
        for name in args.contenders
    ]
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {TASK}, hidden "
        f"{hidden}, batch {batch}, 1 update/frame; turns of {TURN} frames: {WARMUP} warm-up "
        f"frames (random actions, no updates), then {args.rounds} steady rounds"
    )
    # the update's GEMM shapes: hidden products, DenseNet skip layers (width + 43), input layer
    width = hidden[-1]
    peak = gemm_flops_per_s([(batch, width, width), (batch, width + 43, width), (batch, 43, width)])
    print(f"matmul throughput: {peak / 1e9:.1f} GFLOP/s\n")
    warmup, steady, steady_cpu = interleaved_rates(contenders, args.rounds)
    flops = {c.name: update_flops(c.flop_step) for c in contenders}
    replay = {c.name: gemm_replay_seconds(c.flop_step)[0] for c in contenders}
    ops = {c.name: dispatched_ops(c.flop_step) for c in contenders}
    bounds = print_table(warmup, steady, steady_cpu, flops, peak, replay, ops)
    print_ratios(steady, steady_cpu, bounds)


if __name__ == "__main__":
    main()
