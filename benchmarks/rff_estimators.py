"""How well random features reproduce a trained CVL critic's direct Q (eq. 11 vs eq. 12).

For a trained CVL checkpoint and its dataset: draw ``--anchors`` data pairs (s, a) and
``--futures`` future states with their arrival rewards (the contrastive sampler), compute the
direct Q of eq. 11 over those futures (self-normalised if the run's config is), then the same Q
through random features, ``Q = F(phi) . xi (/ F(phi) . zeta)`` with ``xi = mean_j F(psi_j) r_j``
over the same futures (eq. 12 with xi estimated from one pool, no EMA), for each feature kind
(trigonometric, the paper's lemma 1; positive, FAVOR+), plain or orthogonal, and each number of
features. Prints, per estimator, the Spearman correlation with the direct Q, the median relative
error and the share of negative Q estimates (rewards are >= 0, so a negative Q is an estimator
failure), averaged over ``--repeats`` feature draws, and the correlation ratio against the
trigonometric features at the same D. DESIGN.md sec. 2, "How many random features a
temperature needs", gives the error laws this measures.

    ./pants run benchmarks/rff_estimators.py -- --run runs/cvl_mc/drawer-open-v3/seed_0 \\
        --dataset data/drawer-open-v3 [--temperature 0.1] [--out rff.json]

``--temperature`` evaluates the critic's latents at another temperature than it was trained at
(the kernel exp(phi.psi / T)), to see where each estimator breaks down; by default the critic's
own (a learned one for ``learn_temperature`` runs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from cvl_algos import load_learner
from cvl_algos.cvl.q import q_direct_from_latents, q_rff, xi_estimate, xi_zeta_estimate
from cvl_data import ContrastiveSampler, open_dataset
from cvl_data.jsonio import write_json_atomic
from cvl_eval.analysis.critic_diagnostics import resolve_checkpoint
from cvl_models.rff import make_random_features


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="run folder or checkpoint folder")
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--anchors", type=int, default=2048)
    parser.add_argument("--futures", type=int, default=4096)
    parser.add_argument("--features", type=int, nargs="+", default=[512, 1024, 4096, 16384])
    parser.add_argument("--repeats", type=int, default=3, help="independent feature draws")
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, metavar="FILE.json")
    return parser.parse_args()


def checkpoint_dir(run: Path) -> Path:
    """``--run``'s checkpoint (`resolve_checkpoint`), or a one-line exit naming the flag."""
    try:
        return resolve_checkpoint(run)
    except FileNotFoundError as error:
        raise SystemExit(f"--run: {error}") from None


@torch.no_grad()
def latents(learner, dataset, anchors: int, futures: int, seed: int):
    """phi of data pairs (anchors, d), psi_target of future states (futures, d), their rewards."""
    sampler = ContrastiveSampler(
        dataset, max(anchors, futures), discount=learner.config.discount, mode="uniform", seed=seed
    )
    batch = sampler.sample()
    phi = learner.critic.phi(batch.obs_t[:anchors], batch.action_t[:anchors])
    psi = learner.psi_target(batch.obs_future[:futures])
    return phi, psi, batch.reward_future[:futures].float()


def compare(phi, psi, reward, temperature, self_normalized, kinds, features, repeats, discount):
    direct = q_direct_from_latents(phi, psi, reward, discount, temperature, self_normalized)
    rows = []
    for num in features:
        for kind, orthogonal in kinds:
            stats = []
            for rep in range(repeats):
                f = make_random_features(kind, phi.shape[1], num, temperature, rep, orthogonal)
                if self_normalized:
                    xi, zeta = xi_zeta_estimate(f, psi, reward)
                else:
                    xi, zeta = xi_estimate(f, psi, reward), None
                approx = q_rff(f, phi, xi, discount, zeta)
                rho = spearmanr(approx.numpy(), direct.numpy()).statistic
                rel = ((approx - direct).abs() / direct.abs().clamp_min(1e-12)).median()
                stats.append((rho, float(rel), float((approx < 0).float().mean())))
            rho, rel, neg = (float(np.mean(c)) for c in zip(*stats, strict=True))
            rows.append(
                {
                    "kind": kind,
                    "orthogonal": orthogonal,
                    "features": num,
                    "spearman": rho,
                    "median_rel_error": rel,
                    "negative_share": neg,
                }
            )
    return direct, rows


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    learner = load_learner(checkpoint_dir(args.run))
    cfg = learner.config
    trained = float(learner.critic.detached_temperature())  # the config's, or a learned one
    temperature = args.temperature or trained
    dataset = open_dataset(args.dataset)
    phi, psi, reward = latents(learner, dataset, args.anchors, args.futures, args.seed)
    kinds = [(k, orth) for k in ("trig", "positive", "oprf") for orth in (False, True)]
    direct, rows = compare(
        phi,
        psi,
        reward,
        temperature,
        cfg.self_normalized,
        kinds,
        args.features,
        args.repeats,
        cfg.discount,
    )
    print(
        f"{args.run}: temperature {temperature:.4g} (trained at {trained:.4g}), self-normalised "
        f"{cfg.self_normalized}, {args.anchors} anchors x {args.futures} futures, "
        f"{args.repeats} draws; logits phi.psi/T span "
        f"[{float((phi @ psi.T).min()) / temperature:.1f}, {float((phi @ psi.T).max()) / temperature:.1f}]"
    )
    print(
        f"{'features':>9} {'kind':>9} {'orth':>5} {'spearman':>9} {'vs trig':>8} "
        f"{'med rel err':>12} {'Q<0':>6}"
    )
    base = {(r["features"], r["orthogonal"]): r["spearman"] for r in rows if r["kind"] == "trig"}
    for r in rows:
        ratio = r["spearman"] / base[(r["features"], r["orthogonal"])]
        print(
            f"{r['features']:>9} {r['kind']:>9} {str(r['orthogonal']):>5} {r['spearman']:>9.3f} "
            f"{ratio:>7.2f}x {r['median_rel_error']:>12.3g} {r['negative_share']:>6.1%}"
        )
    if args.out:
        write_json_atomic(
            args.out, {"run": str(args.run), "temperature": temperature, "rows": rows}
        )


if __name__ == "__main__":
    main()
