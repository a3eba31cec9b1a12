"""Run folders: what a training run (or an evaluated policy) leaves on disk, and the index over
many of them. Written by `cvl_eval.training`, read by `cvl_eval.rollout.checkpoint`,
`cvl_eval.analysis` and `cvl_eval.pipelines`; it imports no other room.

| module | job |
|---|---|
| `folder` | `RunFolder`: the layout of one run folder (config, logs, checkpoints, results) |
| `index` | `find_runs`, `write_index` (``index.json`` / ``index.csv``), `write_policy_run` |
"""
