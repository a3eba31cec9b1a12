"""Tables and a bar chart of `committed_noise.py` records: success per acting mode and checkpoint.

Each record is one (run, checkpoint, mode, K) evaluation of 30 episodes; this groups them by
(checkpoint, mode, K), prints a Markdown table of the success per run and its mean, writes it with
``--table``, and draws the means with each run's success as a dot (``--png``). Run:

    ./pants run benchmarks/committed_noise_plot.py -- --records out/*.jsonl \\
        --table committed_noise.md --png committed_noise.png --title "handle-pull"
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

from cvl_data.jsonio import write_text_atomic
from cvl_eval.analysis.figures import save_figure

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODE_ORDER = (
    "onestep_zero",
    "onestep_fresh",
    "committed",
    "commit_q",
    "recommit_q",
    "select",
    "select_fresh",
    "fresh",
)


def read_records(paths: list[str]) -> list[dict]:
    """Every JSON line of ``paths``; a line without the fields of a record is an error."""
    records = []
    for path in paths:
        for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
            record = json.loads(line)
            missing = {"run", "step", "mode", "candidates", "success"} - set(record)
            if missing:
                raise SystemExit(f"{path}:{number}: not a committed_noise record (no {missing})")
            records.append(record)
    return records


def _label(mode: str, candidates: int, noise_scale: float = 1.0) -> str:
    """The acting mode, its K where it selects, and a noise scale other than 1 (records written
    before ``--noise-scale`` existed have none: scale 1)."""
    label = f"{mode} (K {candidates})" if mode in ("select", "select_fresh") else mode
    return label if noise_scale == 1.0 else f"{label} (scale {noise_scale:g})"


def _group_name(run: str) -> str:
    """A run path's folders above ``<task>/<seed>``: the learner or dataset group it belongs to."""
    return "/".join(Path(run).parts[:-2])


def group(records: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """(checkpoint, "<group>: <acting label>") -> {run: success}, where a run's group is its path
    above ``<task>/<seed>``; a repeated (run, checkpoint, label) is an error, not an average."""
    table: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in records:
        key = (
            str(r["step"]),
            f"{_group_name(r['run'])}: {_label(r['mode'], r['candidates'], r.get('noise_scale', 1.0))}",
        )
        if r["run"] in table[key]:
            raise SystemExit(f"--records: {r['run']} at {key} appears twice")
        table[key][r["run"]] = float(r["success"])
    order = {m: i for i, m in enumerate(MODE_ORDER)}

    def sort_key(item):
        (step, label), _ = item
        group_name, _, acting = label.partition(": ")
        return (int(step), group_name, order[acting.split()[0]], acting)

    return dict(sorted(table.items(), key=sort_key))


def markdown(table: dict[tuple[str, str], dict[str, float]]) -> str:
    """One row per (checkpoint, group, acting), one column per task and seed (blank where a
    group has no such run), and the mean over the row's runs."""
    columns = sorted(
        {"/".join(Path(run).parts[-2:]) for values in table.values() for run in values}
    )
    lines = [
        "| checkpoint | runs: acting | " + " | ".join(columns) + " | mean |",
        "| --- | --- | " + " | ".join("---" for _ in columns) + " | --- |",
    ]
    for (step, label), values in table.items():
        by_column = {"/".join(Path(run).parts[-2:]): v for run, v in values.items()}
        cells = [f"{by_column[c]:.2f}" if c in by_column else "" for c in columns]
        mean = sum(values.values()) / len(values)
        lines.append(f"| {step} | {label} | " + " | ".join(cells) + f" | **{mean:.2f}** |")
    return "\n".join(lines) + "\n"


def plot(
    table: dict[tuple[str, str], dict[str, float]],
    path: Path,
    title: str,
    references: dict[str, dict[str, float]],
) -> None:
    """Bars of the mean success per acting mode, one panel per checkpoint; ``references`` maps
    a checkpoint to other methods' mean success there, drawn as labelled horizontal lines."""
    steps = sorted({step for step, _ in table}, key=int)
    most = max(sum(1 for s, _ in table if s == step) for step in steps)
    width = max(5.5, 0.6 * most + 2.0)
    fig, axes = plt.subplots(1, len(steps), figsize=(width * len(steps), 5.0), squeeze=False)
    for ax, step in zip(axes[0], steps, strict=True):
        rows = [(label, values) for (s, label), values in table.items() if s == step]
        for i, (_, values) in enumerate(rows):
            successes = list(values.values())
            ax.bar(i, sum(successes) / len(successes), color="tab:blue", alpha=0.6)
            ax.scatter([i] * len(successes), successes, color="black", s=12, zorder=3)
        for k, (name, value) in enumerate(references.get(step, {}).items()):
            ax.axhline(value, color=f"C{k + 1}", linestyle="--", label=f"{name} ({value:.2f})")
        if references.get(step):
            ax.legend(loc="upper left", fontsize=8)
        ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=35, ha="right")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("success (30 episodes per run)")
        ax.set_title(f"{title}, checkpoint {step}")
    fig.tight_layout()
    save_figure(fig, path, dpi=110, tight=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", nargs="+", required=True, help="committed_noise.py outputs")
    parser.add_argument("--table", help="write the Markdown table here")
    parser.add_argument("--png", help="write the bar chart here")
    parser.add_argument("--title", default="success by acting mode")
    parser.add_argument(
        "--reference",
        nargs="*",
        default=[],
        metavar="STEP:NAME=VALUE",
        help="another method's mean success at a checkpoint, drawn as a line",
    )
    args = parser.parse_args()
    references: dict[str, dict[str, float]] = defaultdict(dict)
    for item in args.reference:
        step, _, rest = item.partition(":")
        name, _, value = rest.partition("=")
        try:
            references[step][name] = float(value)
        except ValueError:
            parser.error(f"--reference: expected STEP:NAME=VALUE, got {item!r}")
    table = group(read_records(args.records))
    text = markdown(table)
    print(text, end="")
    if args.table:
        write_text_atomic(args.table, text)
    if args.png:
        plot(table, Path(args.png), args.title, references)


if __name__ == "__main__":
    main()
