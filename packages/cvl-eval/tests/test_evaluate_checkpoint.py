"""`cvl_eval.rollout.checkpoint.evaluate_checkpoint`: which policy a saved learner acts with.

A run trained with ``policy_ema_tau`` > 0 acts with the policy's polyak average;
``trained_policy=True`` acts with the trained policy instead. Both are checked against episodes
run directly with that network on the same seeds, and the flag is refused (one line naming it)
for a learner without an average.
"""

import pytest

from cvl_eval.errors import ConfigError
from cvl_eval.rollout.checkpoint import EvaluateConfig, evaluate_checkpoint
from cvl_eval.rollout.evaluate import evaluate_policy
from cvl_eval.training.config import TrainConfig
from cvl_eval.training.loop import train


def _run(root, data_root, name: str, *overrides: str):
    out = root / name
    config = TrainConfig(
        dataset=str(data_root / "reach-v3"), out_dir=str(out), algorithm="bc", steps=6,
        hidden=(8, 8), batch_size=8, eval_every=0, eval_episodes=1, eval_max_steps=5,
        progress=False, num_threads=1, tensorboard=False, overrides=overrides,
    )  # fmt: skip
    train(config)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_root):
    root = tmp_path_factory.mktemp("runs")
    averaged = _run(root, data_root, "averaged", "policy_ema_tau=0.5", "lr=0.05")
    plain = _run(root, data_root, "plain")
    return averaged, plain


def _returns_of(network, seed: int = 3):
    import torch

    def act(obs):
        with torch.no_grad():
            return network.deterministic(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    return evaluate_policy("reach-v3", act, 2, seed=seed, max_steps=5).returns


def test_average_by_default_trained_on_request(runs, tmp_path):
    from cvl_algos import load_learner

    averaged, _ = runs
    learner = load_learner(averaged / "final", restore_global_rng=False)
    obs = _obs(learner)
    assert not (learner.policy.deterministic(obs) == learner.policy_ema.deterministic(obs)).all()
    for trained, network, name in (
        (False, learner.policy_ema, "average"),
        (True, learner.policy, "trained"),
    ):
        document = evaluate_checkpoint(
            EvaluateConfig(
                checkpoint=str(averaged), episodes=2, seed=3, max_steps=5,
                trained_policy=trained, out=str(tmp_path / f"{name}.json"),
            )  # fmt: skip
        )
        assert document["policy"] == name
        assert tuple(document["returns"]) == tuple(_returns_of(network))


def _obs(learner):
    import torch

    return torch.linspace(-1.0, 1.0, learner.obs_shape[0]).reshape(1, -1)


def test_trained_policy_refused_without_an_average(runs, tmp_path):
    _, plain = runs
    config = EvaluateConfig(checkpoint=str(plain), episodes=1, max_steps=5, trained_policy=True)
    with pytest.raises(ConfigError, match=r"^--trained-policy: .*no policy average"):
        evaluate_checkpoint(config)
    document = evaluate_checkpoint(
        EvaluateConfig(checkpoint=str(plain), episodes=1, max_steps=5, out=str(tmp_path / "p.json"))
    )
    assert document["policy"] == "trained (no average)"
