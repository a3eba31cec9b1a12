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
from cvl_algos.cvl.q import (
    gated_q_from_latents,
    log_density_ratio_from_latents,
    q_direct_from_latents,
)
from cvl_data import open_dataset
from cvl_eval.analysis.critic_diagnostics import _data_futures, q_function
from cvl_models import kernel_logits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "return-weighting"))
from rollout import approach_states  # noqa: E402  (the same states as rollout.py's)

FUTURES = 4096
GOAL = 0.07  # plate-slide's success threshold on the puck-goal distance
NEAR = 0.10  # the hand's distance that makes a future the anchor's neighbourhood


def latents(learner, obs: np.ndarray, action: np.ndarray) -> torch.Tensor:
    """(N, d) float64 features phi(s, a) of the first critic."""
    with torch.no_grad():
        action_t = torch.as_tensor(action).float()
        return learner.critic.phi(learner.obs_tensor(obs), action_t).double()


def row(path: str, data, obs: np.ndarray, data_actions: np.ndarray) -> dict:
    learner = load_learner(path, device="cpu", restore_global_rng=False)
    critic, discount = learner.critic, learner.config.discount
    batch = _data_futures(learner, data, FUTURES, 0)
    future = batch.obs_future.cpu().numpy()
    at_goal = np.linalg.norm(future[:, 4:7] - future[:, 36:39], axis=1) < GOAL
    near = np.linalg.norm(obs[:, None, 0:3] - future[None, :, 0:3], axis=-1) < NEAR
    q = q_function(learner, data)
    reward = batch.reward_future.double()
    flat = float(reward.mean()) / (1.0 - discount)
    policy = learner.act(obs, deterministic=True).astype(np.float32)
    with torch.no_grad():
        psi = learner.psi_target(batch.obs_future).double()
    temperature, kernel = critic.temperature, critic.kernel
    actions = {"data": data_actions, "policy": policy}
    phis = {name: latents(learner, obs, action) for name, action in actions.items()}
    ds = {
        name: log_density_ratio_from_latents(phi, psi, temperature, kernel)
        for name, phi in phis.items()
    }
    phi_data, d_data = phis["data"], ds["data"]
    out = {"approach_states": len(obs), "q_flat_weights": round(flat, 1)}
    for name, action in actions.items():
        phi, d = phis[name], ds[name]
        w = torch.softmax(kernel_logits(phi, psi, temperature, kernel), dim=1).numpy()
        q_sn = q_direct_from_latents(
            phi, psi, reward, discount, temperature, self_normalized=True, kernel=kernel
        )
        gated = gated_q_from_latents(phi, phi_data, psi, reward, discount, temperature, kernel)
        out[name] = {
            "effective_futures": round(float(np.mean(1.0 / np.sum(w**2, axis=1))), 1),
            "weight_at_goal": round(float(np.mean(w[:, at_goal].sum(axis=1))), 3),
            "weight_near_anchor": round(float(np.mean(np.sum(w * near, axis=1))), 3),
            "q": round(float(np.mean(q(obs, action))), 1),
            "log_partition": round(float(d.mean()), 3),
            "q_first_critic": round(float(q_sn.mean()), 1),
            "q_gated": round(float(gated.mean()), 1),
            "q_density_weighted": round(float((q_sn * torch.exp(d - d_data)).mean()), 1),
        }
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
