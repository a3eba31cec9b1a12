"""The learner settings of the paper presets' default budgets (`cvl_eval.pipelines.paper_presets`):
`CPU_OVERRIDES`, the CPU-sized settings of every default budget, and `MIXED_OVERRIDES`, the
settings the CVL science measurements settled (docs/deviations.md, one row each), shared by the
presets on mixed-quality, stitch and SAC replay data and, but for the return weights'
temperature, by the quickstart on mixtures."""

from __future__ import annotations

import dataclasses

from cvl_eval.pipelines.quickstart import QUICKSTART_CVL_OVERRIDES, QUICKSTART_MIXED_OVERRIDES
from cvl_eval.pipelines.sweep_plan import override_scope

__all__ = [
    "CPU_OVERRIDES",
    "CQL_WARM_START_CPU",
    "MIXED_OVERRIDES",
    "PIXEL_OVERRIDES",
    "PRESET_RETURN_WEIGHT_TEMPERATURE",
    "PLAIN_CRITIC_OVERRIDES",
]


CQL_WARM_START_CPU = 1_000
"""CQL's BC warm start (``policy_eval_start``) in the default budgets."""


def _cpu_overrides() -> tuple[str, ...]:
    """`CPU_OVERRIDES`, for every offline algorithm of the registry by its config's fields."""
    from cvl_algos import learner_class, offline_algorithms

    cvl_fields = {setting.partition("=")[0] for setting in QUICKSTART_CVL_OVERRIDES}
    out = []
    for algo in offline_algorithms():
        fields = {f.name for f in dataclasses.fields(learner_class(algo).config_cls)}
        out.append(f"{algo}:lr=1e-3")
        if cvl_fields <= fields:
            out += [f"{algo}:{setting}" for setting in QUICKSTART_CVL_OVERRIDES]
        if "policy_eval_start" in fields:
            out.append(f"{algo}:policy_eval_start={CQL_WARM_START_CPU}")
    return tuple(out)


CPU_OVERRIDES: tuple[str, ...] = _cpu_overrides()
"""Learner settings of the default (CPU) budgets: lr 1e-3 for every algorithm, the quickstart's
CVL settings (`cvl_eval.pipelines.quickstart.QUICKSTART_CVL_OVERRIDES`: uniform batches, Q
normalised per batch in the policy loss, 4 action samples, 512 random features) for every learner
whose config has them (CVL with and without RFF; ``cvl`` also covers ``cvl_pretrained``), and
CQL's BC warm start shortened from 40k to 1k updates (20% of a 5k-step run; 40k would make CQL a
BC learner for the whole default budget) for every learner with a warm start."""


def _without(overrides: tuple[str, ...], *prefixes: str) -> tuple[str, ...]:
    """``overrides`` less every setting whose name starts with one of ``prefixes``."""
    return tuple(item for item in overrides if not override_scope(item)[1].startswith(prefixes))


PRESET_RETURN_WEIGHT_TEMPERATURE = 0.2
"""CVL without RFF's return-weight temperature in the presets on mixed-quality and hard data
(the quickstart keeps 0.3; `MIXED_OVERRIDES` documents both measurements)."""


MIXED_OVERRIDES: tuple[str, ...] = (
    # CVL's mixed-data settings: the quickstart's on mixtures, with the presets' temperature
    *_without(
        tuple(
            f"{algo}:{item}" for algo, items in QUICKSTART_MIXED_OVERRIDES.items() for item in items
        ),
        "return_weight_temperature",
    ),
    f"cvl_mc:return_weight_temperature={PRESET_RETURN_WEIGHT_TEMPERATURE}",
    "cql:cql_num_samples=4",
    "cql_uds:cql_num_samples=4",
    "iql:beta=10",
    "iql:policy_ema_tau=0.001",
    "filtered_bc:top_fraction=0.2",
    "filtered_bc:policy_ema_tau=0.001",
    "weighted_bc:policy_ema_tau=0.001",
    "fql:alpha=10",
)
"""The ``mixed`` preset's settings beyond `CPU_OVERRIDES` (docs/deviations.md, one row each):
the self-normalised Q estimate for both CVL variants (paper: Eq. 5 without normalisation; a
switch), and for CVL without RFF a critic at temperature 0.1 (paper: 1), measured on
drawer-open's mixture: at temperature 1 the critic's Q of the four sources was 524/502/452/449
against discounted returns-to-go 688/429/82/119 (Spearman 0.65), at 0.1 with self-normalisation
8.4/5.3/1.2/1.7 (Spearman 0.83). CVL with RFF runs at the same temperature with 4096 positive
random features (`rff_kind="positive"`, FAVOR+; paper: trigonometric at temperature 1, which
learned little: at 0.1 the kernel exp(phi.psi / 0.1) spans e^20 and trigonometric features turn
11-31% of the Q estimates negative, while positive ones are never negative) and the same DDPG+BC
extraction: on the suite's 4 mixtures x 3 seeds, both acting with the policy's average, it is
below CVL without RFF, IQM 0.91 [0.87, 0.94] against 0.96 [0.93, 0.97], P(with RFF > without) =
0.25 [0.08, 0.42], and no critic or policy step measured since brought it level
(docs/results.md, "RFF ablation"); the trigonometric features at temperature 1 with DDPG+BC
scored 0.16 on drawer-open (seed 0), as they did with the KL form.
CVL without RFF extracts its policy by DDPG+BC at alpha 0.3 (`CVLConfig.policy_extraction`
"ddpgbc": the tanh-Gaussian's mode maximises Q / mean|Q| plus 0.3 times the data's
log-likelihood, as OGBench's contrastive RL agent; paper: the KL form, which stays the learner's
default and a switch), measured on both kinds of data, 4 tasks x 3 seeds each (docs/results.md,
"Which extraction"): alpha 0.1 is best on the mixtures but leaves the data on stitched episodes
(0.39 on the hard suite's stitch half), alpha 1 imitates the mixture (0.50 on the mixtures'
screen), the KL form and the flow policy are level with each other on both suites.
CVL without RFF adds to eq. 9-10 the critic term that contrasts the data's action with 8
actions uniform on the action box at the same state and future (``action_contrast_weight`` 1,
``action_contrast_source="uniform"``; paper: no such term), measured before it became the
default by plans written before their runs (docs/results.md, "Uniform negatives" and "Both full
suites"): on the four held-out mixtures IQM 0.43 [0.38, 0.49] against 0.35 [0.33, 0.38]
(P = 0.75), on both suites 0.92 [0.89, 0.95] against 0.89 [0.87, 0.91] (8 datasets x 3 seeds,
P = 0.53; mixed 0.94 against 0.90, hard 0.88 against 0.87), one door-open mixture seed of three
collapsed (0.07). It costs data that must be stitched: over the four stitched datasets at 20k
steps P(term > without) = 0.19 [0.00, 0.39] (0.25 at 10k; stitched plate-slide 0.00 success
against 0.81), while its held-out gain holds at 20k (P = 0.88), so it stays the default and is
turned off by ``cvl_mc:action_contrast_weight=0 cvl_mc:action_contrast_source=batch``
(docs/results.md, "The critic's action term at 20k").
Its negatives are, from 2026-12-07, the policy's mode, 3 samples of its tanh-Gaussian and 4
uniform actions (``action_contrast_source="policy_uniform"``; uniform ones before), by a plan
written before its runs (docs/results.md, "The action term's negatives"; 10k steps, 4 x 3 each,
under the weights and the cap below): held-out mixtures 0.80 [0.76, 0.84] against 0.76
[0.73, 0.79] (P = 0.61), level with filtered BC's 0.79; mixed suite 0.90 against 0.92 (P = 0.58),
hard suite 0.95 against 0.96 (P = 0.53), stitched successes up (door-open 0.88 against 0.82,
drawer-open 0.93 against 0.82), reach's down (the mixture 0.51 against 0.70); the same cost per
run. ``cvl_mc:action_contrast_source="uniform"`` restores the uniform negatives (a flow
extraction needs them: it has no tanh-Gaussian to draw from).
With the term, CVL without RFF draws its anchors in proportion to exp(A / 0.3), A the min-max
normalised advantage of the episode's return over a least-squares affine fit on its first
observation (``return_weight_temperature=0.3``, ``return_weight_baseline="start_state"``; "AW"
of Hong et al. 2023; paper: uniform anchors), and caps DDPG+BC's Q term at the largest Q of the
data's own pairs at the anchor and at the 8 nearest states of other episodes (``bc_q_cap=true``,
``bc_q_cap_neighbours=8``; paper: no cap), measured before they became the default by a plan
written before its runs (docs/results.md, "Return weights with the neighbourhood cap"): held-out
mixtures 0.69 [0.67, 0.71] against the term alone's 0.41 [0.39, 0.44] (P = 0.75, 4 x 2; the
weights alone 0.81, filtered BC 0.81), hard suite 0.91 [0.90, 0.93] against 0.84 (P = 0.58),
mixed suite 0.95 [0.90, 0.97] against 0.95 (P = 0.67), stitched plate-slide at 20k 1.00 / 1.00 success where the term alone and
the weights alone stay at 0.00. The presets sharpen the weights to T = 0.2
(`PRESET_RETURN_WEIGHT_TEMPERATURE`), which passed its own plan against T = 0.3 (docs/results.md,
"Sharper weights under the cap, confirmed"; 10k steps): held-out mixtures 0.76 [0.72, 0.79]
against 0.69 (P = 0.62, 4 x 2), hard suite 0.96 [0.91, 0.98] against 0.91 (P = 0.56), mixed suite
0.92 [0.85, 0.98] against 0.95 (P = 0.56, the drawer-open mixture learned later), stitched
plate-slide at 20k 1.00 / 0.60 success against 1.00 / 1.00. The quickstart keeps T = 0.3: at
T = 0.2 its 8k steps on drawer-open's 40-episode mixture end at 80% / 30% / 50% success (seeds
0-2) against 100% / 90% / 100%. Turned off by ``cvl_mc:return_weight_temperature=None
cvl_mc:return_weight_baseline="none" cvl_mc:bc_q_cap=false cvl_mc:bc_q_cap_neighbours=0``.
The presets not measured with these take `PLAIN_CRITIC_OVERRIDES`.
CQL and CQL+UDS draw 4 actions per source instead of 10 (30 -> 12 extra Q evaluations per
state), a CPU budget choice.
The baselines take the settings their tuning screen chose on the same budget as CVL's extraction
screen (drawer-open and reach mixtures x 2 seeds, 10k steps, last 3 evaluations pooled;
docs/results.md, "Policy extraction on the suite"): IQL's advantage temperature beta 10 (expectile
x beta over {0.7, 0.9} x {3, 10}: IQM 0.58 / 0.66 / 0.57 / 0.56, the IQL paper's 0.7 / 3 first)
and filtered BC's top 20% of episodes (fractions 0.05 / 0.1 / 0.2: IQM 0.86 / 0.96 / 0.99).
Weighted BC (`cvl_algos.bc.WeightedBCLearner`: BC drawing episodes by exp(A / T), A the return's
advantage over a linear fit on the start state) keeps its learner's defaults, T = 0.1 with the
start-state baseline, its screen's choice over T in {0.1, 0.3} on the four held-out mixtures x 3
seeds (IQM 0.77 / 0.67), and acts with filtered BC's polyak average (not screened on its own). FQL
(`cvl_algos.fql`, the flow extraction on a TD critic) takes the distillation weight its screen
chose over {0.1, 0.3, 1, 3, 10, 30}: IQM 0.34 / 0.28 / 0.30 / 0.31 / 0.38 / 0.33, flat within
the noise of 4 runs, 10 the highest (docs/results.md, "FQL").
Acting with the polyak average of the policy (``policy_ema_tau`` 0.001; the learners' default
is 0, the trained policy) was screened for every method on the same budget and is on where its
screen chose it: both CVL estimators (CVL without RFF 0.94 -> 0.99 on the screen, 0.90 -> 0.96
[0.93, 0.97] on the suite), IQL (0.66 -> 0.69) and filtered BC (0.99 -> 1.00); off for BC
(0.33 -> 0.27) and FQL (0.38 -> 0.17) (docs/results.md, "Acting with the policy's average")."""


PLAIN_CRITIC_OVERRIDES: tuple[str, ...] = _without(
    MIXED_OVERRIDES, "action_contrast_", "return_weight_", "bc_q_cap"
)
"""`MIXED_OVERRIDES` with CVL's critic trained by eq. 9-10 alone (no action-contrast term) and
without the return weights and the neighbourhood cap of its policy step, for the presets whose
data or comparison these were not measured on: SAC replay data
(``replay``), the pretraining preset (its reward-free stage), and the RFF ablation (CVL with
and without random features on the same critic objective, the paper's)."""


PIXEL_OVERRIDES: tuple[str, ...] = _without(PLAIN_CRITIC_OVERRIDES, "policy_ema_tau=")
"""The pixel preset's settings: `PLAIN_CRITIC_OVERRIDES` (the term is not measured on pixels)
without the policy's average (every learner acts with its trained policy, the learners'
default). The average was screened at 10k steps; at
the pixel budget's 2k it is still mostly the initial policy (weight (1 - 0.001)^2000 = 0.14 on
the initialisation), and the quickstart's curve shows it at 0% success at 1k and 2k steps where
the trained policy succeeds (docs/results.md, "Acting with the policy's average")."""
