"""torch.compile gives the eager results (CPU here; CUDA too when a GPU is present).

The MLP and the policy go through the full inductor stack (C++ code generation with gcc on
CPU); the critic, TwinQ, IMPALA and RFF through dynamo + AOT autograd (``aot_eager``), which
catches graph breaks and tracing problems without paying for more C++ builds. Tiny networks,
``fullgraph=True`` and no compile worker pool keep this file fast; the inductor cache goes to
a pytest temporary folder.
"""

from __future__ import annotations

import pytest
import torch
import torch._inductor.config as inductor_config
from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

from cvl_models import (
    ContrastiveCritic,
    DenseMLP,
    ImpalaEncoder,
    RandomFourierFeatures,
    TanhGaussianPolicy,
    TwinQ,
    l2_normalize,
)

HIDDEN = (8, 8)


@pytest.fixture(scope="module")
def _inductor_cache(tmp_path_factory: pytest.TempPathFactory):
    """Inductor's on-disk cache lives under pytest's tmp dir (tests write nowhere else)."""
    with temporary_cache_dir(str(tmp_path_factory.mktemp("torchinductor"))):
        yield


@pytest.fixture(autouse=True)
def _single_compile_thread(_inductor_cache):
    with inductor_config.patch(compile_threads=1):
        torch._dynamo.reset()
        yield
        torch._dynamo.reset()


def test_dense_mlp_compiles(device):
    net = DenseMLP(5, 3, HIDDEN).to(device)
    compiled = torch.compile(net, fullgraph=True)
    x = torch.randn(4, 5, device=device)
    torch.testing.assert_close(compiled(x), net(x), rtol=1e-5, atol=1e-5)


def test_policy_compiles(device):
    policy = TanhGaussianPolicy((5,), 2, hidden=HIDDEN).to(device)

    def step(obs: torch.Tensor, action: torch.Tensor):
        action_pi, log_pi = policy.sample(obs, num_samples=3)
        return policy.deterministic(obs), policy.log_prob(obs, action), action_pi, log_pi

    compiled = torch.compile(step, fullgraph=True)
    obs = torch.randn(4, 5, device=device)
    action = torch.rand(4, 2, device=device) * 2 - 1
    det, log_prob, action_pi, log_pi = compiled(obs, action)
    torch.testing.assert_close(det, policy.deterministic(obs), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(log_prob, policy.log_prob(obs, action), rtol=1e-4, atol=1e-4)
    assert action_pi.shape == (3, 4, 2) and log_pi.shape == (3, 4)
    assert (action_pi.abs() < 1).all()
    # the sampled log-probs are those of the sampled actions
    expected = policy.log_prob(obs, action_pi)
    torch.testing.assert_close(log_pi, expected, rtol=1e-3, atol=1e-3)


def test_critic_and_twin_q_compile(device):
    critic = ContrastiveCritic((5,), 2, latent_dim=4, hidden=HIDDEN).to(device)
    twin = TwinQ((5,), 2, hidden=HIDDEN).to(device)

    def step(obs, action, future):
        q1, q2 = twin(obs, action)
        return critic.logits(obs, action, future), q1, q2

    def loss_and_grads(fn, obs, action, future):
        logits, q1, q2 = fn(obs, action, future)
        loss = (torch.logsumexp(logits, 1) - logits.diagonal()).mean() + (q1 - q2).square().mean()
        params = [*critic.parameters(), *twin.parameters()]
        return [logits, q1, q2, *torch.autograd.grad(loss, params)]

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    obs, future = torch.randn(4, 5, device=device), torch.randn(4, 5, device=device)
    action = torch.rand(4, 2, device=device)
    got = loss_and_grads(compiled, obs, action, future)
    want = loss_and_grads(step, obs, action, future)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_impala_and_rff_compile_over_batch_sizes(device):
    encoder = ImpalaEncoder((32, 32, 3), out_dim=8).to(device)
    rff = RandomFourierFeatures(8, 16, seed=1).to(device)

    def features(obs):
        return rff(l2_normalize(encoder(obs)))

    compiled = torch.compile(features, fullgraph=True, backend="aot_eager")
    for batch in [2, 3]:  # the second batch size recompiles with a dynamic batch dim
        obs = torch.randint(0, 256, (batch, 32, 32, 3), dtype=torch.uint8, device=device)
        torch.testing.assert_close(compiled(obs), features(obs), rtol=1e-5, atol=1e-5)
