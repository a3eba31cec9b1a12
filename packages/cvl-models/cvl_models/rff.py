"""Random Fourier features for the exponential kernel (paper lemma 1 and eq. 12).

For unit vectors ``x, y`` in ``R^d`` and temperature ``tau``::

    exp(x.y / tau) = e^(1/tau) * exp(-|x - y|^2 / (2 tau))

and the Gaussian kernel on the right is the expectation over ``w ~ N(0, I/tau)``,
``b ~ U(0, 2 pi)`` of ``2 cos(w.x + b) cos(w.y + b)`` (Rahimi & Recht 2007). With ``D`` draws
stacked into ``W`` of shape ``(D, d)`` and ``b`` of shape ``(D,)``::

    F(x) = sqrt(2 e^(1/tau) / D) * cos(W x + b)        E[F(x).F(y)] = exp(x.y / tau)

``tau = 1`` is the paper's lemma 1 (``sqrt(2e/D) cos(Wx + b)``, ``W ~ N(0, I)``); the paper
writes ``d`` for the number of features, here ``D`` is independent of the latent size ``d``.
Eq. 12 then linearises the contrastive Q-value:
``Q(s, a) = 1/(1-g) * F(phi(s, a)) . xi`` with ``xi`` an EMA of ``F(psi(s+)) r``.

The identity holds for unit vectors only: use it on l2-normalised embeddings. For one draw the
error of ``F(x).F(y)`` has standard deviation ``O(e^(1/tau) / sqrt(D))``.

Positive random features (Choromanski et al. 2021, "Rethinking Attention with Performers",
FAVOR+, lemma 1) estimate the same kernel with features that are never negative: with
``x' = x / sqrt(tau)`` and ``w ~ N(0, I)``,

    F+(x) = exp(W x' - |x'|^2 / 2) / sqrt(D)          E[F+(x).F+(y)] = exp(x.y / tau)

for any ``x, y`` (unit norm not needed). A self-normalised estimate built from them has a
positive denominator; their relative variance per feature is ``e^((2 + 2c) / tau) - 1`` at
``c = x.y`` for unit vectors (DESIGN.md sec. 2): small for dissimilar pairs, large for similar
ones, the reverse of the trigonometric features. ``orthogonal=True`` draws the rows of ``W`` in
blocks of ``d`` mutually orthogonal rows, each scaled to the norm of an independent Gaussian
vector (orthogonal random features, Yu et al. 2016; Performers' ORF), which keeps every row's
distribution and lowers the variance of both estimators.

Optimal positive random features (OPRF; Likhosherstov et al. 2022, "Chefs' Random Tables:
Non-Trigonometric Random Features", sec. 3) add a term in ``|w|^2``: with ``A < 1/8`` and
``B = sqrt(1 - 4A)``,

    F_A(x) = (1 - 4A)^(d/4) exp(A |w|^2 + B w.x' - |x'|^2 / 2) / sqrt(D)

is unbiased for the same kernel for every such ``A`` (``A = 0`` is FAVOR+). The second moment
of one feature's product at ``s = |x' + y'|^2`` is
``(1-4A)^d (1-8A)^(-d/2) exp(2 (1-4A) s / (1-8A) - |x'|^2 - |y'|^2)``, minimised by the smaller
root of ``16 d A^2 + (4 s - 2 d) A - s = 0`` (`oprf_a`). A self-normalised estimate is
dominated by the most aligned pairs, so ``"oprf"`` takes ``A`` at ``s = 4 / tau`` (unit
vectors, ``x = y``): at ``d = 64, tau = 0.1`` ``A = -0.214``, and the second moment at aligned
pairs falls by a factor ``e^17.5`` against FAVOR+'s. Measured on trained critics
(docs/results.md, "Optimal positive random features and a smaller latent"), that does not
improve the ranking of Q at ``d = 64``; at ``d = 32`` and ``16`` it does.

Exact features (`ExactExpFeatures`, not in the paper) are no random draw: for a critic whose
kernel is ``exp(f) = mean_i exp((x_i + y_i) / tau)`` (`cvl_models.critic`'s ``"lse"``) the
``d`` features ``exp(x / tau) / sqrt(d)`` give ``F(x) . F(y) = exp(f)`` exactly, so eq. 12 holds
without estimation error and with ``D = d``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from cvl_models._checks import check_trailing

__all__ = [
    "ExactExpFeatures",
    "PositiveRandomFeatures",
    "RandomFourierFeatures",
    "gaussian_rows",
    "make_random_features",
    "oprf_a",
    "rff_scale",
]


def rff_scale(num_features: int, temperature: float) -> float:
    """The constant ``sqrt(2 e^(1/tau) / D)`` in front of the cosines."""
    return math.sqrt(2.0 * math.exp(1.0 / temperature) / num_features)


def gaussian_rows(
    num: int, dim: int, generator: torch.Generator, orthogonal: bool = False
) -> torch.Tensor:
    """``(num, dim)`` rows, each distributed as ``N(0, I)``: i.i.d., or (``orthogonal``) in
    blocks of ``dim`` mutually orthogonal rows (Q of a Gaussian matrix's QR, sign-corrected so
    that it is Haar-distributed) scaled by the norms of independent Gaussian vectors."""
    if not orthogonal:
        return torch.randn(num, dim, generator=generator)
    blocks = []
    for _ in range(-(-num // dim)):
        q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator))
        q = q * torch.sign(torch.diagonal(r))  # columns' signs: Haar measure
        norms = torch.linalg.vector_norm(torch.randn(dim, dim, generator=generator), dim=1)
        blocks.append(q.T * norms[:, None])
    return torch.cat(blocks)[:num]


class RandomFourierFeatures(nn.Module):
    """``F(x) = sqrt(2 e^(1/tau) / D) cos(W x + b)``: ``(..., in_dim) -> (..., D)``.

    Args:
        in_dim: ``d``, the width of the (unit-norm) inputs.
        num_features: ``D``, the number of random features.
        temperature: ``tau``; ``W ~ N(0, I / tau)`` so that ``E[F(x).F(y)] = exp(x.y / tau)``.
        seed: seeds a private ``torch.Generator``: the same seed gives the same ``W, b``
            regardless of the global RNG state and without touching it.
        orthogonal: rows of ``W`` drawn by `gaussian_rows` in orthogonal blocks.

    ``W`` (``(D, d)``) and ``b`` (``(D,)``) are buffers: not trained, moved by ``.to(device)``,
    saved in and restored from ``state_dict``. The module has 0 parameters (``D*(d+1)`` buffer
    entries, e.g. 66_560 for ``d = 64, D = 1024``).
    """

    W: torch.Tensor
    b: torch.Tensor

    def __init__(
        self,
        in_dim: int,
        num_features: int,
        temperature: float = 1.0,
        seed: int = 0,
        orthogonal: bool = False,
    ) -> None:
        super().__init__()
        if in_dim < 1 or num_features < 1:
            raise ValueError(f"RandomFourierFeatures: bad sizes {in_dim=} {num_features=}")
        if not temperature > 0:
            raise ValueError(f"RandomFourierFeatures: temperature must be > 0, got {temperature}")
        self.in_dim = int(in_dim)
        self.num_features = int(num_features)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.scale = rff_scale(self.num_features, self.temperature)
        self.orthogonal = bool(orthogonal)
        weight, bias = self._draw(self.seed)
        self.register_buffer("W", weight)
        self.register_buffer("b", bias)

    def _draw(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        rows = gaussian_rows(self.num_features, self.in_dim, gen, self.orthogonal)
        bias = torch.rand(self.num_features, generator=gen) * (2.0 * math.pi)
        return rows / math.sqrt(self.temperature), bias

    @torch.no_grad()
    def redraw(self, seed: int) -> None:
        """Replace ``W, b`` in place by the draw of ``seed``: the buffers a new module with that
        seed would hold (Performers redraw their features during training)."""
        weight, bias = self._draw(seed)
        self.W.copy_(weight)
        self.b.copy_(bias)
        self.seed = int(seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features ``(..., D)`` of ``x`` of shape ``(..., in_dim)``."""
        check_trailing(x, (self.in_dim,), "RandomFourierFeatures input", min_batch_dims=0)
        proj = F.linear(x, self.W.to(x.dtype), self.b.to(x.dtype))  # W x + b, (..., D)
        return self.scale * torch.cos(proj)

    def extra_repr(self) -> str:
        return (
            f"in_dim={self.in_dim}, num_features={self.num_features}, "
            f"temperature={self.temperature}, seed={self.seed}, orthogonal={self.orthogonal}"
        )


def oprf_a(dim: int, pair_sq_norm: float) -> float:
    """The ``A`` of `PositiveRandomFeatures` that minimises the second moment of one feature's
    product at ``|x' + y'|^2 = pair_sq_norm`` in ``dim`` dimensions: the smaller root of
    ``16 d A^2 + (4 s - 2 d) A - s = 0`` (module docstring; OPRF, Likhosherstov et al. 2022)."""
    d, s = float(dim), float(pair_sq_norm)
    return (2.0 * d - 4.0 * s - math.sqrt((4.0 * s - 2.0 * d) ** 2 + 64.0 * d * s)) / (32.0 * d)


class PositiveRandomFeatures(nn.Module):
    """``F+(x) = exp(W x / sqrt(tau) - |x|^2 / (2 tau)) / sqrt(D)``, ``W ~ N(0, I)``: positive
    features with ``E[F+(x).F+(y)] = exp(x.y / tau)`` (FAVOR+; module docstring).

    ``a`` (``A < 1/8``; 0, FAVOR+, by default) gives the OPRF family of the module docstring,
    ``(1 - 4A)^(d/4) exp(A |w|^2 + sqrt(1 - 4A) w.x' - |x'|^2 / 2) / sqrt(D)``, unbiased for the
    same kernel. Same arguments, seeding and buffer handling as :class:`RandomFourierFeatures`;
    the only buffer is ``W`` (``(D, d)``).
    """

    W: torch.Tensor

    def __init__(
        self,
        in_dim: int,
        num_features: int,
        temperature: float = 1.0,
        seed: int = 0,
        orthogonal: bool = False,
        a: float = 0.0,
    ) -> None:
        super().__init__()
        if in_dim < 1 or num_features < 1:
            raise ValueError(f"PositiveRandomFeatures: bad sizes {in_dim=} {num_features=}")
        if not temperature > 0:
            raise ValueError(f"PositiveRandomFeatures: temperature must be > 0, got {temperature}")
        if not a < 0.125:
            raise ValueError(f"PositiveRandomFeatures: a must be < 1/8 (finite variance), got {a}")
        self.a = float(a)
        self.b_scale = math.sqrt(1.0 - 4.0 * self.a)
        self.in_dim = int(in_dim)
        self.num_features = int(num_features)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.orthogonal = bool(orthogonal)
        self.register_buffer("W", self._draw(self.seed))

    def _draw(self, seed: int) -> torch.Tensor:
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        return gaussian_rows(self.num_features, self.in_dim, gen, self.orthogonal)

    @torch.no_grad()
    def redraw(self, seed: int) -> None:
        """Replace ``W`` in place by the draw of ``seed``, as :class:`RandomFourierFeatures`."""
        self.W.copy_(self._draw(seed))
        self.seed = int(seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features ``(..., D)`` of ``x`` of shape ``(..., in_dim)``."""
        check_trailing(x, (self.in_dim,), "PositiveRandomFeatures input", min_batch_dims=0)
        scaled = x / math.sqrt(self.temperature)
        half_sq_norm = 0.5 * scaled.square().sum(dim=-1, keepdim=True)
        weight = self.W.to(x.dtype)
        if self.a == 0.0:  # FAVOR+, in the operation order its earlier runs used
            proj = F.linear(scaled, weight)
            return torch.exp(proj - half_sq_norm - 0.5 * math.log(self.num_features))
        log_scale = 0.25 * self.in_dim * math.log1p(-4.0 * self.a) - 0.5 * math.log(
            self.num_features
        )
        row_term = self.a * weight.square().sum(dim=-1) + log_scale  # (D,)
        proj = F.linear(scaled, weight * self.b_scale, row_term)
        return torch.exp(proj - half_sq_norm)

    def extra_repr(self) -> str:
        return (
            f"in_dim={self.in_dim}, num_features={self.num_features}, "
            f"temperature={self.temperature}, seed={self.seed}, orthogonal={self.orthogonal}, "
            f"a={self.a:.4f}"
        )


class ExactExpFeatures(nn.Module):
    """``F(x) = exp(x / tau) / sqrt(d)``: ``(..., d) -> (..., d)``, the exact features of the
    ``"lse"`` critic's kernel, ``F(x) . F(y) = mean_i exp((x_i + y_i) / tau)`` (module
    docstring). Nothing is drawn (so there is no ``redraw``); for unit inputs every
    feature lies in ``[e^(-1/tau), e^(1/tau)] / sqrt(d)``, and products of two stay finite in
    float32 for tau >= 0.023."""

    def __init__(self, in_dim: int, temperature: float = 1.0) -> None:
        super().__init__()
        if in_dim < 1:
            raise ValueError(f"ExactExpFeatures: bad size {in_dim=}")
        if not temperature > 0:
            raise ValueError(f"ExactExpFeatures: temperature must be > 0, got {temperature}")
        self.in_dim = int(in_dim)
        self.num_features = int(in_dim)
        self.temperature = float(temperature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features ``(..., d)`` of ``x`` of shape ``(..., in_dim)``."""
        check_trailing(x, (self.in_dim,), "ExactExpFeatures input", min_batch_dims=0)
        return torch.exp(x / self.temperature - 0.5 * math.log(self.in_dim))

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, temperature={self.temperature}"


def make_random_features(
    kind: str,
    in_dim: int,
    num_features: int,
    temperature: float = 1.0,
    seed: int = 0,
    orthogonal: bool = False,
) -> nn.Module:
    """``"trig"``: :class:`RandomFourierFeatures` (the paper's lemma 1); ``"positive"``:
    :class:`PositiveRandomFeatures` (FAVOR+); ``"oprf"``: :class:`PositiveRandomFeatures` with
    the ``A`` of `oprf_a` at aligned unit vectors, ``|x' + y'|^2 = 4 / tau``; ``"exact"``:
    :class:`ExactExpFeatures` of the ``"lse"`` critic, whose ``D`` is ``in_dim`` (so
    ``num_features`` must equal it)."""
    if kind == "exact":
        if num_features != in_dim or orthogonal:
            raise ValueError(
                f"exact features are the latent's width and not drawn: num_features must be "
                f"{in_dim} and orthogonal False, got {num_features} and {orthogonal}"
            )
        return ExactExpFeatures(in_dim, temperature)
    if kind == "trig":
        return RandomFourierFeatures(in_dim, num_features, temperature, seed, orthogonal)
    if kind == "positive":
        return PositiveRandomFeatures(in_dim, num_features, temperature, seed, orthogonal)
    if kind == "oprf":
        a = oprf_a(in_dim, 4.0 / temperature)
        return PositiveRandomFeatures(in_dim, num_features, temperature, seed, orthogonal, a)
    raise ValueError(
        f"random features kind must be one of ['exact', 'oprf', 'positive', 'trig'], got {kind!r}"
    )
