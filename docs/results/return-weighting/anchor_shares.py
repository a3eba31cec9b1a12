"""Where the anchors' mass goes on each held-out mixture (PREREG.md, thirty-fifth amendment): the
share of the steps' sampling weight on the task's own (noisy) expert episodes and on successful
episodes, for filtered BC's top 20% by return, return weights exp((G~ - 1) / T) of the return and
of its advantage over the start (`return_weight_baseline="start_state"`) at T = 0.1 / 0.2 / 0.3.
Sources and success come from each episode's record in the dataset's `meta.json`.

python anchor_shares.py DATA OUT.json   (DATA holds ho_<task>/<task>-v3)
"""

import json
import sys
from pathlib import Path

import numpy as np

from cvl_data.reader import open_dataset
from cvl_data.subset import episode_returns
from cvl_data.weighting import return_weights, start_state_advantages

TASKS = ("hammer", "handle-pull", "lever-pull", "plate-slide")


def own_expert(info, task):
    """Whether each episode is the task's own expert (scripted, with or without noise)."""
    behaviour = [e["behaviour"] for e in info]
    return np.asarray(
        [b["kind"] == "expert" and b.get("task", task).startswith(task) for b in behaviour]
    )


def shares(path, task):
    dataset = open_dataset(path)
    info = json.loads((Path(path) / "meta.json").read_text())["episode_info"]
    own, success = own_expert(info, task), np.asarray([e["success"] for e in info])
    returns = episode_returns(dataset)
    advantages = start_state_advantages(dataset, returns)
    lengths = np.diff(np.asarray(dataset.episode_offsets, np.int64))
    top = np.zeros(len(returns))
    top[np.argsort(-returns)[: len(returns) // 5]] = 1.0
    schemes = {"filtered BC, top 20%": top, "return, T = 0.2": return_weights(returns, 0.2)}
    for t in (0.3, 0.2, 0.1):
        schemes[f"advantage over the start, T = {t}"] = return_weights(advantages, t)
    out = {"episodes": len(returns), "own expert": int(own.sum()), "successful": int(success.sum())}
    for name, weights in schemes.items():
        mass = weights * lengths
        out[name] = {
            "own expert": round(float(mass[own].sum() / mass.sum()), 3),
            "successful": round(float(mass[success].sum() / mass.sum()), 3),
        }
    return out


def main(data, path):
    result = {t: shares(Path(data) / f"ho_{t}" / f"{t}-v3", t) for t in TASKS}
    print(json.dumps(result, indent=1))
    Path(path).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
