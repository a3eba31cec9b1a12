"""Observations extended by the K previous actions: does the data's hidden behaviour show in them?

A mixture's behaviours can start alike (a wrong expert heads for the same handle as the right
one), so which one an episode follows is partly hidden from the state at its first steps. This
script measures that and screens the obvious repair, for any learner alike:

``auc``: how well a classifier tells an episode that succeeds from one that fails, from (s),
(s, a) and (s, a, the K previous actions), at steps 0-24 and from step 25 on (logistic regression
and a 64-unit MLP, 3 splits by episode, test AUC):

    ./pants run benchmarks/action_history.py -- auc --dataset data/handle-pull-v3 --k 3

``data``: write a copy of a dataset whose observation at step t is ``[s_t, a_{t-1}, ..., a_{t-K}]``
(zeros before the episode's first action):

    ./pants run benchmarks/action_history.py -- data --dataset data/handle-pull-v3 \\
        --out data_k3/handle-pull-v3 --k 3

``train``: `cvl-train` on such a copy, its evaluation environments extending each observation
by the policy's own K previous actions (same seeds, scoring and run folder as `cvl-train`, so
`cvl-report` reads the runs):

    ./pants run benchmarks/action_history.py -- train --k 3 -- --dataset data_k3/handle-pull-v3 \\
        --algorithm cvl_mc --out-dir runs/k3/handle-pull-v3/seed_0 ...

or with ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import gymnasium as gym
import numpy as np
import torch

from cvl_data import DatasetWriter, open_dataset
from cvl_data.source import step_episode_index


def with_history(observations: np.ndarray, actions: np.ndarray, k: int) -> np.ndarray:
    """One episode's ``(T + 1, d)`` observations and ``(T, a)`` actions -> ``(T + 1, d + k a)``:
    row t is ``[s_t, a_{t-1}, ..., a_{t-k}]``, zeros where ``t - j < 0``."""
    steps, dim = actions.shape
    padded = np.concatenate([np.zeros((k, dim), np.float32), actions.astype(np.float32)])
    # padded[i] = a_{i-k}; the column block for a_{t-j} at rows t = 0..T is padded[k-j : k-j+T+1]
    blocks = [padded[k - j : k - j + steps + 1] for j in range(1, k + 1)]
    return np.concatenate([observations.astype(np.float32), *blocks], axis=1)


def write_history_copy(source: str, out: str, k: int) -> None:
    """``source``'s dataset with `with_history` observations, written to ``out``."""
    data = open_dataset(source, verify=True)
    spec = data.spec
    if spec.obs_kind != "state":
        raise SystemExit(f"--dataset {source}: state observations only, got {spec.obs_kind!r}")
    provenance = {**spec.provenance, "action_history": {"k": k, "source": source}}
    action_dim = int(np.prod(spec.action_shape))
    new_spec = dataclasses.replace(
        spec, obs_shape=(spec.obs_shape[0] + k * action_dim,), provenance=provenance
    )
    with DatasetWriter(out, new_spec) as writer:
        for e in range(data.num_episodes):
            episode = data.episode(e)
            writer.add_episode(
                with_history(np.asarray(episode["observations"]), episode["actions"], k),
                episode["actions"],
                episode["rewards"],
                terminated=episode["terminated"],
                truncated=episode["truncated"],
                info=data.episode_info[e],
            )


class ActionHistory(gym.Wrapper):
    """Appends the K previous actions (clipped to [-1, 1], as the data stores them) to each
    observation; zeros after a reset."""

    def __init__(self, env: gym.Env, k: int):
        super().__init__(env)
        self.k, self.dim = k, int(np.prod(env.action_space.shape))
        extra = k * self.dim
        low = np.concatenate([env.observation_space.low, -np.ones(extra)]).astype(np.float32)
        high = np.concatenate([env.observation_space.high, np.ones(extra)]).astype(np.float32)
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.history = np.zeros((k, self.dim), np.float32)

    def _extended(self, obs: np.ndarray) -> np.ndarray:
        return np.concatenate([obs, self.history.reshape(-1)]).astype(np.float32)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.history[:] = 0.0
        return self._extended(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.history = np.roll(self.history, 1, axis=0)
        self.history[0] = np.clip(np.asarray(action, np.float32).reshape(-1), -1.0, 1.0)
        return self._extended(obs), reward, terminated, truncated, info


def train_with_history(k: int, train_argv: list[str]) -> int:
    """`cvl-train` with every evaluation environment wrapped in `ActionHistory`."""
    import cvl_eval.rollout.evaluate as evaluate
    from cvl_eval.console import train

    make_env = evaluate.make_env
    evaluate.make_env = lambda name, **kwargs: ActionHistory(make_env(name, **kwargs), k)
    return train(train_argv)


def _auc(score: np.ndarray, label: np.ndarray) -> float:
    ranks = np.empty(len(score))
    ranks[np.argsort(score)] = np.arange(1, len(score) + 1)
    positives, negatives = label.sum(), len(label) - label.sum()
    return float(
        (ranks[label == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)
    )


def _fit_scores(x: np.ndarray, y: np.ndarray, x_test: np.ndarray, hidden: int) -> np.ndarray:
    """A logistic regression (hidden 0) or a one-hidden-layer MLP, full-batch Adam, 1500 steps."""
    torch.manual_seed(0)
    mean, std = x.mean(0), x.std(0) + 1e-6
    inputs = torch.tensor((x - mean) / std, dtype=torch.float32)
    tests = torch.tensor((x_test - mean) / std, dtype=torch.float32)
    targets = torch.tensor(y, dtype=torch.float32)
    width = inputs.shape[1]
    net = (
        torch.nn.Linear(width, 1)
        if hidden == 0
        else torch.nn.Sequential(
            torch.nn.Linear(width, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
        )
    )
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-4)
    for _ in range(1500):
        optimiser.zero_grad()
        logits = net(inputs)[:, 0]
        torch.nn.functional.binary_cross_entropy_with_logits(logits, targets).backward()
        optimiser.step()
    with torch.no_grad():
        return net(tests)[:, 0].numpy()


def separability(source: str, k: int, splits: int = 3) -> None:
    """Print the test AUC of episode success from (s), (s, a), (s, a, K previous actions)."""
    data = open_dataset(source, verify=True)
    success = np.array([bool(i.get("success")) for i in data.episode_info], dtype=np.float32)
    offsets = np.asarray(data.episode_offsets)
    episode = step_episode_index(offsets)
    t = np.arange(len(episode)) - offsets[episode]
    # the observation before action i is row i + episode(i) (T + 1 rows per episode)
    obs_t = np.asarray(data.observations)[np.arange(len(episode)) + episode]
    actions = np.asarray(data.actions, dtype=np.float32)
    history = np.concatenate(
        [np.where((t >= j)[:, None], np.roll(actions, j, axis=0), 0.0) for j in range(1, k + 1)],
        axis=1,
    )
    features = {
        "s": obs_t,
        "s, a": np.concatenate([obs_t, actions], 1),
        f"s, a, {k} previous": np.concatenate([obs_t, actions, history], 1),
    }
    rng = np.random.default_rng(0)
    tests = [
        rng.choice(data.num_episodes, data.num_episodes // 3, replace=False) for _ in range(splits)
    ]
    for low, high in ((0, 25), (25, None)):
        window = (t >= low) & (t < (high or t.max() + 1))
        for name, x in features.items():
            for hidden in (0, 64):
                aucs = []
                for held_out in tests:
                    test = window & np.isin(episode, held_out)
                    fit = window & ~np.isin(episode, held_out)
                    scores = _fit_scores(x[fit], success[episode[fit]], x[test], hidden)
                    aucs.append(_auc(scores, success[episode[test]]))
                model = "logistic" if hidden == 0 else "mlp64"
                steps = f"{low}-{high - 1}" if high else f"{low}-end"
                print(f"steps {steps:7s} {name:18s} {model:8s} test AUC {np.mean(aucs):.3f}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    train_argv: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, train_argv = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=["auc", "data", "train"])
    parser.add_argument("--dataset", help="a state dataset folder (auc, data)")
    parser.add_argument("--out", help="the copy's folder (data)")
    parser.add_argument("--k", type=int, required=True, help="previous actions kept (>= 1)")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k must be >= 1, got {args.k}")
    if args.job in ("auc", "data") and not args.dataset:
        parser.error(f"{args.job} needs --dataset")
    if args.job == "data" and not args.out:
        parser.error("data needs --out")
    if args.job == "train" and not train_argv:
        parser.error("train needs cvl-train's arguments after --")
    if args.job == "auc":
        separability(args.dataset, args.k)
    elif args.job == "data":
        write_history_copy(args.dataset, args.out, args.k)
    else:
        return train_with_history(args.k, train_argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
