"""Rollouts: running policies in environments, to record episodes or to score them.

| module | job |
|---|---|
| `episode` | `run_episode` -> `Episode` (states, actions, rewards, flags, optional frames) |
| `evaluate` | `evaluate_policy` -> `EvalResult` (vectorised, fixed evaluation seeds), `random_policy` |
| `checkpoint` | `evaluate_checkpoint(EvaluateConfig)`: a saved learner or run folder on its task |
| `expert_table` | recomputing the expert-return table (``python -m cvl_eval.rollout.expert_table``) |
"""
