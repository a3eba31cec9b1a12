"""Contrastive Value Learning (Mazoure, Eysenbach, Nachum, Tompson): config, losses, Q, learner."""

from cvl_algos.cvl.config import CVLConfig, CVLMCConfig
from cvl_algos.cvl.learner import CVLLearner, CVLMCLearner
from cvl_algos.cvl.losses import (
    contrastive_critic_loss,
    infonce_partition_loss,
    normalize_q_per_batch,
    policy_loss,
    td_contrastive_critic_loss,
    td_infonce_partition_loss,
)
from cvl_algos.cvl.q import (
    XiState,
    detached_phi,
    direct_q_fn,
    gated_q_from_latents,
    q_direct,
    q_direct_from_latents,
    q_rff,
    rff_q_fn,
    weighted_expectile,
    xi_ema,
    xi_estimate,
    xi_zeta_estimate,
)

__all__ = [
    "CVLConfig",
    "CVLLearner",
    "CVLMCConfig",
    "CVLMCLearner",
    "XiState",
    "contrastive_critic_loss",
    "detached_phi",
    "direct_q_fn",
    "gated_q_from_latents",
    "infonce_partition_loss",
    "normalize_q_per_batch",
    "policy_loss",
    "q_direct",
    "q_direct_from_latents",
    "q_rff",
    "rff_q_fn",
    "td_contrastive_critic_loss",
    "td_infonce_partition_loss",
    "weighted_expectile",
    "xi_ema",
    "xi_estimate",
    "xi_zeta_estimate",
]
