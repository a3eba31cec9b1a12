"""Env names are settled once, where they enter: a command's config makes a task canonical, and
the code inside takes it as given (refusing any other spelling) instead of deriving it again."""

import sys
from contextlib import contextmanager

import pytest

from cvl_eval.datagen.dispatch import GenerateConfig, check_generate, generate_datasets
from cvl_eval.envs import make
from cvl_eval.envs.defaults import env_defaults
from cvl_eval.envs.make import ENV_NAMES, MOUNTAIN_CAR, check_camera, is_metaworld
from cvl_eval.errors import ConfigError
from cvl_eval.pipelines.paper_presets import PRESETS, PaperConfig, resolve
from cvl_eval.pipelines.quickstart import QuickstartConfig
from cvl_eval.pipelines.sweep import SweepConfig
from cvl_eval.rollout.checkpoint import EvaluateConfig
from cvl_eval.training.config import TrainConfig


@contextmanager
def canonical_name_calls():
    """Every real call of `canonical_name` in this thread while open: (caller, name) pairs."""
    calls: list[tuple[str, str]] = []
    code = make.canonical_name.__code__

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append((frame.f_back.f_code.co_name, frame.f_locals["name"]))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(previous)


def test_every_command_config_makes_its_tasks_canonical():
    assert GenerateConfig(tasks=("reach", MOUNTAIN_CAR)).tasks == ("reach-v3", MOUNTAIN_CAR)
    assert SweepConfig("d", "o", tasks=("reach", "push-v3")).tasks == ("reach-v3", "push-v3")
    assert TrainConfig("d", "o", task="reach").task == "reach-v3"
    assert TrainConfig("d", "o").task is None
    assert QuickstartConfig(task="reach").task == "reach-v3"
    assert PaperConfig(experiment="metaworld_states", tasks=("reach",)).tasks == ("reach-v3",)
    assert EvaluateConfig(checkpoint="c", task="reach").task == "reach-v3"
    # a preset's own tasks are canonical too, as the budget holds them
    for preset in PRESETS.values():
        for budget in (preset.default, preset.full):
            assert budget.tasks == ("__all__",) or set(budget.tasks) <= set(ENV_NAMES)


def test_an_unknown_task_is_kept_for_the_command_to_refuse_in_one_line():
    config = GenerateConfig(tasks=("raech",))
    assert config.tasks == ("raech",)
    with pytest.raises(ConfigError, match="unknown environment 'raech'"):
        check_generate(config)
    with pytest.raises(ConfigError, match="unknown environment 'raech'"):
        resolve(PaperConfig(experiment="metaworld_states", tasks=("raech",)))


@pytest.mark.parametrize(
    "call",
    [
        lambda: is_metaworld("reach"),
        lambda: make.short_task_name("reach"),
        lambda: env_defaults("mountaincar"),
        lambda: env_defaults("reach"),
        lambda: check_camera("reach", "corner"),
        lambda: make.require_canonical("drawer-open"),
    ],
)
def test_inner_functions_refuse_a_name_that_is_not_canonical(call):
    with pytest.raises(ValueError, match="canonical environment name|unknown environment"):
        call()


def test_generate_derives_the_canonical_task_once_at_its_config(tmp_path):
    with canonical_name_calls() as at_the_door:
        config = GenerateConfig(
            tasks=("reach",), out_dir=str(tmp_path), episodes=1, max_steps=5, progress=False
        )
    assert at_the_door == [("config_name", "reach")]  # GenerateConfig.__post_init__
    with canonical_name_calls() as inside:
        log = generate_datasets(config)
    assert log["reach-v3"]["episodes"] == 1
    assert inside, "the generation ran in this thread and built its configs"
    derived = [(caller, name) for caller, name in inside if name not in ENV_NAMES]
    assert derived == []  # every call inside was handed a canonical name: nothing re-derived
