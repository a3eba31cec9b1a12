"""Which of several contrastive critics sets the minimum that CVL's policy climbs?

For a trained CVL run with ``num_critics`` >= 2 (for example ``action_contrast_critics="first"``:
critic 0 trained with the action-contrast term, the others without) and its dataset: draw
``--anchors`` data states with their data actions and ``--futures`` future states with their
arrival rewards (the contrastive sampler), and score two actions per state, the data's and the
trained policy's mode, with each critic's eq. 11 Q (self-normalised if the run's config is) over
the futures under that critic's own ``psi_target``. Prints, per critic: how often it is the
minimum at the policy's mode (the Q the policy's gradient follows), the policy's gain over the
data action (mean of Q(pi) - Q(a_data) over mean |Q(a_data)|), how often it scores the data
action above the policy's, and the median cosine of its action gradient dQ/da at the mode with
the other critics' and with the minimum's.

    PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval \\
        python benchmarks/critic_minimum.py --run runs/cvl_mc/handle-pull-v3/seed_0 \\
        --dataset data/handle-pull-v3 [--out minimum.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch.nn.functional import cosine_similarity

from cvl_algos import load_learner
from cvl_algos.cvl.q import direct_q_fn
from cvl_data import ContrastiveSampler, open_dataset
from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.critic_diagnostics import resolve_checkpoint


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="run folder or its final/")
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--anchors", type=int, default=2048)
    parser.add_argument("--futures", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.json")
    args = parser.parse_args()
    if args.anchors < 1 or args.futures < 1:
        parser.error(f"--anchors and --futures must be >= 1, got {args.anchors}, {args.futures}")
    return args


def load_run(run: Path):
    """The run's learner, or a one-line exit naming ``--run``."""
    try:
        learner = load_learner(resolve_checkpoint(run))
    except FileNotFoundError as error:
        raise SystemExit(f"--run: {error}") from None
    if learner.config.q_estimator != "mc" or len(learner.critics) < 2:
        raise SystemExit(
            f"--run: needs q_estimator 'mc' and num_critics >= 2, got "
            f"{learner.config.q_estimator!r} and {len(learner.critics)}"
        )
    return learner


def measure(learner, dataset, anchors: int, futures: int, seed: int) -> dict:
    """Per critic: Q at the data action and at the policy's mode, dQ/da at the mode; then the
    shares, gains and cosines the module docstring lists."""
    cfg = learner.config
    sampler = ContrastiveSampler(
        dataset, max(anchors, futures), discount=cfg.discount, mode="uniform", seed=seed
    )
    batch = sampler.sample()
    obs_t, action_data = batch.obs_t[:anchors], batch.action_t[:anchors]
    reward = batch.reward_future[:futures].float()
    mode = learner.policy.deterministic(obs_t).detach().requires_grad_(True)
    q_data, q_mode, grads = [], [], []
    for critic, psi_target in zip(learner.critics, learner.psi_targets, strict=True):
        with torch.no_grad():
            psi = psi_target(batch.obs_future[:futures])
        q_fn = direct_q_fn(
            critic, psi, reward, cfg.discount, cfg.self_normalized, cfg.q_expectile
        )  # the critic detached: gradients reach the actions only, as in the policy's loss
        with torch.no_grad():
            q_data.append(q_fn(obs_t, action_data[None])[0])
        value = q_fn(obs_t, mode[None])[0]
        grads.append(torch.autograd.grad(value.sum(), mode)[0])
        q_mode.append(value.detach())
    arg_min = torch.stack(q_mode).argmin(dim=0)
    stacked_grads = torch.stack(grads)
    grad_min = stacked_grads.gather(0, arg_min[None, :, None].expand(1, *grads[0].shape))[0]
    grad_mean = stacked_grads.mean(dim=0)
    rows = {}
    for k, (data_k, mode_k, grad_k) in enumerate(zip(q_data, q_mode, grads, strict=True)):
        others = [g for j, g in enumerate(grads) if j != k]
        rows[f"critic_{k}"] = {
            "share_minimum_at_mode": float((arg_min == k).float().mean()),
            "policy_gain": float((mode_k - data_k).mean() / data_k.abs().mean()),
            "p_data_above_policy": float((data_k > mode_k).float().mean()),
            "q_data_mean": float(data_k.mean()),
            "q_mode_mean": float(mode_k.mean()),
            "cosine_with_others": [
                float(cosine_similarity(grad_k, g, dim=1).median()) for g in others
            ],
            "cosine_with_minimum": float(cosine_similarity(grad_k, grad_min, dim=1).median()),
            "cosine_with_mean": float(cosine_similarity(grad_k, grad_mean, dim=1).median()),
        }
    return rows


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    learner = load_run(args.run)
    dataset = open_dataset(args.dataset)
    rows = measure(learner, dataset, args.anchors, args.futures, args.seed)
    cfg = learner.config
    print(
        f"{args.run}: {len(learner.critics)} critics, action-contrast weight "
        f"{cfg.action_contrast_weight} in {cfg.action_contrast_critics!r}, policy on the "
        f"{cfg.critic_reduction}, {args.anchors} states "
        f"x {args.futures} futures"
    )
    print(
        f"{'critic':>8} {'min@pi':>7} {'Q(data)':>8} {'Q(pi)':>8} {'pi gain':>8} "
        f"{'P(data>pi)':>11} {'cos others':>11} {'cos min':>8} {'cos mean':>9}"
    )
    for name, r in rows.items():
        others = ",".join(f"{c:.2f}" for c in r["cosine_with_others"])
        print(
            f"{name:>8} {r['share_minimum_at_mode']:>7.2f} {r['q_data_mean']:>8.1f} "
            f"{r['q_mode_mean']:>8.1f} {r['policy_gain']:>8.3f} {r['p_data_above_policy']:>11.2f} "
            f"{others:>11} {r['cosine_with_minimum']:>8.2f} {r['cosine_with_mean']:>9.2f}"
        )
    if args.out:
        write_json_atomic(args.out, {"run": str(args.run), "rows": rows})


if __name__ == "__main__":
    main()
