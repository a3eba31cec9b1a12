"""Q-value estimators of CVL from a contrastive critic (paper eq. 11, lemma 1, eq. 12).

Both estimators weight the rewards of future states by the critic's density ratio
exp(f(s, a, s+)), f = phi(s, a) . psi(s+) / temperature (or the ``"lse"`` kernel's,
`cvl_models.kernel_logits`, passed as ``kernel``); ``r_j`` is the *arrival* reward of
the future state s+_j (the reward of the transition that entered it, DESIGN.md sec. 2).
All functions are pure: no parameter, buffer or argument is modified.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from einops import einsum, rearrange, reduce, repeat
from torch import Tensor, nn

from cvl_algos.common import frozen_call
from cvl_models import StateActionEmbedding, kernel_logits


def q_direct_from_latents(
    phi_t: Tensor,
    psi_future: Tensor,
    reward_future: Tensor,
    discount: float,
    temperature: float,
    self_normalized: bool = False,
    expectile: float = 0.5,
    kernel: str = "dot",
) -> Tensor:
    """Direct Monte-Carlo Q_NCE (eq. 11) from latents.

    ``Q_i = 1/(1-g) * mean_j r_j exp(phi_i . psi_j / temperature)`` over the M future states j.
    With ``self_normalized`` the weights ``exp(f_ij)`` are divided by their sum over j
    (``Q_i = 1/(1-g) * sum_j softmax_j(f_ij) r_j``): self-normalised importance sampling of
    ``E_{s+ ~ p(s+|s,a)} r(s+)``. InfoNCE determines ``f`` only up to a constant per anchor
    ``c(s, a)`` (which eq. 11 multiplies Q by, ``e^c``); the ratio cancels it (not in the paper).
    ``expectile`` tau != 0.5 (self-normalised only) replaces that mean by the tau-expectile of
    the arrival rewards under the same weights (`weighted_expectile`; tau = 0.5 is the mean):
    with tau > 0.5 the best futures of (s, a) count more than their share, as IQL's expectile
    does over the data's actions (not in the paper).

    Args:
        phi_t: (B, d) anchor features phi(s_t, a_t).
        psi_future: (M, d) features psi_target(s+_j) of future states drawn from the data.
        reward_future: (M,) arrival rewards of those future states.
        kernel: the critic's, "dot" (``phi . psi / temperature``) or "lse".
    Returns:
        (B,) Q estimates.
    """
    assert phi_t.ndim == 2 and psi_future.ndim == 2, (phi_t.shape, psi_future.shape)
    assert phi_t.shape[1] == psi_future.shape[1], (phi_t.shape, psi_future.shape)
    assert reward_future.shape == psi_future.shape[:1], (
        reward_future.shape,
        psi_future.shape,
    )
    assert self_normalized or expectile == 0.5, "an expectile needs self-normalised weights"
    logits = kernel_logits(phi_t, psi_future, temperature, kernel)
    if self_normalized:
        weights = torch.softmax(logits, dim=1)
        reward_future = reward_future.to(logits.dtype)
        if expectile != 0.5:
            return weighted_expectile(reward_future, weights, expectile) / (1.0 - discount)
        return einsum(weights, reward_future, "b m, m -> b") / (1.0 - discount)
    weighted = torch.exp(logits) * reward_future.to(logits.dtype)
    return reduce(weighted, "b m -> b", "mean") / (1.0 - discount)


def gated_q_from_latents(
    phi_t: Tensor,
    phi_data: Tensor,
    psi_future: Tensor,
    reward_future: Tensor,
    discount: float,
    temperature: float | Tensor,
    kernel: str = "dot",
) -> Tensor:
    """The self-normalised Q (eq. 11) gated by the data's action at the same state (not in the
    paper): the futures of the data's action ``a_data`` enter the softmax as zero-reward futures,

    ``Q_i = 1/(1-g) * sum_j r_j e^{f_ij} / (sum_j e^{f_ij} + sum_j e^{g_ij})
          = Q_sn(s_i, a_i) * sigmoid(D(s_i, a_i) - D(s_i, a_data,i))``,

    f the critic's logits of ``(s, a)``, g those of ``(s, a_data)``, D the log partition
    (`log_density_ratio_from_latents`). The self-normalised Q cancels D, the constant per anchor
    that InfoNCE leaves free; with the action-contrast term D is the critic's own
    ``log p(a | s) / p(a)``, so the gate is the critic's probability that the futures come from
    ``a`` rather than from the data's action: about 1 where ``a`` is at least as likely as the
    data's action, ``e^{D(a) - D(a_data)}`` below it, 1/2 at the data's action. An action the
    critic has learned to tell from the data's (its futures rest on other episodes' futures, which
    flattens its self-normalised weights towards the batch's mean reward) is valued down rather
    than up. Unlike the plain eq. 11 (``Q_sn e^{D}``) the density cannot raise Q without bound.

    Args:
        phi_t: (B, d) anchor features phi(s_i, a_i).
        phi_data: (B, d) features phi(s_i, a_data,i) of the data's action at the same states.
        psi_future: (M, d) features of future states drawn from the data.
        reward_future: (M,) their arrival rewards.
    Returns:
        (B,) Q estimates.
    """
    assert phi_t.shape == phi_data.shape and phi_t.ndim == 2, (phi_t.shape, phi_data.shape)
    assert psi_future.ndim == 2 and phi_t.shape[1] == psi_future.shape[1], psi_future.shape
    assert reward_future.shape == psi_future.shape[:1], (reward_future.shape, psi_future.shape)
    logits = kernel_logits(phi_t, psi_future, temperature, kernel)
    logits_data = kernel_logits(phi_data, psi_future, temperature, kernel)
    joint = torch.cat([logits, logits_data.to(logits.dtype)], dim=1)  # (B, 2M)
    weights = torch.softmax(joint, dim=1)[:, : psi_future.shape[0]]
    return einsum(weights, reward_future.to(logits.dtype), "b m, m -> b") / (1.0 - discount)


def log_density_ratio_from_latents(
    phi_t: Tensor, psi_future: Tensor, temperature: float | Tensor, kernel: str = "dot"
) -> Tensor:
    """``D_i = logsumexp_j f_ij - log M`` over M future states drawn from the data: the log of
    eq. 11's normaliser, ``log mean_j exp f(s_i, a_i, s+_j)``, (B,).

    Eq. 9 fixes ``f = log p(s+ | s, a) / p(s+) + c(s, a)``; the mean over futures drawn from
    ``p(s+)`` then estimates ``E_{p(s+)}[p(s+ | s, a) / p(s+)] e^c = e^c``, so D reads the
    per-anchor constant that the self-normalised Q cancels. Eq. 9 alone leaves c free; with the
    action-contrast term (`cvl_algos.cvl.losses.action_contrastive_loss`) the joint solution has
    ``c = log p(a | s) / p(a)``, so D is the critic's own estimate of how likely the data's
    behaviour is to take ``a`` at ``s`` (against the data's action marginal): a density of every
    behaviour at once, modes kept (not in the paper).

    Args:
        phi_t: (B, d) anchor features phi(s_t, a_t).
        psi_future: (M, d) features psi(s+_j) of future states drawn from the data.
    """
    assert phi_t.ndim == 2 and psi_future.ndim == 2, (phi_t.shape, psi_future.shape)
    assert phi_t.shape[1] == psi_future.shape[1], (phi_t.shape, psi_future.shape)
    logits = kernel_logits(phi_t, psi_future, temperature, kernel)
    return torch.logsumexp(logits, dim=1) - torch.log(
        torch.tensor(float(psi_future.shape[0]), dtype=logits.dtype, device=logits.device)
    )


def weighted_expectile(values: Tensor, weights: Tensor, expectile: float) -> Tensor:
    """The tau-expectile of each row's discrete distribution ``sum_j weights_ij delta(values_j)``.

    The tau-expectile q of a distribution minimises ``E |tau - 1(v < q)| (v - q)^2`` (Newey and
    Powell 1987; IQL's value loss, Kostrikov et al. 2022): the root of the decreasing
    ``g(q) = tau E(v - q)_+ - (1 - tau) E(q - v)_+``; tau = 0.5 gives the mean, tau -> 1 the
    maximum of the support. With the values sorted, g at each value comes from cumulative sums,
    the root lies after the last value where g > 0, and there q is the closed form
    ``(tau A_hi + (1 - tau) A_lo) / (tau W_hi + (1 - tau) W_lo)`` over the values above and
    below it (W the weights' sums, A the weighted values' sums): exact, with its exact gradient
    with respect to the weights, in one pass without iterations.

    Args:
        values: (M,) values shared by every row.
        weights: (B, M) non-negative weights, each row summing to 1.
        expectile: tau in (0, 1).
    Returns:
        (B,) expectiles.
    """
    assert values.ndim == 1 and weights.shape[1:] == values.shape, (values.shape, weights.shape)
    assert 0.0 < expectile < 1.0, expectile
    tau = expectile
    order = torch.argsort(values)
    sorted_values, sorted_weights = values[order], weights[:, order]
    weight_below = torch.cumsum(sorted_weights, dim=1)  # W_lo at split k: values 0..k
    mass_below = torch.cumsum(sorted_weights * sorted_values, dim=1)  # A_lo
    weight_above = weight_below[:, -1:] - weight_below
    mass_above = mass_below[:, -1:] - mass_below
    g_at_values = tau * (mass_above - sorted_values * weight_above) - (1.0 - tau) * (
        sorted_values * weight_below - mass_below
    )
    split = ((g_at_values > 0).sum(dim=1, keepdim=True) - 1).clamp(min=0)  # (B, 1)

    def at_split(x: Tensor) -> Tensor:
        return torch.gather(x, 1, split)[:, 0]

    numerator = tau * at_split(mass_above) + (1.0 - tau) * at_split(mass_below)
    denominator = tau * at_split(weight_above) + (1.0 - tau) * at_split(weight_below)
    return numerator / denominator


def q_direct(
    critic: nn.Module,
    psi_target: nn.Module,
    obs_t: Tensor,
    action_t: Tensor,
    obs_future: Tensor,
    reward_future: Tensor,
    discount: float,
) -> Tensor:
    """Direct Q_NCE (eq. 11): phi from ``critic``, the future states' features from ``psi_target``.

    ``psi_target`` is the learner's polyak EMA copy of ``critic.psi_net`` (or the online
    ``critic.psi_net`` itself); it applies the same normalisation as the critic. Gradients
    flow to whatever of phi's inputs require them (the policy's actions); the future features
    are computed without a graph.
    """
    assert obs_t.shape[0] == action_t.shape[0], (obs_t.shape, action_t.shape)
    assert obs_future.shape[0] == reward_future.shape[0], (
        obs_future.shape,
        reward_future.shape,
    )
    with torch.no_grad():
        psi_future = psi_target(obs_future)
    phi_t = critic.phi(obs_t, action_t)
    return q_direct_from_latents(
        phi_t, psi_future, reward_future, discount, critic.temperature, kernel=critic.kernel
    )


def xi_estimate(rff: nn.Module, psi_future: Tensor, reward_future: Tensor) -> Tensor:
    """One batch's estimate of xi (eq. 12): ``mean_j F(psi_target(s+_j)) r_j``, shape (D,)."""
    _check_futures(psi_future, reward_future)
    return _weighted_feature_mean(rff(psi_future), reward_future)


def xi_zeta_estimate(
    rff: nn.Module, psi_future: Tensor, reward_future: Tensor
) -> tuple[Tensor, Tensor]:
    """One batch's estimates of xi and of the self-normalised estimator's ``zeta`` (`q_rff`):
    ``(mean_j F(psi_j) r_j, mean_j F(psi_j))``, each (D,), from one evaluation of the features
    (equal, bit for bit, to `xi_estimate` with the rewards and with ones)."""
    _check_futures(psi_future, reward_future)
    features = rff(psi_future)
    return _weighted_feature_mean(features, reward_future), reduce(features, "m k -> k", "mean")


def _check_futures(psi_future: Tensor, reward_future: Tensor) -> None:
    assert psi_future.ndim == 2, psi_future.shape
    assert reward_future.shape == psi_future.shape[:1], (reward_future.shape, psi_future.shape)


def _weighted_feature_mean(features: Tensor, weight: Tensor) -> Tensor:
    """``mean_j features_j w_j``, (D,)."""
    weighted = features * weight.to(features.dtype)[:, None]
    return reduce(weighted, "m k -> k", "mean")


def xi_ema(xi: Tensor, estimate: Tensor, beta: float) -> Tensor:
    """EMA of eq. 12 / algorithm 1: ``xi <- beta * xi + (1 - beta) * estimate`` (new tensor)."""
    assert xi.shape == estimate.shape and xi.ndim == 1, (xi.shape, estimate.shape)
    return beta * xi + (1.0 - beta) * estimate


def q_rff(
    rff: nn.Module,
    phi_t: Tensor,
    xi: Tensor,
    discount: float,
    zeta: Tensor | None = None,
    eps: float = 1e-6,
) -> Tensor:
    """Random-Fourier-feature Q_NCE (lemma 1, eq. 12): ``Q = F(phi(s, a)) . xi / (1 - g)``.

    With unit latents, ``E_W,b[F(x) . F(y)] = exp(x . y / temperature)``, so for
    ``xi = mean_j F(psi_j) r_j`` this is an unbiased estimate of ``q_direct_from_latents``.
    Given ``zeta = mean_j F(psi_j)`` the estimate is self-normalised,
    ``Q = F(phi) . xi / max(F(phi) . zeta, eps) / (1 - g)`` (the RFF form of
    ``q_direct_from_latents(..., self_normalized=True)``).

    Args:
        rff: random features (``cvl_models.rff``: trigonometric or positive) mapping
            (..., d) -> (..., D).
        phi_t: (B, d) anchor features; xi: (D,); zeta: (D,) or None.
    Returns:
        (B,) Q estimates.
    """
    assert phi_t.ndim == 2 and xi.ndim == 1, (phi_t.shape, xi.shape)
    features = rff(phi_t)
    assert features.shape[1] == xi.shape[0], (features.shape, xi.shape)
    numerator = einsum(features, xi.to(features.dtype), "b k, k -> b")
    if zeta is None:
        return numerator / (1.0 - discount)
    assert zeta.shape == xi.shape, (zeta.shape, xi.shape)
    denominator = einsum(features, zeta.to(features.dtype), "b k, k -> b")
    return numerator / denominator.clamp_min(eps) / (1.0 - discount)


def detached_phi(critic: nn.Module) -> Callable[[Tensor, Tensor], Tensor]:
    """``phi(obs_t, actions)`` of N action samples per state, with the critic's parameters detached.

    ``obs_t`` is (B, *obs_shape), ``actions`` (N, B, A); returns (N, B, d). Gradients still flow
    to the actions (the policy's reparameterised samples) but never reach the critic's
    parameters, which the policy loss must leave untouched; the critic is not modified
    (``frozen_call``: no ``requires_grad`` toggling). When ``critic.phi_net`` is the
    ``cvl_models`` ``StateActionEmbedding``, its ``of_actions`` encodes each state once rather
    than N times (an IMPALA pass per image instead of N); otherwise ``phi_net`` runs on the
    states repeated N times. Both give ``critic.phi``.
    """
    net = critic.phi_net

    def phi(obs_t: Tensor, actions: Tensor) -> Tensor:
        assert actions.ndim == 3 and actions.shape[1] == obs_t.shape[0], (
            obs_t.shape,
            actions.shape,
        )
        n = actions.shape[0]
        if isinstance(net, StateActionEmbedding):
            return net.of_actions(obs_t, actions, call=frozen_call)
        obs_rep = repeat(obs_t, "b ... -> (n b) ...", n=n)
        out = frozen_call(net, obs_rep, rearrange(actions, "n b a -> (n b) a"))
        return rearrange(out, "(n b) d -> n b d", n=n)

    return phi


def rff_q_fn(
    critic: nn.Module,
    rff: nn.Module,
    xi: Tensor,
    discount: float,
    zeta: Tensor | None = None,
) -> Callable[[Tensor, Tensor], Tensor]:
    """``q_fn(obs_t (B, ...), actions (N, B, A)) -> (N, B)`` of eq. 12 for the policy loss
    (critic parameters detached; self-normalised when ``zeta`` is given, see `q_rff`)."""
    phi = detached_phi(critic)
    xi = xi.detach()
    zeta = None if zeta is None else zeta.detach()

    def q_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        latents = rearrange(phi(obs_t, actions), "n b d -> (n b) d")
        q = q_rff(rff, latents, xi, discount, zeta)
        return rearrange(q, "(n b) -> n b", n=actions.shape[0])

    return q_fn


def direct_q_fn(
    critic: nn.Module,
    psi_future: Tensor,
    reward_future: Tensor,
    discount: float,
    self_normalized: bool = False,
    expectile: float = 0.5,
    gate_actions: Tensor | None = None,
    temperature: float | None = None,
) -> Callable[[Tensor, Tensor], Tensor]:
    """``q_fn(obs_t (B, ...), actions (N, B, A)) -> (N, B)`` of eq. 11 against fixed future
    latents ``psi_future`` (M, d), e.g. ``psi_target(batch.obs_future)`` (critic detached);
    ``expectile`` as in `q_direct_from_latents`. Given the data's actions ``gate_actions``
    (B, A) at the states the q_fn is called with, Q is `gated_q_from_latents` (the data's
    latents without a graph; ``self_normalized`` and ``expectile`` 0.5 required). The kernel
    reads ``temperature`` (``CVLConfig.q_temperature``) when given, else the critic's."""
    phi = detached_phi(critic)
    psi_future = psi_future.detach()
    if temperature is None:  # the policy loss leaves a learned temperature alone
        temperature = critic.detached_temperature()
    assert gate_actions is None or (self_normalized and expectile == 0.5)

    def q_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        latents = rearrange(phi(obs_t, actions), "n b d -> (n b) d")
        if gate_actions is not None:
            assert gate_actions.shape == actions.shape[1:], (gate_actions.shape, actions.shape)
            with torch.no_grad():
                phi_data = phi(obs_t, rearrange(gate_actions, "b a -> 1 b a"))[0]
            phi_data = repeat(phi_data, "b d -> (n b) d", n=actions.shape[0])
            q = gated_q_from_latents(
                latents, phi_data, psi_future, reward_future, discount, temperature, critic.kernel
            )
            return rearrange(q, "(n b) -> n b", n=actions.shape[0])
        q = q_direct_from_latents(
            latents,
            psi_future,
            reward_future,
            discount,
            temperature,
            self_normalized,
            expectile,
            critic.kernel,
        )
        return rearrange(q, "(n b) -> n b", n=actions.shape[0])

    return q_fn


def gated_data_q_fn(q_fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor], Tensor]:
    """The gated Q (`gated_q_from_latents`) of the data's own pairs ``(s, a_data(s))``, from the
    ungated self-normalised ``q_fn`` (a `direct_q_fn` without ``gate_actions``, or an
    `ensemble_q_fn` of them): there the gate is ``sigmoid(0) = 1/2`` exactly, so it is half of
    ``q_fn`` at any states, e.g. the neighbours' of DDPG+BC's cap, whose own actions the gated
    q_fn of the anchors cannot take (``min`` and ``mean`` over critics commute with the half)."""

    def data_q_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        return 0.5 * q_fn(obs_t, actions)

    return data_q_fn


def ensemble_q_fn(
    q_fns: list[Callable[[Tensor, Tensor], Tensor]], reduction: str = "min"
) -> Callable[[Tensor, Tensor], Tensor]:
    """``q_fn(obs_t, actions) -> (N, B)``: the elementwise ``reduction`` ("min" or "mean") of
    the critics' ``q_fns`` (each as `direct_q_fn`). "min": a policy that maximises it cannot
    climb an error of one critic that another does not share (clipped double Q, Fujimoto et al.
    2018; OGBench's contrastive RL agent takes the minimum of its two critics in DDPG+BC).
    "mean": the critics' average, whose action gradient averages out what is particular to each
    critic (not in the paper). One function is returned as is."""
    if reduction not in ("min", "mean"):
        raise ValueError(f"reduction must be 'min' or 'mean', got {reduction!r}")
    if len(q_fns) == 1:
        return q_fns[0]

    def q_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        return reduce_critics([fn(obs_t, actions) for fn in q_fns], reduction)

    return q_fn


def reduce_critics(values: list[Tensor], reduction: str) -> Tensor:
    """The elementwise "min" or "mean" over the critics' equally shaped Q tensors: how
    `ensemble_q_fn` and the learner's Q read-outs combine several critics."""
    return reduce(torch.stack(values), "k ... -> ...", reduction)


def direct_log_density_fn(
    critic: nn.Module, psi_future: Tensor
) -> Callable[[Tensor, Tensor], Tensor]:
    """``d_fn(obs_t (B, ...), actions (N, B, A)) -> (N, B)`` of `log_density_ratio_from_latents`
    against fixed future latents ``psi_future`` (M, d), critic detached (gradients reach the
    actions only), as `direct_q_fn`."""
    phi = detached_phi(critic)
    psi_future = psi_future.detach()
    temperature = critic.detached_temperature()

    def d_fn(obs_t: Tensor, actions: Tensor) -> Tensor:
        latents = rearrange(phi(obs_t, actions), "n b d -> (n b) d")
        d = log_density_ratio_from_latents(latents, psi_future, temperature, critic.kernel)
        return rearrange(d, "(n b) -> n b", n=actions.shape[0])

    return d_fn


class XiState(nn.Module):
    """Buffers of the RFF estimator: ``xi`` (D,), how many labelled batches it has seen and,
    for the self-normalised estimator, ``zeta`` (D,).

    The first labelled batch sets ``xi`` to its own estimate (an EMA started from zeros would
    scale Q by ``1 - beta^n`` during its first ~1/(1-beta) updates); later batches average in
    with weight ``1 - beta_xi``.
    """

    xi: Tensor
    count: Tensor
    zeta: Tensor | None

    def __init__(self, num_features: int, self_normalized: bool = False) -> None:
        super().__init__()
        self.register_buffer("xi", torch.zeros(num_features))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        # zeta = EMA of mean_j F(psi_target(s+_j)), the denominator of the self-normalised Q
        self.register_buffer("zeta", torch.zeros(num_features) if self_normalized else None)
