"""Random features redrawn every update (``rff_redraw``): each update's features are the draw
of its seed and step, xi and zeta are that batch's own estimate under them, a resumed run draws
what an uninterrupted one drew, and the config and vectorised seeds refuse what they cannot do."""

from __future__ import annotations

import torch
from conftest import (  # pants: no-infer-dep
    ACTION_DIM,  # pants: no-infer-dep
    OBS_DIM,  # pants: no-infer-dep
    check_save_load_act_resume,  # pants: no-infer-dep
    make_contrastive_batch,  # pants: no-infer-dep
    one_line_error,  # pants: no-infer-dep
)

from cvl_algos import make_learner
from cvl_algos.cvl.learner import redraw_seed
from cvl_algos.cvl.q import xi_zeta_estimate
from cvl_models.rff import make_random_features

TINY = {"hidden": (32, 32), "latent_dim": 8, "num_rff_features": 64, "num_action_samples": 3}
REDRAW = {
    "rff_redraw": True,
    "beta_xi": 0.0,
    "rff_kind": "positive",
    "temperature": 0.1,
    "self_normalized": True,
    "policy_extraction": "ddpgbc",
}


def _learner(seed: int = 0, **extra):
    return make_learner("cvl", (OBS_DIM,), ACTION_DIM, seed=seed, **TINY, **{**REDRAW, **extra})


def test_each_update_draws_its_features_and_xi_is_that_batchs_estimate():
    learner = _learner(seed=2)
    seen = []
    for step in range(3):
        batch = make_contrastive_batch(step)
        learner.update(batch)
        want = make_random_features("positive", 8, 64, 0.1, seed=redraw_seed(2, step))
        assert torch.equal(learner.rff.W, want.W)
        with torch.no_grad():
            psi = learner.psi_target(batch.obs_future)
            xi, zeta = xi_zeta_estimate(learner.rff, psi, batch.reward_future)
        torch.testing.assert_close(learner.xi_state.xi, xi)
        torch.testing.assert_close(learner.xi_state.zeta, zeta)
        seen.append(learner.rff.W.clone())
    assert not torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])


def test_without_redraw_the_features_stay():
    learner = _learner(rff_redraw=False)
    start = learner.rff.W.clone()
    for step in range(3):
        learner.update(make_contrastive_batch(step))
    assert torch.equal(learner.rff.W, start)


def test_seeds_draw_different_features():
    assert redraw_seed(0, 5) != redraw_seed(1, 5) and redraw_seed(0, 5) != redraw_seed(0, 6)


def test_save_load_act_and_resume_identical(tmp_path) -> None:
    check_save_load_act_resume(lambda: _learner(seed=4), tmp_path)


def test_refusals() -> None:
    message = one_line_error(lambda: _learner(beta_xi=0.99))
    assert "rff_redraw=True" in message and "beta_xi=0" in message
    message = one_line_error(
        lambda: make_learner("cvl_mc", (OBS_DIM,), ACTION_DIM, rff_redraw=True, beta_xi=0.0)
    )
    assert "q_estimator='rff'" in message
    from cvl_algos.vectorised import VectorisedLearner

    message = one_line_error(lambda: VectorisedLearner([_learner(0), _learner(1)]))
    assert "rff_redraw" in message
