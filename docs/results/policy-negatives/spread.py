"""Where Q's weight goes on stitched plate-slide's approach (a diagnosis after the sixth
amendment, no plan's reading). At the data's approach states (`return-weighting/rollout.py`'s
`approach_states`: episodes from the task's reset, steps before the hand comes within 0.10 of
the puck), the first critic's self-normalised weights over 4096 futures drawn from the data (the
draw `q_function` uses) for the data's action and for the acting policy's, and per checkpoint:

- the effective number of futures each action's weights rest on, ``1 / sum_j w_j^2``;
- the weight on the futures where the puck is within 0.07 of the goal (plate-slide's success);
- the weight on the futures of the anchor's own neighbourhood: hand within 0.10 of the anchor's;
- Q (the learner's, the minimum over its critics) of both actions, and the Q of flat weights
  (every future alike: the mean arrival reward over the draw, / (1 - discount));
- the first critic's log partition ``D = logsumexp_j f_j - log M`` of each action
  (`cvl_algos.cvl.q.log_density_ratio_from_latents`), its self-normalised Q ``Q_sn``, the gated
  Q ``Q_sn(s, a) sigmoid(D(s, a) - D(s, a_data))`` (``q_support_gate``,
  `cvl_algos.cvl.q.gated_q_from_latents`; the data's own action gets ``Q_sn / 2``) and the
  density-weighted Q ``Q_sn(s, a) exp(D(s, a) - D(s, a_data))`` (the plain eq. 11 rescaled per
  state by the data action's partition), means over the states.

argv: DATASET OUT.json LABEL=CHECKPOINT... (a run's final/ folder); prints one line per
checkpoint and writes OUT.json atomically."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

from cvl_algos import load_learner
from cvl_data import open_dataset
from cvl_eval.analysis.critic_diagnostics import _data_futures, q_function
from cvl_models import kernel_logits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "return-weighting"))
from rollout import approach_states  # noqa: E402  (the same states as rollout.py's)

FUTURES = 4096
GOAL = 0.07  # plate-slide's success threshold on the puck-goal distance
NEAR = 0.10  # the hand's distance that makes a future the anchor's neighbourhood


def weights(
    learner, obs: np.ndarray, action: np.ndarray, obs_future
) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) softmax weights of the first critic over the futures and (N,) its log partition."""
    critic = learner.critic
    with torch.no_grad():
        phi = critic.phi(learner.obs_tensor(obs), torch.as_tensor(action).float())
        psi = learner.psi_target(obs_future)
        logits = kernel_logits(phi, psi, critic.temperature, critic.kernel).double()
        log_partition = torch.logsumexp(logits, dim=1) - np.log(logits.shape[1])
        return torch.softmax(logits, dim=1).numpy(), log_partition.numpy()


def row(path: str, data, obs: np.ndarray, data_actions: np.ndarray) -> dict:
    learner = load_learner(path, device="cpu", restore_global_rng=False)
    batch = _data_futures(learner, data, FUTURES, 0)
    future = batch.obs_future.cpu().numpy()
    at_goal = np.linalg.norm(future[:, 4:7] - future[:, 36:39], axis=1) < GOAL
    near = np.linalg.norm(obs[:, None, 0:3] - future[None, :, 0:3], axis=-1) < NEAR
    q = q_function(learner, data)
    flat = float(batch.reward_future.double().mean()) / (1.0 - learner.config.discount)
    policy = learner.act(obs, deterministic=True).astype(np.float32)
    reward = batch.reward_future.double().numpy() / (1.0 - learner.config.discount)
    out = {"approach_states": len(obs), "q_flat_weights": round(flat, 1)}
    partitions = {}
    for name, action in (("data", data_actions), ("policy", policy)):
        w, partitions[name] = weights(learner, obs, action, batch.obs_future)
        out[name] = {
            "effective_futures": round(float(np.mean(1.0 / np.sum(w**2, axis=1))), 1),
            "weight_at_goal": round(float(np.mean(w[:, at_goal].sum(axis=1))), 3),
            "weight_near_anchor": round(float(np.mean(np.sum(w * near, axis=1))), 3),
            "q": round(float(np.mean(q(obs, action))), 1),
            "log_partition": round(float(np.mean(partitions[name])), 3),
            "q_first_critic": round(float(np.mean(w @ reward)), 1),
        }
        gap = partitions[name] - partitions["data"]  # 0 for the data's action
        gate = 1.0 / (1.0 + np.exp(-gap))
        out[name]["q_gated"] = round(float(np.mean((w @ reward) * gate)), 1)
        out[name]["q_density_weighted"] = round(float(np.mean((w @ reward) * np.exp(gap))), 1)
    return out


if __name__ == "__main__":
    dataset, out, *labelled = sys.argv[1:]
    data = open_dataset(dataset, verify=True)
    obs, data_actions = approach_states(data)
    result = {"dataset": dataset, "futures": FUTURES, "checkpoints": {}}
    for item in labelled:
        label, _, path = item.partition("=")
        if not path:
            raise SystemExit(f"expected LABEL=CHECKPOINT, got {item!r}")
        result["checkpoints"][label] = entry = {"path": path, **row(path, data, obs, data_actions)}
        print(label, json.dumps(entry), flush=True)
    with open(out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(out + ".tmp", out)
