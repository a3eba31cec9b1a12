"""How a critic's ranking changes over training: `critic_diagnostics.py` records of one run's
checkpoints, on the data it was trained on and on a fresh sample of the same recipe.

For each record (``LABEL=FILE.json``, a `critic_diagnostics.py --out` file over several
checkpoints of runs) and checkpoint, the table gives the Spearman rho of Q with the discounted
return-to-go, and at the states of the expert's successful episodes the margin
``mean Q(s, a_expert) - mean Q(s, a_source)`` and ``P(Q(s, a_expert) > Q(s, a_source))`` averaged
over the dataset's other sources (the wrong behaviours and random actions; the data's own action
excluded). The margin is in the critic's Q units; ``--relative`` divides it by the mean
``Q(s, a_expert)``, which makes critics of different scale comparable. Run:

    ./pants run benchmarks/critic_over_training.py -- \\
        --records train=diag_train.json fresh=diag_fresh.json \\
        --table over_training.md --png over_training.png --title "handle-pull, seed 0"
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


def checkpoint_step(result: dict) -> int:
    """The update count of a record's checkpoint (``step``, which `critic_diagnostics` writes)."""
    if "step" not in result:
        raise SystemExit(
            f"{result['checkpoint']}: the record has no 'step'; re-run critic_diagnostics.py"
        )
    return int(result["step"])


def summarise(result: dict) -> dict[str, float]:
    """Spearman, mean margin and mean P(expert better) over the sources other than ``data``."""
    counterfactual = result["counterfactual"]
    sources = {k: v for k, v in counterfactual["sources"].items() if k != "data"}
    if not sources:
        raise SystemExit(f"{result['checkpoint']}: the record compares no other source")
    q_expert = counterfactual["mean_q_expert"]
    margins = [q_expert - v["mean_q"] for v in sources.values()]
    return {
        "spearman": result["return_to_go"]["spearman"],
        "margin": sum(margins) / len(margins),
        "relative_margin": sum(margins) / len(margins) / abs(q_expert),
        "p_expert_better": sum(v["p_expert_better"] for v in sources.values()) / len(sources),
    }


def read(labelled: list[str]) -> dict[str, dict[str, dict[int, dict[str, float]]]]:
    """``LABEL=FILE`` records -> label -> run folder -> step -> summary; a record of a run
    without a critic (``skipped``) is an error."""
    out: dict[str, dict[str, dict[int, dict[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    for item in labelled:
        label, sep, file = item.partition("=")
        if not sep or not label or not file:
            raise SystemExit(f"--records: expected LABEL=FILE.json, got {item!r}")
        for key, result in json.loads(Path(file).read_text()).items():
            if "skipped" in result:
                raise SystemExit(f"{file}: {key} has no critic ({result['skipped']})")
            checkpoint = Path(result["checkpoint"])
            run = (
                checkpoint.parent.parent
                if checkpoint.parent.name == "checkpoints"
                else checkpoint.parent
            )
            out[label][str(run)][checkpoint_step(result)] = summarise(result)
    return out


def markdown(data, relative: bool) -> str:
    """One table row per (record, run, checkpoint)."""
    margin = "relative margin" if relative else "margin (Q units)"
    lines = [
        f"| record | run | step | Spearman(Q, return-to-go) | {margin} | P(expert better) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, runs in data.items():
        for run, steps in runs.items():
            for step, s in sorted(steps.items()):
                m = f"{s['relative_margin']:.3f}" if relative else f"{s['margin']:.0f}"
                lines.append(
                    f"| {label} | {run} | {step} | {s['spearman']:.3f} | {m} | "
                    f"{s['p_expert_better']:.2f} |"
                )
    return "\n".join(lines) + "\n"


def _short(run: str) -> str:
    """A run folder's last three parts (``<label>/<task>/<seed>``), for legends."""
    return "/".join(Path(run).parts[-3:])


def plot(data, path: Path, title: str, relative: bool) -> None:
    """Three panels against the update count: Spearman, margin, P(expert better); one line per
    (record, run)."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    keys = ("spearman", "relative_margin" if relative else "margin", "p_expert_better")
    names = (
        "Spearman(Q, return-to-go)",
        "margin / mean Q(s, a_expert)" if relative else "mean Q(s, a_expert) - Q(s, a_other)",
        "P(Q(s, a_expert) > Q(s, a_other))",
    )
    for label, runs in data.items():
        for run, steps in runs.items():
            xs = sorted(steps)
            for ax, key in zip(axes, keys, strict=True):
                ax.plot(
                    xs, [steps[x][key] for x in xs], marker="o", label=f"{label}: {_short(run)}"
                )
    for ax, name in zip(axes, names, strict=True):
        ax.set_xlabel("updates")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=110, tight=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", nargs="+", required=True, metavar="LABEL=FILE.json")
    parser.add_argument("--table", type=Path, default=None, metavar="FILE.md")
    parser.add_argument("--png", type=Path, default=None, metavar="FILE.png")
    parser.add_argument("--title", default="critic over training")
    parser.add_argument("--relative", action="store_true", help="margin / mean Q(s, a_expert)")
    args = parser.parse_args()
    data = read(args.records)
    table = markdown(data, args.relative)
    print(table)
    if args.table is not None:
        write_text_atomic(args.table, table)
    if args.png is not None:
        plot(data, args.png, args.title, args.relative)
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
