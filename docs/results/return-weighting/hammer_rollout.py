"""How the held-out hammer mixture's policies succeed: for each checkpoint, the training runs'
final evaluation replayed (10 episodes from evaluation seed 100, the policy's mean action) and
per episode: success (the nail's joint past 0.09, Meta-World's flag), the first step it holds,
the share of the steps after it with the hammer grasped (`info["grasp_success"]`) and with
Meta-World's success reward (10; it pays only while the hammer is held at the nail, `reward > 5`,
the environment's own guard against a nail pushed in some other way), and the return. For a CVL
checkpoint also what its critic prefers on the way (the policy's states of the first
`APPROACH_STEPS` steps of each episode): its Q (the MC estimator over 4096 futures of the data) of
the acting policy's action, of hammer's scripted expert's and of push's (the mixture's source
whose episodes succeed without the hammer), P(Q(hammer expert) > Q(policy)), and the mean cosine of
the policy's hand move with each expert's. And per source of the dataset: episodes, the share that
succeed, and among those the share of steps paid the success reward.

argv: DATASET OUT.json CHECKPOINT... (a run's final/ folder); prints one line per checkpoint and
per source, writes OUT.json atomically."""

import json
import os
import sys

import numpy as np

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_eval.analysis.critic_diagnostics import q_function
from cvl_eval.envs.experts import ScriptedExpert
from cvl_eval.envs.make import make_env
from cvl_eval.envs.seeding import evaluation_seeds
from cvl_eval.rollout.episode import step_success

TASK, EPISODES, EVAL_SEED, APPROACH_STEPS = "hammer-v3", 10, 100, 100


def share(flags):
    """The share of True in ``flags`` to 3 decimals (None when empty)."""
    return round(float(np.mean(flags)), 3) if len(flags) else None


def episode(env, learner, seed, seen):
    """One episode's row (the module docstring); its first `APPROACH_STEPS` states go to ``seen``."""
    obs, _ = env.reset(seed=seed)
    rewards, grasped, succeeded = [], [], []
    done = False
    while not done:
        if len(rewards) < APPROACH_STEPS:
            seen.append(obs.astype(np.float32))
        action = learner.act(obs[None].astype(np.float32), deterministic=True)[0]
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        grasped.append(bool(info["grasp_success"]))
        succeeded.append(step_success(info, terminated))
        done = terminated or truncated
    rewards, grasped, succeeded = map(np.asarray, (rewards, grasped, succeeded))
    first = int(np.argmax(succeeded)) if succeeded.any() else None
    after = slice(first, None) if first is not None else slice(0, 0)
    return {
        "success": first is not None,
        "first_success_step": first,
        "grasped_after_success": share(grasped[after]),
        "success_reward_after_success": share(rewards[after] == 10.0),
        "return": round(float(rewards.sum()), 1),
    }


def critic_row(learner, data, states):
    """What the critic prefers at ``states`` (the module docstring)."""
    q = q_function(learner, data)
    actions = {
        "policy": learner.act(states, deterministic=True).astype(np.float32),
        "hammer_expert": ScriptedExpert(TASK)(states),
        "push_expert": ScriptedExpert("push-v3")(states),
    }
    values = {name: q(states, a) for name, a in actions.items()}
    move = {
        name: a[:, :3] / np.maximum(np.linalg.norm(a[:, :3], axis=1, keepdims=True), 1e-6)
        for name, a in actions.items()
    }
    return {
        "states": len(states),
        "mean_q": {name: round(float(np.mean(v)), 1) for name, v in values.items()},
        "p_q_hammer_expert_above_policy": round(
            float(np.mean(values["hammer_expert"] > values["policy"])), 3
        ),
        "policy_cosine": {
            name: round(float(np.mean(np.sum(move["policy"] * m, axis=1))), 3)
            for name, m in move.items()
            if name != "policy"
        },
    }


def mean(key, rows):
    """The mean of ``key`` over ``rows`` to 3 decimals (None without rows)."""
    return round(float(np.mean([r[key] for r in rows])), 3) if rows else None


def checkpoint_row(path, data):
    learner = load_learner(path, device="cpu", restore_global_rng=False)
    env = make_env(TASK, seed=EVAL_SEED, keep_state=False)
    seen = []
    try:
        rows = [episode(env, learner, s, seen) for s in evaluation_seeds(EVAL_SEED, EPISODES)]
    finally:
        env.close()
    critic = critic_row(learner, data, np.stack(seen)) if hasattr(learner, "q_values") else None
    won = [r for r in rows if r["success"]]
    return {
        "step": learner.step,
        "success": len(won) / len(rows),
        "return": mean("return", rows),
        "return_if_success": mean("return", won),
        "first_success_step": mean("first_success_step", won),
        "grasped_after_success": mean("grasped_after_success", won),
        "success_reward_after_success": mean("success_reward_after_success", won),
        "critic": critic,
        "episodes": rows,
    }


def dataset_rows(data):
    """Per source: episodes, share successful, mean share of their steps paid 10."""
    by_source = {}
    for e in range(data.num_episodes):
        info, rewards = data.episode_info[e], np.asarray(data.episode(e)["rewards"])
        by_source.setdefault(info["source"], []).append((bool(info["success"]), rewards))
    rows = {}
    for source, episodes in by_source.items():
        won = [r for ok, r in episodes if ok]
        rows[source] = {
            "episodes": len(episodes),
            "success": round(len(won) / len(episodes), 3),
            "paid_share_if_success": (
                round(float(np.mean([np.mean(r == 10.0) for r in won])), 3) if won else None
            ),
        }
    return rows


if __name__ == "__main__":
    dataset, out, *checkpoints = sys.argv[1:]
    data = open_dataset(dataset, verify=True)
    result = {
        "task": TASK,
        "eval_seed": EVAL_SEED,
        "dataset": dataset_rows(data),
        "checkpoints": {},
    }
    for source, row in result["dataset"].items():
        print(source, row, flush=True)
    for path in checkpoints:
        row = result["checkpoints"][path] = checkpoint_row(path, data)
        print(path, {k: v for k, v in row.items() if k != "episodes"}, flush=True)
    with open(out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(out + ".tmp", out)
