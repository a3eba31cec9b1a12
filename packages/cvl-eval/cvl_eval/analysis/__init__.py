"""Analysis: from results to numbers, tables and pictures. It reads run folders
(`cvl_eval.runs`) and never imports training, data generation or the pipelines.

| module | job |
|---|---|
| `metrics` | rliable aggregates (median, IQM, mean, optimality gap), profiles, P(X > Y), efficiency |
| `plots` | the PNGs of those, and `write_rliable_report` (PNGs + ``rliable.json``) |
| `tables` | the paper's per-task table (mean ± std over seeds, best in bold): Markdown, CSV, LaTeX |
| `curves` | learning curves (return vs gradient steps, mean ± std over seeds) as PNG + JSON |
| `figures` | Agg chosen at plot time (`use_agg`), colours, tick labels, saving |
| `run_scores` | what a report reads from run folders, grouped for tables, curves and rliable |
| `report` | `report(ReportConfig)`: run folders -> tables, curves, rliable figures, ``report.md`` |
| `mountain_car` | the CVL-vs-SAC Q heatmaps over (position, velocity) and their Spearman rho |
| `critic_diagnostics` | a critic on a mixture dataset: Spearman rho of Q with the return-to-go, P(Q(s, a_expert) > Q(s, a_source)) |
"""
