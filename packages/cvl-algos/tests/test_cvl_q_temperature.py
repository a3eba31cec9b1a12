"""Q read at its own temperature (``CVLConfig.q_temperature``): the tempered self-normalised Q
of eq. 11 against a naive float64 reference and the identity ``exp(phi . psi / tau_Q) =
exp(f)^(tau / tau_Q)``; eq. 12 with the "lse" kernel's exact features at tau_Q equal to that
kernel's direct Q at tau_Q; the critic trains the same
and only the policy step reads tau_Q; tau_Q equal to the critic's trains bit-equal to None; save,
load, act and resume identical; vectorised seeds; the config's one-line refusals."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    assert_learners_equal,  # pants: no-infer-dep
    assert_modules_equal,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    check_vectorised_equals_alone,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    one_line_error,  # pants: no-infer-dep
)
from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_algos import make_learner
from cvl_algos.cvl.q import direct_q_fn, q_rff, xi_zeta_estimate

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_action_samples": 3}
SN = {"temperature": 0.1, "self_normalized": True}
EXACT = {**SN, "critic_kernel": "lse", "rff_kind": "exact", "num_rff_features": 8}


def _naive_tempered_q(logits, reward, ratio, discount) -> list[float]:
    """Per anchor i: sum_j w_ij r_j / sum_j w_ij / (1 - g), w_ij = exp(f_ij)^ratio."""
    out = []
    for row in logits.tolist():
        weights = [math.exp(f) ** ratio for f in row]
        total = sum(w * float(r) for w, r in zip(weights, reward, strict=True))
        out.append(total / sum(weights) / (1.0 - discount))
    return out


def _latents(learner, batch) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        phi = learner.critic.phi(batch.obs_t, batch.action_t).double()
        psi = learner.psi_target(batch.obs_future).double()
    return phi, psi


@settings(max_examples=8, deadline=None)
@given(tau_q=st.sampled_from([0.05, 0.3, 1.0]), seed=st.integers(0, 2**16))
def test_tempered_q_is_the_critics_ratio_raised_to_tau_over_tau_q(tau_q, seed) -> None:
    """The policy step's Q and the readout's, against exp(f)^(tau / tau_Q) in float64, f the
    critic's own logits at its temperature."""
    learner = make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed % 7, **TINY, **SN)
    learner_q = make_learner(
        "cvl_mc", (OBS_DIM,), ACTION_DIM, seed=seed % 7, q_temperature=tau_q, **TINY, **SN
    )
    batch = make_contrastive_batch(seed)
    for module in ("critic", "psi_target"):  # one critic, two ways of reading it
        getattr(learner_q, module).load_state_dict(getattr(learner, module).state_dict())
    phi, psi = _latents(learner, batch)
    logits = phi @ psi.T / 0.1
    naive = torch.tensor(
        _naive_tempered_q(logits, batch.reward_future.double(), 0.1 / tau_q, 0.99),
        dtype=torch.float64,
    )
    readout = learner_q.q_values(
        batch.obs_t, batch.action_t, batch.obs_future, batch.reward_future, "mc"
    )
    torch.testing.assert_close(readout.double(), naive, rtol=2e-4, atol=2e-3)
    q_fn = learner_q._q_fn([learner_q.psi_target(batch.obs_future)], batch.reward_future)
    policy_q = q_fn(batch.obs_t, batch.action_t[None])[0]
    torch.testing.assert_close(policy_q.double(), naive, rtol=2e-4, atol=2e-3)
    plain = direct_q_fn(learner.critic, psi.float(), batch.reward_future, 0.99, True)
    untempered = _naive_tempered_q(logits, batch.reward_future.double(), 1.0, 0.99)
    torch.testing.assert_close(
        plain(batch.obs_t, batch.action_t[None])[0].double(),
        torch.tensor(untempered, dtype=torch.float64),
        rtol=2e-4,
        atol=2e-3,
    )


@pytest.mark.parametrize("tau_q", [0.05, 0.2, 1.0])
def test_exact_features_at_tau_q_equal_the_direct_tempered_q(tau_q) -> None:
    """The "lse" critic's exact features at tau_Q: eq. 12 on a batch's own futures is the
    self-normalised Q of the kernel ``log mean_k exp((phi_k + psi_k) / tau_Q)``, in float64."""
    learner = make_learner(
        "cvl", (OBS_DIM,), ACTION_DIM, seed=1, q_temperature=tau_q, **TINY, **EXACT
    )
    assert learner.rff.temperature == tau_q
    batch = make_contrastive_batch(3)
    phi, psi = _latents(learner, batch)
    reward = batch.reward_future.double()
    xi, zeta = xi_zeta_estimate(learner.rff.double(), psi, reward)
    by_features = q_rff(learner.rff, phi, xi, 0.99, zeta, eps=0.0)
    lse = torch.logsumexp((phi[:, None, :] + psi[None, :, :]) / tau_q, dim=-1) - math.log(8)
    naive = _naive_tempered_q(lse, reward, 1.0, 0.99)  # the "lse" kernel read at tau_Q
    torch.testing.assert_close(by_features, torch.tensor(naive, dtype=torch.float64))


def test_the_critic_trains_the_same_and_only_the_policy_reads_tau_q() -> None:
    """tau_Q equal to the critic's trains bit-equal to None; another tau_Q leaves every critic
    update as it was (the policy's actions are not the critic's negatives here) and moves the
    policy."""
    runs = {
        key: make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, seed=2, **TINY, **SN, **extra)
        for key, extra in (
            ("none", {}),
            ("same", {"q_temperature": 0.1}),
            ("0.5", {"q_temperature": 0.5}),
        )
    }
    for i in range(5):
        batch = make_contrastive_batch(20 + i)
        for learner in runs.values():
            learner.update(batch)
    assert_learners_equal(runs["none"], runs["same"])
    assert_modules_equal(runs["none"].critic, runs["0.5"].critic)
    moved = [
        not torch.equal(a, b)
        for a, b in zip(
            runs["none"].policy.state_dict().values(),
            runs["0.5"].policy.state_dict().values(),
            strict=True,
        )
    ]
    assert any(moved)


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("cvl_mc", {**SN, "q_temperature": 0.3}),
        ("cvl", {**SN, "rff_kind": "positive", "num_rff_features": 64, "q_temperature": 0.3}),
        ("cvl", {**EXACT, "q_temperature": 0.3}),
    ],
)
def test_save_load_act_resume_and_vectorised_seeds(name, overrides, tmp_path) -> None:
    def build(seed: int = 4):
        return make_learner(name, (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **overrides)

    learner = check_save_load_act_resume(build, tmp_path)
    assert learner.config.q_temperature == 0.3
    check_vectorised_equals_alone(build, updates=20)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({**SN, "q_temperature": 0.0}, "q_temperature must be None or a number > 0"),
        ({**SN, "q_temperature": -0.3}, "q_temperature must be None or a number > 0"),
        ({**SN, "q_temperature": True}, "got True"),
        ({"temperature": 0.1, "q_temperature": 0.3}, "self_normalized=False"),
        ({**SN, "learn_temperature": True, "q_temperature": 0.3}, "learn_temperature=True"),
        (
            {**SN, "critic_kernel": "lse", "q_temperature": 0.04},
            "(>= 0.05 with critic_kernel='lse')",
        ),
    ],
)
def test_config_refusals(overrides, needle) -> None:
    message = one_line_error(
        lambda: make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, **{**TINY, **overrides})
    )
    assert needle in message
