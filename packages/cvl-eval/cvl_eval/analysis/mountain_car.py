"""Mountain Car: the CVL critic's Q_NCE against the Q of the SAC that produced the data.

The paper's figure (sec. 5, "Visualizing the estimated Q-values") shows the normalised
``log Q_NCE`` of CVL trained offline (lambda_BC = 0) on SAC's Mountain Car replay buffer beside the
normalised Q of that online SAC, over (position, velocity). `mountain_car_q_analysis` draws both
heatmaps side by side (one PNG) and writes their Spearman rank correlation on the replay states
(one JSON).

Choices (not fixed by the paper):

- Action. With ``action="policy"`` (default) each critic is read at its own learner's
  deterministic action, ``Q_CVL(s, mu_CVL(s))`` and ``Q_SAC(s, mu_SAC(s))``: each learner's value
  of its greedy policy. ``action="uniform"`` averages each Q over ``num_actions`` evenly spaced
  actions in [-1, 1] (the action marginal under a uniform action distribution; the same actions
  for both critics). The JSON also has the correlation on the replay's own (state, action) pairs.
- CVL's Q is ``learner.q_values`` with the learner's estimator: RFF (eq. 12, learned ``xi``) or
  direct (eq. 11, averaged over ``num_future`` future states drawn from the dataset by
  `cvl_data.ContrastiveSampler`).
- SAC's Q is ``min(Q1, Q2)`` of the twin critic (the value SAC's actor and TD targets use), or
  their mean with ``sac_reduce="mean"``.
- "Normalised log": Q_NCE can be negative (Mountain Car pays -0.1 a^2 per step), so the log is
  ``symlog(q) = sign(q) log(1 + |q|)`` (= log(1 + q) for q >= 0), then min-max scaled to [0, 1]
  over the grid. SAC's Q is min-max scaled. Both maps are monotone in Q, so the Spearman
  correlation (computed on the raw values) is the same for any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from cvl_data.jsonio import to_json_data, write_json_atomic
from cvl_eval.analysis.figures import save_figure, use_agg

POSITION_RANGE = (-1.2, 0.6)
"""MountainCarContinuous-v0's position bounds."""
VELOCITY_RANGE = (-0.07, 0.07)
"""MountainCarContinuous-v0's velocity bounds."""

QFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``q(obs (B, 2), action (B, 1)) -> (B,)``."""


@dataclass(frozen=True)
class HeatmapConfig:
    """How `mountain_car_q_analysis` evaluates and draws the two Q functions.

    Attributes:
        resolution: grid points per axis (position x velocity).
        action: ``"policy"`` (each learner's deterministic action) or ``"uniform"`` (mean over
            evenly spaced actions); see the module docstring.
        num_actions: actions averaged with ``action="uniform"``.
        sac_reduce: ``"min"`` (of the twin Q) or ``"mean"``.
        num_future: future states for CVL's direct estimator (eq. 11).
        max_states: replay states (steps) used for the correlation, a seeded subsample.
        overlay: replay states drawn as dots over the heatmaps (0: none).
        seed: seeds the subsamples.
        batch: evaluation batch size.
    """

    resolution: int = 101
    action: Literal["policy", "uniform"] = "policy"
    num_actions: int = 21
    sac_reduce: Literal["min", "mean"] = "min"
    num_future: int = 1024
    max_states: int = 100_000
    overlay: int = 2000
    seed: int = 0
    batch: int = 16384

    def __post_init__(self) -> None:
        if self.action not in ("policy", "uniform") or self.sac_reduce not in ("min", "mean"):
            raise ValueError("action must be 'policy'|'uniform', sac_reduce 'min'|'mean'")
        if self.resolution < 2 or self.num_actions < 1 or self.max_states < 2:
            raise ValueError("need resolution >= 2, num_actions >= 1, max_states >= 2")


@dataclass(frozen=True)
class MountainCarAnalysis:
    """Result of `mountain_car_q_analysis` (grids are (resolution, resolution), rows = velocity).

    Attributes:
        png, json: the written files.
        spearman_states: Spearman rho of the two Qs on the replay states (the action rule).
        spearman_pairs: Spearman rho on the replay's (state, action) pairs.
        cvl_grid, sac_grid: the normalised maps as drawn.
    """

    png: Path
    json: Path
    spearman_states: float
    spearman_pairs: float
    cvl_grid: np.ndarray
    sac_grid: np.ndarray


def learner_q_fn(learner, sac_reduce: str = "min", future=None) -> QFn:
    """The Q function of a learner: CVL's ``q_values`` (with ``future`` = (obs_future,
    reward_future) for the direct estimator) or the reduced twin Q of a SAC-like learner."""
    if hasattr(learner, "q_values"):
        estimator = learner.config.q_estimator
        if estimator == "mc" and future is None:
            raise ValueError("CVL's direct estimator needs future states (obs, reward)")
        obs_future, reward_future = future if estimator == "mc" else (None, None)
        return lambda obs, act: learner.q_values(obs, act, obs_future, reward_future)

    @torch.no_grad()
    def q(obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        q1, q2 = learner.critic(obs, action)
        return torch.minimum(q1, q2) if sac_reduce == "min" else 0.5 * (q1 + q2)

    return q


def q_at_states(learner, q_fn: QFn, states: np.ndarray, config: HeatmapConfig) -> np.ndarray:
    """Q at ``states`` (N, 2) under the config's action rule; returns (N,) float64."""
    assert states.ndim == 2 and states.shape[1] == 2, states.shape
    out = []
    device = learner.device
    for start in range(0, len(states), config.batch):
        obs = torch.as_tensor(states[start : start + config.batch], device=device).float()
        if config.action == "policy":
            action = torch.as_tensor(learner.act(obs, deterministic=True), device=device)
            out.append(q_fn(obs, action.reshape(len(obs), 1)).cpu().double())
        else:
            actions = torch.linspace(-1.0, 1.0, config.num_actions, device=device)
            qs = [q_fn(obs, a.expand(len(obs), 1)) for a in actions]
            out.append(torch.stack(qs).double().mean(0).cpu())
    return torch.cat(out).numpy()


def q_at_pairs(
    q_fn: QFn, states: np.ndarray, actions: np.ndarray, device, batch: int
) -> np.ndarray:
    """Q at the replay's own (state, action) pairs, (N,) float64."""
    out = []
    for start in range(0, len(states), batch):
        rows = slice(start, start + batch)
        obs = torch.as_tensor(states[rows], device=device)
        out.append(q_fn(obs, torch.as_tensor(actions[rows], device=device)).cpu().double())
    return torch.cat(out).numpy()


def symlog(q: np.ndarray) -> np.ndarray:
    """``sign(q) log(1 + |q|)``: the log of Q for Q >> 1, defined for Q <= 0 too."""
    return np.sign(q) * np.log1p(np.abs(q))


def minmax(x: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] (a constant array becomes zeros)."""
    span = float(x.max() - x.min())
    return (x - x.min()) / span if span > 0 else np.zeros_like(x)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (`scipy.stats.spearmanr`); NaN when either input is constant."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def replay_steps(dataset, max_states: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """States s_t (N, 2) and actions a_t (N, 1) of up to ``max_states`` replay steps (seeded)."""
    offsets = np.asarray(dataset.episode_offsets)
    episode_of_step = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    steps = np.arange(int(offsets[-1]))
    if len(steps) > max_states:
        steps = np.sort(np.random.default_rng(seed).choice(steps, max_states, replace=False))
    states = np.asarray(dataset.observations[steps + episode_of_step[steps]], dtype=np.float32)
    return states, np.asarray(dataset.actions[steps], dtype=np.float32)


def state_grid(resolution: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (R,), velocities (R,) and the grid states (R * R, 2), velocity-major."""
    positions = np.linspace(*POSITION_RANGE, resolution)
    velocities = np.linspace(*VELOCITY_RANGE, resolution)
    pos, vel = np.meshgrid(positions, velocities)  # (R_vel, R_pos)
    return positions, velocities, np.stack([pos.ravel(), vel.ravel()], 1).astype(np.float32)


def plot_heatmaps(
    cvl_grid: np.ndarray,
    sac_grid: np.ndarray,
    path: str | Path,
    overlay_states: np.ndarray | None = None,
    title: str = "",
) -> Path:
    """Two heatmaps over (position, velocity) side by side, with colorbars; saved as PNG."""
    use_agg()
    import matplotlib.pyplot as plt

    extent = (*POSITION_RANGE, *VELOCITY_RANGE)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
    panels = [
        (cvl_grid, "CVL: normalised log Q_NCE", "normalised log Q_NCE"),
        (sac_grid, "SAC: normalised Q", "normalised Q"),
    ]
    for ax, (grid, name, label) in zip(axes, panels, strict=True):
        image = ax.imshow(
            grid, origin="lower", extent=extent, aspect="auto", cmap="viridis", vmin=0, vmax=1
        )
        if overlay_states is not None and len(overlay_states):
            ax.scatter(*overlay_states.T, s=2, c="white", alpha=0.5, linewidths=0)
            ax.set_xlim(*POSITION_RANGE)
            ax.set_ylim(*VELOCITY_RANGE)
        ax.set(title=name, xlabel="position", ylabel="velocity")
        fig.colorbar(image, ax=ax, label=label)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path, dpi=110, tight=False)


def _future(learner, dataset, config: HeatmapConfig):
    """(obs_future, reward_future) from the data for a CVL learner with the direct estimator."""
    from cvl_data import ContrastiveSampler

    if getattr(getattr(learner, "config", None), "q_estimator", None) != "mc":
        return None
    sampler = ContrastiveSampler(
        dataset,
        config.num_future,
        discount=learner.config.discount,
        device=str(learner.device),
        seed=config.seed,
    )
    batch = sampler.sample()
    return batch.obs_future, batch.reward_future


def mountain_car_q_analysis(
    cvl_learner,
    sac_learner,
    dataset,
    out_dir: str | Path,
    config: HeatmapConfig | None = None,
    name: str = "mountain_car_q",
) -> MountainCarAnalysis:
    """Heatmaps (``<out_dir>/<name>.png``) and Spearman correlations (``<name>.json``).

    Args:
        cvl_learner: the CVL learner (e.g. ``cvl_algos.load_learner(dir)``) trained on
            ``dataset``; any learner works (a SAC-like one is read through its twin Q).
        sac_learner: the SAC that produced ``dataset`` (`SACGenerationReport.sac_dir`).
        dataset: the Mountain Car replay dataset (`cvl_data.open_dataset`), state observations.
        out_dir: output folder.
        config: evaluation and drawing choices (`HeatmapConfig`).
    """
    config = config or HeatmapConfig()
    if tuple(dataset.spec.obs_shape) != (2,):
        raise ValueError(f"expected Mountain Car states (2,), got {dataset.spec.obs_shape}")
    q_cvl = learner_q_fn(cvl_learner, config.sac_reduce, _future(cvl_learner, dataset, config))
    q_sac = learner_q_fn(sac_learner, config.sac_reduce, _future(sac_learner, dataset, config))

    positions, velocities, grid_states = state_grid(config.resolution)
    shape = (len(velocities), len(positions))
    cvl_raw = q_at_states(cvl_learner, q_cvl, grid_states, config).reshape(shape)
    sac_raw = q_at_states(sac_learner, q_sac, grid_states, config).reshape(shape)
    cvl_grid, sac_grid = minmax(symlog(cvl_raw)), minmax(sac_raw)

    states, actions = replay_steps(dataset, config.max_states, config.seed)
    rho_states = spearman(
        q_at_states(cvl_learner, q_cvl, states, config),
        q_at_states(sac_learner, q_sac, states, config),
    )

    rho_pairs = spearman(
        q_at_pairs(q_cvl, states, actions, cvl_learner.device, config.batch),
        q_at_pairs(q_sac, states, actions, sac_learner.device, config.batch),
    )

    out_dir = Path(out_dir)
    overlay = states[np.random.default_rng(config.seed).permutation(len(states))[: config.overlay]]
    png = plot_heatmaps(
        cvl_grid,
        sac_grid,
        out_dir / f"{name}.png",
        overlay_states=overlay if config.overlay else None,
        title=f"Spearman rho on replay states: {rho_states:.3f} ({len(states)} states)",
    )
    report = {
        "spearman_states": None if np.isnan(rho_states) else rho_states,
        "spearman_pairs": None if np.isnan(rho_pairs) else rho_pairs,
        "num_states": len(states),
        "config": to_json_data(config),
        "cvl_q_range": [float(cvl_raw.min()), float(cvl_raw.max())],
        "sac_q_range": [float(sac_raw.min()), float(sac_raw.max())],
        "cvl_estimator": getattr(getattr(cvl_learner, "config", None), "q_estimator", "twin_q"),
        "normalisation": "cvl: minmax(symlog(Q_NCE)); sac: minmax(Q); symlog = sign log1p|.|",
    }
    json_path = write_json_atomic(out_dir / f"{name}.json", report, durable=False)
    return MountainCarAnalysis(png, json_path, rho_states, rho_pairs, cvl_grid, sac_grid)


def analyze_mountain_car(
    cvl_dir: str | Path,
    sac_dir: str | Path,
    dataset_path: str | Path,
    out_dir: str | Path,
    config: HeatmapConfig | None = None,
    device: str = "cpu",
) -> MountainCarAnalysis:
    """`mountain_car_q_analysis` from saved learners (``learner.save`` folders) and a dataset
    folder; ``sac_dir`` is e.g. `cvl_eval.datagen.sac.checkpoints.final_sac_dir` of the
    generation."""
    from cvl_algos import load_learner
    from cvl_data import open_dataset

    cvl = load_learner(cvl_dir, device=device, restore_global_rng=False)
    sac = load_learner(sac_dir, device=device, restore_global_rng=False)
    return mountain_car_q_analysis(cvl, sac, open_dataset(dataset_path), out_dir, config)
