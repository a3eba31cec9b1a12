"""Policy extraction beyond the paper's KL form: DDPG+BC and flow policies (pure losses).

CVL's critic is the Q of the data's behaviour policy; the policy step turns it into a policy.
The paper's extraction (eq. 13-15, `cvl_algos.cvl.losses.policy_loss`) fits a unimodal
tanh-Gaussian, which on mixed-quality data averages the sources under its BC term. These losses
are the alternatives `CVLConfig.policy_extraction` offers:

- ``"ddpgbc"``: `ddpg_bc_policy_loss`, as OGBench's contrastive RL agent (Park et al. 2024,
  ``impls/agents/crl.py``, ``actor_loss="ddpgbc"``): maximise Q at the policy's mode action,
  normalised by its detached batch mean ``|Q|``, plus ``alpha`` times the data's negative
  log-likelihood.
- ``"flow"``: `fql_policy_loss`, Flow Q-Learning's one-step policy (Park, Li, Levine 2025,
  eq. 5-7): a flow-matching behaviour model of all the data, and a one-step policy distilled
  from it with weight ``alpha`` while maximising the normalised Q.
- ``"flow_select"``: `flow_matching_loss` alone; acting draws samples of the behaviour flow and
  takes the one of highest Q (SfBC, Chen et al. 2023; IFQL's selection).

Each returns ``(loss, metrics)``; ``q_fn`` must leave the critic's parameters without gradients
(`cvl_algos.cvl.q.direct_q_fn` / ``rff_q_fn``). Random draws go through `cvl_models.noise`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from einops import rearrange, reduce
from torch import Tensor, nn

from cvl_algos.cvl.losses import (
    QFn,
    awr_policy_loss,
    batch_zscore,
    crr_binary_policy_loss,
    policy_loss,
    weighted_log_likelihood,
)
from cvl_models.flow import euler_integrate
from cvl_models.noise import standard_normal, uniform
from cvl_models.policy import action_log_prob

if TYPE_CHECKING:
    from cvl_algos.cvl.config import CVLConfig

__all__ = [
    "EXTRACTION_LOSSES",
    "ddpg_bc_policy_loss",
    "extraction_kwargs",
    "flow_matching_loss",
    "fql_policy_loss",
    "normalized_q_objective",
    "q_weights",
]


def normalized_q_objective(q: Tensor, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """``-mean(Q) / stopgrad(mean |Q|)`` (TD3+BC's lambda; OGBench's ``q_loss``) and the scale.

    Q_NCE is Q only up to a positive factor (lemma 2); dividing by the detached batch mean of
    ``|Q|`` makes the BC weight mean the same on every task and critic.
    """
    scale = q.detach().abs().mean().clamp_min(eps)
    return -q.mean() / scale, scale


def q_weights(q_data: Tensor, beta: float) -> Tensor:
    """Weights ``B * softmax_b(beta * z_b)`` (mean 1) of the batch's data pairs, ``z`` their
    batch-standardised ``Q(s_b, a_b)``, detached: reward-weighted regression's weights
    (Peters and Schaal 2007) with the critic's Q for the return. ``beta = 0`` gives 1 each."""
    return q_data.shape[0] * torch.softmax(beta * batch_zscore(q_data.detach()), dim=0)


def ddpg_bc_policy_loss(
    policy: nn.Module,
    q_fn: QFn,
    batch: Any,
    *,
    alpha: float = 1.0,
    fixed_std: float | None = None,
    q_weight_beta: float = 0.0,
    q_weight_baseline: str = "none",
    other_weight: float = 0.0,
    q_cap: bool = False,
    density_fn: QFn | None = None,
    density_weight: float = 0.0,
    data_q_fn: QFn | None = None,
) -> tuple[Tensor, dict]:
    """DDPG+BC on a tanh-Gaussian: ``-Q(s, tanh(mean(s))) / stopgrad(mean |Q|)
    - alpha * E_D log pi(a|s)`` (OGBench ``crl.py`` ``ddpgbc``; Park et al. 2024, sec. 3).

    The Q term moves the mode action. With ``fixed_std=None`` the likelihood is the learned
    tanh-Gaussian's: it keeps the mode inside the data and alone trains the standard deviation,
    so where one behaviour dominates a state its std shrinks and the term's pull on the mode grows
    as 1/std^2. With ``fixed_std`` sigma the behaviour term is the log-likelihood of the data
    action under a Gaussian of that fixed std around the mode action, up to its constant:
    ``-log N(a; tanh(mean), sigma^2 I) = ||a - tanh(mean)||^2 / (2 sigma^2) + const`` (OGBench's
    actor with ``const_std=True``: sigma = 1, a pull that does not stiffen); the learned std then
    gets no gradient. With ``q_weight_beta`` > 0 the behaviour term is weighted per data pair by
    `q_weights` of the detached Q(s_b, a_b), ``-sum_b w_b log pi(a_b|s_b) / sum_b w_b``
    (reward-weighted regression with the critic's Q; one more critic pass). With
    ``q_weight_baseline="mode"`` the weights are `q_weights` of the advantage over the policy's
    mode, ``Q(s_b, a_b) - Q(s_b, tanh(mean(s_b)))`` (detached), so a pair is not favoured for its
    state's value, only for its action's (advantage-weighted regression with the mode as the
    baseline, Peng et al. 2019 use V). A batch with ``behaviour_weight`` (the sampler's 0/1 flag
    ``m_b`` of the top episodes by return, ``CVLConfig.bc_top_fraction``) multiplies each pair's
    weight by ``m_b + other_weight (1 - m_b)``: with ``other_weight=0`` the term clones the top
    episodes only, ``-sum_b m_b w_b log pi(a_b|s_b) / sum_b m_b w_b``; with ``0 < other_weight
    < 1`` every pair still counts and the top episodes' count ``1 / other_weight`` times as much.
    With ``q_cap`` the Q term of pair b is ``min(Q(s_b, mode(s_b)), Q(s_b, a_b))`` (the data
    action's Q detached; the scale stays the uncapped mean ``|Q|``): the mode climbs Q only where
    the critic ranks it below the data's own action at that state, never past what the data did
    (not in the paper; DDPG's analogue of CRR's binary filter). A batch that carries
    ``neighbour_obs_t`` ``(B, k, D)`` and ``neighbour_action_t`` ``(B, k, A)`` (the data's pairs
    at the k states of other episodes nearest to s_b, `cvl_data.neighbours`) raises pair b's cap
    to ``max(Q(s_b, a_b), max_j Q(s'_bj, a'_bj))``, all detached: the mode may climb to the best
    value the data reached near s_b, so it can leave a behaviour that other episodes beat from
    there, but not past the data where none did (`neighbourhood_cap`). With ``density_fn`` (the critic's
    log density ratio ``D(s, a) = log p(a | s) / p(a)``, `cvl_algos.cvl.q.direct_log_density_fn`)
    and ``density_weight`` w > 0 the loss adds ``-w mean_b D(s_b, mode(s_b))``: the mode is kept
    where the critic says the data's behaviours act, a support term that, unlike the
    tanh-Gaussian's likelihood, does not average the behaviours' modes (not in the paper).
    ``data_q_fn``, when given, is the Q of the data's own pairs (the weights' and the cap's, at
    the anchors and at their neighbours) in place of ``q_fn``: the gated Q's
    (`cvl_algos.cvl.q.gated_data_q_fn`). Only the policy gets gradients.
    """
    obs_t, action_t = batch.obs_t, batch.action_t
    assert obs_t.shape[0] == action_t.shape[0] and action_t.ndim == 2, (
        obs_t.shape,
        action_t.shape,
    )
    mean, log_std = policy(obs_t)
    mode = rearrange(torch.tanh(mean), "b a -> 1 b a")
    q = q_fn(obs_t, mode)[0]
    assert q.shape == obs_t.shape[:1], q.shape
    q_term, scale = normalized_q_objective(q)
    q_data = None
    data_fn = q_fn if data_q_fn is None else data_q_fn
    if q_weight_beta or q_cap:
        with torch.no_grad():
            q_data = data_fn(obs_t, rearrange(action_t, "b a -> 1 b a"))[0]
    cap = None
    if q_cap:
        cap = neighbourhood_cap(data_fn, q_data, batch)
        q_term = -torch.minimum(q, cap).mean() / scale
    if fixed_std is None:
        log_prob_data = action_log_prob(mean, log_std, action_t)
    else:
        squared = reduce((action_t - mode[0]).square(), "b a -> b", "sum")
        log_prob_data = -squared / (2.0 * fixed_std**2)
    weights = None
    if q_weight_beta:
        advantage = q_data - q.detach() if q_weight_baseline == "mode" else q_data
        weights = q_weights(advantage, q_weight_beta)
    flags = batch.behaviour_weight
    if flags is not None:
        kept = flags + other_weight * (1.0 - flags)
        weights = kept if weights is None else weights * kept
    bc = (
        -log_prob_data.mean()
        if weights is None
        else weighted_log_likelihood(log_prob_data, weights)
    )
    loss = q_term + alpha * bc
    density = None
    if density_weight:
        assert density_fn is not None, "density_weight > 0 needs density_fn"
        density = density_fn(obs_t, mode)[0].mean()
        loss = loss - density_weight * density
    metrics = {
        "policy_loss": loss.detach(),
        "policy_q_term": q_term.detach(),
        "policy_bc": bc.detach(),
        "policy_log_prob_data": log_prob_data.detach().mean(),
        "policy_data_mse": (mode[0] - action_t).detach().square().mean(),
        "q_mean": q.detach().mean(),
        "q_abs_mean": scale,
    }
    if q_data is not None:
        metrics["policy_mode_above_data"] = (q.detach() > q_data).float().mean()
    if cap is not None:
        metrics["policy_cap_over_data"] = (cap - q_data).mean() / scale
    if density is not None:
        metrics["policy_log_density"] = density.detach()
    return loss, metrics


def neighbourhood_cap(q_fn: QFn, q_data: Tensor, batch: Any) -> Tensor:
    """The DDPG+BC cap of each pair, ``(B,)``, detached: its own data action's Q ``q_data``, or,
    when ``batch.neighbour_obs_t`` is given, ``max(q_data_b, max_j Q(s'_bj, a'_bj))`` over the
    data's pairs at the anchor's k nearest states of other episodes (one critic pass on
    ``B * k`` pairs against the same futures)."""
    neighbour_obs = getattr(batch, "neighbour_obs_t", None)
    if neighbour_obs is None:
        return q_data
    k = neighbour_obs.shape[1]
    with torch.no_grad():
        q_near = q_fn(
            rearrange(neighbour_obs, "b k ... -> (b k) ..."),
            rearrange(batch.neighbour_action_t, "b k a -> 1 (b k) a"),
        )[0]
    q_near = reduce(q_near, "(b k) -> b", "max", k=k)
    return torch.maximum(q_data, q_near)


def flow_matching_loss(velocity: nn.Module, obs_t: Tensor, action_t: Tensor) -> tuple[Tensor, dict]:
    """Conditional flow matching with the linear path (FQL eq. 5; Lipman et al. 2023):
    ``x_0 ~ N(0, I)``, ``t ~ U(0, 1)``, ``x_t = (1 - t) x_0 + t a``,
    ``L = mean || v(s, x_t, t) - (a - x_0) ||^2`` (mean over batch and action dims)."""
    assert action_t.ndim == 2 and obs_t.shape[0] == action_t.shape[0], (
        obs_t.shape,
        action_t.shape,
    )
    x_0 = standard_normal(action_t.shape, dtype=action_t.dtype, device=action_t.device)
    t = uniform((action_t.shape[0], 1), dtype=action_t.dtype, device=action_t.device)
    x_t = (1.0 - t) * x_0 + t * action_t
    predicted = velocity(obs_t, x_t, t)
    loss = reduce((predicted - (action_t - x_0)).square(), "b a -> ", "mean")
    return loss, {"flow_bc_loss": loss.detach()}


def fql_policy_loss(
    policy: nn.Module,
    q_fn: QFn,
    obs_t: Tensor,
    action_t: Tensor,
    *,
    alpha: float = 1.0,
    flow_steps: int = 10,
    normalize_q: bool = True,
) -> tuple[Tensor, dict]:
    """Flow Q-Learning's actor loss (Park, Li, Levine 2025, eq. 7, Q normalised by default):
    ``L = L_flow(v) + alpha * mean ||mu(s, z) - flow(s, z)||^2 - Q(s, mu(s, z)) / stopgrad(mean|Q|)``.

    ``policy`` is a `cvl_models.flow.FlowPolicy` (``velocity`` v, ``onestep`` mu); ``flow(s, z)``
    is the Euler-integrated behaviour flow for the noise ``z ~ N(0, I)``, computed without
    gradients (the distillation target moves only the one-step policy), and ``L_flow`` is
    `flow_matching_loss`, which moves only the velocity field. ``q_fn`` is CVL's Q (extraction
    ``"flow"``) or a TD critic's (`cvl_algos.fql`); ``normalize_q=False`` maximises raw Q (FQL's
    default ``normalize_q_loss=False``).
    """
    flow_loss, metrics = flow_matching_loss(policy.velocity, obs_t, action_t)
    noise = standard_normal(action_t.shape, dtype=action_t.dtype, device=action_t.device)
    with torch.no_grad():
        target = euler_integrate(policy.velocity, obs_t, noise, flow_steps)
    actions = policy.onestep(obs_t, noise)
    distill = reduce((actions - target).square(), "b a -> ", "mean")
    q = q_fn(obs_t, rearrange(actions.clamp(-1.0, 1.0), "b a -> 1 b a"))[0]
    q_term, scale = normalized_q_objective(q)
    if not normalize_q:
        q_term = -q.mean()
    loss = flow_loss + alpha * distill + q_term
    metrics.update(
        {
            "policy_loss": loss.detach(),
            "policy_distill": distill.detach(),
            "policy_q_term": q_term.detach(),
            "policy_data_mse": (actions - action_t).detach().square().mean(),
            "q_mean": q.detach().mean(),
            "q_abs_mean": scale,
        }
    )
    return loss, metrics


EXTRACTION_LOSSES = {
    "kl": policy_loss,
    "awr": awr_policy_loss,
    "crr": crr_binary_policy_loss,
    "ddpgbc": ddpg_bc_policy_loss,
    "flow": fql_policy_loss,
    "flow_select": flow_matching_loss,
}
"""The loss of each `CVLConfig.policy_extraction`."""


def extraction_kwargs(cfg: CVLConfig) -> dict[str, Any]:
    """The config's settings that the extraction's loss takes."""
    if cfg.policy_extraction == "awr":
        return {
            "num_action_samples": cfg.num_action_samples,
            "beta": cfg.awr_beta,
            "max_weight": cfg.awr_max_weight,
        }
    if cfg.policy_extraction == "crr":
        return {"num_action_samples": cfg.num_action_samples}
    if cfg.policy_extraction == "ddpgbc":
        return {
            "alpha": cfg.bc_alpha,
            "fixed_std": cfg.bc_fixed_std,
            "q_weight_beta": cfg.bc_q_weight_beta,
            "q_weight_baseline": cfg.bc_q_weight_baseline,
            "other_weight": cfg.bc_other_weight,
            "q_cap": cfg.bc_q_cap,
        }
    if cfg.policy_extraction == "flow":
        return {"alpha": cfg.bc_alpha, "flow_steps": cfg.flow_steps}
    return {
        "num_action_samples": cfg.num_action_samples,
        "alpha": cfg.alpha,
        "lambda_bc": cfg.lambda_bc,
        "tau_bc": cfg.tau_bc,
        "normalize_q": cfg.normalize_q,
    }
