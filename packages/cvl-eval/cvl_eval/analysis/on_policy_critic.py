"""On-policy critic check: where the learner's own policy goes, does it act as its
critic would?

`critic_diagnostics` asks whether a critic ranks the data's behaviours correctly at the data's
states. This asks the question behind a policy that fails although its critic is right: roll out
the learner's deterministic policy in the task and, at every visited state ``s``, compare

- ``Q(s, pi(s))``, the action the policy takes;
- ``Q(s, a_expert(s))``, the action the task's scripted expert (`ScriptedExpert`) would take;
- ``Q`` of ``num_uniform`` uniform actions (their max and mean): what a blind search finds.

``P(Q(s, a_expert) > Q(s, pi(s)))`` near 1 means the critic knows a better action at the
policy's own states and the policy does not take it: the extraction, not the critic, fails.
``P(max uniform Q > Q(s, a_expert))`` near 1 means the critic's maximum over all actions lies
away from the expert (over-estimation of unseen actions), so maximising Q harder would not help.
Results are reported per phase of the episode (`PHASES`). Given CVL's log density ratio
``D(s, a)`` (``log_density``; with the action-contrast term, log p(a | s) / p(a)), each phase also
reports D of the three actions and ``P(D(s, a_expert) > D(s, pi(s)))``: near 1 where the policy
acts where the data's behaviours do not (extrapolation), near 0.5 where it acts inside the data
and the critic's ranking alone decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["PHASES", "format_on_policy", "on_policy_ranking", "rollout_states"]

PHASES: tuple[tuple[int, int], ...] = ((0, 25), (25, 50), (50, 100), (100, 200), (200, 500))
"""Episode phases (steps ``[lo, hi)``) of the report; early ones decide where the arm goes."""


def rollout_states(
    learner, task: str, episodes: int, seed: int, max_steps: int | None = None
) -> dict[str, np.ndarray]:
    """Roll out ``learner.act`` (deterministic) for ``episodes`` seeded episodes of ``task``.

    Returns the visited observations ``obs`` (N, obs_dim), the actions taken ``action``
    (N, A), each step's time index ``t`` (N,) and episode ``episode`` (N,), and the per-episode
    ``success`` (episodes,) flags. Episode seeds are `evaluation_seeds` (seed, episodes), as
    in every evaluation of the project.
    """
    from cvl_eval.envs.make import make_env
    from cvl_eval.envs.seeding import evaluation_seeds

    env = make_env(task, seed=seed, max_episode_steps=max_steps)
    columns: dict[str, list] = {"obs": [], "action": [], "t": [], "episode": []}
    success = np.zeros(episodes, dtype=bool)
    try:
        for index, episode_seed in enumerate(evaluation_seeds(seed, episodes)):
            obs, _ = env.reset(seed=episode_seed)
            for t in range(10**6):
                action = learner.act(np.asarray(obs, dtype=np.float32))
                for key, value in zip(columns, (obs, action, t, index)):
                    columns[key].append(value)
                obs, _, terminated, truncated, info = env.step(action)
                success[index] |= bool(info.get("success", 0.0))
                if terminated or truncated:
                    break
    finally:
        env.close()
    out = {key: np.asarray(value) for key, value in columns.items()}
    out["obs"] = out["obs"].astype(np.float32)
    out["success"] = success
    return out


def on_policy_ranking(
    q: Callable[[np.ndarray, np.ndarray], np.ndarray],
    learner,
    task: str,
    episodes: int = 3,
    seed: int = 100,
    num_uniform: int = 64,
    max_steps: int | None = None,
    log_density: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> dict[str, Any]:
    """The check of the module docstring on ``episodes`` rollouts; JSON-able, per phase.
    ``q`` and ``log_density`` are (obs, action) -> (N,) functions
    (`cvl_eval.analysis.critic_diagnostics.q_function`, `log_density_function`)."""
    from cvl_eval.envs.experts import ScriptedExpert

    visited = rollout_states(learner, task, episodes, seed, max_steps)
    obs, action, t = visited["obs"], visited["action"], visited["t"]
    expert = np.clip(ScriptedExpert(task)(obs), -1.0, 1.0).astype(np.float32)
    rng = np.random.default_rng([seed, 7])
    uniform = rng.uniform(-1.0, 1.0, (len(obs), num_uniform, action.shape[1])).astype(np.float32)
    q_policy, q_expert = q(obs, action), q(obs, expert)
    q_uniform = q(np.repeat(obs, num_uniform, axis=0), uniform.reshape(-1, action.shape[1]))
    q_uniform = q_uniform.reshape(len(obs), num_uniform)
    densities = None
    if log_density is not None:
        first_uniform = uniform[:, 0]
        densities = [log_density(obs, a) for a in (action, expert, first_uniform)]
    phases = []
    for lo, hi in PHASES:
        mask = (t >= lo) & (t < hi)
        if not mask.any():
            continue
        best_uniform = q_uniform[mask].max(axis=1)
        phases.append(
            {
                "steps": [lo, hi],
                "states": int(mask.sum()),
                "mean_q_policy": float(q_policy[mask].mean()),
                "mean_q_expert": float(q_expert[mask].mean()),
                "mean_q_uniform_max": float(best_uniform.mean()),
                "mean_q_uniform": float(q_uniform[mask].mean()),
                "p_expert_better": float(np.mean(q_expert[mask] > q_policy[mask])),
                "p_uniform_max_above_expert": float(np.mean(best_uniform > q_expert[mask])),
                "action_gap": float(np.abs(action[mask] - expert[mask]).mean()),
            }
        )
        if densities is not None:
            phases[-1].update(_density_row(densities, mask))
    return {
        "task": task,
        "episodes": episodes,
        "seed": seed,
        "num_uniform": num_uniform,
        "success": [bool(s) for s in visited["success"]],
        "phases": phases,
    }


def _density_row(densities: list[np.ndarray], mask: np.ndarray) -> dict[str, float]:
    """Mean D of the policy's, the expert's and one uniform action per state, and
    P(D(expert) > D(policy)), over the phase's states."""
    d_policy, d_expert, d_uniform = (d[mask] for d in densities)
    return {
        "mean_d_policy": float(d_policy.mean()),
        "mean_d_expert": float(d_expert.mean()),
        "mean_d_uniform": float(d_uniform.mean()),
        "p_expert_density_above": float(np.mean(d_expert > d_policy)),
    }


def format_on_policy(result: dict[str, Any]) -> str:
    """`on_policy_ranking`'s result as an aligned table."""
    successes = sum(result["success"])
    lines = [
        f"On the policy's own states ({result['episodes']} rollouts of {result['task']}, "
        f"{successes} successful; {result['num_uniform']} uniform actions per state):",
        f"  {'steps':>9s} {'n':>5s} {'Q(pi)':>9s} {'Q(expert)':>10s} {'max Q(unif)':>12s} "
        f"{'P(expert>pi)':>13s} {'P(unif>expert)':>15s} {'|a_pi-a_exp|':>13s}",
    ]
    for row in result["phases"]:
        lo, hi = row["steps"]
        lines.append(
            f"  {f'{lo}-{hi}':>9s} {row['states']:5d} {row['mean_q_policy']:9.4g} "
            f"{row['mean_q_expert']:10.4g} {row['mean_q_uniform_max']:12.4g} "
            f"{row['p_expert_better']:13.2f} {row['p_uniform_max_above_expert']:15.2f} "
            f"{row['action_gap']:13.2f}"
        )
    if result["phases"] and "mean_d_policy" in result["phases"][0]:
        lines.append(
            f"  log density ratio D(s, a): {'steps':>9s} {'D(pi)':>7s} {'D(expert)':>10s} "
            f"{'D(unif)':>8s} {'P(D_expert>D_pi)':>17s}"
        )
        for row in result["phases"]:
            lo, hi = row["steps"]
            lines.append(
                f"  {'':27s}{f'{lo}-{hi}':>9s} {row['mean_d_policy']:7.2f} "
                f"{row['mean_d_expert']:10.2f} {row['mean_d_uniform']:8.2f} "
                f"{row['p_expert_density_above']:17.2f}"
            )
    return "\n".join(lines)
