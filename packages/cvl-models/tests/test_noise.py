"""`cvl_models.noise`: the global RNG's draws by default, a source's inside `noise_source`."""

import torch

from cvl_models.noise import noise_source, standard_normal, uniform
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
