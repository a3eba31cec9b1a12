"""`cvl_models.noise`: the global RNG's draws by default, a source's inside `noise_source`."""

import torch
from einops import rearrange
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_models.noise import noise_source, observation_seed, standard_normal, uniform
from cvl_models.policy import sample_tanh_gaussian


def test_draws_equal_torch_global_rng():
    torch.manual_seed(7)
    want = (torch.randn(3, 4), torch.rand(2, 5, dtype=torch.float64))
    torch.manual_seed(7)
    got = (standard_normal((3, 4)), uniform((2, 5), dtype=torch.float64))
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w) and g.dtype == w.dtype


class Constant:
    def __init__(self, value: float) -> None:
        self.value, self.asked = value, []

    def draw(self, kind, shape, dtype, device):
        self.asked.append((kind, shape, dtype))
        return torch.full(shape, self.value, dtype=dtype, device=device)


def test_source_serves_draws_and_is_restored_on_exit():
    outer, inner = Constant(1.0), Constant(2.0)
    mean, log_std = torch.zeros(3, 2), torch.zeros(3, 2)
    with noise_source(outer):
        with noise_source(inner):
            action, _ = sample_tanh_gaussian(mean, log_std, 4)  # u = 0 + 1 * 2
        assert inner.asked == [("normal", (4, 3, 2), torch.float32)]
        assert torch.allclose(action, torch.tanh(torch.tensor(2.0)).expand(4, 3, 2))
        assert uniform((2,)).tolist() == [1.0, 1.0]
    torch.manual_seed(0)
    want = torch.rand(2)
    torch.manual_seed(0)
    assert torch.equal(uniform((2,)), want)  # no source left behind


@settings(max_examples=25, deadline=None)
@given(
    values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=12),
    salt=st.integers(0, 2**31),
)
def test_observation_seed_is_a_function_of_the_observation_and_the_salt(
    values: list[float], salt: int
) -> None:
    obs = torch.tensor(values, dtype=torch.float32)
    seed = observation_seed(obs, salt)
    assert 0 <= seed < 2**63
    assert observation_seed(obs.clone(), salt) == seed  # values, not identity
    assert observation_seed(obs, salt + 1) != seed
    changed = obs.clone()
    changed[0] = changed[0] + 1.0 if abs(float(changed[0])) < 1e3 else 0.5
    assert observation_seed(changed, salt) != seed
    assert observation_seed(rearrange(obs, "n -> 1 n"), salt) != seed  # the shape counts
    assert observation_seed(obs.double(), salt) != seed  # so does the dtype


def test_observation_seed_reads_any_dtype_and_layout() -> None:
    pixels = torch.arange(2 * 3 * 4, dtype=torch.uint8).reshape(2, 3, 4)
    transposed = pixels.transpose(0, 2)  # not contiguous: read by value
    assert observation_seed(transposed, 0) == observation_seed(transposed.contiguous(), 0)
    assert observation_seed(pixels.bfloat16(), 0) != observation_seed(pixels.float(), 0)
