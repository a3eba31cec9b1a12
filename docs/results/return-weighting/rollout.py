"""Where the policies go on stitched plate-slide (PREREG.md, seventeenth amendment): for each
checkpoint, 10 evaluation episodes (seed 100, the training runs' evaluation seeds, the policy's
mean action) and per episode the smallest hand-puck distance, the puck-goal distance at the
start and at the end; for the dataset, the same per source of its episodes. Plate-slide's state
holds the hand at [0:3], the puck at [4:7] and the goal at [36:39]. And what each critic
prefers on the approach: at the states of the data's approach episodes (sources starting at the
task's reset, steps before the hand comes within 0.10 of the puck), the critic's Q (its MC
estimator over 4096 futures of the data) for the hand moving straight at the puck at full speed
(gripper 0), straight away from it, the data's action, the acting policy's action and a
uniformly random action: P(Q(toward) > Q(policy)), P(Q(toward) > Q(away)), P(Q(data) >
Q(policy)), P(Q(data) > Q(uniform)), each Q's mean, and the cosine of the policy's hand move with
the direction to the puck.

argv: DATASET OUT.json CHECKPOINT... (a run's final/ or checkpoints/step_* folder); prints one
line per checkpoint and per source, writes OUT.json atomically."""

import json
import os
import sys

import numpy as np

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_eval.analysis.critic_diagnostics import q_function
from cvl_eval.rollout.evaluate import evaluate_policy

EPISODES = 10


def distances(obs):
    """(..., 39) plate-slide states -> hand-puck and puck-goal distances (...)."""
    hand, puck, goal = obs[..., 0:3], obs[..., 4:7], obs[..., 36:39]
    return np.linalg.norm(hand - puck, axis=-1), np.linalg.norm(puck - goal, axis=-1)


def summary(hand_puck, puck_goal):
    """Means over episodes of one row per episode's distances (ragged lists of arrays)."""
    return {"min_hand_puck": round(float(np.mean([d.min() for d in hand_puck])), 3),
            "hand_puck_start": round(float(np.mean([d[0] for d in hand_puck])), 3),
            "puck_goal_start": round(float(np.mean([d[0] for d in puck_goal])), 3),
            "puck_goal_end": round(float(np.mean([d[-1] for d in puck_goal])), 3)}


def approach_states(data):
    """States and actions of the episodes that start at the task's reset (hand 0.15+ from the
    puck), at the steps before the hand first comes within 0.10 of the puck."""
    obs, actions = [], []
    for e in range(data.num_episodes):
        episode = data.episode(e)
        states = np.asarray(episode["observations"])[:-1]
        hand_puck, _ = distances(states)
        if hand_puck[0] < 0.15:
            continue
        near = np.flatnonzero(hand_puck < 0.10)
        end = near[0] if len(near) else len(states)
        obs.append(states[:end])
        actions.append(np.asarray(episode["actions"])[:end])
    return np.concatenate(obs).astype(np.float32), np.concatenate(actions).astype(np.float32)


def critic_row(learner, data, obs, data_actions):
    """What the critic prefers at the approach states (the module docstring)."""
    q = q_function(learner, data)
    toward = obs[:, 4:7] - obs[:, 0:3]
    toward = np.concatenate([toward / np.linalg.norm(toward, axis=1, keepdims=True),
                             np.zeros((len(obs), 1))], axis=1).astype(np.float32)
    policy = learner.act(obs, deterministic=True).astype(np.float32)
    uniform = np.random.default_rng(0).uniform(-1, 1, data_actions.shape).astype(np.float32)
    actions = {"toward": toward, "away": -toward, "data": data_actions, "policy": policy,
               "uniform": uniform}
    values = {name: q(obs, a) for name, a in actions.items()}
    q_toward, q_away, q_data, q_policy = (values[k] for k in ("toward", "away", "data", "policy"))
    cosine = np.sum(policy[:, :3] * toward[:, :3], axis=1) / np.linalg.norm(policy[:, :3], axis=1)
    return {"approach_states": len(obs),
            "p_q_toward_above_policy": round(float(np.mean(q_toward > q_policy)), 3),
            "p_q_toward_above_away": round(float(np.mean(q_toward > q_away)), 3),
            "p_q_data_above_policy": round(float(np.mean(q_data > q_policy)), 3),
            "p_q_data_above_uniform": round(float(np.mean(q_data > values["uniform"])), 3),
            "mean_q": {name: round(float(np.mean(v)), 1) for name, v in values.items()},
            "policy_cosine_to_puck": round(float(np.mean(cosine)), 3)}


def episode_states(learner, task, episodes):
    """``episodes`` evaluation episodes of ``learner``'s mean action on ``task`` (seed 100, the
    training's evaluation seeds, one env so the states come in order) -> (the EvalResult, each
    episode's (T, state) array of the states the policy acted on)."""
    seen = []

    def policy(obs):
        seen.append(np.array(obs[0]))
        return learner.act(obs, deterministic=True)

    result = evaluate_policy(task, policy, episodes, seed=100, num_envs=1)
    bounds = np.cumsum((0,) + tuple(result.lengths))
    states = np.stack(seen)
    return result, [states[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def checkpoint_row(path, data, approach):
    learner = load_learner(path, device="cpu", restore_global_rng=False)
    result, episodes = episode_states(learner, "plate-slide-v3", EPISODES)
    hand_puck, puck_goal = zip(*(distances(states) for states in episodes))
    return {"step": learner.step, "return": round(float(np.mean(result.returns)), 1),
            "success": float(np.mean(result.successes)), **summary(hand_puck, puck_goal),
            **critic_row(learner, data, *approach)}


def dataset_rows(data):
    by_source = {}
    for e in range(data.num_episodes):
        episode = data.episode(e)
        row = by_source.setdefault(data.episode_info[e]["source"], ([], [], []))
        for part, value in zip(row, (*distances(np.asarray(episode["observations"])),
                                     float(np.sum(episode["rewards"])))):
            part.append(value)
    return {source: {"episodes": len(ret), "return": round(float(np.mean(ret)), 1),
                     **summary(hand_puck, puck_goal)}
            for source, (hand_puck, puck_goal, ret) in by_source.items()}


if __name__ == "__main__":
    dataset, out, *checkpoints = sys.argv[1:]
    data = open_dataset(dataset, verify=True)
    approach = approach_states(data)
    result = {"episodes": EPISODES, "dataset": dataset_rows(data), "checkpoints": {}}
    for source, row in result["dataset"].items():
        print(source, row, flush=True)
    for path in checkpoints:
        result["checkpoints"][path] = row = checkpoint_row(path, data, approach)
        print(path, row, flush=True)
    with open(out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(out + ".tmp", out)
