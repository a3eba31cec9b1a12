"""Every paper preset's settings build valid learner configs, and each CVL switch reaches
exactly the presets its measurements cover (`cvl_eval.pipelines.preset_settings`)."""

from __future__ import annotations

import pytest

from cvl_algos import learner_class
from cvl_eval.pipelines.paper import sweep_config
from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig, resolve
from cvl_eval.pipelines.sweep_plan import scoped_overrides, sweep_variants
from cvl_eval.training.overrides import typed_overrides

# the presets whose CVL without RFF takes the critic's action-contrast term, the return weights
# and the neighbourhood cap (MIXED_OVERRIDES)
ACTION_CONTRAST = {"mixed", "hard", "metaworld_states"}


def _configs(experiment, tmp_path):
    """{learner: its config as the preset's sweep builds it} (no task defaults)."""
    config = PaperConfig(experiment=experiment, out_dir=str(tmp_path))
    sweep = sweep_config(resolve(config), config)
    variants = sweep_variants()
    learners = {variants[name].algorithm for name in sweep.algorithms}
    out = {}
    for learner, items in scoped_overrides(sweep.overrides, learners).items():
        config_cls = learner_class(learner).config_cls
        out[learner] = config_cls(**typed_overrides(config_cls, items, learner))
    return out


@pytest.mark.parametrize("experiment", sorted(PRESETS))
def test_each_preset_builds_its_learners_configs(experiment, tmp_path):
    configs = _configs(experiment, tmp_path)  # a config refuses what it cannot run, here
    assert set(configs) == {sweep_variants()[n].algorithm for n in PRESETS[experiment].algorithms}
    for learner, config in configs.items():  # return weights: weighted BC's and CVL's alone
        weights = getattr(config, "return_weight_temperature", None)
        if learner == "weighted_bc":  # its screen's T = 0.1 and baseline, and filtered BC's average
            assert experiment in {"mixed", "hard"}
            assert (weights, config.return_weight_baseline) == (0.1, "start_state")
            assert config.policy_ema_tau == 0.001 and config.lr == 1e-3
        elif learner == "cvl_mc" and experiment in ACTION_CONTRAST:
            assert (weights, config.return_weight_baseline) == (0.2, "start_state")
            assert config.return_weight_scope == "all"
        else:
            assert weights is None, learner
    cvl_mc = configs.get("cvl_mc")
    if cvl_mc is None:
        return
    if experiment in ACTION_CONTRAST:
        assert cvl_mc.action_contrast_weight == 1.0
        assert cvl_mc.action_contrast_source == "policy_uniform"
        assert cvl_mc.sampler_mode == "uniform"
        assert cvl_mc.bc_q_cap and cvl_mc.bc_q_cap_neighbours == 8
    else:
        assert cvl_mc.action_contrast_weight == 0.0
        assert not cvl_mc.bc_q_cap and cvl_mc.bc_q_cap_neighbours == 0
