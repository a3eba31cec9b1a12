"""Offline training: one algorithm x dataset x seed, validated first, logged, resumable.

| module | job |
|---|---|
| `config` | `TrainConfig` (frozen, documented), `StepInfo` |
| `checks` | the checks of a config's parts, each a `ConfigError` with what to fix |
| `plan` | `validate(config) -> Plan`: what the run will do; its data sources and samplers |
| `session` | the learner, samplers and logger of one process session, restored on resume |
| `loop` | `train(config)`: the updates, logging, evaluation, checkpoints, ``results.json`` |
| `seeds` | `train_seeds(configs)`: K seeds of one run in one process (vectorised learner) |
| `logger` | `MetricsLogger`: ``metrics.jsonl`` / ``evals.jsonl``, TensorBoard, optional W&B |
| `wandb_sink` | `WandbSink`: the optional Weights & Biases logger (``--wandb``) |
"""
