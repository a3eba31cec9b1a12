"""Checks of the SAC update variants against their autograd counterparts
(`bench_sac_update_variants.py --check` runs `run_checks`).

`check` checks ``manual_mlp`` against ``current_mlp``, then ``manual_dense``
against ``current`` (`MANUAL_BASELINE`; the real `SACLearner`, same
seed, so the same initial parameters and random draws): the critic's, actor's and temperature's
gradients at the same parameters and batch (autograd's from `SACLearner.compute_critic_loss` /
``compute_actor_loss`` / `cvl_algos.sac.alpha_loss` against `ManualSACUpdate.critic_grads` /
``actor_grads`` / ``alpha_grads``; per parameter ``||g_manual - g_autograd|| / ||g_autograd||``
must be below 1e-4), then the parameters after one and after ``--check-updates`` full updates
(printed; float32 rounding differences only). It exits with status 1 when a gradient is off.
Over hundreds of updates any rounding difference grows: at 128 x 128, batch 256, autograd's
own run against itself with one weight moved by one ulp at the start is 3e-3 (policy) and 5e-3
(critic) apart after 500 updates, as ``manual_mlp`` is from ``current_mlp``, so the timing table's
``max |dparam|`` after its rounds is of that size.

`check_fused` checks ``fused_mlp`` against ``current_mlp`` (`check_fused`): the critic's
forward (bit-identical?), the critic and actor stages' gradients at equal parameters (relative
error per parameter below 1e-5), the parameters after one and ``--check-updates`` updates, the
same stages' gradients under `VectorisedLearner` (``vmap(grad)``, seeds 0 and 1) and its
parameters after 5 vectorised updates, and `fused_mlp.gradchecks` (float64 ``gradcheck`` must
pass; ``gradgradcheck`` is printed, expected to fail).
"""

from __future__ import annotations

import torch

from benchmarks.fused_mlp import gradchecks
from benchmarks.sac_update_variants import ACTION_DIM, OBS_DIM, make_buffer, make_variant, patched
from cvl_algos import make_learner
from cvl_algos.sac import SACLearner, alpha_loss
from cvl_algos.stages import GradientStage
from cvl_algos.vectorised import VectorisedLearner
from cvl_algos.vectorised.learner import _stack_batches

GRAD_TOLERANCE = 1e-4
FUSED_TOLERANCE = 1e-5
MANUAL_BASELINE = {"manual_mlp": "current_mlp", "manual_dense": "current"}
"""Each hand-written-gradient variant's autograd counterpart (same learner otherwise)."""
FUSED_BASELINE = {"fused_mlp": "current_mlp"}
"""Each fused variant's autograd counterpart (same learner, forward not patched)."""


def _relative_errors(manual: torch.nn.Module, auto: torch.nn.Module) -> dict[str, float]:
    """Per parameter ``||g_manual - g_auto|| / ||g_auto||`` of two modules' ``.grad``."""
    errors = {}
    for (name, p_manual), p_auto in zip(manual.named_parameters(), auto.parameters(), strict=True):
        error = (p_manual.grad - p_auto.grad).norm() / p_auto.grad.norm().clamp_min(1e-30)
        errors[name] = error.item()
    return errors


def _parameter_differences(manual, auto) -> dict[str, float]:
    """Largest ``|p_manual - p_auto|`` over each state module's parameters."""
    modules_manual, modules_auto = manual.state_modules(), auto.state_modules()
    return {
        name: max(
            (a - b).abs().max().item()
            for a, b in zip(
                modules_manual[name].parameters(), modules_auto[name].parameters(), strict=True
            )
        )
        for name in modules_manual
    }


def check(variant: str, hidden: tuple[int, ...], batch_size: int, updates: int) -> bool:
    """Variant ``variant`` (``manual_mlp`` or ``manual_dense``) against its `MANUAL_BASELINE`
    (module docstring, ``--check``); True when every gradient's relative error is below
    `GRAD_TOLERANCE`."""
    baseline = MANUAL_BASELINE[variant]
    buffer = make_buffer()
    generator = torch.Generator().manual_seed(1)
    batches = [buffer.sample(batch_size, generator) for _ in range(updates)]
    auto, manual = make_variant(baseline, hidden, batch_size), make_variant(
        variant, hidden, batch_size
    )
    assert max(_parameter_differences(manual, auto).values()) == 0.0, "initial parameters differ"
    batch = batches[0]
    print(
        f"check: {variant} against {baseline}, SAC torso={auto.config.torso!r}, hidden {hidden}, "
        f"batch {batch_size}, seed 0\n"
    )

    # gradients at the same parameters, batch and random draws: the critic stage, then the actor's
    with auto.rng_scope():
        loss, metrics_auto = auto.compute_critic_loss(batch)
        loss.backward()
    with manual.rng_scope():
        metrics_manual = manual.manual_update.critic_grads(batch, manual.alpha)
    errors = {"critic": _relative_errors(manual.critic, auto.critic)}
    with auto.rng_scope():
        loss, actor_metrics = auto.compute_actor_loss(batch)
        loss.backward()
    metrics_auto.update(actor_metrics)
    with manual.rng_scope():
        metrics_manual.update(manual.manual_update.actor_grads(batch, manual.alpha))
    errors["policy"] = _relative_errors(manual.policy, auto.policy)
    loss, _ = alpha_loss(auto.log_alpha(), metrics_auto["entropy"], auto.target_entropy)
    loss.backward()
    manual.manual_update.alpha_grads(metrics_manual["entropy"])
    grad_alpha, grad_auto = manual.log_alpha.value.grad, auto.log_alpha.value.grad
    error = (grad_alpha - grad_auto).abs() / grad_auto.abs()
    errors["log_alpha"] = {"value": error.item()}
    print("gradients at equal parameters, ||g_manual - g_autograd|| / ||g_autograd||:")
    for group, per_param in errors.items():
        for name, value in per_param.items():
            print(f"  {group + '.' + name:<34}{value:10.2e}")
        print(f"  {group + ' (max)':<34}{max(per_param.values()):10.2e}")
    print("metrics, |manual - autograd|:")
    for name, value in metrics_auto.items():
        print(f"  {name:<34}{(metrics_manual[name] - value).abs().item():10.2e}")
    worst = max(v for per_param in errors.values() for v in per_param.values())

    # whole updates from fresh learners (same seed): parameters after one and after all updates
    auto, manual = make_variant(baseline, hidden, batch_size), make_variant(
        variant, hidden, batch_size
    )
    start = {
        n: [p.detach().clone() for p in m.parameters()] for n, m in auto.state_modules().items()
    }
    for index, batch in enumerate(batches):
        metrics_auto, metrics_manual = auto.update(batch), manual.update(batch)
        if index == 0 or index == len(batches) - 1:
            moved = {
                name: max(
                    (p - p0).abs().max().item()
                    for p, p0 in zip(module.parameters(), start[name], strict=True)
                )
                for name, module in auto.state_modules().items()
            }
            print(f"\nafter {index + 1} update(s): max |p_manual - p_autograd| (max |p - p_init|)")
            for name, value in _parameter_differences(manual, auto).items():
                print(f"  {name:<34}{value:10.2e}  ({moved[name]:.2e})")
            if index == 0:
                step_errors = {
                    "critic": _relative_errors(manual.critic, auto.critic),
                    "policy": _relative_errors(manual.policy, auto.policy),
                }
                print(
                    "  clipped gradients of that update, max relative error: "
                    + ", ".join(
                        f"{group} {max(e.values()):.2e}" for group, e in step_errors.items()
                    )
                )
            metric_diff = max((metrics_manual[k] - v).abs().item() for k, v in metrics_auto.items())
            print(f"  metrics: max |manual - autograd| {metric_diff:.2e}")
    passed = worst < GRAD_TOLERANCE
    print(
        f"\nlargest gradient error {worst:.2e}: {'PASS' if passed else 'FAIL'} (< {GRAD_TOLERANCE})"
    )
    return passed


def _max_error(errors: dict[str, dict[str, float]]) -> float:
    return max(v for per_param in errors.values() for v in per_param.values())


def _stage_grads(learners: dict[str, SACLearner], batch) -> dict[str, dict[str, torch.Tensor]]:
    """Each learner's critic-stage and actor-stage gradients (autograd through its losses) at
    its current parameters, its variant's forward patched in, as ``{name: {param: grad}}``;
    asserts the actor stage (critic under `frozen_call`) leaves the critic's ``.grad`` as is."""
    out = {}
    for name, learner in learners.items():
        grads = {}
        with patched(name):
            with learner.rng_scope():
                loss, _ = learner.compute_critic_loss(batch)
                loss.backward()
            grads.update(
                {f"critic.{n}": p.grad.clone() for n, p in learner.critic.named_parameters()}
            )
            with learner.rng_scope():
                loss, _ = learner.compute_actor_loss(batch)
                loss.backward()
        for n, p in learner.critic.named_parameters():
            assert torch.equal(
                p.grad, grads[f"critic.{n}"]
            ), f"{name}: actor stage moved critic grads"
        grads.update({f"policy.{n}": p.grad.clone() for n, p in learner.policy.named_parameters()})
        out[name] = grads
    return out


def _vectorised_grads(vector: VectorisedLearner, name: str, batches) -> dict[str, torch.Tensor]:
    """``vmap(grad)`` of the critic and actor stages of a `VectorisedLearner` (seed dimension
    first) at its current parameters, variant ``name``'s forward patched in."""
    fields, none_fields = _stack_batches(batches)
    stacked = (type(batches[0]), fields, none_fields)
    stages = [s for s in vector.learners[0].update_stages() if isinstance(s, GradientStage)]
    grads = {}
    with patched(name):
        for stage in stages[:2]:  # critic, actor
            stage_grads, _ = vector._vmapped(stage, "grad", stacked, {})
            grads.update(stage_grads)
    return grads


def check_fused(name: str, hidden: tuple[int, ...], batch_size: int, updates: int) -> bool:
    """Fused variant ``name`` against its autograd baseline (`FUSED_BASELINE`): gradients of the
    critic and actor stages at equal parameters (per parameter relative error below
    `FUSED_TOLERANCE`), parameters after one and after ``updates`` full updates, then the same
    gradients under `VectorisedLearner` (``vmap(grad)``, seeds 0 and 1) and its parameters after
    a few vectorised updates. True when every gradient error is below `FUSED_TOLERANCE`."""
    base_name = FUSED_BASELINE[name]
    buffer = make_buffer()
    generator = torch.Generator().manual_seed(1)
    batches = [buffer.sample(batch_size, generator) for _ in range(updates)]
    print(f"check {name} against {base_name}: hidden {hidden}, batch {batch_size}, seed 0\n")
    learners = {n: make_variant(n, hidden, batch_size) for n in (base_name, name)}
    assert max(_parameter_differences(*learners.values()).values()) == 0.0
    with patched(name):
        out_fused = learners[name].critic(batches[0].obs, batches[0].action)
    out_base = learners[base_name].critic(batches[0].obs, batches[0].action)
    same = all(torch.equal(a, b) for a, b in zip(out_fused, out_base, strict=True))
    print(f"critic forward bit-identical: {same}")
    grads = _stage_grads(learners, batches[0])
    errors = {
        key: ((grads[name][key] - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        for key, ref in grads[base_name].items()
    }
    print("gradients at equal parameters, ||g_fused - g_autograd|| / ||g_autograd||:")
    for key, value in errors.items():
        print(f"  {key:<34}{value:10.2e}")
    worst = max(errors.values())

    learners = {n: make_variant(n, hidden, batch_size) for n in (base_name, name)}
    for index, batch in enumerate(batches):
        for n, learner in learners.items():
            with patched(n):
                learner.update(batch)
        if index == 0 or index == len(batches) - 1:
            diffs = _parameter_differences(learners[name], learners[base_name])
            print(
                f"after {index + 1} update(s): max |p_fused - p_autograd| "
                + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items())
            )

    seeds = (0, 1)
    vectors = {
        n: VectorisedLearner(
            [
                make_learner(
                    "sac",
                    (OBS_DIM,),
                    ACTION_DIM,
                    "cpu",
                    s,
                    hidden=hidden,
                    batch_size=batch_size,
                    torso=learners[n].config.torso,
                )
                for s in seeds
            ]
        )
        for n in (base_name, name)
    }
    vector_batches = [[buffer.sample(batch_size, generator) for _ in seeds] for _ in range(5)]
    vgrads = {n: _vectorised_grads(v, n, vector_batches[0]) for n, v in vectors.items()}
    verrors = {
        key: max(
            ((vgrads[name][key][k] - ref[k]).norm() / ref[k].norm().clamp_min(1e-30)).item()
            for k in range(len(seeds))
        )
        for key, ref in vgrads[base_name].items()
    }
    vworst = max(verrors.values())
    print(
        f"VectorisedLearner (seeds {seeds}), vmap(grad) of the critic and actor stages at equal "
        f"parameters: max relative error {vworst:.2e} over {len(verrors)} parameters"
    )
    for stacked_batches in vector_batches:
        for n, vector in vectors.items():
            with patched(n):
                vector.update(stacked_batches)
    diff = max(
        (vectors[name].params[m][p] - vectors[base_name].params[m][p]).abs().max().item()
        for m in vectors[name].params
        for p in vectors[name].params[m]
    )
    print(f"after {len(vector_batches)} vectorised updates: max |p_fused - p_autograd| {diff:.2e}")
    worst = max(worst, vworst)
    passed = worst < FUSED_TOLERANCE
    results = gradchecks()
    print("float64 gradcheck of the Function on PlainMLP(5, 3, (4, 6)):")
    for key, value in results.items():
        print(f"  {key:<34}{'pass' if value else 'FAIL'}")
    passed = passed and all(v for k, v in results.items() if not k.startswith("gradgradcheck"))
    print(
        f"largest gradient error {worst:.2e} (tolerance {FUSED_TOLERANCE}) and gradchecks: "
        f"{'PASS' if passed else 'FAIL'}\n"
    )
    return passed


def run_checks(hidden: tuple[int, ...], batch_size: int, updates: int) -> bool:
    """Every manual variant against `MANUAL_BASELINE`, then every fused one against
    `FUSED_BASELINE`; True when all pass."""
    passed = True
    for name in MANUAL_BASELINE:
        passed = check(name, hidden, batch_size, updates) and passed
        print()
    for name in FUSED_BASELINE:
        passed = check_fused(name, hidden, batch_size, updates) and passed
    return passed
