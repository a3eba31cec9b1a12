"""Truncated geometric offsets (DESIGN.md sec. 2): pmf identities, sampler vs pmf and reference."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from cvl_data import sample_truncated_geometric, truncated_geometric_pmf

SETTINGS = settings(max_examples=30, deadline=None, database=None)
discounts = st.floats(min_value=0.05, max_value=0.999)
horizons = st.integers(min_value=1, max_value=3000)


@SETTINGS
@given(K=horizons, g=discounts)
def test_pmf_sums_to_one_and_is_zero_outside_support(K, g):
    k = np.arange(-2, K + 4)
    pmf = truncated_geometric_pmf(k, K, g)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-9)
    assert np.all(pmf[(k < 1) | (k > K)] == 0)
    support = pmf[(k >= 1) & (k <= K)]
    assert np.all(np.diff(support) <= 0)  # g^(k-1) falls with k
    # positive wherever g^(k-1) is a normal float; past that it may underflow (0.742^2492 is
    # the smallest subnormal, 0.742^2493 is 0)
    normal = np.exp((np.arange(1, K + 1) - 1) * math.log(g)) > np.finfo(float).tiny
    assert np.all(support[normal] > 0)


@SETTINGS
@given(K=horizons, g=discounts, data=st.data())
def test_pmf_matches_closed_form_and_paper_definition(K, g, data):
    k = data.draw(st.integers(min_value=1, max_value=K))
    closed = (1 - g) * g ** (k - 1) / (1 - g**K)

    # Paper def. 1 with F_X the geometric CDF 1 - g^y: (F(k) - F(k-1)) / F(K).
    def cdf(y):
        return 1 - g**y

    paper = (cdf(k) - cdf(k - 1)) / cdf(K)
    value = float(truncated_geometric_pmf(k, K, g))
    assert math.isclose(value, closed, rel_tol=1e-9, abs_tol=1e-300)
    assert math.isclose(value, paper, rel_tol=1e-6, abs_tol=1e-12)  # cancellation in F(k)-F(k-1)


def test_pmf_hand_computed():
    # g = 0.5, K = 3: weights 1, 1/2, 1/4 normalised by 7/4.
    np.testing.assert_allclose(truncated_geometric_pmf([1, 2, 3], 3, 0.5), [4 / 7, 2 / 7, 1 / 7])
    # broadcasting over K
    np.testing.assert_allclose(truncated_geometric_pmf(1, np.array([1, 2]), 0.5), [1.0, 2 / 3])


@SETTINGS
@given(g=discounts, seed=st.integers(0, 2**31 - 1), n=st.integers(1, 500))
def test_K_equal_one_always_gives_one(g, seed, n):
    assert truncated_geometric_pmf(1, 1, g) == 1.0
    gen = torch.Generator().manual_seed(seed)
    k = sample_truncated_geometric(torch.ones(n, dtype=torch.int64), g, gen)
    assert k.dtype == torch.int64 and torch.equal(k, torch.ones(n, dtype=torch.int64))


@SETTINGS
@given(g=st.floats(min_value=0.05, max_value=0.995))
def test_large_K_mean_tends_to_geometric_mean(g):
    K = 200_000
    k = np.arange(1, K + 1)
    mean = float((k * truncated_geometric_pmf(k, K, g)).sum())
    assert math.isclose(mean, 1 / (1 - g), rel_tol=1e-6)
    # and for large K the pmf is the untruncated geometric's
    np.testing.assert_allclose(truncated_geometric_pmf(k[:50], K, g), (1 - g) * g ** (k[:50] - 1))


def test_large_K_sample_mean_is_one_over_one_minus_discount():
    g, n = 0.99, 200_000
    gen = torch.Generator().manual_seed(123)
    k = sample_truncated_geometric(torch.full((n,), 10**9, dtype=torch.int64), g, gen)
    std_err = math.sqrt(g) / (1 - g) / math.sqrt(n)
    assert abs(k.double().mean().item() - 1 / (1 - g)) < 5 * std_err


@SETTINGS
@given(
    K=st.lists(st.integers(1, 10**9), min_size=1, max_size=300),
    g=discounts,
    seed=st.integers(0, 2**31 - 1),
)
def test_samples_stay_in_one_to_K(K, g, seed):
    K = torch.tensor(K, dtype=torch.int64)
    k = sample_truncated_geometric(K, g, torch.Generator().manual_seed(seed))
    assert k.shape == K.shape and k.dtype == torch.int64
    assert bool((k >= 1).all()) and bool((k <= K).all())


@pytest.mark.parametrize(("K", "g"), [(30, 0.9), (500, 0.99), (8, 0.5)])
def test_sample_frequencies_match_pmf_chi_square(K, g):
    n = 200_000
    gen = torch.Generator().manual_seed(2024)
    k = sample_truncated_geometric(torch.full((n,), K, dtype=torch.int64), g, gen)
    observed = np.bincount(k.numpy(), minlength=K + 1)[1:]
    expected = n * truncated_geometric_pmf(np.arange(1, K + 1), K, g)
    assert chisquare(observed, expected).pvalue > 1e-3
    # the test has power: the same counts reject a slightly different discount
    wrong = n * truncated_geometric_pmf(np.arange(1, K + 1), K, g - 0.03)
    assert chisquare(observed, wrong * n / wrong.sum()).pvalue < 1e-6


def naive_sample(K: list[int], u: list[float], g: float) -> list[int]:
    """Per-sample reference: smallest k whose CDF exceeds u, by walking the pmf."""
    out = []
    for K_i, u_i in zip(K, u, strict=True):
        cdf, k = 0.0, 0
        while k < K_i:
            k += 1
            cdf += (1 - g) * g ** (k - 1) / (1 - g**K_i)
            if cdf > u_i:
                break
        out.append(k)
    return out


@SETTINGS
@given(
    K=st.lists(st.integers(1, 400), min_size=1, max_size=100),
    g=discounts,
    seed=st.integers(0, 2**31 - 1),
)
def test_vectorised_sampler_equals_per_sample_reference(K, g, seed):
    K_t = torch.tensor(K, dtype=torch.int64)
    fast = sample_truncated_geometric(K_t, g, torch.Generator().manual_seed(seed))
    # the sampler's uniforms: the same generator stream, the same call
    u = torch.rand(len(K), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert fast.tolist() == naive_sample(K, u.tolist(), g)


def test_seeded_generator_reproduces_samples():
    K = torch.randint(1, 500, (1000,), generator=torch.Generator().manual_seed(0))
    a = sample_truncated_geometric(K, 0.99, torch.Generator().manual_seed(7))
    b = sample_truncated_geometric(K, 0.99, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)


@pytest.mark.parametrize("g", [0.0, 1.0, -0.5, 1.5])
def test_discount_outside_open_unit_interval_is_refused(g):
    with pytest.raises(ValueError, match="discount"):
        truncated_geometric_pmf(1, 3, g)
    with pytest.raises(ValueError, match="discount"):
        sample_truncated_geometric(torch.ones(3, dtype=torch.int64), g)


def test_float_K_is_refused():
    with pytest.raises(TypeError, match="integer"):
        sample_truncated_geometric(torch.ones(3), 0.9)
