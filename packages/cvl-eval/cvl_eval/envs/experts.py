"""Meta-World's scripted experts (``metaworld.policies.ENV_POLICY_MAP``), batched."""

from __future__ import annotations

import warnings

import numpy as np

from cvl_eval.envs.make import canonical_name

__all__ = ["ScriptedExpert"]


class ScriptedExpert:
    """Batched wrapper of Meta-World's scripted policy for one task.

    ``expert(obs)`` maps state observations (N, 39) to actions (N, 4) in [-1, 1] (float32). The
    scripted policies are stateless, so rows from different episodes can share one call.
    """

    def __init__(self, task: str):
        from metaworld.policies import ENV_POLICY_MAP

        self.task = canonical_name(task)
        if self.task not in ENV_POLICY_MAP:
            raise ValueError(f"no scripted expert for {self.task!r}")
        self._policy = ENV_POLICY_MAP[self.task]()

    def act_one(self, obs: np.ndarray) -> np.ndarray:
        """Action (4,) for one observation (39,)."""
        with warnings.catch_warnings():
            # "Constant(s) may be too high": the env clips actions to [-1, 1]; so do we.
            warnings.simplefilter("ignore", UserWarning)
            action = self._policy.get_action(np.asarray(obs, dtype=np.float64))
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs)
        if obs.ndim != 2 or obs.shape[1] != 39:
            raise ValueError(f"expected state observations (N, 39), got {obs.shape}")
        return np.stack([self.act_one(o) for o in obs])
