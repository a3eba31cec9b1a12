"""Dataset generation: recorded episodes written as `cvl_data` datasets, resumable.

| module | job |
|---|---|
| `recording` | `dataset_spec`, `write_episode`, `open_generation` (env + writers), `episode_seed` |
| `episodes` | `generate_episodes`: the resumable episode-by-episode loop of the two below |
| `scripted` | `generate_scripted`: scripted-expert datasets with Gaussian / epsilon-random noise |
| `behaviours` | `generate_behaviour_dataset`: mixture / curriculum datasets of good and bad behaviour |
| `sac.config` | `SACDataConfig`, `sac_data_config` (with the environment's defaults), the report |
| `sac.episode` | one episode of the SAC generation: act, step, store, update |
| `sac.checkpoints` | the SAC generation's learner checkpoints and ``state.json`` counters |
| `sac.generate` | `generate_sac`: the paper's SAC replay-buffer datasets |
| `dispatch` | `generate_datasets(GenerateConfig)`: either kind, many tasks, into a data root |
"""
