"""cvl_eval: environments, rollouts, dataset generation, training, pipelines and analysis.

Part of the CVL monorepo ("Contrastive Value Learning: Implicit Models for Simple Offline RL",
Mazoure, Eysenbach, Nachum, Tompson). The package is a house with rooms, one job each; a room
imports only the rooms below it (enforced by the ``__dependencies_rules__`` of its BUILD file):

| room | job | imports |
|---|---|---|
| `errors`, `cli` | `ConfigError`, `TrainingStopped`; the entry points' shell `cli.run` | - |
| `envs` | `make_env`, Meta-World tasks, pixels, scripted experts, expert scores, per-env defaults | - |
| `runs` | run folders on disk, their index, folder locks | - |
| `rollout` | recording episodes, evaluating policies and checkpoints | envs, runs |
| `datagen` | scripted, behaviour and SAC replay datasets; resume checks | envs, runs, rollout |
| `training` | `train(TrainConfig)`: the offline trainer | envs, runs, rollout |
| `analysis` | rliable metrics, plots, tables, curves, reports, Mountain Car heatmaps | envs, runs |
| `pipelines` | sweeps, the paper presets, the quickstart | every room |
| `console`, `__main__` | the commands (`cvl-train`, ..., `python -m cvl_eval <command>`) | every room |

Every name has one import path: the module that defines it (``from cvl_eval.envs.make import
make_env``); each room's ``__init__`` lists its modules. Importing any of it never chooses a
matplotlib backend; ``cvl_eval.envs`` chooses headless EGL rendering (``MUJOCO_GL``).
"""

__version__ = "0.1.0"
