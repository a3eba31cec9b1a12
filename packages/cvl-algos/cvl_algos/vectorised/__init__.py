"""Many seeds, one learner: K independent seeds of one algorithm trained in one process.

`VectorisedLearner` stacks the parameters of K learners of one class and config (built as
usual, one per seed) and runs each update once for all of them with ``torch.func.vmap``: a seed
keeps its own parameters, Adam state, RNG stream (its draws are replayed from its own generator,
`cvl_models.noise`) and, through its learner, its sampler and checkpoint. A learner takes part
by declaring its update as `GradientStage`s (`LearnerBase.gradient_stages`).
"""

from cvl_algos.stages import GradientStage
from cvl_algos.vectorised.learner import VectorisedLearner

__all__ = ["GradientStage", "VectorisedLearner"]
