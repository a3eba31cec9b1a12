"""Behaviour cloning: tanh-Gaussian maximum likelihood with an entropy bonus.

Loss (DESIGN.md sec. 2; paper table 2, "Entropy regularization coefficient 0.1")::

    L_BC = -E_{(s,a)~D} log pi(a|s) - tau_BC * E_s H(pi(.|s)),   tau_BC = 0.1

The paper's eq. 14 prints the likelihood with a ``+`` sign; BC *maximises* likelihood, so the
minimised loss carries ``-log pi`` (DESIGN.md calls the paper's sign a slip). ``H`` is the
policy's differentiable Monte-Carlo entropy estimate (the tanh-Gaussian has no closed form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from cvl_algos.base import LearnerBase
from cvl_algos.common import (
    check_policy_ema_tau,
    make_adam,
    policy_from_config,
    return_weight_options,
)
from cvl_algos.stages import GradientStage
from cvl_data.weighting import check_return_weight_baseline, check_return_weight_temperature
from cvl_models import Torso
from cvl_models.policy import action_log_prob, sample_tanh_gaussian

__all__ = [
    "BCConfig",
    "BCLearner",
    "FilteredBCConfig",
    "FilteredBCLearner",
    "WeightedBCConfig",
    "WeightedBCLearner",
    "bc_loss",
]


@dataclass(frozen=True)
class BCConfig:
    """Hyperparameters of BC (paper appendix tables 1-2)."""

    lr: float = 3e-4
    """Adam learning rate (table 1)."""
    batch_size: int = 512
    """Transitions per update (table 1); read by whoever builds the sampler."""
    max_grad_norm: float = 100.0
    """Global gradient-norm clip (table 1)."""
    hidden: tuple[int, ...] = (256, 256)
    """DenseNet widths of the policy (table 1)."""
    torso: Torso = "densenet"
    """MLP torso of the policy: ``"densenet"``, the paper's DenseNet with LayerNorm (table 1), or
    ``"mlp"``, plain Linear+ReLU layers of the same widths (SB3's and d3rlpy's architecture, for
    comparisons at equal architecture; `cvl_models.mlp.make_mlp`)."""
    entropy_coef: float = 0.1
    """tau_BC, weight of the entropy bonus (table 2: 0.1)."""
    entropy_samples: int = 10
    """Samples of the Monte-Carlo entropy estimate per state (not in the paper)."""
    log_std_min: float = -5.0
    """Lower clamp of the policy's log standard deviation."""
    log_std_max: float = 2.0
    """Upper clamp of the policy's log standard deviation."""
    policy_ema_tau: float = 0.0
    """Evaluation acting: 0 acts with the trained policy. tau in (0, 1] acts (deterministically)
    with a polyak average of its parameters, ``policy_ema <- (1 - tau) policy_ema + tau policy``
    after each update (`LearnerBase.acting_policy`; not in the paper). Training, and actions
    sampled with ``deterministic=False``, use the trained policy."""
    return_weight_temperature: float | None = None
    """None: transitions uniform over the data (plain BC, the paper). T > 0: each drawn in
    proportion to ``exp(G~ / T)``, G~ its episode's min-max normalised return (return-weighted
    sampling, "RW" of Hong et al. 2023; `cvl_data.weighting`): the soft form of filtered BC's
    top-episode selection, which it tends to as T shrinks (not in the paper). Needs rewards."""
    return_weight_baseline: str = "none"
    """With ``return_weight_temperature``: "none" weighs each episode by its return; "start_state"
    by its advantage over the start, ``G - V(s_0)``, V the least-squares linear fit of the returns
    on the episodes' first observations ("AW" of Hong et al. 2023; state observations only)."""
    compile: bool = False
    """Wrap the loss computation in ``torch.compile``. Measured on one CPU thread at the paper's
    sizes: 0.8x the eager rate (docs/performance.md, "Design choices and their measured
    effect"), so leave it off on CPU."""

    def __post_init__(self) -> None:
        check_policy_ema_tau(self.policy_ema_tau)
        check_return_weight_temperature(self.return_weight_temperature)
        check_return_weight_baseline(self.return_weight_baseline, self.return_weight_temperature)


def bc_loss(
    obs: torch.Tensor,
    action: torch.Tensor,
    policy: nn.Module,
    entropy_coef: float = 0.1,
    entropy_samples: int = 10,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``L_BC = -mean log pi(a|s) - entropy_coef * mean H(pi(.|s))`` (DESIGN.md sec. 2, eq. 14).

    Args:
        obs: ``(B, *obs_shape)`` dataset states (float states or uint8 pixels).
        action: ``(B, A)`` dataset actions in ``[-1, 1]``.
        policy: a ``TanhGaussianPolicy`` (one forward pass serves both terms).
        entropy_coef: tau_BC.
        entropy_samples: samples of the entropy estimate.
    """
    batch_size = obs.shape[0]
    assert action.ndim == 2 and action.shape[0] == batch_size, (obs.shape, action.shape)
    mean, log_std = policy(obs)  # one network pass for the likelihood and the entropy
    log_prob = action_log_prob(mean, log_std, action)
    assert log_prob.shape == (batch_size,), log_prob.shape
    nll = -log_prob.mean()
    if entropy_coef != 0.0:
        # = policy.entropy(obs, entropy_samples), from the same pass
        _, log_prob_samples = sample_tanh_gaussian(mean, log_std, entropy_samples)
        entropy = -log_prob_samples.mean()
    else:
        entropy = torch.zeros((), device=nll.device)
    loss = nll - entropy_coef * entropy
    metrics = {"bc_loss": loss.detach(), "nll": nll.detach(), "entropy": entropy.detach()}
    return loss, metrics


class BCLearner(LearnerBase):
    """BC learner: ``update(TransitionBatch)`` uses ``obs`` and ``action`` only. With
    ``return_weight_temperature`` its sampler draws the transitions by their episodes' return
    weights, which needs rewards (`cvl_eval.training.checks.check_weighted_data` refuses
    reward-free data then); the loss is :func:`bc_loss` unchanged."""

    name = "bc"
    config_cls = BCConfig
    needs_rewards = False
    progress_metrics = ("bc_loss",)

    @property
    def sampler_options(self) -> dict[str, Any]:
        """``return_weight_temperature`` and ``return_weight_baseline`` for return-weighted
        transitions (default: none)."""
        return return_weight_options(self.config)

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        cfg = self.config
        with self.rng_scope():
            self.policy = policy_from_config(self.obs_shape, self.action_dim, cfg)
            self.policy = self.policy.to(self.device)
        self.init_policy_ema()
        self.optimizer = make_adam(self.policy.parameters(), cfg.lr)
        self._loss_fn = self.maybe_compile(self.compute_loss)

    def state_modules(self) -> dict[str, nn.Module]:
        return {"policy": self.policy, **self.policy_ema_modules()}

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"policy": self.optimizer}

    def compute_loss(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg = self.config
        return bc_loss(batch.obs, batch.action, self.policy, cfg.entropy_coef, cfg.entropy_samples)

    def gradient_stages(self) -> tuple[GradientStage, ...]:
        """One clipped Adam step of the policy on :func:`bc_loss` (metric ``grad_norm``)."""
        loss_fn = self._loss_fn
        return (GradientStage("policy", "policy", lambda b, _: loss_fn(b), "grad_norm", key="bc"),)


@dataclass(frozen=True)
class FilteredBCConfig(BCConfig):
    """BC on the top episodes by return ("filtered BC" / "%BC", e.g. Chen et al. 2021)."""

    top_fraction: float = 0.1
    """Fraction of episodes kept, those of highest undiscounted return (10%: the usual "10% BC")."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.top_fraction <= 1.0:
            raise ValueError(f"top_fraction must lie in (0, 1], got {self.top_fraction}")
        if self.return_weight_temperature is not None:
            raise ValueError(
                "filtered_bc selects its episodes by return already; return_weight_temperature "
                "must be None (for return-weighted BC use algorithm bc with it)"
            )


class FilteredBCLearner(BCLearner):
    """BC trained only on ``cvl_data.top_episodes(source, top_fraction)``: needs rewards to rank
    episodes, never reads them otherwise. The loss is :func:`bc_loss` unchanged."""

    name = "filtered_bc"
    config_cls = FilteredBCConfig
    needs_rewards = True  # to rank episodes by return

    def training_source(self, source):
        from cvl_data import top_episodes

        return top_episodes(source, self.config.top_fraction)


@dataclass(frozen=True)
class WeightedBCConfig(BCConfig):
    """BC on transitions drawn by their episode's return advantage over its start ("AW" of Hong
    et al. 2023, "Beyond uniform sampling: offline RL with imbalanced datasets"): the soft form of
    filtered BC, as a baseline of its own. The defaults are its tuning screen's choice: T = 0.1
    against 0.3, with the start-state baseline, on the four held-out mixtures x 3 seeds at 10k
    steps (IQM 0.77 against 0.67; docs/results.md, "The same weights given to BC")."""

    return_weight_temperature: float | None = 0.1
    """T of the weights ``exp(A~ / T)`` (`BCConfig.return_weight_temperature`); must be set."""
    return_weight_baseline: str = "start_state"
    """`BCConfig.return_weight_baseline`; "none" weighs by the return alone ("RW")."""

    def __post_init__(self) -> None:
        if self.return_weight_temperature is None:
            raise ValueError(
                "weighted_bc draws its transitions by return weights; return_weight_temperature "
                "must be a finite number > 0 (for plain BC use algorithm bc)"
            )
        super().__post_init__()


class WeightedBCLearner(BCLearner):
    """`BCLearner` with `WeightedBCConfig`'s weights on by default: its sampler draws each
    transition in proportion to its episode's weight (`cvl_data.weighting`); the loss is
    :func:`bc_loss` unchanged. Needs rewards to weigh the episodes."""

    name = "weighted_bc"
    config_cls = WeightedBCConfig
    needs_rewards = True  # to weigh episodes by return
