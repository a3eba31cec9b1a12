"""Pieces shared by every learner (BC, SAC, CQL, CQL+UDS, CVL).

:class:`LearnerBase` gives a learner its step counter, device handling, its own RNG, batched
``act`` from numpy to numpy, optional ``torch.compile`` and pickle-free ``save``/``load``.
A subclass:

- sets the class attributes ``name``, ``config_cls`` (a frozen dataclass with fields
  ``max_grad_norm`` and ``compile``) and ``sampler_kind`` ("transition" | "contrastive");
- builds its networks in ``__init__`` after ``super().__init__`` and inside ``self.rng_scope()``
  (so initialisation depends on ``seed`` only), keeps the acting network as ``self.policy``;
- implements ``state_modules()`` / ``state_optimizers()`` (everything a checkpoint must hold:
  extra tensors such as a log-temperature go into a module, see :class:`Scalar`) and
  ``_train_step(batch) -> dict[str, Tensor]`` (one gradient step; may use ``self.maybe_compile``);
- may override ``extra_state()`` / ``load_extra_state()`` for JSON-able non-tensor state.

``update(batch)`` runs ``_train_step`` inside the learner's RNG scope, increments ``step`` and
returns the metrics as floats (one host transfer for all of them).

Randomness: the learner owns a CPU ``torch.Generator`` (and a CUDA one on CUDA devices). While the
learner initialises, updates or acts, these states are swapped into torch's global RNG and read
back afterwards, so sampling inside networks (which use the global RNG) is reproducible from
``seed`` whatever else the process does, and the states travel with the checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

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

__all__ = [
    "LearnerBase",
    "Scalar",
    "assert_transition_batch",
    "config_from_dict",
    "config_to_dict",
    "frozen_call",
    "metrics_to_floats",
    "optimizer_step",
    "polyak_update",
]


# ----------------------------------------------------------------------------- configs


def config_to_dict(config: Any) -> dict[str, Any]:
    """A frozen config dataclass as a JSON-able dict (tuples become lists)."""
    return dataclasses.asdict(config)


def config_from_dict(config_cls: type, values: dict[str, Any]) -> Any:
    """Rebuild a config from :func:`config_to_dict` output; lists become tuples again.

    Unknown keys raise ``TypeError`` (the dataclass constructor does), so a checkpoint written by
    another config version fails loudly instead of silently dropping fields.
    """
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return config_cls(**fixed)


# ----------------------------------------------------------------------------- optimisation


def optimizer_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    params: Iterable[nn.Parameter],
    max_grad_norm: float | None,
) -> torch.Tensor:
    """Zero grads, backpropagate ``loss``, clip the global grad norm, step; return the norm.

    The returned norm is the one before clipping (``clip_grad_norm_``'s convention).
    """
    params = list(params)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm is not None and max_grad_norm > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    else:
        grads = [p.grad for p in params if p.grad is not None]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    optimizer.step()
    return norm.detach()


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """EMA update ``target <- (1 - tau) * target + tau * source`` of parameters, in place.

    Floating buffers are averaged the same way; other buffers are copied.
    """
    target_params = list(target.parameters())
    source_params = list(source.parameters())
    assert len(target_params) == len(source_params), "polyak: modules differ"
    if target_params:
        torch._foreach_lerp_(target_params, source_params, tau)
    for t_buf, s_buf in zip(target.buffers(), source.buffers(), strict=True):
        if t_buf.is_floating_point():
            t_buf.lerp_(s_buf, tau)
        else:
            t_buf.copy_(s_buf)


def metrics_to_floats(metrics: dict[str, torch.Tensor | float]) -> dict[str, float]:
    """Detach scalar tensors to floats with one device-to-host transfer."""
    keys = [k for k, v in metrics.items() if isinstance(v, torch.Tensor)]
    out = {k: float(v) for k, v in metrics.items() if not isinstance(v, torch.Tensor)}
    if keys:
        stacked = torch.stack([metrics[k].detach().float().reshape(()) for k in keys])
        out.update(zip(keys, stacked.cpu().tolist(), strict=True))
    return out


def frozen_call(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """Call ``module`` with its parameters and buffers detached.

    Gradients still flow to the inputs (e.g. reparameterised actions) but never to the module's
    parameters: an actor loss evaluated through ``frozen_call(critic, ...)`` leaves the critic's
    ``.grad`` untouched, without toggling ``requires_grad`` on shared modules.
    """
    detached = {name: t.detach() for name, t in module.named_parameters()}
    detached.update({name: t for name, t in module.named_buffers()})
    return torch.func.functional_call(module, detached, args, kwargs)


def assert_transition_batch(batch: Any, require_reward: bool = True) -> int:
    """Check a ``TransitionBatch``'s shapes (obs, action, reward, obs_next, terminated); return B.

    Raises ``ValueError`` for a reward-free batch when ``require_reward`` (TD losses need rewards).
    """
    batch_size = batch.obs.shape[0]
    assert batch.obs_next.shape == batch.obs.shape, (batch.obs_next.shape, batch.obs.shape)
    assert batch.action.ndim == 2 and batch.action.shape[0] == batch_size, batch.action.shape
    if batch.reward is None:
        if require_reward:
            raise ValueError("this loss needs rewards; got a reward-free TransitionBatch")
    else:
        assert batch.reward.shape == (batch_size,), batch.reward.shape
    assert batch.terminated.shape == (batch_size,), batch.terminated.shape
    return batch_size


class Scalar(nn.Module):
    """A single learnable scalar (e.g. SAC's ``log_alpha``) as a module, so it checkpoints."""

    def __init__(self, init: float = 0.0) -> None:
        super().__init__()
        self.value = nn.Parameter(torch.tensor(float(init)))

    def forward(self) -> torch.Tensor:
        return self.value


# ----------------------------------------------------------------------------- learner base


class LearnerBase:
    """Base of all learners; see the module docstring for what a subclass provides."""

    name: ClassVar[str] = "base"
    config_cls: ClassVar[type]
    sampler_kind: ClassVar[str] = "transition"

    policy: nn.Module

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
        self._cpu_gen = torch.Generator("cpu").manual_seed(self.seed)
        self._cuda_gen = None
        if self.device.type == "cuda":
            self._cuda_gen = torch.Generator(self.device).manual_seed(self.seed)

    # -- things a subclass provides ------------------------------------------------------------

    def state_modules(self) -> dict[str, nn.Module]:
        """Every module whose state a checkpoint holds (networks, targets, scalars)."""
        raise NotImplementedError

    def state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Every optimizer whose state a checkpoint holds."""
        raise NotImplementedError

    def _train_step(self, batch: Any) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch``; returns scalar tensor metrics."""
        raise NotImplementedError

    def training_source(self, source: Any) -> Any:
        """The data this learner trains on, given the run's labelled dataset (default: all of it).

        A learner that selects data (filtered BC keeps the top episodes by return) overrides it.
        """
        return source

    def extra_state(self) -> dict[str, Any]:
        """JSON-able state beyond modules/optimizers/step (default: none)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`extra_state`."""

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
        """``torch.compile(fn)`` when ``config.compile`` is set, else ``fn`` unchanged."""
        if getattr(self.config, "compile", False):
            return torch.compile(fn)
        return fn

    def clip_and_step(
        self, optimizer: torch.optim.Optimizer, loss: torch.Tensor, module: nn.Module
    ) -> torch.Tensor:
        """:func:`optimizer_step` with the config's ``max_grad_norm``."""
        return optimizer_step(optimizer, loss, module.parameters(), self.config.max_grad_norm)

    # -- the protocol ----------------------------------------------------------------------------

    def update(self, batch: Any) -> dict[str, float]:
        """One gradient step; returns metrics as python floats."""
        with self.rng_scope():
            metrics = self._train_step(batch)
        self.step += 1
        return metrics_to_floats(metrics)

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
            if deterministic:
                action = self.policy.deterministic(obs_t)
            else:
                action, _ = self.policy.sample(obs_t)
        action = action.float().cpu().numpy()
        return action[0] if single else action

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
        from cvl_algos.registry import ALGORITHMS, learner_class

        name = state.get("algorithm")
        if name in ALGORITHMS:
            learner_cls = learner_class(name)
        elif name is not None and cls.name == name:
            learner_cls = cls
        else:
            raise CheckpointError(
                f"{file} (field 'algorithm'): unknown algorithm {name!r}; known: {sorted(ALGORITHMS)}"
            )
        if not issubclass(learner_cls, cls):
            raise CheckpointError(
                f"{file} (field 'algorithm'): holds a {learner_cls.__name__} ({name!r}), "
                f"not a {cls.__name__}"
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
        cls, dir: str | Path, device: str | torch.device = "cpu", restore_global_rng: bool = True
    ) -> LearnerBase:
        """Rebuild a learner saved by :meth:`save` on ``device``; its next update continues exactly.

        The learner class is the one registered under the saved algorithm name (so
        ``LearnerBase.load`` works for any learner); it must be ``cls`` or a subclass of it.
        A name missing from :mod:`cvl_algos.registry` falls back to ``cls`` when the names match.
        Any problem (files, checksums, algorithm, config, shapes) raises one `CheckpointError`
        naming the file.
        """
        file = Path(dir) / STATE_FILE
        state = read_checkpoint_state(dir)
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
