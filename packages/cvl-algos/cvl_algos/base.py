"""`LearnerBase`: the protocol every learner (BC, SAC, CQL, CQL+UDS, CVL) follows.

:class:`LearnerBase` gives a learner its step counter, device handling, its own RNG, batched
``act`` from numpy to numpy, optional ``torch.compile``, pickle-free ``save``/``load``, and the
declarations trainers read instead of knowing algorithms by name (``offline``,
``needs_rewards``, ``pretraining``, ``sampler_kind`` / ``sampler_mode`` with `make_sampler`,
``progress_metrics``, `training_source` / `training_data`). A subclass:

- sets the class attributes ``name``, ``config_cls`` (a frozen dataclass with fields
  ``max_grad_norm``, ``compile`` and ``batch_size``) and whichever declarations differ from the
  defaults (an offline learner of reward-labelled transitions without pretraining);
- builds its networks in ``__init__`` after ``super().__init__`` and inside ``self.rng_scope()``
  (so initialisation depends on ``seed`` only), keeps the acting network as ``self.policy``;
- implements ``state_modules()`` / ``state_optimizers()`` (everything a checkpoint must hold:
  extra tensors such as a log-temperature go into a module, see `cvl_algos.common.Scalar`) and
  ``_train_step(batch) -> dict[str, Tensor]`` (one gradient step; may use ``self.maybe_compile``),
  or instead ``gradient_stages()``, its update as data (`cvl_algos.stages`: gradient steps,
  polyak averages, no-gradient computations; BC, SAC, CQL, CVL), which also gives it vectorised
  seeds (`cvl_algos.vectorised`);
- may override ``extra_state()`` / ``load_extra_state()`` for JSON-able non-tensor state
  (calling ``super()``'s, as `cvl_algos.pretraining.PretrainingLearner` does).

``update(batch)`` runs ``_train_step`` inside the learner's RNG scope, increments ``step`` and
returns the metrics as detached 0-d tensors on the learner's device: nothing waits for the
device, so a trainer reads them only when it logs (`cvl_algos.common.metrics_to_floats`, one
host transfer for all of them; ``float(m)`` reads one).

Randomness: the learner owns a CPU ``torch.Generator`` (and a CUDA one on CUDA devices). While the
learner initialises, updates or acts, these states are swapped into torch's global RNG and read
back afterwards, so sampling inside networks (which use the global RNG) is reproducible from
``seed`` whatever else the process does, and the states travel with the checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from torch import nn

from cvl_algos.checkpoint import (
    STATE_FILE,
    CheckpointError,
    load_checkpoint,
    read_checkpoint_state,
    save_checkpoint,
)
from cvl_algos.common import (
    config_from_dict,
    config_to_dict,
    detach_metrics,
    optimizer_step,
    polyak_tensors,
)
from cvl_algos.stages import GradientStage, PolyakStage, Stage, submodule

__all__ = ["LearnerBase", "PretrainingKind", "SamplerKind", "TrainingData"]

PretrainingKind = Literal["none", "related_tasks", "self"]
"""A learner's pretraining phase (see `LearnerBase.pretraining`)."""

SamplerKind = Literal["transition", "contrastive"]
"""The kind of batches a learner's `update` takes."""


@dataclass(frozen=True)
class TrainingData:
    """The episode sources of a run's phases: ``train`` (labelled updates) and ``pretrain`` (the
    pretraining phase's data, or None when the run has no pretraining phase)."""

    train: Any
    pretrain: Any | None


class LearnerBase:
    """Base of all learners; see the module docstring for what a subclass provides."""

    name: ClassVar[str] = "base"
    """Registry name (``make_learner(name)``), saved in checkpoints."""
    config_cls: ClassVar[type]
    """The frozen config dataclass (fields ``max_grad_norm``, ``compile``, ``batch_size``)."""

    # -- what the learner declares about itself (read by trainers, sweeps and presets) ------------
    offline: ClassVar[bool] = True
    """Trained from a fixed dataset by an offline trainer (False: an online learner, e.g. SAC)."""
    needs_rewards: ClassVar[bool] = True
    """Its training data must carry rewards (BC's need not)."""
    pretraining: ClassVar[PretrainingKind] = "none"
    """Its pretraining phase, if any (`cvl_algos.pretraining`): ``"none"``; ``"related_tasks"``
    (critic-only updates on related tasks' reward-free data when given, as CVL, paper sec. 5.2);
    ``"self"`` (on the target's own data at reward 0 when no related data is given, which is
    otherwise shared into the training data, as CQL+UDS)."""
    sampler_kind: ClassVar[SamplerKind] = "transition"
    """The batches `update` takes: ``"transition"`` (`cvl_data.TransitionSampler`) or
    ``"contrastive"`` (`cvl_data.ContrastiveSampler`, which also needs ``config.discount``)."""
    progress_metrics: ClassVar[tuple[str, ...]] = ()
    """Metrics a progress bar shows (those present in a log record, in this order)."""

    policy: nn.Module
    policy_ema: nn.Module | None = None
    """The polyak average of ``policy`` that deterministic acting uses (`init_policy_ema`)."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        action_dim: int,
        config: Any = None,
        device: str | torch.device = "cpu",
        seed: int = 0,
    ) -> None:
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.action_dim = int(action_dim)
        self.config = config if config is not None else self.config_cls()
        if not isinstance(self.config, self.config_cls):
            raise TypeError(f"{self.name}: config must be {self.config_cls.__name__}")
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.seed = int(seed)
        self.step = 0
        self.pretrain_steps = 0  # pretraining updates done (0 without that phase, pretraining.py)
        self._cpu_gen = torch.Generator("cpu").manual_seed(self.seed)
        self._cuda_gen = None
        if self.device.type == "cuda":
            self._cuda_gen = torch.Generator(self.device).manual_seed(self.seed)
        self._module_tensors: dict[int, tuple[nn.Module, list[nn.Parameter], list[torch.Tensor]]]
        self._module_tensors = {}

    # -- things a subclass provides ------------------------------------------------------------

    def state_modules(self) -> dict[str, nn.Module]:
        """Every module whose state a checkpoint holds (networks, targets, scalars)."""
        raise NotImplementedError

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Every optimizer whose state a checkpoint holds."""
        raise NotImplementedError

    def gradient_stages(self) -> tuple[Stage, ...] | None:
        """The update at the current step as `cvl_algos.stages` (clipped gradient steps, polyak
        averages, read-outs), or None when the update is written as `_train_step` (default).
        A learner that declares them gets the default `_train_step` (the stages in order) and
        vectorised seeds (`cvl_algos.vectorised.VectorisedLearner`)."""
        return None

    def init_policy_ema(self) -> None:
        """Called once ``self.policy`` exists: with the config's ``policy_ema_tau`` > 0, a frozen
        copy of it becomes ``policy_ema``, averaged after each update (`policy_ema_stages`) and
        used for deterministic acting (`acting_policy`). A learner that calls it puts
        `policy_ema_modules` into its `state_modules`."""
        if self.config.policy_ema_tau > 0.0:
            self.policy_ema = copy.deepcopy(self.policy).requires_grad_(False)

    def policy_ema_modules(self) -> dict[str, nn.Module]:
        """``{"policy_ema": ...}`` when there is one, else nothing (for `state_modules`)."""
        return {} if self.policy_ema is None else {"policy_ema": self.policy_ema}

    def policy_ema_stages(self) -> tuple[Stage, ...]:
        """``policy_ema <- (1 - tau) policy_ema + tau policy`` as a stage, when there is one."""
        if self.policy_ema is None:
            return ()
        return (PolyakStage("policy_ema", "policy", self.config.policy_ema_tau),)

    def update_stages(self) -> tuple[Stage, ...]:
        """One update as stages: `gradient_stages`, then `policy_ema_stages`."""
        return (*self.gradient_stages(), *self.policy_ema_stages())

    @property
    def acting_policy(self) -> nn.Module:
        """The network deterministic acting uses: ``policy_ema`` when there is one, else
        ``policy``."""
        return self.policy if self.policy_ema is None else self.policy_ema

    @classmethod
    def declares_stages(cls) -> bool:
        """Whether the class declares `gradient_stages` (what vectorised seeds need); known
        before any learner is built (a sweep groups runs by it)."""
        return cls.gradient_stages is not LearnerBase.gradient_stages

    def _train_step(self, batch: Any) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch``; returns scalar tensor metrics. Default: run
        `gradient_stages` (`run_stages`)."""
        if not self.declares_stages():
            raise NotImplementedError(
                f"{type(self).__name__} defines neither _train_step nor stages"
            )
        stages = self.update_stages()
        self.check_update_batch(batch)
        return self.run_stages(stages, batch)

    def check_update_batch(self, batch: Any) -> None:
        """Raise ``ValueError`` for a batch `update` cannot take, before anything changes
        (default: accept; CVL refuses reward-free batches)."""

    def run_stages(self, stages: Sequence[Stage], batch: Any) -> dict[str, torch.Tensor]:
        """Run ``stages`` in order on ``batch`` (`cvl_algos.stages`); returns their metrics."""
        carry: dict[str, torch.Tensor] = {}
        metrics: dict[str, torch.Tensor] = {}
        modules, optimizers = self.state_modules(), self.state_optimizers()
        for stage in stages:
            if isinstance(stage, GradientStage):
                loss, stage_metrics = stage.loss(batch, carry)
                norm = self.clip_and_step(optimizers[stage.optimizer], loss, modules[stage.module])
                if stage.grad_norm_metric is not None:
                    stage_metrics[stage.grad_norm_metric] = norm
            elif isinstance(stage, PolyakStage):
                target = self.module_tensors(modules[stage.target])
                source = self.module_tensors(submodule(modules, stage.source))
                assert len(target[0]) == len(source[0]), "polyak: modules differ"
                polyak_tensors(target[0], source[0], target[1], source[1], stage.tau)
                continue
            else:
                with torch.no_grad():
                    values, stage_metrics = stage.compute(batch, carry)
                carry.update(values)
            carry.update(stage_metrics)
            metrics.update(stage_metrics)
        return metrics

    def extra_state(self) -> dict[str, Any]:
        """JSON-able state beyond modules/optimizers/step (default: none)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`extra_state`."""

    @property
    def sampler_mode(self) -> str:
        """How `make_sampler` draws anchors: ``"uniform"`` over all steps (default),
        ``"episode"`` (one episode per batch) or ``"shared_start"`` (blocks of anchors from
        episodes with the same start); a contrastive learner's config may choose it."""
        return "uniform"

    @property
    def sampler_options(self) -> dict[str, Any]:
        """Further arguments of this learner's sampler (`ContrastiveSampler` or
        `TransitionSampler`) from its config (default: none)."""
        return {}

    def make_sampler(
        self,
        source: Any,
        device: str | torch.device,
        seed: int,
        search_progress: Callable[[int], None] | None = None,
    ) -> Any:
        """The `cvl_data` sampler of this learner's batches over ``source`` (any episode source),
        batches of ``config.batch_size`` on ``device``, its generator seeded with ``seed``.
        ``search_progress``: the contrastive sampler's neighbour search reports to it
        (`cvl_data.ContrastiveSampler`); other samplers search nothing."""
        from cvl_data import ContrastiveSampler, TransitionSampler

        cfg = self.config
        if self.sampler_kind == "contrastive":
            return ContrastiveSampler(
                source,
                cfg.batch_size,
                discount=cfg.discount,
                device=device,
                mode=self.sampler_mode,
                seed=seed,
                search_progress=search_progress,
                **self.sampler_options,
            )
        return TransitionSampler(
            source, cfg.batch_size, device=device, seed=seed, **self.sampler_options
        )

    def training_source(self, source: Any) -> Any:
        """The labelled data this learner trains on, given the run's target dataset (default: all
        of it). A learner that selects data (filtered BC keeps the top episodes by return)
        overrides it; `training_data` applies it."""
        return source

    def training_data(
        self, target: Any, related: Sequence[Any] = (), include_target: bool = True
    ) -> TrainingData:
        """The data of its phases from the target task's dataset (and related tasks' datasets,
        which a learner without pretraining does not take): ``train`` is `training_source` of
        the target."""
        if related:
            raise ValueError(f"{self.name} takes no related tasks' data")
        return TrainingData(train=self.training_source(target), pretrain=None)

    # -- randomness, compilation ---------------------------------------------------------------

    @contextlib.contextmanager
    def rng_scope(self) -> Iterator[None]:
        """Swap the learner's generators into torch's global RNG for the duration of the block."""
        outer_cpu = torch.get_rng_state()
        torch.set_rng_state(self._cpu_gen.get_state())
        outer_cuda = None
        if self._cuda_gen is not None:
            outer_cuda = torch.cuda.get_rng_state(self.device)
            torch.cuda.set_rng_state(self._cuda_gen.get_state(), self.device)
        try:
            yield
        finally:
            self._cpu_gen.set_state(torch.get_rng_state())
            torch.set_rng_state(outer_cpu)
            if self._cuda_gen is not None:
                self._cuda_gen.set_state(torch.cuda.get_rng_state(self.device))
                torch.cuda.set_rng_state(outer_cuda, self.device)

    def generators(self) -> dict[str, torch.Generator]:
        gens = {"cpu": self._cpu_gen}
        if self._cuda_gen is not None:
            gens["cuda"] = self._cuda_gen
        return gens

    def maybe_compile(self, fn: Callable) -> Callable:
        """``torch.compile(fn)`` when ``config.compile`` is set, else ``fn`` unchanged.

        Random draws inside the compiled code stay eager's own ops (inductor's
        ``fallback_random``): a compiled learner draws the numbers the eager one draws at the
        same seed and differs from it by float rounding only (SAC at 128 x 128, batch 256:
        parameters 4e-7 apart after 5 updates). Inductor's own generator would draw others.
        """
        if getattr(self.config, "compile", False):
            return torch.compile(fn, options={"fallback_random": True})
        return fn

    def clip_and_step(
        self, optimizer: torch.optim.Optimizer, loss: torch.Tensor, module: nn.Module
    ) -> torch.Tensor:
        """:func:`optimizer_step` with the config's ``max_grad_norm``."""
        params = self.module_tensors(module)[0]
        return optimizer_step(optimizer, loss, params, self.config.max_grad_norm)

    def module_tensors(self, module: nn.Module) -> tuple[list[nn.Parameter], list[torch.Tensor]]:
        """``module``'s parameters and buffers as lists, collected on first use of that module
        object and reused after: a learner's modules keep their tensors for life (checkpoints
        load into them in place), and walking the module tree at every step took ~0.15 ms of a
        ~9 ms SAC update at 128 x 128, batch 256, on one CPU thread. A module object met for
        the first time (e.g. one that replaced another) gets its lists collected then."""
        entry = self._module_tensors.get(id(module))
        if entry is None or entry[0] is not module:
            entry = (module, list(module.parameters()), list(module.buffers()))
            self._module_tensors[id(module)] = entry
        return entry[1], entry[2]

    # -- the protocol ----------------------------------------------------------------------------

    def update(self, batch: Any) -> dict[str, torch.Tensor]:
        """One gradient step; returns its metrics as detached 0-d tensors (no host sync)."""
        with self.rng_scope():
            metrics = self._train_step(batch)
        self.step += 1
        return detach_metrics(metrics, self.device)

    def obs_tensor(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Observations on the learner's device: uint8 stays uint8 (pixels), others float32."""
        obs_t = torch.as_tensor(obs, device=self.device)
        if obs_t.dtype != torch.uint8:
            obs_t = obs_t.to(torch.float32)
        return obs_t

    @torch.no_grad()
    def act(self, obs: np.ndarray | torch.Tensor, deterministic: bool = True) -> np.ndarray:
        """Actions for a batch ``(B, *obs_shape) -> (B, A)``; a single ``obs_shape`` gives ``(A,)``."""
        obs_t = self.obs_tensor(obs)
        single = tuple(obs_t.shape) == self.obs_shape
        if single:
            obs_t = obs_t.unsqueeze(0)
        assert tuple(obs_t.shape[1:]) == self.obs_shape, (tuple(obs_t.shape), self.obs_shape)
        with self.rng_scope():
            action = self.policy_action(obs_t, deterministic)
        action = action.float().cpu().numpy()
        return action[0] if single else action

    def policy_action(self, obs_t: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """(B, A) actions for a batch of observations on the device, inside ``rng_scope``: the
        mode of `acting_policy` when ``deterministic``, else one sample of the trained policy. Learners that choose actions
        otherwise at acting time override this (CVL's ``act_candidates``)."""
        if deterministic:
            return self.acting_policy.deterministic(obs_t)
        action, _ = self.policy.sample(obs_t)
        return action

    # -- checkpoints ------------------------------------------------------------------------------

    def checkpoint_state(self) -> dict[str, Any]:
        return {
            "algorithm": self.name,
            "learner_class": f"{type(self).__module__}.{type(self).__qualname__}",
            "config": config_to_dict(self.config),
            "step": self.step,
            "obs_shape": list(self.obs_shape),
            "action_dim": self.action_dim,
            "seed": self.seed,
            "extra": self.extra_state(),
        }

    def save(self, dir: str | Path, extra_files: dict[str, Any] | None = None) -> Path:
        """Save modules, optimizers, config, step and RNG states (safetensors + JSON, checksummed).

        ``extra_files`` (``name.json`` -> JSON-able) are saved and checksummed with them; read
        them back with `cvl_algos.checkpoint.read_checkpoint_json`.
        """
        return save_checkpoint(
            dir,
            self.state_modules(),
            self.state_optimizers(),
            self.checkpoint_state(),
            generators=self.generators(),
            extra_files=extra_files,
        )

    @classmethod
    def _from_checkpoint_state(
        cls, state: dict[str, Any], file: Path, device: str | torch.device
    ) -> LearnerBase:
        """A fresh learner built from a checkpoint's ``state`` (class, config, shapes, seed)."""
        name = state.get("algorithm")
        learner_cls = cls if name is not None and cls.name == name else _loaded_class(name)
        if learner_cls is None:
            raise CheckpointError(
                f"{file} (field 'algorithm'): unknown algorithm {name!r} (no learner class of "
                f"that name is loaded; `cvl_algos.load_learner` loads any registered algorithm); "
                f"a checkpoint names an algorithm, never code to import"
            )
        if not isinstance(learner_cls, type) or not issubclass(learner_cls, cls):
            raise CheckpointError(
                f"{file} (field 'algorithm'): holds a {getattr(learner_cls, '__name__', learner_cls)}"
                f" ({name!r}), not a {cls.__name__}"
            )
        try:
            config = config_from_dict(learner_cls.config_cls, state["config"])
            return learner_cls(
                obs_shape=tuple(state["obs_shape"]),
                action_dim=state["action_dim"],
                config=config,
                device=device,
                seed=state["seed"],
            )
        except KeyError as error:
            raise CheckpointError(f"{file}: missing field {error}") from None
        except (TypeError, ValueError, AttributeError) as error:
            raise CheckpointError(
                f"{file} (fields 'config', 'obs_shape', 'action_dim', 'seed'): do not build a "
                f"{learner_cls.__name__} ({error})"
            ) from None

    @classmethod
    def load(
        cls,
        dir: str | Path,
        device: str | torch.device = "cpu",
        restore_global_rng: bool = True,
        allow_unverified: bool = False,
    ) -> LearnerBase:
        """Rebuild a learner saved by :meth:`save` on ``device``; its next update continues exactly.

        The learner class is ``cls`` when the saved algorithm name is ``cls.name``, else the one
        registered under that name (`cvl_algos.registry`; the checkpoint's ``learner_class`` is
        never imported), so ``LearnerBase.load`` works for any registered learner; it must be
        ``cls`` or a subclass of it. A checkpoint without ``checksums.json`` is refused unless
        ``allow_unverified`` (`cvl_algos.checkpoint_files`). Any problem (files, checksums,
        class, config, shapes) raises one `CheckpointError` naming the file.
        """
        file = Path(dir) / STATE_FILE
        state = read_checkpoint_state(dir, allow_unverified)
        if not isinstance(state, dict):
            raise CheckpointError(f"{file} (field 'state'): expected an object")
        learner = cls._from_checkpoint_state(state, file, device)
        load_checkpoint(
            dir,
            learner.state_modules(),
            learner.state_optimizers(),
            device=learner.device,
            generators=learner.generators(),
            restore_global_rng=restore_global_rng,
            allow_unverified=allow_unverified,
        )
        step = state.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise CheckpointError(f"{file} (field 'step'): expected an int >= 0, got {step!r}")
        learner.step = step
        try:
            learner.load_extra_state(state["extra"])
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            raise CheckpointError(f"{file} (field 'extra'): does not fit ({error})") from None
        return learner


def _loaded_class(name: Any) -> type | None:
    """The loaded learner class (`LearnerBase` or a subclass, imported by someone) whose ``name``
    is ``name``, or None. A checkpoint's ``learner_class`` string is never imported: a checkpoint
    is data, not code. `cvl_algos.registry.load_learner` imports the registered learners first,
    so that any registered name resolves; the registry sits above the learners, so this module
    does not import it."""
    if not isinstance(name, str):
        return None
    pending: list[type] = LearnerBase.__subclasses__()
    while pending:
        klass = pending.pop()
        if klass.__dict__.get("name") == name:
            return klass
        pending.extend(klass.__subclasses__())
    return None
