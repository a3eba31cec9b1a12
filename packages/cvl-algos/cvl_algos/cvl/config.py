"""Configuration of Contrastive Value Learning (CVL).

Defaults follow the paper's appendix (tables 1 and 2) where it gives a value; the fields it leaves
open (latent size, EMA rates, entropy coefficients, number of random features) carry the value
we chose, marked "not in the paper" below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from cvl_algos.common import check_policy_ema_tau
from cvl_data.samplers import MODES as SAMPLER_MODES
from cvl_data.weighting import (
    check_return_weight_baseline,
    check_return_weight_scope,
    check_return_weight_temperature,
)
from cvl_models import Torso
from cvl_models.critic import MIN_TEMPERATURE

EXTRACTIONS = ("kl", "awr", "crr", "ddpgbc", "flow", "flow_select")
"""The values of `CVLConfig.policy_extraction`."""
CRITIC_OBJECTIVES = ("infonce", "binary", "td_infonce")
"""The values of `CVLConfig.critic_objective`."""
ACTION_CONTRAST_SOURCES = (
    "batch",
    "behaviour",
    "behaviour_flow",
    "uniform",
    "perturbed",
    "batch_uniform",
    "policy_uniform",
)
"""The values of `CVLConfig.action_contrast_source`; "batch" first, the default."""
FLOW_EXTRACTIONS = ("flow", "flow_select")
"""The extractions whose policy is a `cvl_models.flow.FlowPolicy`."""
ACTION_CONTRAST_NOISE = 0.3
"""Default std of ``action_contrast_source="perturbed"``'s negatives around the data's action."""


@dataclass(frozen=True)
class CVLConfig:
    """Hyperparameters of CVL (paper sec. 4, algorithm 1, tables 1-2; DESIGN.md sec. 2).

    Batches: the paper trains CVL on batches of ``H`` anchors (one whole episode, H = 500 on
    Meta-World) drawn with ``ContrastiveSampler(mode="episode")``; ``batch_size=512`` with
    ``sampler_mode="uniform"`` (anchors drawn uniformly over all steps) is the other supported
    layout. The learner itself accepts any batch size; these two fields tell the runner which
    sampler to build.
    """

    # Optimisation (table 1).
    lr: float = 3e-4
    """Adam learning rate for the critic and the policy."""
    batch_size: int = 500
    """Anchors per batch: H = 500 (episode mode, the paper) or 512 in uniform mode."""
    sampler_mode: Literal["episode", "uniform", "shared_start"] = "episode"
    """How the runner should draw contrastive batches (see the class docstring);
    ``"shared_start"``: uniform anchors in ``start_groups`` blocks, each block from episodes
    that start from the same state, so the negatives include other behaviours from the
    anchor's own start (`cvl_data.ContrastiveSampler`; not in the paper)."""
    start_groups: int = 8
    """Blocks per batch of the ``"shared_start"`` sampler (must divide ``batch_size``)."""
    return_weight_temperature: float | None = None
    """None: anchors as ``sampler_mode`` draws them (the paper). T > 0, with
    ``sampler_mode="uniform"``: each anchor drawn in proportion to ``exp(G~ / T)``, G~ its
    episode's min-max normalised return (return-weighted sampling, "RW" of Hong et al. 2023;
    `cvl_data.weighting`), so critic and policy learn from the return-weighted mixture of the
    data's behaviours and the policy step improves on it instead of on the plain mixture (not
    in the paper)."""
    return_weight_baseline: str = "none"
    """With ``return_weight_temperature``: "none" weighs each episode by its return; "start_state"
    by its advantage over the start, ``G - V(s_0)``, V the least-squares linear fit of the returns
    on the episodes' first observations ("AW" of Hong et al. 2023; state observations only), so
    episodes that start where the return is high anyway (stitched data's starts next to the
    object) weigh no more for their start (not in the paper)."""
    return_weight_scope: str = "all"
    """With ``return_weight_temperature``, whose anchors the weights draw: "all" (critic and
    policy train on one weighted batch), "critic" (the critic's anchors weighted, the policy
    step's own anchors uniform) or "policy" (the critic's anchors uniform, the policy step's
    weighted; `cvl_data.ContrastiveSampler`). The two last separate the weights' effect on the
    Q the critic learns from their effect on where and what the policy imitates (not in the
    paper). Not "all" only with an extraction that reads no futures (not "kl")."""
    discount: float = 0.99
    """gamma: parameter of the truncated-geometric future offset and the 1/(1-gamma) Q scale."""
    max_grad_norm: float = 100.0
    """Global gradient-norm clip applied to each optimiser step."""
    hidden: tuple[int, ...] = (256, 256)
    """DenseNet MLP widths of phi, psi and the policy."""
    torso: Torso = "densenet"
    """MLP torso of phi, psi and the policy: ``"densenet"``, the paper's DenseNet with LayerNorm (table 1), or
    ``"mlp"``, plain Linear+ReLU layers of the same widths (SB3's and d3rlpy's architecture, for
    comparisons at equal architecture; `cvl_models.mlp.make_mlp`)."""

    # Contrastive critic (eq. 9-10, table 2).
    latent_dim: int = 64
    """Size d of phi(s, a) and psi(s+) (not in the paper)."""
    temperature: float = 1.0
    """InfoNCE temperature tau: f = phi . psi / tau (table 2: 1)."""
    learn_temperature: bool = False
    """Train tau with the critic's loss, starting from ``temperature`` (``log tau`` a parameter of
    the critic, floored at tau = 0.01, as CLIP trains its logit scale; not in the paper). Only
    with ``q_estimator="mc"``: random features are drawn for one fixed temperature. Measured, it
    falls to the floor, where random features fail (docs/results.md, "A learned temperature")."""
    normalize: bool = True
    """l2-normalise phi and psi outputs (table 2: yes; lemma 1 needs unit vectors)."""
    critic_kernel: Literal["dot", "lse"] = "dot"
    """How f is made from phi and psi: "dot", ``phi . psi / tau`` (eq. 9, the paper); "lse",
    ``log mean_i exp((phi_i + psi_i) / tau)`` over the latent's coordinates, whose kernel
    ``exp(f)`` is exactly linear in ``d`` positive features, so eq. 12 needs no random draw
    (``rff_kind="exact"``; `cvl_models.critic`; not in the paper). "lse" needs unit latents
    (``normalize``), a fixed ``temperature >= 0.05`` and, with ``q_estimator="rff"``, the exact
    features."""
    lambda_partition: float = 1e-3
    """Coefficient of the partition regulariser mean_i (lse_j f_ij)^2 (eq. 10, table 2)."""
    critic_objective: Literal["infonce", "binary", "td_infonce"] = "infonce"
    """"infonce": eq. 9-10 (the paper); "binary": binary NCE over every (anchor, future) pair,
    which fixes the critic where InfoNCE leaves a constant per anchor free (the paper authors'
    code default; `binary_nce_partition_loss`); "td_infonce": TD InfoNCE (Zheng et al. 2024,
    `td_infonce_partition_loss`), which bootstraps from the policy's mode action at the next
    state, so the critic, and Q from it, is the policy's rather than the data's behaviour
    policy's (multi-step improvement instead of one step; not in the paper). Q then weighs the
    batch's next states by their arrival rewards ``r_t``; a polyak copy ``phi_target`` of phi
    joins ``psi_target``."""
    action_contrast_weight: float = 0.0
    """Weight of `action_contrastive_loss` in the critic's loss: InfoNCE over the anchor's action
    against ``action_contrast_negatives`` other anchors' actions at the same state and future,
    so the critic must tell actions apart and not only episodes (0: off, the paper's critic).
    Not in the paper; with ``self_normalized`` it leaves Q's optimum unchanged (the loss's
    docstring). Not with "td_infonce". At 1 with the presets' settings, 4 tasks x 3 seeds: held-out
    mixtures IQM 0.37 -> 0.60, the suite's mixtures 0.96 -> 0.93, the hard suite 0.94 -> 0.80
    (docs/results.md, "A critic that must tell actions apart") with the batch's actions as
    negatives; with uniform ones (``action_contrast_source``) it is on in the presets on
    mixed-quality and hard data."""
    action_contrast_negatives: int = 8
    """Negative actions per anchor in `action_contrastive_loss`: other anchors' actions (1 to
    batch size - 1) for ``action_contrast_source="batch"``, 2 or more for "batch_uniform" and
    "policy_uniform" (one of each kind), any number >= 1 for the other sources that draw their
    own."""
    action_contrast_source: Literal[
        "batch",
        "behaviour",
        "behaviour_flow",
        "uniform",
        "perturbed",
        "batch_uniform",
        "policy_uniform",
    ] = "batch"
    """Where the term's negative actions come from. "batch": other anchors' actions, draws of
    the data's action marginal ``p(a)``, so the term's optimum is ``log p(a | s, s+) / p(a)``
    and carries the behaviour density ``log p(a | s) / p(a)`` beside what the action does to
    the future. "behaviour": ``action_contrast_negatives`` samples at the anchor's own state
    from a tanh-Gaussian behaviour model fitted to the data alongside (`bc_loss`, its own
    optimiser), so the optimum is ``log p(a | s, s+) / pi_b(a | s) = log p(s+ | s, a) / p(s+
    | s)`` up to a function of ``(s, s+)``: eq. 9's own solution, with no density for the
    latents to carry (not in the paper). A screen of 8 runs found neither the term's held-out
    gain kept nor its losses removed (docs/results.md, "Negatives from a behaviour model"),
    hence "batch". "behaviour_flow": the same with a flow-matching behaviour model
    (`cvl_models.flow.VelocityField`, `flow_matching_loss`, ``flow_steps`` Euler steps), which
    can hold several modes at a state, so the negatives are the data's other behaviours there
    rather than draws around their average (not in the paper); screen of 8 runs: the held-out
    gain lost, the presets' level elsewhere (docs/results.md, "Negatives from a flow behaviour
    model"). "uniform": K actions uniform on the action box at every anchor, CQL's proposal, so
    the optimum is ``log p(a | s, s+)`` up to a function of ``(s, s+)``: it holds the whole
    behaviour density ``log p(a | s)``, which is lowest at actions the data never takes at the
    state (not in the paper). With weight 1 and K = 8 the presets' default on mixed-quality and
    hard data: held-out mixtures 0.43 against 0.35 (IQM, P = 0.75), both suites 0.92 against
    0.89 (IQM over 8 datasets x 3 seeds, P = 0.53; docs/results.md, "Uniform negatives" and
    "Both full suites"). "perturbed": the anchor's own action plus Gaussian noise of std
    ``action_contrast_noise`` per dimension, clipped to the action box, so every negative is a
    near miss of the data's action and the term teaches how the future turns with small changes
    of the action, the direction DDPG+BC's Q ascent follows (not in the paper). The proposal
    depends on the positive, so the optimum is not a fixed density ratio: for small noise the
    term matches the slope of ``log p(a | s, s+)`` around the data's action. Screened at noise 0.3
    (6 runs): below uniform negatives on held-out and suite data alike (0.21 against 0.28 and
    0.47 against 0.55), the term's accuracy 0.19 among 9 candidates (docs/results.md, "Near-miss
    negatives"). "batch_uniform": half of each kind, ``K - K // 2`` other anchors' actions
    (as "batch") and ``K // 2`` uniform actions (as "uniform"), so the proposal is the mixture
    ``q(a) = (p(a) + u(a)) / 2`` in expectation and the optimum ``log p(a | s, s+) / q(a)``:
    the batch's data-marginal negatives, which make the critic tell the data's behaviours apart
    (the held-out gain), beside the uniform ones, which hold off-support actions low (not in the
    paper). Held-out mixtures, 4 x 3: IQM 0.51 against uniform negatives' 0.43, P = 0.67 [0.44,
    0.89], short of the plan's 0.70; the hard suite 0.81 against 0.88, stitched door-open 0.33
    against 0.76 (the batch term's loss back), so "uniform" stays the presets' (docs/results.md,
    "Half batch, half uniform negatives"). "policy_uniform": half the current policy's, half
    uniform: the policy's mode and ``K // 2 - 1`` samples of its tanh-Gaussian at the anchor's
    state (no gradient reaches the policy), then ``K - K // 2`` uniform actions (other shares:
    ``action_contrast_policy_negatives``). DDPG+BC's Q term
    climbs Q at the policy's mode, so that is where the critic must rank actions by their futures;
    the proposal changes Q's optimum only by a function of ``(s, a)``, which the self-normalised Q
    cancels (not in the paper; a tanh-Gaussian policy only)."""
    action_contrast_policy_negatives: int | None = None
    """With ``action_contrast_source="policy_uniform"``: how many of the K negatives are the
    policy's (its mode, then ``n - 1`` samples of its tanh-Gaussian), the other ``K - n`` uniform
    actions; None is ``K // 2``, the source's measured setting (`policy_negatives`). Fewer of
    them contrast the data's action with the policy's mode and less of its spread. The mode
    alone (1 of 8), a 10-run screen: between "policy_uniform" and "uniform" on both the held-out
    gain and the near misses (docs/results.md, "The policy's mode alone among the negatives").
    Read by no other source (not in the paper)."""
    action_contrast_policy: Literal["trained", "average"] = "trained"
    """With ``action_contrast_source="policy_uniform"``: which policy draws the policy's
    negatives. "trained": the policy DDPG+BC updates every step (the default). "average": its
    polyak average (``policy_ema_tau`` > 0), the policy the agent acts with, which trails the
    trained one by about 1 / tau updates, so the critic contrasts the data's action with the
    acting policy's (not in the paper). A 10-run screen against the default re-trained on the
    same machine: level on held-out hammer and lever-pull (0.473 against 0.489), below it on the
    reach and stitched plate-slide near misses (0.61 against 0.69 success), so "trained" stays
    (docs/results.md, "The policy's negatives drawn from its average")."""
    action_contrast_noise: float = ACTION_CONTRAST_NOISE
    """Std of the Gaussian perturbation (in the [-1, 1] action box's units) that makes the
    negatives of ``action_contrast_source="perturbed"``; read by no other source."""
    action_contrast_bias: bool = False
    """With ``action_contrast_weight`` > 0: False scores the term's candidates by ``f`` alone,
    so ``phi . psi`` must also carry the joint solution's ``log p(a | s) / p(a)``; True gives
    the critic a scalar head ``b(s, a)`` (`cvl_models.ContrastiveCritic.action_bias`) added to
    the term's logits only, which can hold that density and leave ``phi . psi`` eq. 9's
    solution (not in the paper). Screen of 8 runs: it moves the term halfway back to the
    presets' CVL on both sides, held-out handle-pull 0.70 -> 0.33 mean success, the suite's
    door-open and the stitch data 0.23 -> 0.47 (docs/results.md, "A bias head for the term")."""
    action_contrast_critics: Literal["all", "first"] = "all"
    """With ``action_contrast_weight`` > 0 and ``num_critics`` > 1, which critics the term
    trains: "all", or "first" (critic 0 with the term, the others by eq. 9-10 alone), so the
    policy maximises the minimum of a critic that must tell actions apart and critics that need
    not (not in the paper). Screen of 8 runs with two critics: between the term and the presets'
    CVL, held-out mean success 0.33 (the term 0.63, presets 0.10), the suite's door-open and the
    stitch data 0.59 (0.14, 0.81) (docs/results.md, "A critic with the term beside one
    without it")."""
    num_critics: int = 1
    """Independent contrastive critics, each with its own ``psi_target`` and optimiser, trained
    by the same loss on the same batch; the policy maximises the minimum of their eq. 11
    estimates (`cvl_algos.cvl.q.ensemble_q_fn`), as OGBench's contrastive RL agent does with
    two, so it cannot climb one critic's error that the other does not share, or their mean
    (``critic_reduction``). 1: the paper's one critic.
    More than 1 only with the direct estimator, the "infonce" or "binary" objective, no support
    term (``bc_density_weight``) and no acting by Q (not in the paper)."""
    critic_reduction: Literal["min", "mean"] = "min"
    """With ``num_critics`` > 1, how the policy's Q combines the critics' eq. 11 estimates: "min"
    (pessimism, clipped double Q) or "mean" (their average, whose action gradient keeps what the
    critics share: two direct critics trained on the same data have dQ/da at the policy's mode at
    median cosine 0.42-0.49; not in the paper). Screen of 8 runs with four critics: "mean"
    0.34 mean success against the presets' 0.40 (docs/results.md, "The policy on the mean of
    four critics")."""
    td_warmup_steps: int = 0
    """"td_infonce": the first this many updates train the critic with eq. 9-10's InfoNCE on
    the batch's future states (and Q weighs those), so the bootstrap starts from the data's
    occupancy rather than from an untrained critic (not in the paper)."""
    psi_target_tau: float = 0.005
    """Polyak rate of psi_target <- (1 - tau) psi_target + tau psi (not in the paper)."""
    critic_updates: int = 0
    """The critic (eq. 10) and its targets train for the first this many updates only; later
    updates train the policy (and its average) against the frozen critic: early stopping of
    the critic. 0: every update, the paper's (not in the paper)."""

    # Q estimation (eq. 11-12).
    q_estimator: Literal["rff", "mc"] = "rff"
    """"rff": Q = F(phi) . xi / (1-gamma) (eq. 12, the paper's default); "mc": direct
    Monte-Carlo Q_NCE over the batch's future states (eq. 11)."""
    self_normalized: bool = False
    """Self-normalised Q: ``sum_j softmax_j(f_ij) r_j`` instead of ``mean_j exp(f_ij) r_j``
    (RFF: ``F(phi) . xi / F(phi) . zeta``, zeta the EMA of ``mean_j F(psi_j)``). InfoNCE leaves
    ``f`` free up to a constant per anchor, which eq. 11-12 multiply Q by; the ratio cancels it
    (not in the paper; see ``q_direct_from_latents``)."""
    q_temperature: float | None = None
    """Temperature of Q's kernel in eq. 11-12, tau_Q: None reads Q at the critic's
    ``temperature`` (the paper). A value reads the self-normalised Q through the critic's kernel
    at tau_Q: for "dot", ``exp(phi . psi / tau_Q) = exp(f)^(tau / tau_Q)``, each future's weight
    the critic's density ratio raised to tau / tau_Q, so above tau the weights are flatter and Q
    a smoother mean of the futures' rewards, and the kernel random features must estimate spans
    e^(2 / tau_Q) instead of e^(2 / tau) (docs/results.md, "Why more features do not rescue the
    random features"); for "lse", ``log mean_i exp((phi_i + psi_i) / tau_Q)`` and its exact
    features at tau_Q. The critic trains at ``temperature`` either way (not in the paper). Needs
    ``self_normalized`` (a tempered ratio has no normaliser of its own) and a fixed
    temperature; with the "lse" kernel, tau_Q >= 0.05. Measured with 1024 positive random
    features at 0.3 on the presets' critic at 0.1: the mixed suite 0.88 against the direct
    default's 0.93, P = 0.22 (4 x 3; docs/results.md, "Q read at its own temperature"), so off."""
    q_expectile: float = 0.5
    """"mc" with ``self_normalized``: 0.5 weighs the futures' arrival rewards by their
    probability (the mean, eq. 11); tau in (0.5, 1) takes the tau-expectile of the same
    distribution instead, so the best futures of (s, a) count more, IQL's expectile applied to
    the critic's futures instead of the data's actions (`weighted_expectile`; not in the
    paper). The random-feature estimator is linear in the weights and cannot take it."""
    q_support_gate: bool = False
    """"mc" with ``self_normalized``: the policy step's Q is gated by the data's action at the
    same state, ``Q_sn(s, a) sigmoid(D(s, a) - D(s, a_data))``: the data action's futures join
    the softmax as zero-reward futures (`cvl_algos.cvl.q.gated_q_from_latents`). The
    self-normalised Q values an action the critic tells from the data's by other episodes'
    futures, near the batch's mean reward; the gate values it down by the critic's own log
    partition D. Only where Q is read at the data's states (not acting by Q; not in the paper).
    Off: with the policy's actions among the action term's negatives (the presets') the critic
    lowers D wherever the policy acts and the policy flees its own penalty, losing the held-out
    gain and the stitched tasks (a 10-run screen, docs/results.md, "The policy step's Q gated by
    the data's action")."""
    num_rff_features: int = 1024
    """D, number of random Fourier features, independent of latent_dim (not in the paper)."""
    rff_kind: Literal["trig", "positive", "oprf", "exact"] = "trig"
    """Random features of eq. 12: "trig", the paper's cosines (lemma 1); "positive", FAVOR+'s
    positive features (Choromanski et al. 2021; never negative, so the self-normalised
    denominator stays positive; `cvl_models.rff`); "oprf", optimal positive random features
    (Likhosherstov et al. 2022; positive too, with the variance at aligned pairs minimised);
    "exact", the ``"lse"`` critic's own ``d`` features ``exp(x / tau) / sqrt(d)`` (no draw, no
    error; ``num_rff_features`` = ``latent_dim``; `cvl_models.rff.ExactExpFeatures`)."""
    rff_orthogonal: bool = False
    """Draw the random features' directions in orthogonal blocks (lower variance; not in the
    paper)."""
    beta_xi: float = 0.99
    """EMA rate of xi <- beta xi + (1 - beta) mean_j F(psi_target(s+_j)) r_j (not in the paper).
    0 takes xi from the current batch alone, the direct estimator's futures: with the presets'
    4096 positive features that is above 0.99 on the hard suite (IQM 0.91 against 0.84, P =
    0.83) and not on the mixtures (0.88 against 0.91), so 0.99 stays (docs/results.md, "Where
    the random features' error reaches the policy")."""
    rff_redraw: bool = False
    """False: one draw of the random features for the whole run (the paper's). True: a new draw
    every update (seeded by the learner's seed and step), xi and zeta from that update's batch
    alone (needs ``beta_xi=0``), so the features' error in Q and in its action gradient is new at
    each policy step instead of one fixed field the policy follows throughout (Performers redraw
    their features, Choromanski et al. 2021; not in the paper). Screen of 6 runs on the hard
    suite: no effect against one draw with ``beta_xi=0`` (mean normalised return 0.79 against
    0.78; docs/results.md, same section)."""

    # Policy (eq. 13-15, table 2).
    num_action_samples: int = 10
    """N_a reparameterised action samples per state in the KL term (table 2: 10)."""
    alpha: float = 0.1
    """Boltzmann temperature of eq. 13: L = E[alpha log pi - Q] (not in the paper)."""
    lambda_bc: float = 0.1
    """Weight of the behaviour-cloning term (table 2: 0.1; 0 on Mountain Car)."""
    tau_bc: float = 0.1
    """Entropy coefficient inside the BC term, -E log pi(a|s) - tau_bc H(pi) (eq. 14)."""
    normalize_q: bool = False
    """Divide Q by its detached per-batch mean |Q| in the policy loss (TD3+BC style; an
    ablation switch, not in the paper)."""
    policy_extraction: Literal["kl", "awr", "crr", "ddpgbc", "flow", "flow_select"] = "kl"
    """"kl": the paper's eq. 13-15 (reparameterised samples maximise Q, plus lambda_bc BC);
    "awr": advantage-weighted regression on dataset actions (`awr_policy_loss`; not in the
    paper), weights exp(awr_beta * z) with z the batch-standardised advantage; "crr": behaviour
    cloning of the dataset actions whose Q beats the current policy's mean Q at the same state
    (CRR's binary weights, `crr_binary_policy_loss`; not in the paper); "ddpgbc": the
    tanh-Gaussian's mode maximises Q / mean|Q| with ``bc_alpha`` times the data's likelihood
    (OGBench's contrastive RL agent; `cvl_algos.cvl.extraction.ddpg_bc_policy_loss`); "flow":
    Flow Q-Learning's one-step policy distilled from a flow-matching behaviour model with weight
    ``bc_alpha`` while maximising Q / mean|Q| (`fql_policy_loss`; acting ``mu(s, 0)``
    deterministically); "flow_select": the flow-matching behaviour model alone, acting with the
    best of ``flow_select_samples`` of its samples by Q (SfBC). alpha, lambda_bc, tau_bc and
    normalize_q only act with "kl"; the flow extractions' policy is a `cvl_models.flow.FlowPolicy`
    and takes no ``act_candidates``."""
    bc_alpha: float = 1.0
    """"ddpgbc" and "flow": weight of the behaviour term against the normalised Q term
    (OGBench's and FQL's alpha; not in the paper)."""
    bc_fixed_std: float | None = None
    """"ddpgbc": None takes the behaviour term's likelihood from the learned tanh-Gaussian (its
    std shrinks where one behaviour dominates a state, stiffening the pull to that behaviour);
    a float sigma takes it from a Gaussian of that fixed std around the mode action,
    ``||a - mode||^2 / (2 sigma^2)`` (OGBench's contrastive RL actor: ``const_std=True``,
    sigma = 1; not in the paper). See `ddpg_bc_policy_loss`."""
    bc_q_weight_beta: float = 0.0
    """"ddpgbc": 0 weighs every data pair's behaviour term alike; beta > 0 weighs pair b by
    ``B softmax_b(beta z_b)``, z the batch-standardised Q(s_b, a_b) (`q_weights`), so the term
    clones the data the critic values (reward-weighted regression with Q; not in the paper)."""
    bc_q_weight_baseline: str = "none"
    """"ddpgbc" with bc_q_weight_beta > 0: "none" standardises Q(s_b, a_b) itself; "mode"
    standardises the advantage over the policy's mode action, Q(s_b, a_b) - Q(s_b, mode(s_b)),
    so the weight favours a pair's action, not its state's value (not in the paper)."""
    bc_q_cap: bool = False
    """"ddpgbc": False maximises Q at the policy's mode (OGBench's DDPG+BC); True caps each pair's
    Q term at the data action's Q(s_b, a_b), so the mode climbs the critic only up to what the
    data did at that state, not where the critic extrapolates above it (not in the paper; see
    `ddpg_bc_policy_loss`)."""
    bc_q_cap_neighbours: int = 0
    """With ``bc_q_cap``: 0 caps pair b's Q term at its own data action's Q(s_b, a_b); k > 0 at
    the largest of that and Q(s', a') of the data's pairs at the k states of other episodes
    nearest to s_b (standardised observations, `cvl_data.neighbours`): the mode may climb to the
    best value the data reached near this state, not past it, so it can leave a behaviour that
    other episodes beat from here but not follow the critic off the data where none did (not in
    the paper; flat state observations, ``action_chunk`` 1, ``return_weight_scope`` "all")."""
    bc_density_weight: float = 0.0
    """"ddpgbc" with the direct estimator and the action-contrast term: weight w of a support term
    ``-w D(s, mode(s))``, D the critic's log density ratio ``log p(a | s) / p(a)``
    (`cvl_algos.cvl.q.log_density_ratio_from_latents`: eq. 11's log normaliser, which the
    self-normalised Q cancels and which only ``action_contrast_weight`` > 0 identifies), so the
    mode stays where the data's behaviours act without the tanh-Gaussian averaging their modes.
    0 adds nothing (not in the paper)."""
    bc_top_fraction: float = 1.0
    """"ddpgbc": the behaviour term's data. 1 clones every anchor (OGBench's DDPG+BC); a
    fraction f < 1 clones only the anchors of the ``ceil(f * E)`` episodes of highest return
    (filtered BC's selection, `cvl_data.subset.top_episode_indices`), while the critic and the
    Q term still see every anchor: the policy stays near the best episodes' behaviour and the
    critic improves on it (not in the paper; needs anchors from many episodes per batch, so not
    ``sampler_mode="episode"``)."""
    bc_other_weight: float = 0.0
    """"ddpgbc" with ``bc_top_fraction`` < 1: the behaviour term's weight of the anchors outside
    the top episodes, in [0, 1). 0 clones the top episodes only; w > 0 keeps every anchor in the
    term, the top episodes' counting 1 / w times as much, so states that only other behaviours
    visit keep a behaviour term (not in the paper)."""
    flow_steps: int = 10
    """"flow" and "flow_select": Euler steps integrating the behaviour flow (FQL: 10)."""
    flow_select_samples: int = 32
    """"flow_select": behaviour-flow samples scored by Q at each acting step."""
    flow_select_noise: Literal["held", "fresh"] = "held"
    """"flow_select": where the candidates' noises come from. "held": a generator seeded with the
    learner's seed at every call, so each environment keeps the same noises for its whole
    episode; "fresh": a generator seeded by the observations (`cvl_models.noise.observation_seed`),
    new noises at every state, the same for the same observations (SfBC's sampling; not in the
    paper). Either way acting is reproducible and leaves the learner's RNG alone. Screen, 10k
    steps, 30 episodes per run (docs/results.md, "Acting noise of flow policies"): with 4 fresh
    samples, mean success 0.57 on handle-pull with four wrong behaviours (3 seeds; 32 held: 0.08),
    0.87 on stitched drawer-open (2 seeds; 32 held: 0.32; the presets' DDPG+BC: 0.70), 0.57 on
    the drawer-open mixture (2 seeds; the presets' DDPG+BC: 1.00); over the hard suite (3 seeds)
    below the presets' CVL by return (IQM 0.84 against 0.87, P(improvement) 0.33)."""
    flow_select_noise_scale: float = 1.0
    """"flow_select": the candidates' noises are ``flow_select_noise_scale * N(0, I)``. 1 samples
    the behaviour flow's own distribution; below 1 (a sampling temperature; not in the paper)
    each sample moves toward its mode's centre while the modes stay, so the chosen action
    carries less of the data's action noise; 0 gives every candidate the flow's deterministic
    action. Acting-only screen on trained checkpoints, 4 fresh samples, 30 episodes per run
    (docs/results.md, "Acting noise of flow policies"): 0.5 against 1, mean success 0.80 against
    0.57 on the drawer-open mixture, 0.52 against 0.57 on handle-pull with four wrong behaviours,
    0.87 against 0.87 on stitched drawer-open, 0.50 against 0.50 on reach, returns higher on all
    four. Trained on the four held-out mixtures (4 fresh samples, 3 seeds, 10k steps): IQM 0.28
    against the presets' CVL 0.35 and filtered BC 0.79 (P(improvement) over the presets' CVL
    0.44), so no preset uses it."""
    awr_beta: float = 1.0
    """Inverse temperature of the AWR weights on standardised advantages (not in the paper)."""
    awr_max_weight: float = 100.0
    """Clip of the AWR weights (not in the paper; IQL's reference value)."""
    act_candidates: int = 0
    """Acting: 0 acts with the policy's mode (the paper). K > 0 scores the mode and K policy
    samples with Q (eq. 12, or eq. 11 over the last labelled batch's future states, kept in
    the checkpoint) and acts with the best (`cvl_algos.cvl.acting`; not in the paper).
    Deterministic acting only; ``act(..., deterministic=False)`` still samples the policy."""
    action_chunk: int = 1
    """h: the critic and the policy take ``h`` consecutive actions ``a_t .. a_{t+h-1}`` of an
    episode as one action of size ``h * A`` (`cvl_data.ContrastiveSampler`'s ``action_chunk``),
    so Q(s, a_{t:t+h}) values a short plan and a source's behaviour is told apart by h of its
    actions instead of one (action chunking as in Q-chunking, Li, Zhou & Levine 2025). Acting
    executes the chunk's first action and plans again at the next step. 1: the paper's one
    action (not in the paper). At 5 with the presets' settings (screen, 2 seeds): held-out
    handle-pull stays at 0.00 success and stitched drawer-open falls from 0.67 to 0.07
    (docs/results.md, "Action chunks"), hence off in the presets."""
    log_std_min: float = -5.0
    """Lower clamp of the policy's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the policy's log standard deviation."""

    # Pretraining (sec. 5.2).
    pretrain_steps: int = 50_000
    """Reward-free critic-only updates before finetuning, used by ``pretrain_then_finetune``
    when pretraining data is given (not in the paper; the same default as CQL+UDS)."""

    # Execution.
    policy_ema_tau: float = 0.0
    """Evaluation acting: 0 acts with the trained policy. tau in (0, 1] acts (deterministically)
    with a polyak average of its parameters, ``policy_ema <- (1 - tau) policy_ema + tau policy``
    after each update (`LearnerBase.acting_policy`; not in the paper). Training, and actions
    sampled with ``deterministic=False``, use the trained policy."""
    compile: bool = False
    """Wrap the losses in ``torch.compile`` (inductor compiles their backward too; the optimiser
    step stays eager). Measured on one CPU thread at the paper's sizes: 1.1-1.2x the eager rate,
    after a one-off compilation of tens of seconds (docs/performance.md, "Design choices and
    their measured effect")."""

    def __post_init__(self) -> None:
        check_policy_ema_tau(self.policy_ema_tau)
        if not 0.0 <= self.discount < 1.0:
            raise ValueError(f"discount must lie in [0, 1), got {self.discount}")
        if self.q_estimator not in ("rff", "mc"):
            raise ValueError(f"q_estimator must be 'rff' or 'mc', got {self.q_estimator!r}")
        if self.sampler_mode not in SAMPLER_MODES:
            raise ValueError(
                f"sampler_mode must be one of {SAMPLER_MODES}, got {self.sampler_mode!r}"
            )
        if self.sampler_mode == "shared_start" and (
            not 1 <= self.start_groups <= self.batch_size or self.batch_size % self.start_groups
        ):
            raise ValueError(
                f"start_groups must divide batch_size {self.batch_size}, got {self.start_groups}"
            )
        check_return_weight_temperature(self.return_weight_temperature)
        check_return_weight_baseline(self.return_weight_baseline, self.return_weight_temperature)
        check_return_weight_scope(self.return_weight_scope, self.return_weight_temperature)
        if self.return_weight_scope != "all" and self.policy_extraction == "kl":
            raise ValueError(
                f"return_weight_scope={self.return_weight_scope!r} draws the policy's own "
                f"anchors, without futures; policy_extraction='kl' reads the critic's futures"
            )
        if self.return_weight_temperature is not None and self.sampler_mode != "uniform":
            raise ValueError(
                f"return_weight_temperature weighs uniform anchors: it needs "
                f"sampler_mode='uniform', got {self.sampler_mode!r}"
            )
        if not 0.0 <= self.beta_xi < 1.0:
            raise ValueError(f"beta_xi must lie in [0, 1), got {self.beta_xi}")
        if self.rff_redraw and self.q_estimator != "rff":
            raise ValueError(
                f"rff_redraw=True redraws the random features of q_estimator='rff', got "
                f"q_estimator={self.q_estimator!r}"
            )
        if self.rff_redraw and self.beta_xi != 0.0:
            raise ValueError(
                f"rff_redraw=True draws new features every update, so xi cannot average over "
                f"batches: set beta_xi=0, got {self.beta_xi}"
            )
        if not 0.0 < self.psi_target_tau <= 1.0:
            raise ValueError(f"psi_target_tau must lie in (0, 1], got {self.psi_target_tau}")
        if isinstance(self.action_chunk, bool) or not (
            isinstance(self.action_chunk, int) and self.action_chunk >= 1
        ):
            raise ValueError(f"action_chunk must be an int >= 1, got {self.action_chunk!r}")
        if self.num_action_samples < 1 or self.num_rff_features < 1 or self.batch_size < 2:
            raise ValueError("num_action_samples, num_rff_features >= 1 and batch_size >= 2")
        self._check_critic()
        self._check_extraction()
        if not 0.0 < self.q_expectile < 1.0 or (
            self.q_expectile != 0.5 and (self.q_estimator != "mc" or not self.self_normalized)
        ):
            raise ValueError(
                f"q_expectile must lie in (0, 1), and differ from 0.5 only with q_estimator='mc' "
                f"and self_normalized=True, got {self.q_expectile!r} with "
                f"{self.q_estimator!r}, self_normalized={self.self_normalized}"
            )
        if self.q_support_gate and (
            self.q_estimator != "mc"
            or not self.self_normalized
            or self.q_expectile != 0.5
            or self.acts_by_q()
        ):
            raise ValueError(
                f"q_support_gate needs q_estimator='mc', self_normalized=True, q_expectile=0.5, "
                f"act_candidates=0 and not 'flow_select' (the gate reads the data's action), got "
                f"{self.q_estimator!r}, self_normalized={self.self_normalized}, "
                f"{self.q_expectile}, {self.act_candidates}, {self.policy_extraction!r}"
            )
        if self.q_estimator == "rff" and not self.normalize:
            raise ValueError("the RFF estimator (lemma 1) needs normalize=True (unit latents)")
        self._check_q_temperature()

    def _check_critic(self) -> None:
        """The critic's settings: temperature, objective, the action-contrast term, features."""
        if self.temperature <= 0.0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if self.learn_temperature and (
            self.q_estimator != "mc" or self.temperature < MIN_TEMPERATURE
        ):
            raise ValueError(
                f"learn_temperature=True needs q_estimator='mc' (random features are drawn for one "
                f"fixed temperature) and temperature >= {MIN_TEMPERATURE}, got {self.q_estimator!r} and "
                f"{self.temperature}"
            )
        if self.critic_objective not in CRITIC_OBJECTIVES:
            raise ValueError(
                f"critic_objective must be one of {CRITIC_OBJECTIVES}, got "
                f"{self.critic_objective!r}"
            )
        if self.action_contrast_weight < 0.0 or (
            self.action_contrast_weight > 0.0 and self.critic_objective == "td_infonce"
        ):
            raise ValueError(
                f"action_contrast_weight must be >= 0, and 0 with critic_objective='td_infonce' "
                f"(its bootstrap has its own targets), got {self.action_contrast_weight} with "
                f"{self.critic_objective!r}"
            )
        # Other anchors' actions ("batch") are at most batch_size - 1; "batch_uniform" takes
        # K - K // 2 of them and needs one of each kind, as "policy_uniform" does; the other
        # sources draw their own negatives, any number of them.
        least, most = 1, math.inf
        if self.action_contrast_source == "batch":
            most = self.batch_size - 1
        elif self.action_contrast_source == "batch_uniform":  # K - K // 2 <= batch_size - 1
            least, most = 2, 2 * (self.batch_size - 1)
        elif self.action_contrast_source == "policy_uniform":  # the mode and a uniform draw
            least = 2
        checked = self.action_contrast_weight > 0.0
        if checked and not least <= self.action_contrast_negatives <= most:
            bound = (
                f"in [{least}, {most}] (batch_size {self.batch_size})"
                if most < math.inf
                else f">= {least}"
            )
            raise ValueError(
                f"action_contrast_negatives must be {bound} with action_contrast_source "
                f"{self.action_contrast_source!r}, got {self.action_contrast_negatives}"
            )
        if self.action_contrast_source not in ACTION_CONTRAST_SOURCES or (
            self.action_contrast_source != "batch"
            and (
                not self.action_contrast_weight > 0.0
                or self.action_contrast_bias
                or self.bc_density_weight
            )
        ):
            *others, last = (repr(source) for source in ACTION_CONTRAST_SOURCES)
            raise ValueError(
                f"action_contrast_source must be {', '.join(others)} or {last}, and all but "
                f"'batch' only with action_contrast_weight > 0, "
                f"action_contrast_bias=False and bc_density_weight 0 (both read the density "
                f"that other anchors' actions put in the critic), got "
                f"{self.action_contrast_source!r} with action_contrast_weight "
                f"{self.action_contrast_weight!r}, action_contrast_bias "
                f"{self.action_contrast_bias}, bc_density_weight {self.bc_density_weight!r}"
            )
        self._check_policy_negatives()
        perturbed = self.action_contrast_source == "perturbed"
        if not (0.0 < self.action_contrast_noise < math.inf) or (
            not perturbed and self.action_contrast_noise != ACTION_CONTRAST_NOISE
        ):
            raise ValueError(
                f"action_contrast_noise must be a finite std > 0, and is read only with "
                f"action_contrast_source='perturbed' (leave it at {ACTION_CONTRAST_NOISE} "
                f"otherwise), got {self.action_contrast_noise!r} with "
                f"{self.action_contrast_source!r}"
            )
        if self.critic_updates < 0 or (
            self.critic_updates and self.critic_objective == "td_infonce"
        ):
            raise ValueError(
                f"critic_updates must be >= 0 (0: every update), and 0 with "
                f"critic_objective='td_infonce', got {self.critic_updates} with "
                f"{self.critic_objective!r}"
            )
        if self.td_warmup_steps < 0 or (
            self.td_warmup_steps and self.critic_objective != "td_infonce"
        ):
            raise ValueError(
                f"td_warmup_steps must be >= 0 with critic_objective='td_infonce' (0 "
                f"elsewhere), got {self.td_warmup_steps} with {self.critic_objective!r}"
            )
        if self.critic_objective == "td_infonce" and self.policy_extraction == "flow_select":
            raise ValueError(
                "critic_objective='td_infonce' bootstraps from the policy's action; "
                "policy_extraction='flow_select' trains no policy to evaluate (use 'flow')"
            )
        self._check_num_critics()
        if self.rff_kind not in ("trig", "positive", "oprf", "exact"):
            raise ValueError(
                f"rff_kind must be 'trig', 'positive', 'oprf' or 'exact', got {self.rff_kind!r}"
            )
        self._check_kernel()

    def acts_by_q(self) -> bool:
        """Whether deterministic acting selects actions by Q (``act_candidates`` > 0 or
        "flow_select"), reading Q at states the data's batch does not hold."""
        return self.act_candidates > 0 or self.policy_extraction == "flow_select"

    def policy_negatives(self) -> int:
        """How many of the action term's negatives are the policy's with
        ``action_contrast_source="policy_uniform"``: the field, or ``K // 2`` when it is None."""
        count = self.action_contrast_policy_negatives
        return self.action_contrast_negatives // 2 if count is None else count

    def _check_policy_negatives(self) -> None:
        """``action_contrast_policy``: "average" only with "policy_uniform" and a policy average;
        ``action_contrast_policy_negatives``: only with "policy_uniform", an int in [1, K - 1]
        (the policy's mode and at least one uniform draw)."""
        if self.action_contrast_policy not in ("trained", "average") or (
            self.action_contrast_policy == "average"
            and (self.action_contrast_source != "policy_uniform" or not self.policy_ema_tau > 0.0)
        ):
            raise ValueError(
                f"action_contrast_policy must be 'trained' or 'average', and 'average' needs "
                f"action_contrast_source='policy_uniform' and policy_ema_tau > 0 (the average it "
                f"draws from), got {self.action_contrast_policy!r} with "
                f"{self.action_contrast_source!r}, policy_ema_tau {self.policy_ema_tau}"
            )
        count = self.action_contrast_policy_negatives
        if count is None:
            return
        is_int = isinstance(count, int) and not isinstance(count, bool)
        if (
            self.action_contrast_source != "policy_uniform"
            or not is_int
            or not 1 <= count <= self.action_contrast_negatives - 1
        ):
            raise ValueError(
                f"action_contrast_policy_negatives must be None or an int in [1, "
                f"action_contrast_negatives - 1 = {self.action_contrast_negatives - 1}], and is "
                f"read only with action_contrast_source='policy_uniform', got {count!r} with "
                f"{self.action_contrast_source!r}"
            )

    def _check_q_temperature(self) -> None:
        """``q_temperature``: None, or a positive float read by a self-normalised Q of a fixed
        temperature (at least the "lse" kernel's floor, 0.05, with that kernel)."""
        tau_q = self.q_temperature
        if tau_q is None:
            return
        number = isinstance(tau_q, (int, float)) and not isinstance(tau_q, bool)
        in_range = number and (tau_q >= 0.05 if self.critic_kernel == "lse" else tau_q > 0.0)
        if not in_range or not self.self_normalized or self.learn_temperature:
            raise ValueError(
                f"q_temperature must be None or a number > 0 (>= 0.05 with critic_kernel='lse'), "
                f"with self_normalized=True and learn_temperature=False, got {tau_q!r} with "
                f"self_normalized={self.self_normalized}, learn_temperature="
                f"{self.learn_temperature}, critic_kernel={self.critic_kernel!r}"
            )

    def _check_kernel(self) -> None:
        """``critic_kernel`` and the exact features, which exist for the "lse" kernel only."""
        if self.critic_kernel not in ("dot", "lse"):
            raise ValueError(f"critic_kernel must be 'dot' or 'lse', got {self.critic_kernel!r}")
        if self.critic_kernel == "lse" and (
            not self.normalize or self.learn_temperature or self.temperature < 0.05
        ):
            raise ValueError(
                f"critic_kernel='lse' needs normalize=True, learn_temperature=False and "
                f"temperature >= 0.05, got {self.normalize}, {self.learn_temperature}, "
                f"{self.temperature}"
            )
        exact = self.rff_kind == "exact"
        if exact != (self.critic_kernel == "lse") and (exact or self.q_estimator == "rff"):
            raise ValueError(
                f"rff_kind='exact' goes with critic_kernel='lse', and the 'lse' critic's random "
                f"features are its exact ones, got rff_kind={self.rff_kind!r} with "
                f"critic_kernel={self.critic_kernel!r} and q_estimator={self.q_estimator!r}"
            )
        if exact and (
            self.num_rff_features != self.latent_dim or self.rff_redraw or self.rff_orthogonal
        ):
            raise ValueError(
                f"rff_kind='exact' has latent_dim features and nothing drawn: num_rff_features "
                f"must be {self.latent_dim}, rff_redraw and rff_orthogonal False, got "
                f"{self.num_rff_features}, {self.rff_redraw} and {self.rff_orthogonal}"
            )

    def _check_num_critics(self) -> None:
        """``num_critics``: an int >= 1; more than one only where every Q is eq. 11's."""
        if isinstance(self.num_critics, bool) or not (
            isinstance(self.num_critics, int) and self.num_critics >= 1
        ):
            raise ValueError(f"num_critics must be an int >= 1, got {self.num_critics!r}")
        if self.num_critics > 1 and (
            self.q_estimator != "mc"
            or self.critic_objective == "td_infonce"
            or self.bc_density_weight
            or self.acts_by_q()
        ):
            raise ValueError(
                f"num_critics={self.num_critics} needs q_estimator='mc', critic_objective "
                f"'infonce' or 'binary', bc_density_weight=0, act_candidates=0 and not "
                f"'flow_select', got {self.q_estimator!r}, {self.critic_objective!r}, "
                f"{self.bc_density_weight}, {self.act_candidates}, {self.policy_extraction!r}"
            )
        if self.critic_reduction not in ("min", "mean") or (
            self.critic_reduction == "mean" and self.num_critics < 2
        ):
            raise ValueError(
                f"critic_reduction must be 'min' or 'mean', and 'mean' only with num_critics >= "
                f"2, got {self.critic_reduction!r} with num_critics={self.num_critics}"
            )
        if self.action_contrast_critics not in ("all", "first") or (
            self.action_contrast_critics == "first"
            and (
                self.num_critics < 2
                or not self.action_contrast_weight > 0.0
                or self.action_contrast_bias
            )
        ):
            raise ValueError(
                f"action_contrast_critics must be 'all' or 'first', and 'first' only with "
                f"num_critics >= 2, action_contrast_weight > 0 and action_contrast_bias=False, "
                f"got {self.action_contrast_critics!r} with num_critics={self.num_critics}, "
                f"action_contrast_weight {self.action_contrast_weight!r}, action_contrast_bias "
                f"{self.action_contrast_bias}"
            )

    def _check_cap_neighbours(self) -> None:
        k = self.bc_q_cap_neighbours
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"bc_q_cap_neighbours must be an int >= 0, got {k!r}")
        if k and not (
            self.bc_q_cap and self.action_chunk == 1 and self.return_weight_scope == "all"
        ):
            raise ValueError(
                f"bc_q_cap_neighbours={k} needs bc_q_cap=True, action_chunk=1 and "
                f"return_weight_scope='all', got {self.bc_q_cap}, {self.action_chunk} and "
                f"{self.return_weight_scope!r}"
            )

    def _check_extraction(self) -> None:
        """The policy extraction's settings and the switches that only some extractions take."""
        if self.policy_extraction not in EXTRACTIONS:
            raise ValueError(
                f"policy_extraction must be one of {EXTRACTIONS}, got {self.policy_extraction!r}"
            )
        if self.act_candidates < 0:
            raise ValueError(f"act_candidates must be >= 0, got {self.act_candidates}")
        if (
            self.action_contrast_source == "policy_uniform"
            and self.policy_extraction in FLOW_EXTRACTIONS
        ):
            raise ValueError(
                f"action_contrast_source='policy_uniform' draws from a tanh-Gaussian policy; "
                f"policy_extraction={self.policy_extraction!r} has none (add "
                "action_contrast_source='uniform' with it)"
            )
        if self.act_candidates and self.policy_extraction in FLOW_EXTRACTIONS:
            raise ValueError(
                f"act_candidates takes a tanh-Gaussian policy; policy_extraction="
                f"{self.policy_extraction!r} has none (flow_select selects by Q itself)"
            )
        if self.bc_fixed_std is not None and (
            self.policy_extraction != "ddpgbc" or not self.bc_fixed_std > 0.0
        ):
            raise ValueError(
                f"bc_fixed_std must be None or > 0 with policy_extraction='ddpgbc', got "
                f"{self.bc_fixed_std!r} with {self.policy_extraction!r}"
            )
        if self.bc_q_weight_beta and (
            self.policy_extraction != "ddpgbc" or not self.bc_q_weight_beta > 0.0
        ):
            raise ValueError(
                f"bc_q_weight_beta must be >= 0 with policy_extraction='ddpgbc' (0 elsewhere), "
                f"got {self.bc_q_weight_beta!r} with {self.policy_extraction!r}"
            )
        if self.bc_q_weight_baseline not in ("none", "mode") or (
            self.bc_q_weight_baseline == "mode" and not self.bc_q_weight_beta > 0.0
        ):
            raise ValueError(
                f"bc_q_weight_baseline must be 'none' or 'mode' ('mode' with bc_q_weight_beta > "
                f"0), got {self.bc_q_weight_baseline!r} with bc_q_weight_beta "
                f"{self.bc_q_weight_beta!r}"
            )
        if self.bc_q_cap and self.policy_extraction != "ddpgbc":
            raise ValueError(
                f"bc_q_cap=True takes policy_extraction='ddpgbc', got {self.policy_extraction!r}"
            )
        self._check_cap_neighbours()
        if self.action_contrast_bias and not (
            self.action_contrast_weight > 0.0 and not self.bc_density_weight
        ):
            raise ValueError(
                f"action_contrast_bias=True needs action_contrast_weight > 0 (only that term "
                f"uses the head) and bc_density_weight 0 (the head then holds the density the "
                f"critic's logits would), got action_contrast_weight "
                f"{self.action_contrast_weight!r}, bc_density_weight {self.bc_density_weight!r}"
            )
        if self.bc_density_weight and not (
            self.bc_density_weight > 0.0
            and self.policy_extraction == "ddpgbc"
            and self.q_estimator == "mc"
            and self.action_contrast_weight > 0.0
        ):
            raise ValueError(
                f"bc_density_weight must be >= 0, and > 0 only with policy_extraction='ddpgbc', "
                f"q_estimator='mc' and action_contrast_weight > 0 (eq. 9 alone leaves the density "
                f"free), got {self.bc_density_weight!r} with {self.policy_extraction!r}, "
                f"{self.q_estimator!r}, action_contrast_weight {self.action_contrast_weight!r}"
            )
        if self.bc_top_fraction != 1.0 and (
            self.policy_extraction != "ddpgbc"
            or not 0.0 < self.bc_top_fraction < 1.0
            or self.sampler_mode == "episode"
        ):
            raise ValueError(
                f"bc_top_fraction must lie in (0, 1] and differ from 1 only with "
                f"policy_extraction='ddpgbc' and a sampler_mode other than 'episode', got "
                f"{self.bc_top_fraction!r} with {self.policy_extraction!r}, {self.sampler_mode!r}"
            )
        if not 0.0 <= self.bc_other_weight < 1.0 or (
            self.bc_other_weight and self.bc_top_fraction == 1.0
        ):
            raise ValueError(
                f"bc_other_weight must lie in [0, 1), and differ from 0 only with "
                f"bc_top_fraction < 1, got {self.bc_other_weight!r} with bc_top_fraction "
                f"{self.bc_top_fraction!r}"
            )
        if self.bc_alpha < 0.0 or self.flow_steps < 1 or self.flow_select_samples < 1:
            raise ValueError("bc_alpha must be >= 0, flow_steps and flow_select_samples >= 1")
        if not 0.0 <= self.flow_select_noise_scale <= 10.0 or (
            self.flow_select_noise_scale != 1.0 and self.policy_extraction != "flow_select"
        ):
            raise ValueError(
                f"flow_select_noise_scale must lie in [0, 10], and differ from 1 only with "
                f"policy_extraction='flow_select', got {self.flow_select_noise_scale!r} with "
                f"{self.policy_extraction!r}"
            )
        if self.flow_select_noise not in ("held", "fresh") or (
            self.flow_select_noise == "fresh" and self.policy_extraction != "flow_select"
        ):
            raise ValueError(
                f"flow_select_noise must be 'held' or 'fresh', and 'fresh' only with "
                f"policy_extraction='flow_select', got {self.flow_select_noise!r} with "
                f"{self.policy_extraction!r}"
            )


@dataclass(frozen=True)
class CVLMCConfig(CVLConfig):
    """:class:`CVLConfig` with the direct Monte-Carlo Q_NCE (eq. 11) as the default estimator."""

    q_estimator: Literal["rff", "mc"] = "mc"
    """"mc": direct Monte-Carlo Q_NCE over the batch's future states (eq. 11)."""
