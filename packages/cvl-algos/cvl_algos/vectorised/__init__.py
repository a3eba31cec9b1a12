"""Many seeds, one learner: K independent seeds of one algorithm trained in one process.

`VectorisedLearner` stacks the parameters of K learners of one class and config (built as
usual, one per seed) and runs each update once for all of them with ``torch.func.vmap``: a seed
keeps its own parameters, Adam state, RNG stream (its draws are replayed from its own generator,
`cvl_models.noise`) and, through its learner, its sampler and checkpoint. A learner takes part
by declaring its update as stages (`LearnerBase.gradient_stages`, `cvl_algos.stages`);
`unsupported(learners)` says why a set of learners cannot be vectorised (None: they can).
"""

from cvl_algos.vectorised.learner import VectorisedLearner, unsupported

__all__ = ["VectorisedLearner", "unsupported"]
