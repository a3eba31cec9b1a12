"""The mixed-quality suite: per task, which behaviours its ``mixture`` dataset holds.

Every task's default mixture has the same shape (DESIGN.md sec. 2, "Data where offline RL
matters"): a minority of episodes that solve the task and a majority of structured, wrong
behaviour that still earns shaped reward, so behaviour cloning imitates the average and fails,
while a method that reads the rewards can pick out the successful quarter:

- 25% the task's own scripted expert, Gaussian action noise std 0.3 (the behaviour that succeeds);
- 35% the scripted expert of the *opposite* task run in this task's environment (closes the
  drawer it should open, presses the handle it should pull: moves to the right object, then does
  the wrong thing with it);
- 20% the scripted expert of a second wrong task (mostly ``reach``: moves the hand away);
- 20% uniform random actions.

The wrong experts see this environment's observation (object and goal positions in the same
slots), so they act purposefully but wrongly. Only tasks whose wrong sources were measured to
fail are listed (100 episodes, seed 0; return / success of expert, opposite, second, random):

- drawer-open: 4005/100%, drawer-close 2617/0%, reach 511/0%, random 753/0%
- door-open: 4074/88%, door-close 431/0%, reach 193/0%, random 279/0%
- faucet-open: 4007/100%, faucet-close 1870/0%, reach 963/0%, random 1290/0%
- reach: 4814/100%, drawer-close 430/0%, button-press 198/0%, random 854/5%

Four more tasks, outside the `mixed` preset (``MIXED_SUITE_TASKS``), measured the same way
(2026-11-28; docs/results.md, "The suite's recipe on four other tasks"):

- handle-pull: 3963/100%, handle-press 121/0%, reach 70/0%, random 54/0%
- plate-slide: 4523/100%, plate-slide-back 413/0%, reach 163/0%, random 337/0%
- faucet-close: 3473/100%, faucet-open 1969/3%, reach 1198/0%, random 1342/0%
- plate-slide-side: 2950/100%, plate-slide-back-side 682/0%, reach 23/0%, random 137/0%

Rejected because a "wrong" expert solves the task: window-open (window-close 89%), button-press
(button-press-wall 100%, reach 100%), door-close (reach 100%, door-open 37%), window-close
(window-open 77%), door-unlock (door-lock 29%), door-lock (reach 25%), coffee-push (coffee-pull
97%, with a higher return than the expert's). The generation report prints each source's return
and success (`source_table`), so check a new entry there.
"""

from __future__ import annotations

from cvl_eval.envs.make import canonical_name

__all__ = ["MIXED_SUITE_TASKS", "WRONG_EXPERTS", "mixture_sources"]

WRONG_EXPERTS: dict[str, tuple[str, str]] = {
    "drawer-open": ("drawer-close", "reach"),
    "door-open": ("door-close", "reach"),
    "faucet-open": ("faucet-close", "reach"),
    "reach": ("drawer-close", "button-press"),
    "handle-pull": ("handle-press", "reach"),
    "plate-slide": ("plate-slide-back", "reach"),
    "faucet-close": ("faucet-open", "reach"),
    "plate-slide-side": ("plate-slide-back-side", "reach"),
}
"""Task -> (opposite task's expert: 35% of episodes, second wrong expert: 20%)."""

MIXED_SUITE_TASKS: tuple[str, ...] = ("drawer-open", "door-open", "faucet-open", "reach")
"""The four tasks of the ``mixed`` paper preset."""

OWN_EXPERT_SIGMA = 0.3
"""Action-noise std of every expert source (own and wrong)."""


def mixture_sources(task: str) -> tuple[str, ...]:
    """The default mixture of ``task`` as `cvl_eval.datagen.behaviours.parse_source` strings.

    Raises ``ValueError`` naming the tasks that have a default mixture when ``task`` has none
    (give the sources explicitly then).
    """
    name = canonical_name(task).removesuffix("-v3")
    if name not in WRONG_EXPERTS:
        raise ValueError(
            f"{name}: no default mixture; give the sources explicitly (--sources), or use one of "
            f"{sorted(WRONG_EXPERTS)}"
        )
    opposite, second = WRONG_EXPERTS[name]
    sigma = OWN_EXPERT_SIGMA
    return (
        f"expert,sigma={sigma},weight=0.25",
        f"expert:{opposite},sigma={sigma},weight=0.35",
        f"expert:{second},sigma={sigma},weight=0.2",
        "random,weight=0.2",
    )
