"""Where a trained contrastive critic puts its future-state mass, and how much the action moves it.

For a CVL run and its dataset: draw next states s'_i of random transitions (whose next step is in
the episode), and for each of three actions a'_i at s'_i, the data's next action, the policy's
mode and a uniform random action, the softmax over the batch's next states
``w_ij = softmax_j f(s'_i, a'_i, s'_j)`` (the distribution TD InfoNCE bootstraps from, and the
weights of the self-normalised Q over these states). Prints the mean mass on s'_i itself and on
the states of its own episode (Meta-World places the object and goal once per episode and the
observation holds them, so other episodes' states are unreachable), and the total variation
between the action kinds' distributions. Run:

    ./pants run benchmarks/critic_occupancy.py -- --run runs/cvl_mc/drawer-open-v3/seed_0 \\
        --dataset data/drawer-open-v3 [--batch 256 --repeats 8]

or with ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_data.source import step_episode_index
from cvl_models import kernel_logits


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="run folder (its final/)")
    parser.add_argument("--dataset", type=Path, required=True, help="dataset folder")
    parser.add_argument("--batch", type=int, default=256, help="next states per draw")
    parser.add_argument("--repeats", type=int, default=8, help="draws")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    checkpoint = args.run / "final"
    if not (checkpoint / "state.json").is_file():
        parser.error(f"--run: {checkpoint} is not a checkpoint folder (no state.json)")
    if args.batch < 2 or args.repeats < 1:
        parser.error("--batch must be >= 2 and --repeats >= 1")
    return args


def next_state_rows(dataset, rng: np.random.Generator, batch: int) -> tuple[np.ndarray, ...]:
    """Observation rows of s'_i, the transition index of the step taken there, and its episode."""
    offsets = dataset.episode_offsets
    episode_of_step = step_episode_index(offsets)
    has_next = np.ones(dataset.num_steps, dtype=bool)
    has_next[offsets[1:] - 1] = False  # an episode's last step: its next state takes no action
    step = rng.choice(np.flatnonzero(has_next), batch, replace=False) + 1
    episode = episode_of_step[step]
    return step + episode, step, episode  # observation row of step t is t + its episode


@torch.no_grad()
def masses(learner, dataset, rng: np.random.Generator, batch: int) -> dict[str, np.ndarray]:
    """Per action kind: (mass on s'_i, mass on its episode) and the (B, B) weights."""
    rows, step, episode = next_state_rows(dataset, rng, batch)
    obs_next = learner.obs_tensor(dataset.observations[rows])
    same_episode = torch.as_tensor(episode[:, None] == episode[None, :])
    psi = learner.psi_target(obs_next)
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    actions = {
        "data next action": torch.as_tensor(dataset.actions[step]).float(),
        "policy mode": learner.policy.deterministic(obs_next),
        "uniform action": torch.rand(batch, learner.action_dim, generator=gen) * 2 - 1,
    }
    out, critic = {}, learner.critic
    for kind, action in actions.items():
        logits = kernel_logits(critic.phi(obs_next, action), psi, critic.temperature, critic.kernel)
        weights = torch.softmax(logits, dim=1)
        out[kind] = (
            weights.diagonal().mean().item(),
            (weights * same_episode).sum(1).mean().item(),
            weights,
        )
    return out


def main() -> None:
    args = parse_args()
    learner = load_learner(args.run / "final")
    dataset = open_dataset(args.dataset)
    rng = np.random.default_rng(args.seed)
    rows: dict[str, list] = {}
    for _ in range(args.repeats):
        draw = masses(learner, dataset, rng, args.batch)
        data_weights = draw["data next action"][2]
        for kind, (own, episode, weights) in draw.items():
            tv = 0.5 * (weights - data_weights).abs().sum(1).mean().item()
            rows.setdefault(kind, []).append((own, episode, tv))
    print(f"{args.run} on {args.dataset.name}: {args.repeats} draws of {args.batch} next states")
    print(f"{'action at s_i':18s} {'mass on s_i':>12s} {'on its episode':>15s} {'TV to data':>11s}")
    for kind, values in rows.items():
        own, episode, tv = np.mean(values, axis=0)
        print(f"{kind:18s} {own:12.3f} {episode:15.3f} {tv:11.3f}")


if __name__ == "__main__":
    main()
