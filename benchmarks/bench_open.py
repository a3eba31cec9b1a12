"""Time of `cvl_data.open_dataset` on a 50k-transition dataset, per checksum mode.

Run against any checkout of cvl-data (the script only uses ``open_dataset(path, verify=...)``):

    PYTHONPATH=packages/cvl-data python benchmarks/bench_open.py

Rows: ``verify=False`` and ``verify=True``; where the checkout has the verification stamp
(`cvl_data.checksums`), ``verify=False`` is timed twice: with no stamp (the first open hashes
every file and writes the stamp) and with a trusted stamp (nothing hashed). Files are left to age
past the racy window before timing, as they are between generating a dataset and training on it.
Median of ``--repeats`` opens, wall and CPU time of this process.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import cvl_data
from cvl_data import DatasetSpec, DatasetWriter, open_dataset

try:
    from cvl_data.checksums import RACY_NS, STAMP_FILE
except ImportError:  # a checkout from before the stamp
    RACY_NS, STAMP_FILE = 0, None


def make_dataset(folder: Path, name: str, transitions: int, obs_shape: tuple[int, ...]) -> Path:
    pixels = len(obs_shape) == 3
    spec = DatasetSpec(
        env_id="Meta-World/MT1",
        task="drawer-open-v3",
        obs_kind="pixels" if pixels else "state",
        obs_shape=obs_shape,
        obs_dtype="uint8" if pixels else "float32",
        action_shape=(4,),
        action_low=-1.0,
        action_high=1.0,
        has_rewards=True,
    )
    rng = np.random.default_rng(0)
    steps = 500
    with DatasetWriter(folder / name, spec, durable=False) as writer:
        for _ in range(transitions // steps):
            if pixels:
                obs = rng.integers(0, 256, (steps + 1, *obs_shape), dtype=np.uint8)
            else:
                obs = rng.normal(size=(steps + 1, *obs_shape)).astype(np.float32)
            writer.add_episode(
                obs,
                rng.uniform(-1, 1, (steps, 4)),
                rng.uniform(0, 10, steps),
                terminated=np.zeros(steps, bool),
                truncated=np.arange(steps) == steps - 1,
            )
    return folder / name


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def rows(path: Path, repeats: int) -> list[tuple[str, float, float]]:
    out = []
    if STAMP_FILE is not None:

        def first_open() -> None:
            (path / STAMP_FILE).unlink(missing_ok=True)
            open_dataset(path, verify=False)

        out.append(("verify=False, no stamp (first open)", *timed(first_open, repeats)))
        open_dataset(path, verify=False)
        trusted = timed(lambda: open_dataset(path, verify=False), repeats)
        out.append(("verify=False, trusted stamp", *trusted))
    else:
        skipped = timed(lambda: open_dataset(path, verify=False), repeats)
        out.append(("verify=False (checksums skipped)", *skipped))
    out.append(("verify=True", *timed(lambda: open_dataset(path, verify=True), repeats)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=50_000)
    parser.add_argument("--pixel-transitions", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"cvl_data from {Path(cvl_data.__file__).parent}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("state 39-d f32", make_dataset(Path(tmp), "state", args.transitions, (39,))),
            ("pixels 84x84x3", make_dataset(Path(tmp), "px", args.pixel_transitions, (84, 84, 3))),
        ]
        time.sleep(RACY_NS / 1e9 + 0.5)  # let the files age past the racy window
        print(f"{'data':<34} {'MB':>6}  {'mode':<38} {'wall ms':>8} {'cpu ms':>8}")
        for label, path in cases:
            size = sum(p.stat().st_size for p in path.iterdir()) / 1e6
            name = f"{label}, {open_dataset(path).num_steps} steps"
            for mode, wall, cpu in rows(path, args.repeats):
                print(f"{name:<34} {size:>6.1f}  {mode:<38} {wall * 1e3:>8.1f} {cpu * 1e3:>8.1f}")


if __name__ == "__main__":
    main()
