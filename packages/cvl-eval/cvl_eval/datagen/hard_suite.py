"""The hard suite: data where keeping the best episodes is not enough (issue 26, section 3).

On the mixed suite (`cvl_eval.datagen.mixed_suite`) a quarter of the episodes solve the task end
to end, so behaviour cloning on the top 10% by return is nearly optimal. Here no episode of the
``stitch`` kind solves its task: its episodes cover the task's parts separately, and a method
has to piece the parts together. Its default sources for a task (`stitch_sources`):

- 50%: the task's expert approaches the object, and when the hand is within 0.05 of it (or after
  50 steps at the latest), the expert of the opposite task (20%), of a second wrong task (15%;
  `cvl_eval.datagen.mixed_suite.WRONG_EXPERTS`) or random actions (15%) take over;
- 50%: the task's expert recorded from the moment its hand came within 0.05 of the object (or
  step 150 at the latest): the episode starts mid-task and finishes it.

The ``noisy`` kind (`cvl_eval.datagen.behaviours.noisy_plan`) is OGBench's noisy expert.
"""

from __future__ import annotations

from cvl_eval.datagen.mixed_suite import OWN_EXPERT_SIGMA
from cvl_eval.envs.make import canonical_name

__all__ = ["STITCH_TASKS", "stitch_sources"]

STITCH_WRONG: dict[str, str] = {
    "drawer-open": "door-close",
    "door-open": "door-close",
    "faucet-open": "faucet-close",
}
"""Task -> the wrong expert that takes over after the approach (sigma 0.3), chosen by measuring
its success from the switch (100-episode datasets, seed 0; the rest of the stitch sources and
the switch as below): in drawer-open, door-close 0/20 succeeded, drawer-close 4/20 and 5/30
(rising from the handle pulls the drawer), reach 5/30 (the reach goal is where the handle must
go), handle-press 15/20, button-press-topdown 20/20; door-open's door-close 0/30 and
faucet-open's faucet-close 0/30, where reach solved the task from near the handle (9/10,
10/10)."""

STITCH_TASKS: tuple[str, ...] = tuple(STITCH_WRONG)
"""Tasks with a default stitch recipe: an object to approach, then to manipulate."""

SWITCH = "near0.1+50"
"""When the approach episodes hand over to wrong behaviour: the hand within 0.1 of the object,
or step 50 at the latest (before the scripted experts' first success, step 56-90)."""

START = "near0.1+150"
"""Where the finishing episodes' recording starts: the hand within 0.1 of the object (the same
place as the switch, so the two parts meet), or step 150 at the latest."""


def stitch_sources(task: str) -> tuple[str, ...]:
    """The default ``stitch`` sources of ``task`` (`cvl_eval.datagen.sources.SOURCE_GRAMMAR`).

    Raises ``ValueError`` naming the tasks that have one when ``task`` has none.
    """
    name = canonical_name(task).removesuffix("-v3")
    if name not in STITCH_WRONG:
        raise ValueError(
            f"{name}: no default stitch recipe; give the sources explicitly (--sources), or use "
            f"one of {sorted(STITCH_WRONG)}"
        )
    sigma = OWN_EXPERT_SIGMA
    approach = f"expert,sigma={sigma},switch={SWITCH}"
    return (
        f"{approach},weight=0.3>expert:{STITCH_WRONG[name]},sigma={sigma}",
        f"{approach},weight=0.2>random",
        f"expert,sigma={sigma},start={START},weight=0.5",
    )
