"""Pipelines: the jobs that chain the other rooms (generate -> train -> evaluate -> report).

| module | job |
|---|---|
| `sweep` | `sweep(SweepConfig)`: algorithms x tasks x seeds as parallel processes, an index |
| `sweep_plan` | `SweepConfig`, `expand`: the grid as runs (variants, overrides, data, folders) |
| `sweep_local` | the runs as local child processes, up to `workers` at a time; SIGTERM |
| `sweep_worker` | a sweep's child process: one run, its log and error record |
| `sweep_ray` | `RayBackend`: the sweep's runs as Ray tasks (``--backend ray``) |
| `paper_presets` | `PRESETS`, `Budget`, `PaperConfig`, `resolve`: the paper's experiments as data |
| `paper` | `run_paper_experiment(PaperConfig)`: data -> sweep -> report (-> heatmaps) |
| `quickstart` | `quickstart(QuickstartConfig)`: noisy-expert data, CVL and BC, a random baseline |
"""
