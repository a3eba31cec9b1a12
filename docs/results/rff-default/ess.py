"""How many terms a Q estimate rests on: the effective sample size of the self-normalised weights
of the random-feature estimator (eq. 12) and of the direct one (eq. 11), on trained CVL critics.

The self-normalised random-feature Q is ``Q(x) = sum_k F_k(x) xi_k / sum_k F_k(x) zeta_k``, a
weighted mean over features k of ``xi_k / zeta_k`` with weights ``pi_k(x) = F_k(x) zeta_k /
sum_k F_k(x) zeta_k``; the direct Q is a weighted mean over futures j of their rewards with
weights ``softmax_j(phi(x) . psi_j / tau)``. The effective sample size of weights p is ``1 /
sum p^2`` (Kish): how many equally weighted terms carry the same variance. For each run: 1024
anchors and 4096 futures drawn from its own data (`ContrastiveSampler`, seed 0); per anchor the
ESS of the direct weights over those futures, of the run's own features (its stored zeta; runs of
the random-feature estimator), and
of fresh draws of D positive features (seeds 1-3) with zeta from the same futures; the medians
over the anchors, and the median largest single weight. And the same latents read at the milder
kernel temperatures 0.3 and 1 (the critic was trained at 0.1): the direct weights and one draw
(seed 1) of 4096 positive features at each.

argv: OUT.json DATASET:RUN... (a run folder with final/); prints one line per run."""

import json
import os
import sys

import torch

from cvl_algos import load_learner
from cvl_data import ContrastiveSampler, open_dataset
from cvl_models.rff import make_random_features

ANCHORS, FUTURES, FRESH, MILDER = 1024, 4096, (4096, 16384, 65536), (0.3, 1.0)


def ess_and_top(weights):
    """(B, K) rows summing to 1 -> medians over rows of 1/sum p^2 and of max p."""
    ess = 1.0 / (weights**2).sum(dim=1)
    return round(float(ess.median()), 1), round(float(weights.max(dim=1).values.median()), 3)


def feature_weights(rff, phi, zeta):
    """pi_k(x) of the module docstring, (B, D)."""
    unnormalised = rff(phi) * zeta[None, :]
    return unnormalised / unnormalised.sum(dim=1, keepdim=True)


@torch.no_grad()
def run_row(dataset, run):
    learner = load_learner(os.path.join(run, "final"), device="cpu", restore_global_rng=False)
    cfg = learner.config
    data = open_dataset(dataset, verify=True)
    batch = ContrastiveSampler(
        data, FUTURES, discount=cfg.discount, device="cpu", mode="uniform", seed=0
    ).sample()
    obs, action = learner.obs_tensor(batch.obs_t[:ANCHORS]), batch.action_t[:ANCHORS].float()
    phi = learner.critic.phi(obs, action)
    psi = learner.psi_target(learner.obs_tensor(batch.obs_future))
    row = {"temperature": cfg.temperature, "latent_dim": cfg.latent_dim}
    direct = torch.softmax(phi @ psi.T / learner.critic.temperature, dim=1)
    row["direct_4096_futures"] = ess_and_top(direct)
    if cfg.q_estimator == "rff":  # a direct-estimator run keeps no zeta
        own = feature_weights(learner.rff, phi, learner.xi_state.zeta)
        row[f"own_features_{cfg.num_rff_features}"] = ess_and_top(own)
    for size in FRESH:
        draws = []
        for seed in (1, 2, 3):
            rff = make_random_features("positive", cfg.latent_dim, size, cfg.temperature, seed)
            draws.append(ess_and_top(feature_weights(rff, phi, rff(psi).mean(dim=0))))
        row[f"fresh_positive_{size}"] = [list(d) for d in draws]
    for tau in MILDER:
        rff = make_random_features("positive", cfg.latent_dim, 4096, tau, 1)
        row[f"at_temperature_{tau}"] = {
            "direct_4096_futures": ess_and_top(torch.softmax(phi @ psi.T / tau, dim=1)),
            "fresh_positive_4096": ess_and_top(feature_weights(rff, phi, rff(psi).mean(dim=0))),
        }
    return row


if __name__ == "__main__":
    out, *pairs = sys.argv[1:]
    result = {
        "anchors": ANCHORS,
        "futures": FUTURES,
        "columns": "[median ESS, median top weight]",
        "runs": {},
    }
    for pair in pairs:
        dataset, run = pair.split(":")
        result["runs"][run] = row = run_row(dataset, run)
        print(run, row, flush=True)
    with open(out + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(out + ".tmp", out)
