"""Pure losses of Contrastive Value Learning (paper eq. 9-10 and 13-15).

Each loss returns ``(loss, metrics)`` where metrics are detached scalar tensors; none takes an
optimiser step, logs, or mutates its arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange, reduce
from torch import Tensor, nn

from cvl_models.critic import kernel_logits, paired_kernel_logits
from cvl_models.policy import action_log_prob, sample_tanh_gaussian

QFn = Callable[[Tensor, Tensor], Tensor]
"""(obs_t (B, *obs_shape), actions (N, B, A)) -> Q (N, B): Q of N action samples per state."""


@torch.no_grad()
def contrastive_metrics(
    logits: Tensor, loss: Tensor, nce: Tensor, partition: Tensor
) -> dict[str, Tensor]:
    """The critic losses' metrics over a (B, B) logit matrix whose diagonal holds the positives:
    the loss and its parts, top-1 accuracy, and the logits' mean, std, positives and negatives."""
    batch = logits.shape[0]
    eye = torch.eye(batch, dtype=torch.bool, device=logits.device)
    accuracy = (logits.argmax(dim=1) == torch.arange(batch, device=logits.device)).float()
    return {
        "critic_loss": loss.detach(),
        "critic_nce": nce.detach(),
        "critic_partition": partition.detach(),
        "critic_accuracy": accuracy.mean(),
        "logits_mean": logits.mean(),
        "logits_std": logits.std(correction=0),
        "logits_pos": torch.diagonal(logits).mean(),
        "logits_neg": logits[~eye].mean(),
    }


def infonce_partition_loss(logits: Tensor, lambda_partition: float) -> tuple[Tensor, dict]:
    """InfoNCE with the partition regulariser over a (B, B) logit matrix (eq. 9-10).

    ``logits[i, j] = f(s_i, a_i, s+_j)``; the diagonal holds the positives and every other
    column of a row is a negative. The loss is
    ``mean_i [-f_ii + lse_j f_ij] + lambda_partition * mean_i (lse_j f_ij)^2``.
    """
    assert logits.ndim == 2 and logits.shape[0] == logits.shape[1], logits.shape
    lse = torch.logsumexp(logits, dim=1)
    nce = reduce(lse - torch.diagonal(logits), "b -> ", "mean")
    partition = reduce(lse**2, "b -> ", "mean")
    loss = nce + lambda_partition * partition
    return loss, contrastive_metrics(logits, loss, nce, partition)


def binary_nce_partition_loss(logits: Tensor, lambda_partition: float) -> tuple[Tensor, dict]:
    """Binary NCE over a (B, B) logit matrix, with the partition regulariser of eq. 10.

    Each pair is classified as positive (the diagonal) or negative (every other entry):
    ``mean_ij BCE(sigmoid(f_ij), 1[i = j]) + lambda_partition * mean_i (lse_j f_ij)^2``, the
    contrastive RL loss of Eysenbach et al. 2022 (the default of the paper authors' code). Its
    optimum ``f = log p(s+ | s, a) / p(s+) - log(B - 1)`` is fixed, where InfoNCE's leaves a
    constant per anchor free (not in the paper's eq. 9-10; ``CVLConfig.critic_objective``).
    """
    assert logits.ndim == 2 and logits.shape[0] == logits.shape[1], logits.shape
    batch = logits.shape[0]
    eye = torch.eye(batch, dtype=logits.dtype, device=logits.device)
    bce = F.binary_cross_entropy_with_logits(logits, eye)
    lse = torch.logsumexp(logits, dim=1)
    partition = reduce(lse**2, "b -> ", "mean")
    loss = bce + lambda_partition * partition
    return loss, contrastive_metrics(logits, loss, bce, partition)


CRITIC_OBJECTIVES = {"infonce": infonce_partition_loss, "binary": binary_nce_partition_loss}
"""The Monte-Carlo contrastive objectives of `CVLConfig.critic_objective` ("td_infonce" is
`td_infonce_partition_loss`, which also takes the target's logits)."""


def td_infonce_partition_loss(
    logits: Tensor,
    target_logits: Tensor,
    done: Tensor,
    discount: float,
    lambda_partition: float,
) -> tuple[Tensor, dict]:
    """TD InfoNCE (Zheng, Salakhutdinov, Eysenbach 2024, "Contrastive Difference Predictive
    Coding"; public code chongyi-zheng/td_infonce) over a (B, B) logit matrix, with the
    partition regulariser of eq. 10.

    ``logits[i, j] = f(s_i, a_i, s'_j)`` over the batch's next states ``s'_j``;
    ``target_logits[i, j] = f_target(s'_i, pi(s'_i), s'_j)`` (no gradient flows into it). The
    discounted occupancy of the policy pi obeys ``p(g | s, a) = (1 - g) p(s' = g | s, a) + g
    E_{s'} p(g | s', pi(s'))``; over the batch's candidates this is the label distribution
    ``y_i = (1 - g) e_i + g softmax_j(target_logits[i])`` and the loss is the cross-entropy
    ``mean_i [-sum_j y_ij log softmax_j f_ij] + lambda_partition * mean_i (lse_j f_ij)^2``
    (the paper's two terms, (1 - g) CE(I) + g CE(w), are this one cross-entropy). A terminated
    step (``done``) has no continuation: its bootstrap mass stays on its own next state, as the
    Monte-Carlo critic's truncated geometric keeps the episode's last state. Unlike eq. 9, the
    critic learns the occupancy of pi, not of the data's behaviour policy (not in the paper).
    """
    assert logits.ndim == 2 and logits.shape[0] == logits.shape[1], logits.shape
    assert target_logits.shape == logits.shape, (target_logits.shape, logits.shape)
    assert done.shape == logits.shape[:1], (done.shape, logits.shape)
    batch = logits.shape[0]
    eye = torch.eye(batch, dtype=logits.dtype, device=logits.device)
    absorbing = done.to(logits.dtype)[:, None]
    bootstrap = torch.softmax(target_logits.detach().to(logits.dtype), dim=1)
    bootstrap = absorbing * eye + (1.0 - absorbing) * bootstrap
    labels = (1.0 - discount) * eye + discount * bootstrap
    cross_entropy = -reduce(labels * torch.log_softmax(logits, dim=1), "b m -> b", "sum")
    nce = reduce(cross_entropy, "b -> ", "mean")
    lse = torch.logsumexp(logits, dim=1)
    partition = reduce(lse**2, "b -> ", "mean")
    loss = nce + lambda_partition * partition
    metrics = contrastive_metrics(logits, loss, nce, partition)
    metrics["td_label_next"] = torch.diagonal(labels).detach().mean()
    return loss, metrics


def contrastive_critic_loss(
    critic: nn.Module,
    batch: Any,
    lambda_partition: float,
    objective: str = "infonce",
    action_contrast_weight: float = 0.0,
    action_negatives: int = 8,
    negative_actions: Tensor | None = None,
) -> tuple[Tensor, dict]:
    """Critic loss of eq. 10 on a ``ContrastiveBatch`` (``objective="binary"``: binary NCE),
    plus ``action_contrast_weight`` times `action_contrastive_loss` when that is positive (its
    negatives the other anchors' actions, or ``negative_actions`` (K, B, A) when given).

    Anchors are ``(batch.obs_t, batch.action_t)``, positives ``batch.obs_future`` (offsets drawn
    from the truncated geometric, eq. 9); the other anchors' positives are the negatives.
    Rewards are not used, so reward-free batches (pretraining) work unchanged.
    """
    obs_t, action_t, obs_future = batch.obs_t, batch.action_t, batch.obs_future
    assert obs_t.shape[0] == action_t.shape[0] == obs_future.shape[0], (
        obs_t.shape,
        action_t.shape,
        obs_future.shape,
    )
    assert obs_t.shape[1:] == obs_future.shape[1:], (obs_t.shape, obs_future.shape)
    logits, psi_future = critic.logits_and_psi(obs_t, action_t, obs_future)
    loss, metrics = CRITIC_OBJECTIVES[objective](logits, lambda_partition)
    if action_contrast_weight > 0.0:
        positive = torch.diagonal(logits)
        loss_a, metrics_a = action_contrastive_loss(
            critic,
            positive,
            obs_t,
            action_t,
            psi_future,
            action_negatives,
            lambda_partition,
            negative_actions,
        )
        loss, metrics = loss + action_contrast_weight * loss_a, {**metrics, **metrics_a}
    return loss, metrics


def other_anchors_actions(action_t: Tensor, num: int) -> Tensor:
    """(K, B, A) with ``[k - 1, i] = action_t[(i + k) mod B]``, k = 1..K: each anchor's K
    following anchors' actions, the default negatives of `action_contrastive_loss` (the batch's
    anchors are drawn at random, so these are draws of the data's action marginal)."""
    batch = action_t.shape[0]
    if not 1 <= num < batch:
        raise ValueError(f"action_negatives must be in [1, {batch - 1}], got {num}")
    shifts = torch.arange(1, num + 1, device=action_t.device)
    index = torch.arange(batch, device=action_t.device) + rearrange(shifts, "k -> k 1")
    return action_t[index % batch]


def action_contrastive_loss(
    critic: nn.Module,
    positive: Tensor,
    obs_t: Tensor,
    action_t: Tensor,
    psi_future: Tensor,
    num_negatives: int,
    lambda_bias: float = 1e-3,
    negative_actions: Tensor | None = None,
) -> tuple[Tensor, dict]:
    """Which action led from ``s_i`` to ``s+_i``: InfoNCE over actions instead of futures.

    ``-mean_i log softmax_k f(s_i, a_k, s+_i)`` at ``k = i``, over the anchor's own action and
    ``num_negatives`` other anchors' actions ``a_{(i+k) mod B}``, k = 1..K (the batch's anchors
    are drawn at random, so these are draws of the data's action marginal; no random numbers
    are used). ``positive`` (B,) is ``f(s_i, a_i, s+_i)``, the diagonal of eq. 9's logits, and
    ``psi_future`` (B, d) is ``psi(s+_i)``, the embedding those logits were made from.

    Why: eq. 9's negatives are other anchors' futures, and on Meta-World each episode's object
    and goal placement is in the observation, so the critic can tell futures apart by the state
    alone and learn little about the action (docs/results.md, "What the critic knows").
    Here the state and the future are shared by every candidate and only the action differs,
    so ``f`` must tell actions apart by their futures. Eq. 9 fixes ``f = log p(s+ | s, a) /
    p(s+) + c(s, a)``; this term ``f = log p(a | s, s+) / p(a) + c'(s, s+)``. Both hold at once
    with ``f = log p(s+ | s, a) + log p(a | s) - log p(s+) - log p(a)``, which differs from eq. 9's
    solution only by a function of ``(s, a)``, the constant the self-normalised Q cancels
    (``self_normalized``). Not in the paper.

    A critic with a bias head (``critic.bias_net``, ``action_contrast_bias``) scores candidate k
    by ``f(s_i, a_k, s+_i) + b(s_i, a_k)``: the head can hold ``log p(a | s) / p(a)``, so
    ``phi . psi`` is left eq. 9's solution instead of carrying that term through unit-norm
    latents, and the two losses no longer compete for the latents (not in the paper). The
    softmax over actions leaves the head free up to a function of ``s``, as eq. 9 leaves ``f``
    free up to ``c(s, a)``; as eq. 10 pins that with its partition penalty, ``lambda_bias
    mean_i (mean_k b_ik)^2`` pins this (without it those directions of the head get rounding
    noise for gradients, which Adam scales up to full steps).

    ``negative_actions`` (K, B, A), when given, replaces the other anchors' actions: draws of a
    behaviour model at each anchor's own state (``action_contrast_source="behaviour"``), for
    which the optimum is ``log p(a | s, s+) / pi_b(a | s) + c'(s, s+) = log p(s+ | s, a) /
    p(s+ | s) + c'(s, s+)``, eq. 9's solution with ``c'(s, s+) = log p(s+ | s) / p(s+)``, so
    the two losses share one optimum; ``num_negatives`` is then unused.
    """
    if negative_actions is None:
        negative_actions = other_anchors_actions(action_t, num_negatives)
    assert negative_actions.shape[1:] == action_t.shape, (negative_actions.shape, action_t.shape)
    phi_neg = critic.phi_of_actions(obs_t, negative_actions)  # (K, B, d), one encoder pass
    pairs = paired_kernel_logits(phi_neg, psi_future, critic.temperature, critic.kernel)
    negative = rearrange(pairs, "k b -> b k")
    logits = torch.cat([rearrange(positive, "b -> b 1"), negative], dim=1)  # (B, 1 + K)
    metrics, pin = {}, None
    if getattr(critic, "bias_net", None) is not None:
        candidates = torch.cat([rearrange(action_t, "b a -> 1 b a"), negative_actions], dim=0)
        bias = rearrange(critic.action_bias(obs_t, candidates), "k b -> b k")  # (B, 1 + K)
        logits = logits + bias
        metrics["action_bias_spread"] = bias.detach().std(dim=1).mean()
        pin = lambda_bias * reduce(reduce(bias, "b k -> b", "mean") ** 2, "b -> ", "mean")
    loss = -F.log_softmax(logits, dim=1)[:, 0].mean()
    with torch.no_grad():
        accuracy = (logits.argmax(dim=1) == 0).float().mean()
    metrics.update(action_contrast_loss=loss.detach(), action_contrast_accuracy=accuracy)
    return (loss if pin is None else loss + pin), metrics


def td_contrastive_critic_loss(
    critic: nn.Module,
    phi_target: nn.Module,
    psi_target: nn.Module,
    policy: nn.Module,
    batch: Any,
    discount: float,
    lambda_partition: float,
) -> tuple[Tensor, dict]:
    """TD InfoNCE critic loss (`td_infonce_partition_loss`) on a ``ContrastiveBatch``.

    Anchors ``(batch.obs_t, batch.action_t)``, candidates the batch's next states
    ``batch.obs_next``; the bootstrap target scores the same candidates from each next state
    and the policy's mode action there, ``phi_target(s'_i, pi(s'_i)) . psi_target(s'_j) /
    temperature``, computed without a graph (``phi_target`` and ``psi_target`` are the
    learner's polyak copies of the critic's encoders, ``policy.deterministic`` its mode).
    """
    obs_t, action_t, obs_next = batch.obs_t, batch.action_t, batch.obs_next
    assert obs_t.shape == obs_next.shape, (obs_t.shape, obs_next.shape)
    assert action_t.shape[0] == obs_t.shape[0], (action_t.shape, obs_t.shape)
    logits = critic.logits(obs_t, action_t, obs_next)
    with torch.no_grad():
        action_next = policy.deterministic(obs_next)
        phi_next = phi_target(obs_next, action_next)
        target_logits = kernel_logits(
            phi_next, psi_target(obs_next), critic.temperature, critic.kernel
        )
    return td_infonce_partition_loss(logits, target_logits, batch.done, discount, lambda_partition)


def normalize_q_per_batch(q: Tensor, eps: float = 1e-6) -> Tensor:
    """Divide Q by its detached mean absolute value over the batch (as TD3+BC does).

    Q_NCE is Q only up to a positive scale (lemma 2's alpha), so this changes nothing about the
    ordering of actions; it fixes the scale of the Q term against the entropy and BC terms.
    """
    scale = q.detach().abs().mean().clamp_min(eps)
    return q / scale


def policy_loss(
    policy: nn.Module,
    q_fn: QFn,
    batch: Any,
    *,
    num_action_samples: int = 10,
    alpha: float = 0.1,
    lambda_bc: float = 0.1,
    tau_bc: float = 0.1,
    normalize_q: bool = False,
) -> tuple[Tensor, dict]:
    """Policy loss of eq. 13-15 with the BC sign fixed (DESIGN.md sec. 2).

    ``L = E_s E_{a~pi}[alpha log pi(a|s) - Q(s, a)] + lambda_bc * L_BC`` with ``N_a``
    reparameterised samples per state (the Monte-Carlo form of KL(pi || exp(Q/alpha)/Z),
    eq. 13), and ``L_BC = -E_{(s,a)~D} log pi(a|s) - tau_bc * H(pi(.|s))`` (eq. 14, which
    *maximises* the likelihood of dataset actions). ``q_fn(obs_t, actions (N, B, A)) -> (N, B)``
    must not let gradients reach the critic's parameters (see ``rff_q_fn``/``direct_q_fn``);
    only the policy's parameters receive gradients from this loss.
    """
    obs_t, action_t = batch.obs_t, batch.action_t
    assert obs_t.shape[0] == action_t.shape[0] and action_t.ndim == 2, (
        obs_t.shape,
        action_t.shape,
    )
    n = num_action_samples
    actions, log_prob = policy.sample(obs_t, num_samples=n)
    assert actions.shape == (n, *action_t.shape), (actions.shape, action_t.shape)
    assert log_prob.shape == (n, obs_t.shape[0]), log_prob.shape
    q = q_fn(obs_t, actions)
    assert q.shape == log_prob.shape, (q.shape, log_prob.shape)
    q_used = normalize_q_per_batch(q) if normalize_q else q
    kl_term = reduce(alpha * log_prob - q_used, "n b -> ", "mean")

    log_prob_data = policy.log_prob(obs_t, action_t)
    entropy = policy.entropy(obs_t)
    assert log_prob_data.shape == entropy.shape == obs_t.shape[:1], (
        log_prob_data.shape,
        entropy.shape,
    )
    bc = -log_prob_data.mean() - tau_bc * entropy.mean()
    loss = kl_term + lambda_bc * bc
    metrics = {
        "policy_loss": loss.detach(),
        "policy_kl_term": kl_term.detach(),
        "policy_bc": bc.detach(),
        "policy_log_prob_data": log_prob_data.detach().mean(),
        "policy_entropy": entropy.detach().mean(),
        "policy_log_prob": log_prob.detach().mean(),
        "q_mean": q.detach().mean(),
        "q_std": q.detach().std(),
        "q_abs_mean": q.detach().abs().mean(),
    }
    return loss, metrics


def batch_zscore(x: Tensor, eps: float = 1e-6) -> Tensor:
    """``(x - mean x) / max(std x, eps)`` over the batch (population std)."""
    centred = x - x.mean()
    return centred / centred.std(correction=0).clamp_min(eps)


def standardized_advantage(q_data: Tensor, q_pi: Tensor, eps: float = 1e-6) -> Tensor:
    """Relative advantage ``(Q(s, a) - V(s)) / |V(s)|``, ``V(s) = mean_n Q(s, a_n)``
    (``a_n ~ pi``), z-scored over the batch: (B,) from ``q_data`` (B,) and ``q_pi`` (N, B).

    Q_NCE is Q only up to a positive scale (lemma 2), and with a sharp critic (low temperature)
    its magnitude varies by orders of magnitude between states; dividing by ``|V(s)|`` makes
    advantages comparable across states and z-scoring makes ``beta`` mean the same on every
    task and critic.
    """
    assert q_pi.ndim == 2 and q_pi.shape[1:] == q_data.shape, (q_pi.shape, q_data.shape)
    value = reduce(q_pi, "n b -> b", "mean")
    scale = value.abs().clamp_min(eps * value.abs().mean().clamp_min(eps))
    return batch_zscore((q_data - value) / scale, eps)


def _data_and_policy_q(
    policy: nn.Module, q_fn: QFn, batch: Any, num_action_samples: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Detached Q of the dataset's actions (B,) and of ``N_a`` current-policy samples (N, B),
    and ``log pi(a|s)`` of the dataset's actions (B, with gradients), from one policy pass."""
    obs_t, action_t = batch.obs_t, batch.action_t
    assert obs_t.shape[0] == action_t.shape[0] and action_t.ndim == 2, (
        obs_t.shape,
        action_t.shape,
    )
    mean, log_std = policy(obs_t)
    with torch.no_grad():
        actions_pi, _ = sample_tanh_gaussian(mean, log_std, num_action_samples)
        q_pi = q_fn(obs_t, actions_pi)
        q_data = q_fn(obs_t, action_t.unsqueeze(0))[0]
    return q_data, q_pi, action_log_prob(mean, log_std, action_t)


def weighted_log_likelihood(log_prob_data: Tensor, weight: Tensor) -> Tensor:
    """``-sum_i w_i log pi(a_i|s_i) / max(sum_i w_i, 1e-6)``."""
    assert log_prob_data.shape == weight.shape, (log_prob_data.shape, weight.shape)
    return -(weight * log_prob_data).sum() / weight.sum().clamp_min(1e-6)


def awr_policy_loss(
    policy: nn.Module,
    q_fn: QFn,
    batch: Any,
    *,
    num_action_samples: int = 10,
    beta: float = 1.0,
    max_weight: float = 100.0,
) -> tuple[Tensor, dict]:
    """Advantage-weighted regression on the dataset's actions, with Q from the CVL critic.

    ``L = -sum_i w_i log pi(a_i|s_i) / sum_i w_i``, ``w_i = min(exp(beta z_i), max_weight)``
    with ``z`` the `standardized_advantage` of the data action against ``N_a`` samples of the
    current policy (detached: only the policy's likelihood gets gradients). Not in the paper:
    its extraction is the KL form of eq. 13-15 (`policy_loss`); this is the standard one-step
    extraction (AWR, Peng et al. 2019; IQL eq. 7), offered as ``policy_extraction="awr"``.
    """
    q_data, q_pi, log_prob_data = _data_and_policy_q(policy, q_fn, batch, num_action_samples)
    with torch.no_grad():
        z = standardized_advantage(q_data, q_pi)
        weight = torch.exp(beta * z).clamp(max=max_weight)
    loss = weighted_log_likelihood(log_prob_data, weight)
    metrics = {
        "policy_loss": loss.detach(),
        "policy_log_prob_data": log_prob_data.detach().mean(),
        "awr_weight_max_share": (weight.max() / weight.sum()),
        "awr_weight_clipped": (weight >= max_weight).float().mean(),
        "q_mean": q_data.mean(),
        "q_std": q_data.std(),
        "q_abs_mean": q_data.abs().mean(),
        "advantage_raw_std": (q_data - q_pi.mean(dim=0)).std(),
    }
    return loss, metrics


def crr_binary_policy_loss(
    policy: nn.Module,
    q_fn: QFn,
    batch: Any,
    *,
    num_action_samples: int = 10,
) -> tuple[Tensor, dict]:
    """Advantage-filtered behaviour cloning: CRR's binary weights (Wang et al. 2020, eq. 3).

    ``L = -sum_i w_i log pi(a_i|s_i) / sum_i w_i`` with ``w_i = 1[Q(s_i, a_i) > V(s_i)]``,
    ``V(s) = mean_n Q(s, a_n)`` over ``N_a`` samples of the current policy (detached). The
    indicator compares actions *at the same state*, so it is invariant to any positive scale
    of Q per state (which InfoNCE leaves free, lemma 2) and needs no temperature: the data
    action is cloned where the critic prefers it to what the policy does now. Not in the paper
    (its extraction is eq. 13-15, `policy_loss`); offered as ``policy_extraction="crr"``.
    """
    q_data, q_pi, log_prob_data = _data_and_policy_q(policy, q_fn, batch, num_action_samples)
    with torch.no_grad():
        advantage = q_data - reduce(q_pi, "n b -> b", "mean")
        weight = (advantage > 0).to(q_data.dtype)
    loss = weighted_log_likelihood(log_prob_data, weight)
    metrics = {
        "policy_loss": loss.detach(),
        "policy_log_prob_data": log_prob_data.detach().mean(),
        "crr_kept_fraction": weight.mean(),
        "q_mean": q_data.mean(),
        "q_std": q_data.std(),
        "q_abs_mean": q_data.abs().mean(),
        "advantage_raw_std": advantage.std(),
    }
    return loss, metrics
