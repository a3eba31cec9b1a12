"""Dataset generation: recorded episodes written as `cvl_data` datasets, resumable.

| module | job |
|---|---|
| `recording` | `dataset_spec`, `write_episode`, `open_generation` (env + writers), `episode_seed` |
| `scripted` | `generate_scripted`: scripted-expert datasets with Gaussian / epsilon-random noise |
| `sac.config` | `SACDataConfig`, `sac_data_config` (with the environment's defaults), the report |
| `sac.episode` | one episode of the SAC generation: act, step, store, update |
| `sac.checkpoints` | the SAC generation's learner checkpoints and ``state.json`` counters |
| `sac.generate` | `generate_sac`: the paper's SAC replay-buffer datasets |
| `dispatch` | `generate_datasets(GenerateConfig)`: either kind, many tasks, into a data root |
"""
