"""CVL's policy step on a Monte-Carlo critic: is the one-step Q of the data's behaviour enough?

CVL's critic estimates ``Q^beta(s, a)``, the discounted reward of the data's behaviour after
(s, a), from contrastive futures. This script fits the same quantity by regression instead
(one-step RL with a Monte-Carlo critic, Brandfonbrener et al. 2021): an MLP ``Q(s, a)`` regressed
on the discounted return-to-go ``G_t = sum_k gamma^k r_{t+k}`` of the data's own episodes
(truncated at the episode's end, as CVL's futures are), and extracts a policy with CVL's presets'
step unchanged (`cvl_algos.cvl.extraction.ddpg_bc_policy_loss`, alpha 0.3, a tanh-Gaussian with
a polyak average acting). Evaluated like `cvl-train` (`evaluate_policy`, its evaluation seed 100,
10 episodes every 2500 steps). Where CVL fails and this succeeds, the contrastive estimate is what
loses; where both fail, one-step extraction from ``Q^beta`` does. Run:

    ./pants run benchmarks/mc_critic.py -- --dataset data/handle-pull-v3 --seed 0 \\
        --out runs/mc_critic/handle-pull-v3/seed_0.jsonl

or with ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from types import SimpleNamespace

import numpy as np
import torch
from einops import rearrange

from cvl_algos.common import frozen_call, polyak_update
from cvl_algos.cvl.extraction import ddpg_bc_policy_loss
from cvl_data import open_dataset
from cvl_data.jsonio import write_text_atomic
from cvl_data.source import step_episode_index
from cvl_eval.analysis.critic_diagnostics import discounted_return_to_go
from cvl_eval.envs.make import canonical_name
from cvl_eval.rollout.evaluate import evaluate_policy
from cvl_models.mlp import make_mlp
from cvl_models.policy import TanhGaussianPolicy


class QNetwork(torch.nn.Module):
    """``Q(s, a)`` for ``(N, B, A)`` actions at ``(B, d)`` states -> ``(N, B)``."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: tuple[int, ...]):
        super().__init__()
        self.net = make_mlp(obs_dim + action_dim, 1, hidden)

    def forward(self, obs_t: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        obs = obs_t.expand(actions.shape[0], *obs_t.shape)
        return self.net(torch.cat([obs, actions], dim=-1))[..., 0]


def run(args: argparse.Namespace) -> list[dict]:
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    data = open_dataset(args.dataset, verify=True)
    offsets = np.asarray(data.episode_offsets)
    episode = step_episode_index(offsets)
    obs_t = torch.as_tensor(
        np.asarray(data.observations)[np.arange(len(episode)) + episode]
    )  # a copy
    action_t = torch.as_tensor(np.array(data.actions, dtype=np.float32))
    returns = discounted_return_to_go(data.rewards, offsets, args.discount)
    target = torch.as_tensor(returns / returns.std(), dtype=torch.float32)
    obs_dim, action_dim = obs_t.shape[1], action_t.shape[1]
    critic = QNetwork(obs_dim, action_dim, tuple(args.hidden))
    policy = TanhGaussianPolicy((obs_dim,), action_dim, tuple(args.hidden))
    average = copy.deepcopy(policy).requires_grad_(False)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=args.lr)
    policy_opt = torch.optim.Adam(policy.parameters(), lr=args.lr)

    def q_fn(states: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return frozen_call(critic, states, actions)

    task = canonical_name(data.spec.task)
    evals, start = [], time.perf_counter()
    for step in range(1, args.steps + 1):
        index = torch.as_tensor(rng.integers(0, len(target), args.batch_size))
        states, actions = obs_t[index], action_t[index]
        q_data = critic(states, rearrange(actions, "b a -> 1 b a"))[0]
        critic_loss = torch.nn.functional.mse_loss(q_data, target[index])
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        batch = SimpleNamespace(obs_t=states, action_t=actions, behaviour_weight=None)
        policy_loss, _ = ddpg_bc_policy_loss(policy, q_fn, batch, alpha=args.alpha)
        policy_opt.zero_grad()
        policy_loss.backward()
        policy_opt.step()
        polyak_update(average, policy, args.policy_ema_tau)
        if step % args.eval_every == 0:
            evals.append(_evaluate(args, task, average, step, critic_loss.item(), start))
            print(json.dumps({k: v for k, v in evals[-1].items() if k != "episode_successes"}))
    return evals


def _evaluate(args, task: str, average, step: int, critic_loss: float, start: float) -> dict:
    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return average.deterministic(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    result = evaluate_policy(task, act, args.eval_episodes, seed=args.eval_seed)
    successes = [bool(s) for s in result.successes]
    return {
        "step": step,
        "success": float(np.mean(successes)),
        "return": float(np.mean(result.returns)),
        "episode_successes": successes,
        "critic_mse": critic_loss,
        "time_s": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="a state dataset folder with rewards")
    parser.add_argument("--out", required=True, help="where the evaluations go (JSON lines)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--alpha", type=float, default=0.3, help="DDPG+BC's behaviour weight")
    parser.add_argument("--discount", type=float, default=0.99)
    parser.add_argument("--policy-ema-tau", type=float, default=0.001)
    parser.add_argument("--eval-every", type=int, default=2500)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--eval-seed", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)
    evals = run(args)
    write_text_atomic(args.out, "".join(json.dumps(e) + "\n" for e in evals))


if __name__ == "__main__":
    main()
