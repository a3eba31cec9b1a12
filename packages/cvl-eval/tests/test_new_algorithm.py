"""Adding an algorithm is cvl-algos code plus one registry line: a toy learner defined here, in the
test, is validated, trained (with its pretraining phase), checkpointed, resumed and evaluated by
the real trainer, and offered by the sweep, from its declarations alone."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from cvl_algos import ALGORITHMS, load_learner, register
from cvl_algos.pretraining import PretrainingLearner
from cvl_eval.errors import ConfigError, TrainingStopped
from cvl_eval.pipelines.sweep import SweepConfig, expand, sweep_variants
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train
from cvl_models import TanhGaussianPolicy


@dataclass(frozen=True)
class ToyConfig:
    """The toy learner's hyperparameters."""

    lr: float = 1e-2
    """Adam learning rate."""
    batch_size: int = 8
    """Transitions per update."""
    max_grad_norm: float = 100.0
    """Gradient-norm clip."""
    hidden: tuple[int, ...] = (8,)
    """Policy widths."""
    pretrain_steps: int = 3
    """Default length of the pretraining phase."""
    compile: bool = False
    """Unused."""


class ToyLearner(PretrainingLearner):
    """Maximum likelihood of the data's actions; pretraining is the same step on related data.
    It needs no rewards and shows its loss on the progress bar."""

    name = "toy"
    config_cls = ToyConfig
    needs_rewards = False
    pretraining = "related_tasks"
    progress_metrics = ("toy_loss",)

    def __init__(self, obs_shape, action_dim, config=None, device="cpu", seed=0) -> None:
        super().__init__(obs_shape, action_dim, config, device, seed)
        with self.rng_scope():
            self.policy = TanhGaussianPolicy(self.obs_shape, self.action_dim, self.config.hidden)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=self.config.lr)

    def state_modules(self):
        return {"policy": self.policy}

    def state_optimizers(self):
        return {"policy": self.optimizer}

    def _train_step(self, batch):
        loss = -self.policy.log_prob(batch.obs, batch.action).mean()
        return {
            "toy_loss": loss.detach(),
            "grad_norm": self.clip_and_step(self.optimizer, loss, self.policy),
        }

    def _pretrain_step(self, batch):
        return self._train_step(batch)


@pytest.fixture(scope="module")
def toy():
    register("toy", ToyLearner)  # the one registry line
    yield
    del ALGORITHMS["toy"]


def _config(data_root, out, **kw):
    base = dict(
        dataset=str(data_root / "reach-v3"),
        out_dir=str(out),
        algorithm="toy",
        steps=6,
        pretrain_datasets=(str(data_root / "reach-wall-v3"),),
        log_every=2,
        eval_every=3,
        eval_episodes=1,
        eval_max_steps=5,
        checkpoint_every=2,
        progress=False,
        tensorboard=False,
    )
    return TrainConfig(**{**base, **kw})


def test_a_toy_learner_trains_pretrains_resumes_and_evaluates_through_the_trainer(
    toy, data_root, tmp_path
):
    whole = train(_config(data_root, tmp_path / "whole"))
    assert whole["label"] == "toy_pretrained" and whole["algorithm"] == "toy"
    assert (whole["pretrain_steps"], whole["steps"]) == (3, 6)
    assert [e["step"] for e in whole["curve"]] == [3, 6]
    assert np.isfinite(whole["final_eval"]["mean_return"])

    out = tmp_path / "stopped"
    with pytest.raises(TrainingStopped):  # a graceful stop during pretraining, then resume
        train(_config(data_root, out), callback=lambda info: info.update == 2)
    resumed = train(_config(data_root, out, resume=True))
    assert resumed["final_eval"]["returns"] == whole["final_eval"]["returns"]
    a, b = load_learner(tmp_path / "whole" / "final"), load_learner(out / "final")
    assert type(a) is ToyLearner and (b.step, b.pretrain_steps) == (6, 3)
    for key, value in a.policy.state_dict().items():
        assert torch.equal(value, b.policy.state_dict()[key]), key


def test_the_toy_learners_declarations_drive_validation_and_the_sweep(toy, data_root, tmp_path):
    plain = train(_config(data_root, tmp_path / "plain", pretrain_datasets=(), steps=2))
    assert plain["label"] == "toy" and plain["pretrain_steps"] == 0
    variants = sweep_variants()
    assert variants["toy"].algorithm == variants["toy_pretrained"].algorithm == "toy"
    grid = SweepConfig(
        str(data_root), str(tmp_path / "sweep"), ("toy_pretrained",), ("reach",), (0,)
    )
    (run,) = expand(grid)
    assert run.config.pretrain_datasets == (str(data_root / "reach-wall-v3"),)
    with pytest.raises(ConfigError, match="toy has no pretraining phase with this data"):
        train(_config(data_root, tmp_path / "bad", pretrain_datasets=(), pretrain_steps=2))
