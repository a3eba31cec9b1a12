"""Random Fourier features (lemma 1, eq. 12): unbiasedness, 1/sqrt(D) error, naive reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from einops import rearrange, reduce
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_models import RandomFourierFeatures
from cvl_models.rff import PositiveRandomFeatures, gaussian_rows, make_random_features, oprf_a


def _unit_vectors(rng: np.random.Generator, n: int, d: int) -> torch.Tensor:
    v = rng.standard_normal((n, d))
    return torch.from_numpy(v / np.linalg.norm(v, axis=-1, keepdims=True))


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(2, 16),
    tau=st.floats(0.5, 2.0),
    seed=st.integers(0, 2**31 - 1),
    relation=st.sampled_from(["random", "same", "opposite"]),
)
def test_unbiased_over_independent_draws(d, tau, seed, relation):
    """mean_m F_m(x).F_m(y) over M independent (W, b) draws -> exp(x.y / tau).

    Vectorised: one module with M * D0 features holds M independent draws of D0 features each
    (the rows of W and entries of b are i.i.d.), so each block of D0 rows is one draw; rescaling
    by sqrt(M) turns the module's sqrt(2 e^(1/tau) / (M D0)) into the per-draw constant.
    """
    num_draws, per_draw = 4096, 16
    rng = np.random.default_rng(seed)
    x, y = _unit_vectors(rng, 2, d).float()
    y = {"random": y, "same": x, "opposite": -x}[relation]
    rff = RandomFourierFeatures(d, num_draws * per_draw, temperature=tau, seed=seed)
    feats = rff(torch.stack([x, y])) * math.sqrt(num_draws)  # per-draw scaling
    fx, fy = rearrange(feats.double(), "two (m f) -> two m f", m=num_draws)
    estimates = reduce(fx * fy, "m f -> m", "sum")  # one estimate per independent draw
    target = math.exp(float(x.double() @ y.double()) / tau)
    std_err = float(estimates.std()) / math.sqrt(num_draws)
    assert abs(float(estimates.mean()) - target) < 5.0 * std_err + 1e-6
    # the test has power: the standard error is small compared with the kernel value
    assert std_err < 0.08 * target + 0.01


@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_error_shrinks_like_inverse_sqrt_features(tau):
    """For one draw, RMS error of F(x).F(y) scales as 1/sqrt(D): D x 64 -> error / 8."""
    d, num_pairs, seeds = 8, 256, range(6)
    rng = np.random.default_rng(0)
    x = _unit_vectors(rng, num_pairs, d).float()
    y = _unit_vectors(rng, num_pairs, d).float()
    target = torch.exp((x.double() * y.double()).sum(-1) / tau)

    def rmse(num_features: int) -> float:
        errors = []
        for seed in seeds:
            rff = RandomFourierFeatures(d, num_features, temperature=tau, seed=seed)
            approx = (rff(x).double() * rff(y).double()).sum(-1)
            errors.append(approx - target)
        return float(torch.cat(errors).square().mean().sqrt())

    small, large = rmse(256), rmse(256 * 64)
    ratio = small / large
    assert 8.0 / 1.3 < ratio < 8.0 * 1.3, ratio
    # and the constant in front matches O(e^(1/tau) / sqrt(D))
    assert small * math.sqrt(256) < 2.0 * math.exp(1.0 / tau)


@settings(max_examples=20, deadline=None)
@given(
    d=st.integers(1, 12),
    num_features=st.integers(1, 64),
    tau=st.floats(0.2, 5.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_naive_numpy(d, num_features, tau, seed):
    rff = RandomFourierFeatures(d, num_features, temperature=tau, seed=seed)
    x = np.random.default_rng(seed).standard_normal((3, d))
    weight, bias = rff.W.double().numpy(), rff.b.double().numpy()
    expected = np.zeros((3, num_features))
    for n in range(3):
        for i in range(num_features):
            proj = sum(weight[i, j] * x[n, j] for j in range(d)) + bias[i]
            expected[n, i] = math.sqrt(2.0 * math.exp(1.0 / tau) / num_features) * math.cos(proj)
    got64 = rff(torch.from_numpy(x)).numpy()  # float64 input: computed in float64
    np.testing.assert_allclose(got64, expected, rtol=1e-10, atol=1e-12)
    got32 = rff(torch.from_numpy(x).float()).double().numpy()
    scale = math.sqrt(2.0 * math.exp(1.0 / tau) / num_features)
    np.testing.assert_allclose(got32, expected, atol=1e-4 * scale * (1 + np.abs(x).sum()))


def test_distribution_of_w_and_b():
    tau = 0.25
    rff = RandomFourierFeatures(4, 20000, temperature=tau, seed=3)
    assert rff.W.shape == (20000, 4) and rff.b.shape == (20000,)
    assert abs(float(rff.W.mean())) < 0.02
    assert abs(float(rff.W.var()) - 1.0 / tau) < 0.05 * (1.0 / tau)
    assert float(rff.b.min()) >= 0.0 and float(rff.b.max()) < 2 * math.pi
    assert abs(float(rff.b.mean()) - math.pi) < 0.05


def test_seeding_buffers_and_state_dict(device):
    state = torch.get_rng_state()
    a = RandomFourierFeatures(5, 32, seed=7)
    assert torch.equal(state, torch.get_rng_state())  # private generator: global RNG untouched
    b = RandomFourierFeatures(5, 32, seed=7)
    c = RandomFourierFeatures(5, 32, seed=8)
    assert torch.equal(a.W, b.W) and torch.equal(a.b, b.b)
    assert not torch.equal(a.W, c.W)
    assert list(a.parameters()) == []
    assert set(a.state_dict()) == {"W", "b"}
    c.load_state_dict(a.state_dict())
    x = torch.randn(4, 5)
    torch.testing.assert_close(c(x), a(x))
    a = a.to(device)
    assert a.W.device.type == device.type
    out = a(x.to(device))
    assert out.shape == (4, 32) and out.device.type == device.type


@pytest.mark.parametrize("batch", [(), (1,), (6,), (2, 3)])
def test_shapes(batch):
    rff = RandomFourierFeatures(3, 10)
    assert rff(torch.randn(*batch, 3)).shape == (*batch, 10)
    with pytest.raises(ValueError):
        rff(torch.randn(*batch, 4))


def test_no_leakage_and_gradient_to_input():
    rff = RandomFourierFeatures(3, 16)
    x = torch.randn(5, 3, requires_grad=True)
    out = rff(x)
    other = x.detach().clone()
    other[[0, 1, 3, 4]] += 1.0
    torch.testing.assert_close(rff(other)[2], out[2].detach())
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert not rff.W.requires_grad


# ---------------------------------------------------------------- positive features (FAVOR+)


@settings(max_examples=20, deadline=None)
@given(
    d=st.integers(2, 12),
    tau=st.floats(0.5, 2.0),
    seed=st.integers(0, 2**31 - 1),
    relation=st.sampled_from(["random", "same", "opposite"]),
    orthogonal=st.booleans(),
)
def test_positive_features_are_positive_and_unbiased(d, tau, seed, relation, orthogonal):
    """mean over M independent draws of F+(x).F+(y) -> exp(x.y / tau); every feature > 0.
    With ``orthogonal`` each block of d rows is one draw (the blocks are independent)."""
    num_draws, per_draw = 4096, d
    rng = np.random.default_rng(seed)
    x, y = _unit_vectors(rng, 2, d).float()
    y = {"random": y, "same": x, "opposite": -x}[relation]
    prf = PositiveRandomFeatures(
        d, num_draws * per_draw, temperature=tau, seed=seed, orthogonal=orthogonal
    )
    feats = prf(torch.stack([x, y])).double() * math.sqrt(num_draws)
    assert bool((feats > 0).all())
    fx, fy = rearrange(feats, "two (m f) -> two m f", m=num_draws)
    estimates = reduce(fx * fy, "m f -> m", "sum")
    target = math.exp(float(x.double() @ y.double()) / tau)
    std_err = float(estimates.std()) / math.sqrt(num_draws)
    assert abs(float(estimates.mean()) - target) < 5.0 * std_err + 1e-6


def test_positive_features_match_naive_formula():
    prf = PositiveRandomFeatures(3, 5, temperature=0.5, seed=2)
    x = torch.tensor([[0.3, -0.2, 0.9]], dtype=torch.float64)
    w = prf.W.double()
    expected = [
        math.exp(sum(w[i, j] * x[0, j] / math.sqrt(0.5) for j in range(3)) - 0.5 * 0.94 / 0.5)
        / math.sqrt(5)
        for i in range(5)
    ]
    torch.testing.assert_close(prf(x)[0], torch.tensor(expected, dtype=torch.float64))
    assert set(prf.state_dict()) == {"W"} and list(prf.parameters()) == []


# ------------------------------------------------ optimal positive features (OPRF, A < 0)


@settings(max_examples=15, deadline=None)
@given(
    d=st.integers(2, 10),
    tau=st.floats(0.5, 2.0),
    a=st.floats(-0.5, 0.1),
    seed=st.integers(0, 2**31 - 1),
    relation=st.sampled_from(["random", "same"]),
)
def test_oprf_features_are_positive_and_unbiased_for_every_a(d, tau, a, seed, relation):
    """mean over M draws of F_A(x).F_A(y) -> exp(x.y / tau) for every A < 1/8."""
    num_draws = 8192
    rng = np.random.default_rng(seed)
    x, y = _unit_vectors(rng, 2, d).float()
    y = {"random": y, "same": x}[relation]
    prf = PositiveRandomFeatures(d, num_draws, temperature=tau, seed=seed, a=a)
    feats = prf(torch.stack([x, y]).double()) * math.sqrt(num_draws)
    assert bool((feats > 0).all())
    estimates = feats[0] * feats[1]
    target = math.exp(float(x.double() @ y.double()) / tau)
    std_err = float(estimates.std()) / math.sqrt(num_draws)
    assert abs(float(estimates.mean()) - target) < 5.0 * std_err + 1e-6


def test_oprf_features_match_naive_formula():
    a = -0.3
    prf = PositiveRandomFeatures(3, 5, temperature=0.5, seed=2, a=a)
    x = [0.3, -0.2, 0.9]
    w = prf.W.double().tolist()
    xs = [v / math.sqrt(0.5) for v in x]
    expected = [
        (1 - 4 * a) ** (3 / 4)
        * math.exp(
            a * sum(v * v for v in w[i])
            + math.sqrt(1 - 4 * a) * sum(w[i][j] * xs[j] for j in range(3))
            - 0.5 * sum(v * v for v in xs)
        )
        / math.sqrt(5)
        for i in range(5)
    ]
    out = prf(torch.tensor([x], dtype=torch.float64))[0]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64))
    assert set(prf.state_dict()) == {"W"} and list(prf.parameters()) == []
    with pytest.raises(ValueError, match="a must be < 1/8"):
        PositiveRandomFeatures(3, 5, a=0.125)


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 128), s=st.floats(0.0, 200.0))
def test_oprf_a_minimises_the_second_moment(d, s):
    """`oprf_a` is the minimiser over A < 1/8 of the log second moment
    d ln(1-4A) - d/2 ln(1-8A) + 2 (1-4A) s / (1-8A) (a dense grid search agrees)."""

    def log_m2(a: np.ndarray) -> np.ndarray:
        return d * np.log1p(-4 * a) - 0.5 * d * np.log1p(-8 * a) + 2 * (1 - 4 * a) * s / (1 - 8 * a)

    best = oprf_a(d, s)
    assert best <= 0.0
    grid = np.linspace(-20.0, 0.1249, 400_001)
    assert log_m2(np.array([best]))[0] <= log_m2(grid).min() + 1e-6
    assert oprf_a(d, 0.0) == 0.0  # at s = 0 FAVOR+ (A = 0) is the optimum


def test_oprf_lowers_the_error_at_aligned_pairs():
    """At a low temperature the aligned pairs, which dominate a self-normalised estimate, get a
    lower mean squared error from OPRF than from FAVOR+ (same draws of W)."""
    d, num_features, tau = 8, 256, 0.25
    rng = np.random.default_rng(3)
    x = _unit_vectors(rng, 64, d).double()
    noise = _unit_vectors(rng, 64, d).double()
    y = torch.nn.functional.normalize(x + 0.1 * noise, dim=-1)
    target = torch.exp((x * y).sum(-1) / tau)

    def mse(kind: str) -> float:
        errors = []
        for seed in range(40):
            f = make_random_features(kind, d, num_features, tau, seed).double()
            errors.append(((f(x) * f(y)).sum(-1) - target) / target)
        return float(torch.cat(errors).square().mean())

    assert mse("oprf") < 0.5 * mse("positive")


def test_orthogonal_rows_are_orthogonal_in_blocks_and_gaussian_in_norm():
    d = 6
    rows = gaussian_rows(600, d, torch.Generator().manual_seed(0), orthogonal=True).double()
    for start in range(0, 600, d):
        block = rows[start : start + d]
        gram = block @ block.T
        off = gram - torch.diag(torch.diagonal(gram))
        assert float(off.abs().max()) < 1e-4 * float(torch.diagonal(gram).max())
    sq_norms = rows.square().sum(dim=1)  # chi-square with d degrees of freedom
    assert abs(float(sq_norms.mean()) - d) < 0.1 * d
    assert abs(float(sq_norms.var()) - 2 * d) < 0.35 * 2 * d
    assert abs(float(rows.mean())) < 0.05


@pytest.mark.parametrize("kind", ["trig", "positive", "oprf"])
def test_orthogonal_features_have_lower_error(kind):
    """Orthogonal rows lower the estimators' mean squared error (Yu et al. 2016)."""
    d, num_features, tau = 8, 64, 1.0
    rng = np.random.default_rng(1)
    x = _unit_vectors(rng, 128, d).float()
    y = _unit_vectors(rng, 128, d).float()
    target = torch.exp((x.double() * y.double()).sum(-1) / tau)

    def mse(orthogonal: bool) -> float:
        errors = []
        for seed in range(40):
            f = make_random_features(kind, d, num_features, tau, seed, orthogonal)
            errors.append((f(x).double() * f(y).double()).sum(-1) - target)
        return float(torch.cat(errors).square().mean())

    assert mse(True) < 0.9 * mse(False)
    with pytest.raises(ValueError, match="kind"):
        make_random_features("cosine", d, num_features)


@pytest.mark.parametrize("kind", ["trig", "positive", "oprf"])
@pytest.mark.parametrize("orthogonal", [False, True])
def test_redraw_gives_the_buffers_of_a_new_module_with_that_seed(kind, orthogonal):
    features = make_random_features(kind, 6, 20, 0.1, seed=3, orthogonal=orthogonal)
    tensors = [id(t) for t in features.buffers()]
    features.redraw(11)
    fresh = make_random_features(kind, 6, 20, 0.1, seed=11, orthogonal=orthogonal)
    assert [id(t) for t in features.buffers()] == tensors  # in place: references stay valid
    for (name, got), want in zip(
        features.state_dict().items(), fresh.state_dict().values(), strict=True
    ):
        assert torch.equal(got, want), name
    x = _unit_vectors(np.random.default_rng(0), 4, 6)
    assert torch.equal(features(x), fresh(x))
    assert features.seed == 11
