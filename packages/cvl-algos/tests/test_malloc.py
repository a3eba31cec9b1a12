"""`retain_freed_memory`: a real CVL update loop stops faulting its pages in again each update.

Each case runs in a fresh interpreter (the settings are process-wide and must be in force before
the loop's allocations). The count is the kernel's minor page faults (``getrusage``), not a
time, so the assertion does not depend on how busy the machine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import cvl_algos.malloc  # noqa: F401  # the child imports it: make Pants ship it
from cvl_data import ContrastiveBatch  # noqa: F401  # the child's batch

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path)}

CHILD = """
import json, resource, sys
from cvl_algos.malloc import retain_freed_memory
applied = retain_freed_memory()
import torch
from cvl_algos import make_learner
from cvl_data import ContrastiveBatch
torch.set_num_threads(1)
torch.manual_seed(0)
size = 256
batch = ContrastiveBatch(
    obs_t=torch.randn(size, 39), action_t=torch.rand(size, 4) * 2 - 1, reward_t=torch.rand(size),
    obs_next=torch.randn(size, 39), done=torch.zeros(size), obs_future=torch.randn(size, 39),
    reward_future=torch.rand(size), offset=torch.ones(size, dtype=torch.int64), task_id=None,
)
learner = make_learner("cvl", (39,), 4, hidden=(64, 64), batch_size=size)
for _ in range(3):  # warm-up: the heap grows to its working size
    learner.update(batch)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    learner.update(batch)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(json.dumps({"applied": applied, "faults_per_update": faults}))
"""


def _child(env_value: str | None) -> dict:
    env = dict(ENV)
    env.pop(cvl_algos.malloc.ENV_VAR, None)
    if env_value is not None:
        env[cvl_algos.malloc.ENV_VAR] = env_value
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_updates_reuse_memory_instead_of_faulting_it_in():
    """With the settings, a CVL update (64 x 64, batch 256) faults in almost no pages: fewer than
    2000 per update (measured: ~260 with them, ~17k with glibc's defaults on this machine)."""
    result = _child(None)
    if not result["applied"]:
        pytest.skip("not glibc: retain_freed_memory does nothing here")
    assert result["faults_per_update"] < 2000, result


def test_environment_variable_turns_it_off():
    result = _child("0")
    assert result["applied"] is False
