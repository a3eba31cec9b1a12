"""Critic diagnostics: does a learner's Q rank the data the way the returns do?

Two questions about a trained critic on a ``mixture`` dataset (`cvl_eval.datagen.behaviours`:
``Dataset.episode_info`` labels every episode with its behaviour source, return and success):

- `spearman_with_return_to_go`: on a seeded subset of the data's own transitions, the Spearman
  rank correlation of ``Q(s_t, a_t)`` with the discounted return-to-go
  ``G_t = sum_{k=0}^{T-1-t} g^k r_{t+k}`` (rewards of the same episode), plus per source the mean
  Q, the mean ``G_t`` and the correlation within the source. Q_NCE is Q only up to a positive
  scale (DESIGN.md sec. 2), so ranks are compared, not values.
- `counterfactual_ranking`: at states of the successful episodes of the task's own expert
  (source ``expert``), the Q of the action each other source's behaviour would take there (its
  noise-free scripted expert; a uniform action for ``random``; ``data``: the recorded, noisy
  action) against the Q of the own expert's noise-free action, as ``P(Q(s, a_expert) >
  Q(s, a_source))`` with ties (same action or same Q) counted one half, over all chosen states
  and over the early ones (``t < early_steps``). Same states, different actions: does the critic
  prefer the behaviour that succeeds where the failing ones could act too?

`q_function` reads Q from any learner with a critic: CVL's ``q_values`` with its own estimator
(random features, eq. 12, or direct Monte-Carlo, eq. 11, self-normalised per its config); the
direct estimator averages over ``num_futures`` future states drawn as the critic's negatives
are, by a uniform-anchor `cvl_data.ContrastiveSampler`. Twin-Q learners give ``min(Q1, Q2)`` of
the critic their policy reads: ``critic`` (SAC, CQL: the actor maximises it), ``critic_target``
(IQL: its AWR weights). Behaviour cloning has no critic (``ValueError``).
`diagnose` runs both from a checkpoint (or run folder) and a dataset folder.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cvl_data.source import step_episode_index

__all__ = [
    "EARLY_STEPS",
    "QFunction",
    "counterfactual_ranking",
    "diagnose",
    "discounted_return_to_go",
    "format_diagnostics",
    "q_description",
    "q_function",
    "resolve_checkpoint",
    "spearman_with_return_to_go",
]

QFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``q(obs (N, *obs_shape), action (N, A)) -> (N,)`` float64."""

EARLY_STEPS = 100
"""States with ``t < EARLY_STEPS`` count as early in the episode (before the task is solved)."""

TWIN_Q_MODULE = {"iql": "critic_target"}
"""Twin-Q module each algorithm's policy reads (others: ``critic``)."""

OWN_EXPERT = "expert"
"""Source label of the task's own scripted expert (`cvl_eval.datagen.behaviours.Behaviour`)."""


def discounted_return_to_go(
    rewards: np.ndarray, episode_offsets: np.ndarray, gamma: float
) -> np.ndarray:
    """``G_t = r_t + gamma G_{t+1}`` inside each episode, ``G = r`` at its last step; (N,) float64.

    Each episode is one first-order IIR filter over its reversed rewards
    (`scipy.signal.lfilter`): a loop over episodes, none over steps.
    """
    from scipy.signal import lfilter

    rewards = np.asarray(rewards, dtype=np.float64)
    offsets = np.asarray(episode_offsets, dtype=np.int64)
    assert rewards.ndim == 1 and offsets.ndim == 1, (rewards.shape, offsets.shape)
    assert offsets[0] == 0 and offsets[-1] == len(rewards), (offsets[[0, -1]], len(rewards))
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    out = np.empty_like(rewards)
    for start, stop in zip(offsets[:-1], offsets[1:], strict=True):
        out[start:stop] = lfilter([1.0], [1.0, -gamma], rewards[start:stop][::-1])[::-1]
    return out


def _step_index(episode_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Episode (N,) and time inside it (N,) of every step; step i's observation row is
    ``i + episode[i]`` (one extra row, s_T, per episode)."""
    offsets = np.asarray(episode_offsets, dtype=np.int64)
    episode = step_episode_index(offsets)
    return episode, np.arange(offsets[-1]) - offsets[episode]


def _sources(dataset) -> np.ndarray:
    """Source label of every episode (``unlabelled`` where the dataset has none)."""
    return np.array([info.get("source", "unlabelled") for info in dataset.episode_info])


def _number(x: float) -> float | None:
    """A float for JSON: None for NaN."""
    return None if math.isnan(x) else float(x)


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman rho; None when fewer than 2 values or either side is constant."""
    from cvl_eval.analysis.mountain_car import spearman

    return _number(spearman(a, b)) if len(a) >= 2 else None


# -- Q of a learner -------------------------------------------------------------------------------


def _data_futures(learner, dataset, num_futures: int, seed: int) -> Any:
    """A batch of ``num_futures`` anchors and their future states drawn from the data."""
    from cvl_data import ContrastiveSampler

    sampler = ContrastiveSampler(
        dataset,
        num_futures,
        discount=learner.config.discount,
        device=str(learner.device),
        mode="uniform",
        seed=seed,
    )
    return sampler.sample()


def _cvl_q(learner, dataset, num_futures: int, seed: int) -> QFunction:
    """CVL's ``q_values`` with its configured estimator; futures from the data for eq. 11."""
    future = (None, None)
    if learner.config.q_estimator == "mc":
        batch = _data_futures(learner, dataset, num_futures, seed)
        future = (batch.obs_future, batch.reward_future)

    def q(obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        return learner.q_values(obs, action, *future).cpu().double().numpy()

    return q


def _twin_q(learner) -> QFunction:
    """``min(Q1, Q2)`` of the twin critic the learner's policy reads (`TWIN_Q_MODULE`)."""
    name = getattr(learner, "name", type(learner).__name__)
    critic = getattr(learner, TWIN_Q_MODULE.get(name, "critic"), None)
    if critic is None:
        raise ValueError(
            f"algorithm {name!r} has no critic to read Q from (it learns only a policy); "
            "critic diagnostics need CVL, CQL, IQL or SAC"
        )

    @torch.no_grad()
    def q(obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        action_t = torch.as_tensor(action, device=learner.device).float()
        q1, q2 = critic(learner.obs_tensor(obs), action_t)
        return torch.minimum(q1, q2).cpu().double().numpy()

    return q


def q_function(
    learner, dataset, num_futures: int = 4096, seed: int = 0, batch_size: int = 4096
) -> QFunction:
    """``q(obs, action) -> (N,)`` of ``learner`` (see the module docstring), in batches (each
    copied out of the read-only memory-mapped data).

    Raises ``ValueError`` naming the algorithm when the learner has no critic (BC, filtered BC).
    """
    if hasattr(learner, "q_values"):
        evaluate = _cvl_q(learner, dataset, num_futures, seed)
    else:
        evaluate = _twin_q(learner)
    return _in_batches(evaluate, batch_size)


def log_density_function(
    learner, dataset, num_futures: int = 4096, seed: int = 0, batch_size: int = 4096
) -> QFunction | None:
    """``d(obs, action) -> (N,)``: CVL's `log_density_ratio` over ``num_futures`` future states
    of the data (the same draw as `q_function`'s), in batches; None for a learner without it
    (every algorithm but CVL)."""
    if not hasattr(learner, "log_density_ratio"):
        return None
    obs_future = _data_futures(learner, dataset, num_futures, seed).obs_future

    def evaluate(obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        return learner.log_density_ratio(obs, action, obs_future).cpu().double().numpy()

    return _in_batches(evaluate, batch_size)


def _in_batches(evaluate: QFunction, batch_size: int) -> QFunction:
    """``evaluate`` over (obs, action) in batches of ``batch_size``, each copied out of the
    read-only memory-mapped data."""

    def batched(obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        assert len(obs) == len(action), (np.shape(obs), np.shape(action))
        chunks = [
            evaluate(np.array(obs[i : i + batch_size]), np.array(action[i : i + batch_size]))
            for i in range(0, len(obs), batch_size)
        ]
        return np.concatenate(chunks) if chunks else np.zeros(0)

    return batched


def q_description(learner) -> str:
    """Which Q `q_function` reads, in words (for reports)."""
    config = getattr(learner, "config", None)
    if hasattr(learner, "q_values"):
        estimator = {"rff": "random features (eq. 12)", "mc": "direct Monte-Carlo (eq. 11)"}
        normalised = ", self-normalised" if getattr(config, "self_normalized", False) else ""
        return f"Q_NCE, {estimator[config.q_estimator]}{normalised}"
    name = getattr(learner, "name", "")
    return f"min of twin Q ({TWIN_Q_MODULE.get(name, 'critic')})"


# -- the two diagnostics --------------------------------------------------------------------------


def spearman_with_return_to_go(
    q: QFunction, dataset, gamma: float = 0.99, num_samples: int = 4000, seed: int = 0
) -> dict[str, Any]:
    """Spearman rho of ``Q(s_t, a_t)`` with ``G_t`` on a seeded subset of the data's transitions.

    Returns ``{"transitions", "spearman", "per_source": {label: {"transitions", "mean_q",
    "mean_return_to_go", "spearman"}}}`` (rho None where undefined).
    """
    if dataset.rewards is None:
        raise ValueError(f"{dataset.path}: reward-free dataset, no return-to-go")
    episode = step_episode_index(np.asarray(dataset.episode_offsets, np.int64))
    rng = np.random.default_rng([seed, 1])
    steps = np.sort(rng.choice(dataset.num_steps, min(num_samples, dataset.num_steps), False))
    rtg = discounted_return_to_go(dataset.rewards, dataset.episode_offsets, gamma)[steps]
    q_data = q(dataset.observations[steps + episode[steps]], dataset.actions[steps])
    assert q_data.shape == rtg.shape, (q_data.shape, rtg.shape)
    labels = _sources(dataset)[episode[steps]]
    per_source = {
        label: {
            "transitions": int(mask.sum()),
            "mean_q": float(q_data[mask].mean()),
            "mean_return_to_go": float(rtg[mask].mean()),
            "spearman": _spearman(q_data[mask], rtg[mask]),
        }
        for label in sorted(set(labels))
        for mask in [labels == label]
    }
    return {"transitions": len(steps), "spearman": _spearman(q_data, rtg), "per_source": per_source}


def _expert_states(dataset, num_states: int, seed: int) -> tuple[np.ndarray, ...]:
    """States, times, recorded actions and episode count of a seeded subset of the steps of the
    own expert's successful episodes."""
    info = dataset.episode_info
    chosen = (_sources(dataset) == OWN_EXPERT) & np.array([bool(i.get("success")) for i in info])
    if not chosen.any():
        raise ValueError(
            f"{dataset.path}: no successful episode of the task's own expert (source "
            f"{OWN_EXPERT!r}); the counterfactual ranking needs one (a mixture dataset)"
        )
    episode, t = _step_index(dataset.episode_offsets)
    steps = np.flatnonzero(chosen[episode])
    rng = np.random.default_rng([seed, 2])
    steps = np.sort(rng.choice(steps, min(num_states, len(steps)), replace=False))
    states = np.asarray(dataset.observations[steps + episode[steps]])
    return states, t[steps], np.asarray(dataset.actions[steps]), int(chosen.sum())


def _source_actions(
    dataset, states: np.ndarray, data_actions: np.ndarray, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """What each source other than the own expert would do at ``states`` (and what cannot be
    replayed there, with the reason)."""
    from cvl_eval.envs.experts import ScriptedExpert

    spec = dataset.spec
    rng = np.random.default_rng([seed, 3])
    behaviours = {
        i["source"]: i.get("behaviour", {}) for i in dataset.episode_info if "source" in i
    }
    actions, skipped = {"data": data_actions}, {}
    for label, behaviour in sorted(behaviours.items()):
        kind = behaviour.get("kind")
        if label == OWN_EXPERT:
            continue
        if kind == "expert":
            actions[label] = ScriptedExpert(behaviour.get("task") or spec.task)(states)
        elif kind == "random":
            shape = (len(states), *spec.action_shape)
            actions[label] = rng.uniform(spec.action_low, spec.action_high, shape).astype(
                np.float32
            )
        else:
            skipped[label] = f"behaviour kind {kind!r} is not replayed at other states"
    return actions, skipped


def _ranking(
    q_expert: np.ndarray, q_source: np.ndarray, same_action: np.ndarray, early: np.ndarray
) -> dict[str, float | None]:
    """P(expert's Q > source's Q), ties (same action or equal Q) one half; all and early."""
    tie = same_action | (q_expert == q_source)
    score = np.where(tie, 0.5, (q_expert > q_source).astype(np.float64))
    return {
        "p_expert_better": float(score.mean()),
        "p_expert_better_early": float(score[early].mean()) if early.any() else None,
        "same_action": float(same_action.mean()),
        "mean_q": float(q_source.mean()),
    }


def counterfactual_ranking(
    q: QFunction,
    dataset,
    num_states: int = 1500,
    seed: int = 0,
    early_steps: int = EARLY_STEPS,
) -> dict[str, Any]:
    """``P(Q(s, a_expert) > Q(s, a_source))`` per source at the own expert's successful states.

    Returns ``{"task", "episodes", "states", "early_states", "early_steps", "mean_q_expert",
    "sources": {label: {"p_expert_better", "p_expert_better_early", "same_action", "mean_q"}},
    "skipped": {label: reason}}``; ``data`` is the recorded (noisy expert) action.
    """
    from cvl_eval.envs.experts import ScriptedExpert

    states, t, data_actions, episodes = _expert_states(dataset, num_states, seed)
    expert_actions = ScriptedExpert(dataset.spec.task)(states)
    q_expert = q(states, expert_actions)
    actions, skipped = _source_actions(dataset, states, data_actions, seed)
    early = t < early_steps
    sources = {
        label: _ranking(q_expert, q(states, a), np.all(a == expert_actions, axis=1), early)
        for label, a in actions.items()
    }
    return {
        "task": dataset.spec.task,
        "episodes": episodes,
        "states": len(states),
        "early_states": int(early.sum()),
        "early_steps": early_steps,
        "mean_q_expert": float(q_expert.mean()),
        "sources": sources,
        "skipped": skipped,
    }


# -- from folders ---------------------------------------------------------------------------------


def resolve_checkpoint(path: str | Path) -> Path:
    """A learner checkpoint folder: ``path`` itself, or a run folder's ``final/``, else its
    latest checkpoint (`cvl_eval.runs.folder.RunFolder`)."""
    from cvl_algos.checkpoint import STATE_FILE
    from cvl_eval.runs.folder import RunFolder

    path = Path(path)
    if (path / STATE_FILE).is_file():
        return path
    run = RunFolder(path)
    for candidate in (run.final, run.latest_checkpoint()):
        if candidate is not None and (candidate / STATE_FILE).is_file():
            return candidate
    raise FileNotFoundError(
        f"{path}: neither a learner checkpoint ({STATE_FILE}) nor a run folder with one "
        "(final/ or checkpoints/)"
    )


def diagnose(
    run_or_checkpoint_dir: str | Path,
    dataset_dir: str | Path,
    num_samples: int = 4000,
    num_states: int = 1500,
    num_futures: int = 4096,
    seed: int = 0,
    early_steps: int = EARLY_STEPS,
    device: str = "cpu",
    rollouts: int = 0,
) -> dict[str, Any]:
    """Both diagnostics of a saved learner on a dataset, as JSON-able data, and with
    ``rollouts`` > 0 the on-policy check on that many episodes of the dataset's task
    (`cvl_eval.analysis.on_policy_critic`, key ``on_policy``).

    The return-to-go uses the learner's discount (0.99 where it has none). Raises ``ValueError``
    naming the algorithm when the learner has no critic.
    """
    from cvl_algos import load_learner
    from cvl_data import open_dataset

    checkpoint = resolve_checkpoint(run_or_checkpoint_dir)
    learner = load_learner(checkpoint, device=device, restore_global_rng=False)
    dataset = open_dataset(dataset_dir)
    q = q_function(learner, dataset, num_futures, seed)
    gamma = float(getattr(getattr(learner, "config", None), "discount", 0.99))
    result = {
        "checkpoint": str(checkpoint),
        "step": int(learner.step),
        "algorithm": getattr(learner, "name", type(learner).__name__),
        "q": q_description(learner),
        "dataset": str(dataset.path),
        "task": dataset.spec.task,
        "discount": gamma,
        "seed": seed,
        "return_to_go": spearman_with_return_to_go(q, dataset, gamma, num_samples, seed),
        "counterfactual": counterfactual_ranking(q, dataset, num_states, seed, early_steps),
    }
    if rollouts > 0:
        from cvl_eval.analysis.on_policy_critic import on_policy_ranking

        density = log_density_function(learner, dataset, num_futures, seed)
        result["on_policy"] = on_policy_ranking(
            q, learner, dataset.spec.task, rollouts, log_density=density
        )
    return result


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def format_diagnostics(result: dict[str, Any]) -> str:
    """`diagnose`'s result as aligned text: the correlation table, then the ranking table."""
    rtg, cf = result["return_to_go"], result["counterfactual"]
    lines = [
        f"{result['algorithm']} on {result['task']}: {result['q']}  ({result['checkpoint']})",
        f"Spearman(Q, return-to-go) on {rtg['transitions']} data transitions: "
        f"{_fmt(rtg['spearman'], '.3f')}",
        f"  {'source':24s} {'n':>6s} {'mean Q':>12s} {'mean G_t':>10s} {'rho':>7s}",
    ]
    for label, row in rtg["per_source"].items():
        lines.append(
            f"  {label:24s} {row['transitions']:6d} {row['mean_q']:12.4g} "
            f"{row['mean_return_to_go']:10.1f} {_fmt(row['spearman'], '7.3f')}"
        )
    lines += [
        f"P(Q(s, a_expert) > Q(s, a_source)) at {cf['states']} states of {cf['episodes']} "
        f"successful expert episodes ({cf['early_states']} with t < {cf['early_steps']}); "
        f"mean Q(s, a_expert) {cf['mean_q_expert']:.4g}",
        f"  {'source':24s} {'P':>6s} {'P early':>8s} {'same a':>7s} {'mean Q':>12s}",
    ]
    for label, row in cf["sources"].items():
        lines.append(
            f"  {label:24s} {row['p_expert_better']:6.2f} "
            f"{_fmt(row['p_expert_better_early'], '8.2f')} {row['same_action']:7.2f} "
            f"{row['mean_q']:12.4g}"
        )
    lines += [f"  {label:24s} skipped: {reason}" for label, reason in cf["skipped"].items()]
    if "on_policy" in result:
        from cvl_eval.analysis.on_policy_critic import format_on_policy

        lines.append(format_on_policy(result["on_policy"]))
    return "\n".join(lines)
