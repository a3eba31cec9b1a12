"""Acting with a behaviour flow: re-decide at every state, or commit to one behaviour per episode?

A CVL run with ``policy_extraction="flow_select"`` holds a behaviour flow (flow matching on all
the data) and the critic's Q. Where a dataset's episodes each follow one behaviour from their
first step, and the first states do not tell the behaviours apart, a policy that re-decides at
every state can average or switch between behaviours. A flow maps each noise to one action; if a
noise held for a whole episode keeps to one behaviour, the choice can be made once per episode.
This script loads a run's checkpoint and evaluates it under these acting modes, all vectorised
over the episodes (the environments run side by side, one policy call per step):

- ``fresh``: a fresh noise at every step (the flow as a stochastic behaviour clone);
- ``committed``: one noise per episode, drawn at its start and held;
- ``select``: the best of K noises by Q at every step, the K held for the episode (``flow_select``'s
  acting);
- ``select_fresh``: the best of K fresh noises by Q at every step (SfBC's sampling);
- ``commit_q``: the best of the same K noises by Q at the episode's first step, then held;
- ``recommit_q``: as ``commit_q``, chosen again every ``--recommit-every`` steps;
- ``select_ascent``: ``select``'s action, then ``--ascent-steps`` steps of length
  ``--ascent-step-size`` up the critic's Q along its normalised action gradient (clipped to the
  action box), acting with the iterate of highest Q: the flow picks the behaviour, the critic's
  gradient removes the data's action noise within it, as DDPG+BC's mode climbs Q;
- ``onestep_zero`` / ``onestep_fresh``: the distilled one-step policy of a ``"flow"`` extraction
  or of FQL, with the noise 0 (how the learners act) or a fresh noise at every step (how FQL's
  reference code evaluates).

A Q-free mode works on any flow learner (FQL too); the others need CVL's critic.
``--noise-scale`` multiplies every noise drawn (1: the flow's own distribution; below 1 the
samples shrink toward the flow's modes, as a sampling temperature; 0 with ``fresh`` integrates
from the zero noise, the behaviour flow's deterministic action).

Run:

    ./pants run benchmarks/committed_noise.py -- --run runs/handle-pull/seed_0 --step 20000 \\
        --out committed_noise.jsonl

or with ``PYTHONPATH=packages/cvl-data:packages/cvl-models:packages/cvl-algos:packages/cvl-eval``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from cvl_algos.cvl.acting import best_by_q
from cvl_algos.registry import load_learner
from cvl_data.jsonio import write_text_atomic
from cvl_eval.rollout.evaluate import evaluate_policy
from cvl_models.flow import FlowPolicy, euler_integrate

MODES = (
    "fresh",
    "committed",
    "select",
    "select_fresh",
    "select_ascent",
    "commit_q",
    "recommit_q",
    "onestep_zero",
    "onestep_fresh",
)
NEEDS_Q = ("select", "select_fresh", "select_ascent", "commit_q", "recommit_q")


class FlowActor:
    """One acting mode of `MODES` over a fixed batch of episodes (one row per environment).

    The K candidate noises of each row are drawn at the first call and held; ``choice`` is the
    candidate each row follows in the committing modes, ``switches`` counts how often a row's
    choice changed at a re-choice.
    """

    def __init__(
        self,
        learner,
        mode: str,
        num_candidates: int,
        recommit_every: int,
        seed: int,
        noise_scale: float = 1.0,
        ascent_steps: int = 0,
        ascent_step_size: float = 0.0,
    ):
        if mode not in MODES:
            raise ValueError(f"--modes: expected some of {MODES}, got {mode!r}")
        policy = learner.acting_policy
        if not isinstance(policy, FlowPolicy):
            raise ValueError(
                "--run: the run's policy is not a flow (train it with a flow extraction)"
            )
        self.velocity, self.steps = policy.velocity, learner.config.flow_steps
        self.onestep = policy.onestep
        acting_q_fn = getattr(learner, "acting_q_fn", None)
        self.q_fn = acting_q_fn() if acting_q_fn is not None and mode in NEEDS_Q else None
        if self.q_fn is None and mode in NEEDS_Q:
            raise ValueError("--run: the checkpoint has no future states to score actions with")
        self.mode, self.num_candidates, self.recommit_every = mode, num_candidates, recommit_every
        self.action_dim = policy.action_dim
        self.generator = torch.Generator().manual_seed(seed)
        self.noise_scale = noise_scale
        self.ascent_steps, self.ascent_step_size = ascent_steps, ascent_step_size
        self.noise: torch.Tensor | None = None
        self.choice: torch.Tensor | None = None
        self.step, self.switches = 0, 0

    def _randn(self, *shape: int) -> torch.Tensor:
        return self.noise_scale * torch.randn(*shape, generator=self.generator)

    def _scored(
        self, obs_t: torch.Tensor, noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The (K, B, A) behaviour-flow actions of ``noise`` and their (K, B) Q."""
        candidates = euler_integrate(self.velocity, obs_t, noise, self.steps)
        return candidates, self.q_fn(obs_t, candidates)

    def _action(self, obs_t: torch.Tensor) -> torch.Tensor:
        """This step's (B, A) actions under ``self.mode``."""
        batch = obs_t.shape[0]
        if self.mode == "onestep_zero":
            return self.onestep(obs_t, torch.zeros(batch, self.action_dim)).clamp(-1.0, 1.0)
        if self.mode == "onestep_fresh":
            return self.onestep(obs_t, self._randn(batch, self.action_dim)).clamp(-1.0, 1.0)
        if self.mode == "select_ascent":
            return self._ascend(obs_t, best_by_q(*self._scored(obs_t, self.noise)))
        if self.mode in ("select", "select_fresh"):
            noise = self.noise
            if self.mode == "select_fresh":
                noise = self._randn(self.num_candidates, batch, self.action_dim)
            return best_by_q(*self._scored(obs_t, noise))
        if self.mode == "fresh":
            noise = self._randn(batch, self.action_dim)
        elif self.mode == "committed":
            noise = self.noise[0]
        else:  # commit_q, recommit_q
            rechoose = self.choice is None or (
                self.mode == "recommit_q" and self.step % self.recommit_every == 0
            )
            if rechoose:
                best = self._scored(obs_t, self.noise)[1].argmax(dim=0)
                if self.choice is not None:
                    self.switches += int((best != self.choice).sum())
                self.choice = best
            noise = self.noise[self.choice, torch.arange(batch)]
        return euler_integrate(self.velocity, obs_t, noise, self.steps)

    def _ascend(self, obs_t: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``ascent_steps`` normalised gradient steps of Q from ``action`` (B, A), each of length
        ``ascent_step_size`` and clipped to the action box; per row the iterate of highest Q."""
        iterates, values = [], []
        current = action
        with torch.enable_grad():
            for k in range(self.ascent_steps + 1):
                current = current.detach().requires_grad_(k < self.ascent_steps)
                q = self.q_fn(obs_t, current.unsqueeze(0))[0]  # (B,), each iterate scored once
                iterates.append(current.detach())
                values.append(q.detach())
                if k < self.ascent_steps:
                    (grad,) = torch.autograd.grad(q.sum(), current)
                    step = grad / grad.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                    current = (current + self.ascent_step_size * step).clamp(-1.0, 1.0)
        return best_by_q(torch.stack(iterates), torch.stack(values))

    @torch.no_grad()
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs_t = torch.as_tensor(obs, dtype=torch.float32)
        batch = obs_t.shape[0]
        if self.noise is None:  # drawn first in every mode, so each mode's stream is fixed
            self.noise = self._randn(self.num_candidates, batch, self.action_dim)
        elif self.noise.shape[1] != batch:
            raise RuntimeError("an episode ended early: rows no longer match their noises")
        action = self._action(obs_t)
        self.step += 1
        return action.numpy()


def evaluate_modes(args: argparse.Namespace) -> list[dict]:
    """Every mode of ``args.modes`` on the checkpoint at ``args.step``: one record each."""
    checkpoint = Path(args.run) / "final"
    if args.step != "final":
        checkpoint = Path(args.run) / "checkpoints" / f"step_{int(args.step):010d}"
    if not checkpoint.is_dir():
        raise SystemExit(f"--run/--step: no checkpoint folder {checkpoint}")
    learner = load_learner(checkpoint, restore_global_rng=False)
    task = json.loads((Path(args.run) / "config.json").read_text())["task"]
    records = []
    for mode in args.modes:
        start = time.perf_counter()
        actor = FlowActor(
            learner,
            mode,
            args.candidates,
            args.recommit_every,
            args.seed,
            args.noise_scale,
            args.ascent_steps,
            args.ascent_step_size,
        )
        result = evaluate_policy(
            task, actor, args.episodes, seed=args.eval_seed, num_envs=args.episodes
        )
        records.append(
            {
                "run": str(args.run),
                "step": int(learner.step),
                "mode": mode,
                "candidates": args.candidates,
                "noise_scale": args.noise_scale,
                "ascent_steps": args.ascent_steps if mode == "select_ascent" else 0,
                "ascent_step_size": args.ascent_step_size if mode == "select_ascent" else 0.0,
                "success": result.success_rate,
                "return": result.mean_return,
                "episode_successes": [bool(s) for s in result.successes],
                "switches_per_episode": actor.switches / args.episodes,
                "time_s": round(time.perf_counter() - start, 1),
            }
        )
        summary = {k: v for k, v in records[-1].items() if k != "episode_successes"}
        print(json.dumps(summary), flush=True)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a cvl-train run folder of a flow policy")
    parser.add_argument("--step", required=True, help="the checkpoint's update, or 'final'")
    parser.add_argument("--out", required=True, help="where the records go (JSON lines)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=32, help="K noises per episode")
    parser.add_argument("--recommit-every", type=int, default=25)
    parser.add_argument("--noise-scale", type=float, default=1.0, help="multiplies every noise")
    parser.add_argument("--ascent-steps", type=int, default=10, help="select_ascent's steps")
    parser.add_argument(
        "--ascent-step-size", type=float, default=0.03, help="select_ascent's step length"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the noises")
    parser.add_argument("--eval-seed", type=int, default=100, help="cvl-train's default")
    args = parser.parse_args()
    if args.episodes < 1 or args.candidates < 1 or args.recommit_every < 1:
        parser.error("--episodes, --candidates and --recommit-every must be >= 1")
    if args.ascent_steps < 0 or not 0.0 <= args.ascent_step_size <= 2.0:
        parser.error(
            "--ascent-steps must be >= 0 and --ascent-step-size in [0, 2], got "
            f"{args.ascent_steps} and {args.ascent_step_size}"
        )
    if not 0.0 <= args.noise_scale <= 10.0:
        parser.error(f"--noise-scale: expected a number in [0, 10], got {args.noise_scale}")
    if args.step != "final" and not args.step.isdigit():
        parser.error(f"--step: expected an update count or 'final', got {args.step!r}")
    torch.set_num_threads(1)
    records = evaluate_modes(args)
    write_text_atomic(args.out, "".join(json.dumps(r) + "\n" for r in records))


if __name__ == "__main__":
    main()
