"""Contrastive critic ``f(s, a, s+) = phi(s, a) . psi(s+) / temperature`` (paper eq. 9-12).

With ``kernel="lse"`` (not in the paper) the critic is instead
``f = log mean_i exp((phi_i + psi_i) / temperature)`` over the latent's ``d`` coordinates
(`kernel_logits`): ``exp(f) = F(phi) . F(psi)`` with ``F(x) = exp(x / temperature) / sqrt(d)``,
so the kernel eq. 11 weighs futures by is linear in ``d`` features that are exact and positive
(`cvl_models.rff.ExactExpFeatures`) instead of approximated by random ones (lemma 1). A sum of
``d`` positive rank-one terms, it is the density ratio of a ``d``-component latent-variable
model ``p(s+ | s, a) / p(s+)``. With unit latents ``|f| <= 2 / temperature``.

``phi`` and ``psi`` are separate networks (appendix: "current state-action features passed
through one encoder, and future state features passed into a separate DenseNet"), each an
encoder of its own (identity for states, IMPALA for pixels; never shared) followed by a
DenseNet MLP, optionally l2-normalised (paper table 2: yes). For a batch of ``B`` anchors and
their ``B`` positives, ``logits[i, j] = f(s_i, a_i, s+_j)``: the diagonal holds the positives,
the other columns of row ``i`` its negatives (InfoNCE, eq. 9-10). With unit-norm embeddings
``|logits| <= 1 / temperature``, and ``exp(logits)`` is the kernel that random Fourier features
linearise (lemma 1, eq. 12).

Parameter count for the default ``latent_dim=64, hidden=(256, 256)``, states of width ``d``
and ``A`` actions: ``phi = DenseMLP(d + A, 64)``, ``psi = DenseMLP(d, 64)``::

    phi: 67_072 + 512 (d + A) + (257 + d + A) 64      psi: 67_072 + 512 d + (257 + d) 64

Meta-World (``d = 39, A = 4``): phi 108_288 + psi 105_984 = 214_272. Mountain Car (2, 1):
85_248 + 84_672 = 169_920. Pixels 84 x 84 x 3 (``A = 4``): each side adds its own IMPALA
encoder (1_089_600) and sees ``d = 256``: phi 1_089_600 + 233_280 = 1_322_880,
psi 1_089_600 + 230_976 = 1_320_576, total 2_643_456.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from torch import nn

from cvl_models._checks import check_same_batch, check_trailing
from cvl_models.encoder import make_encoder
from cvl_models.mlp import Torso, make_mlp

__all__ = [
    "KERNELS",
    "ContrastiveCritic",
    "StateActionEmbedding",
    "StateEmbedding",
    "kernel_logits",
    "l2_normalize",
    "paired_kernel_logits",
]

ModuleCall = Callable[..., torch.Tensor]
"""How a sub-network is run: ``call(module, *args)``."""


def _call(module: nn.Module, *args: torch.Tensor) -> torch.Tensor:
    return module(*args)


NORM_EPS = 1e-6
MIN_TEMPERATURE = 0.01
"""Floor of a learned temperature (CLIP's cap of 100 on its logit scale)."""


KERNELS: tuple[str, ...] = ("dot", "lse")
"""How ``f`` is made from ``phi`` and ``psi``: "dot", ``phi . psi / tau`` (eq. 9, the paper);
"lse", ``log mean_i exp((phi_i + psi_i) / tau)`` (module docstring; not in the paper)."""


def kernel_logits(
    phi: torch.Tensor, psi: torch.Tensor, temperature: float | torch.Tensor, kernel: str = "dot"
) -> torch.Tensor:
    """``f_ij`` of every anchor ``i`` against every future ``j``: (B, d), (M, d) -> (B, M).

    "dot": ``phi_i . psi_j / tau``. "lse": ``log mean_k exp((phi_ik + psi_jk) / tau)``, as one
    matrix product of the shifted exponentials, ``exp(phi / tau - m_i) @ exp(psi / tau -
    n_j).T``, with ``m_i``, ``n_j`` the rows' maxima added back after the log: every factor is
    at most 1, and with unit latents every term is at least ``e^(-4 / tau)``, so nothing
    overflows, and the sum underflows only below tau = 0.05 (floored at float's tiniest)."""
    if kernel == "dot":
        # (B, d) @ (d, M): a plain mm, faster than einsum
        return (phi @ psi.T) / temperature
    if kernel != "lse":
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    phi_scaled, psi_scaled = phi / temperature, psi / temperature
    phi_max = phi_scaled.amax(dim=-1, keepdim=True)  # (B, 1)
    psi_max = psi_scaled.amax(dim=-1, keepdim=True)  # (M, 1)
    products = torch.exp(phi_scaled - phi_max) @ torch.exp(psi_scaled - psi_max).T
    tiny = torch.finfo(products.dtype).tiny
    log_mean = torch.log(products.clamp_min(tiny)) - math.log(phi.shape[-1])
    return log_mean + phi_max + psi_max.T


def paired_kernel_logits(
    phi: torch.Tensor, psi: torch.Tensor, temperature: float | torch.Tensor, kernel: str = "dot"
) -> torch.Tensor:
    """``f`` of each pair of the same index: (..., d), (..., d) -> (...), the diagonal of
    `kernel_logits` for pairs that broadcast."""
    if kernel == "dot":
        return (phi * psi).sum(dim=-1) / temperature
    if kernel != "lse":
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return torch.logsumexp((phi + psi) / temperature, dim=-1) - math.log(phi.shape[-1])


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """``x / max(|x|, 1e-6)`` over the last dim (unit norm unless ``x`` is ~0)."""
    return F.normalize(x, p=2.0, dim=-1, eps=NORM_EPS)


class StateActionEmbedding(nn.Module):
    """``phi(s, a)``: ``encoder(s)`` concatenated with ``a``, then a DenseNet -> ``latent_dim``."""

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        latent_dim: int,
        hidden: Sequence[int],
        normalize: bool,
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.normalize = bool(normalize)
        self.encoder = make_encoder(self.obs_shape)
        self.mlp = make_mlp(self.encoder.out_dim + self.action_dim, latent_dim, hidden, torso)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        obs_batch = check_trailing(obs, self.obs_shape, "phi obs")
        act_batch = check_trailing(action, (self.action_dim,), "phi action")
        check_same_batch(obs_batch, act_batch, "phi(obs, action)")
        return self.head(self.encoder(obs), action)

    def head(
        self, encoded: torch.Tensor, action: torch.Tensor, call: ModuleCall = _call
    ) -> torch.Tensor:
        """The part after the encoder: ``encoder(s)`` (..., E) and ``a`` (..., A) -> (...,
        latent), the DenseNet run through ``call``."""
        out = call(self.mlp, torch.cat([encoded, action.to(encoded.dtype)], dim=-1))
        return l2_normalize(out) if self.normalize else out

    def of_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, call: ModuleCall = _call
    ) -> torch.Tensor:
        """``phi(s_b, a_kb)`` for ``K`` actions at each of ``B`` states: (B, ...) and (K, B, A)
        -> (K, B, latent). The encoder runs once per state, not once per pair (for pixels an
        IMPALA pass is most of ``phi``'s cost), and so do the state's columns of every layer of
        the MLP (`cvl_models.mlp.DenseMLP.forward_shared`: ``W [z; s; a] = W_z z + W_s s +
        W_a a``, the ``W_s s`` product once per state; for Meta-World's 39 + 4 inputs through
        128 x 128 a third of the MLP's multiply-adds). ``call(module, *args)`` runs the encoder
        and the MLP (default: plainly; the policy loss passes ``cvl_algos``' ``frozen_call`` so
        that no gradient reaches the critic's parameters). Equal to `forward` on each pair
        within float rounding."""
        encoded = call(self.encoder, self._check_actions(obs, actions, "phi"))
        out = call(_SharedForward(self.mlp), encoded, actions)
        return l2_normalize(out) if self.normalize else out

    def encode_for_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, call: ModuleCall = _call, what: str = "phi"
    ) -> torch.Tensor:
        """``encoder(s_b)`` repeated for each of ``K`` actions: (B, ...) and (K, B, A) -> (K, B,
        E), each state encoded once; shapes checked, errors named by ``what``."""
        encoded = call(self.encoder, self._check_actions(obs, actions, what))
        return repeat(encoded, "b e -> k b e", k=actions.shape[0])

    def _check_actions(self, obs: torch.Tensor, actions: torch.Tensor, what: str) -> torch.Tensor:
        """``obs`` after checking it is (B, *obs_shape) and ``actions`` (K, B, A)."""
        obs_batch = check_trailing(obs, self.obs_shape, f"{what} obs")
        if actions.dim() != 3 or actions.shape[1:] != (*obs_batch, self.action_dim):
            raise ValueError(
                f"{what} actions: expected (K, {obs_batch[0]}, {self.action_dim}), "
                f"got {tuple(actions.shape)}"
            )
        return obs


class _SharedForward(nn.Module):
    """An MLP's ``forward_shared`` as a module's ``forward``, so that a ``call`` such as
    ``frozen_call`` (``torch.func.functional_call``, which runs ``forward``) can run it. Built
    per call and never registered: the MLP's parameters stay owned by its embedding alone."""

    def __init__(self, mlp: nn.Module) -> None:
        super().__init__()
        self.mlp = mlp

    def forward(self, shared: torch.Tensor, per_item: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward_shared(shared, per_item)


class StateEmbedding(nn.Module):
    """``psi(s)``: ``encoder(s)`` then a DenseNet -> ``latent_dim`` (normalised as configured).

    Self-contained, so ``copy.deepcopy(critic.psi_net)`` is a ready EMA target network.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        latent_dim: int,
        hidden: Sequence[int],
        normalize: bool,
        torso: Torso = "densenet",
    ) -> None:
        super().__init__()
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.normalize = bool(normalize)
        self.encoder = make_encoder(self.obs_shape)
        self.mlp = make_mlp(self.encoder.out_dim, latent_dim, hidden, torso)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        check_trailing(obs, self.obs_shape, "psi obs")
        out = self.mlp(self.encoder(obs))
        return l2_normalize(out) if self.normalize else out


class ContrastiveCritic(nn.Module):
    """The implicit critic of CVL: ``logits = phi(s, a) @ psi(s+).T / temperature``.

    Args:
        obs_shape: ``(d,)`` for states or ``(H, W, C)`` for uint8 pixels.
        action_dim: ``A``.
        latent_dim: width of ``phi`` and ``psi`` (default 64).
        hidden: DenseNet widths of both networks (paper: 256 x 256).
        normalize: l2-normalise ``phi`` and ``psi`` outputs (paper: yes).
        temperature: InfoNCE temperature (paper: 1): a constant, or with ``learn_temperature``
            the initial value of one trained with the critic.
        learn_temperature: train ``log_temperature`` (a parameter, initialised at
            ``log(temperature)``) by the critic's loss, as CLIP trains its logit scale (Radford
            et al. 2021); ``temperature`` is then ``exp(log_temperature)`` floored at
            ``MIN_TEMPERATURE`` (a 0-d tensor). Not in the paper.
        torso: MLP of both networks: ``"densenet"`` (the paper's, default) or ``"mlp"``
            (plain Linear+ReLU, `cvl_models.mlp.make_mlp`).
        action_bias: add ``bias_net``, a scalar ``b(s, a)`` on phi's encoder output (an MLP of
            ``hidden`` widths), for losses whose candidates differ in the action at a shared
            state and future (`action_bias`). ``f`` itself never includes it. Not in the paper.
        kernel: ``"dot"`` (the paper's ``phi . psi / tau``) or ``"lse"`` (`kernel_logits`; not
            in the paper).

    Submodules ``phi_net`` (:class:`StateActionEmbedding`) and ``psi_net``
    (:class:`StateEmbedding`) have separate encoders. Parameters (defaults): 214_272 for
    Meta-World states (39, 4 actions); 169_920 for Mountain Car; 2_643_456 for 84 x 84 x 3
    pixels (module docstring).
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        latent_dim: int = 64,
        hidden: Sequence[int] = (256, 256),
        normalize: bool = True,
        temperature: float = 1.0,
        torso: Torso = "densenet",
        learn_temperature: bool = False,
        action_bias: bool = False,
        kernel: str = "dot",
    ) -> None:
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"ContrastiveCritic: kernel must be one of {KERNELS}, got {kernel!r}")
        self.kernel = kernel
        if latent_dim < 1 or action_dim < 1:
            raise ValueError(f"ContrastiveCritic: bad sizes {latent_dim=} {action_dim=}")
        if not temperature > 0:
            raise ValueError(f"ContrastiveCritic: temperature must be > 0, got {temperature}")
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.action_dim = int(action_dim)
        self.latent_dim = int(latent_dim)
        self.normalize = bool(normalize)
        self.learn_temperature = bool(learn_temperature)
        self._fixed_temperature = float(temperature)
        if self.learn_temperature:
            if temperature < MIN_TEMPERATURE:
                raise ValueError(
                    f"ContrastiveCritic: a learned temperature starts at >= {MIN_TEMPERATURE}, "
                    f"got {temperature}"
                )
            self.log_temperature = nn.Parameter(torch.tensor(math.log(temperature)))
        self.phi_net = StateActionEmbedding(
            self.obs_shape, self.action_dim, self.latent_dim, hidden, self.normalize, torso
        )
        self.psi_net = StateEmbedding(
            self.obs_shape, self.latent_dim, hidden, self.normalize, torso
        )
        # drawn after phi and psi, so a critic without it initialises as it always did
        self.bias_net: nn.Module | None = None
        if action_bias:
            self.bias_net = make_mlp(
                self.phi_net.encoder.out_dim + self.action_dim, 1, hidden, torso
            )

    @property
    def temperature(self) -> float | torch.Tensor:
        """tau: the constant, or ``exp(log_temperature)`` floored at ``MIN_TEMPERATURE`` (a 0-d
        tensor in the graph of ``log_temperature``) when learned."""
        if not self.learn_temperature:
            return self._fixed_temperature
        return self.log_temperature.clamp(min=math.log(MIN_TEMPERATURE)).exp()

    def detached_temperature(self) -> float | torch.Tensor:
        """``temperature`` outside any graph: for Q in the policy's loss, metrics and reports."""
        temperature = self.temperature
        return temperature.detach() if isinstance(temperature, torch.Tensor) else temperature

    def phi(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """State-action embedding ``(B, latent_dim)`` (any batch shape ``B``)."""
        return self.phi_net(obs, action)

    def phi_of_actions(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``phi`` of ``K`` actions at each state: (B, ...), (K, B, A) -> (K, B, latent_dim),
        encoding each state once (`StateActionEmbedding.of_actions`)."""
        return self.phi_net.of_actions(obs, actions)

    def action_bias(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``b(s_b, a_kb)`` for ``K`` actions at each of ``B`` states: (B, ...), (K, B, A) ->
        (K, B); the state is encoded once by phi's encoder (for pixels one more IMPALA pass).

        A scalar per (state, action): InfoNCE over futures (eq. 9) cancels any such term, so it
        only matters to a loss that compares actions at a shared state and future
        (`cvl_algos.cvl.losses.action_contrastive_loss`), where it can hold ``log p(a | s) /
        p(a)`` and leave ``phi . psi`` eq. 9's solution."""
        if self.bias_net is None:
            raise ValueError("action_bias: this critic was built without action_bias=True")
        encoded = self.phi_net.encode_for_actions(obs, actions, what="bias")
        out = self.bias_net(torch.cat([encoded, actions.to(encoded.dtype)], dim=-1))
        return rearrange(out, "k b 1 -> k b")

    def psi(self, obs: torch.Tensor) -> torch.Tensor:
        """Future-state embedding ``(B, latent_dim)`` (any batch shape ``B``)."""
        return self.psi_net(obs)

    def logits(
        self, obs_t: torch.Tensor, action_t: torch.Tensor, obs_future: torch.Tensor
    ) -> torch.Tensor:
        """``f_ij = phi(s_i, a_i) . psi(s+_j) / temperature`` (or the ``"lse"`` kernel's,
        `kernel_logits`): ``(B, B')`` (``B' = B`` usually).

        Row ``i`` scores anchor ``i`` against every future state; positives on the diagonal.
        """
        return self.logits_and_psi(obs_t, action_t, obs_future)[0]

    def logits_and_psi(
        self, obs_t: torch.Tensor, action_t: torch.Tensor, obs_future: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`logits` and the ``psi(obs_future)`` ``(B', latent_dim)`` they were made from, for a
        loss that scores the same futures again (``action_contrastive_loss``)."""
        check_trailing(obs_t, self.obs_shape, "logits obs_t", min_batch_dims=1)
        if obs_t.dim() != len(self.obs_shape) + 1 or obs_future.dim() != obs_t.dim():
            raise ValueError(
                f"logits: obs_t and obs_future need one batch dim, got {tuple(obs_t.shape)} "
                f"and {tuple(obs_future.shape)}"
            )
        phi = self.phi(obs_t, action_t)
        psi = self.psi(obs_future)
        return kernel_logits(phi, psi, self.temperature, self.kernel), psi

    def extra_repr(self) -> str:
        return (
            f"obs_shape={self.obs_shape}, action_dim={self.action_dim}, "
            f"latent_dim={self.latent_dim}, normalize={self.normalize}, "
            f"temperature={self._fixed_temperature}, learn_temperature={self.learn_temperature}, "
            f"action_bias={self.bias_net is not None}, kernel={self.kernel!r}"
        )
