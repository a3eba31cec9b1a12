"""cvl_models: the networks of "Contrastive Value Learning" (Mazoure et al.), appendix.

DenseNet MLP (or a plain MLP, ``torso="mlp"``), IMPALA CNN encoder, random Fourier features (lemma 1, eq. 12), tanh-Gaussian
policy (eq. 13-15), contrastive critic (eq. 9-11) and a twin Q network for the baselines.
"""

from cvl_models.critic import (
    KERNELS,
    ContrastiveCritic,
    StateActionEmbedding,
    StateEmbedding,
    kernel_logits,
    l2_normalize,
    paired_kernel_logits,
)
from cvl_models.encoder import FlatEncoder, make_encoder
from cvl_models.impala import ImpalaEncoder
from cvl_models.mlp import TORSOS, DenseMLP, PlainMLP, Torso, make_mlp
from cvl_models.policy import TanhGaussianPolicy
from cvl_models.q import QNetwork, TwinQ, ValueNetwork
from cvl_models.rff import ExactExpFeatures, RandomFourierFeatures

__version__ = "0.1.0"

__all__ = [
    "KERNELS",
    "ContrastiveCritic",
    "ExactExpFeatures",
    "DenseMLP",
    "PlainMLP",
    "FlatEncoder",
    "ImpalaEncoder",
    "QNetwork",
    "RandomFourierFeatures",
    "StateActionEmbedding",
    "StateEmbedding",
    "TORSOS",
    "TanhGaussianPolicy",
    "Torso",
    "TwinQ",
    "ValueNetwork",
    "kernel_logits",
    "l2_normalize",
    "paired_kernel_logits",
    "make_encoder",
    "make_mlp",
]
