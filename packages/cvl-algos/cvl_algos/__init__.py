"""cvl_algos: learners of "Contrastive Value Learning" (Mazoure et al.) and its baselines.

``make_learner(name, obs_shape, action_dim, device, seed, **config_overrides)`` builds one of
``ALGORITHMS``: "cvl", "cvl_mc" (CVL with direct Monte-Carlo Q), "bc", "cql", "cql_uds", "sac".
Learner classes and configs are importable from here too; they load on first access.
"""

from cvl_algos.base import LearnerBase
from cvl_algos.checkpoint import (
    CheckpointError,
    CheckpointWarning,
    load_checkpoint,
    read_checkpoint_json,
    read_checkpoint_state,
    save_checkpoint,
    verify_checkpoint,
)
from cvl_algos.registry import (
    ALGORITHMS,
    learner_class,
    load_learner,
    make_learner,
    offline_algorithms,
    register,
)

__version__ = "0.1.0"

_LAZY = {
    "BCConfig": "cvl_algos.bc",
    "BCLearner": "cvl_algos.bc",
    "FilteredBCConfig": "cvl_algos.bc",
    "FilteredBCLearner": "cvl_algos.bc",
    "WeightedBCConfig": "cvl_algos.bc",
    "WeightedBCLearner": "cvl_algos.bc",
    "FQLConfig": "cvl_algos.fql",
    "FQLLearner": "cvl_algos.fql",
    "IQLConfig": "cvl_algos.iql",
    "IQLLearner": "cvl_algos.iql",
    "SACConfig": "cvl_algos.sac",
    "SACLearner": "cvl_algos.sac",
    "CQLConfig": "cvl_algos.cql",
    "CQLLearner": "cvl_algos.cql",
    "CQLUDSConfig": "cvl_algos.uds",
    "CQLUDSLearner": "cvl_algos.uds",
    "uds_datasets": "cvl_algos.uds",
    "CVLConfig": "cvl_algos.cvl",
    "CVLMCConfig": "cvl_algos.cvl",
    "CVLLearner": "cvl_algos.cvl",
    "CVLMCLearner": "cvl_algos.cvl",
}

__all__ = [
    "ALGORITHMS",
    "BCConfig",
    "BCLearner",
    "CheckpointError",
    "CheckpointWarning",
    "CQLConfig",
    "CQLLearner",
    "CQLUDSConfig",
    "CQLUDSLearner",
    "CVLConfig",
    "CVLLearner",
    "CVLMCConfig",
    "CVLMCLearner",
    "FQLConfig",
    "FQLLearner",
    "FilteredBCConfig",
    "FilteredBCLearner",
    "IQLConfig",
    "IQLLearner",
    "LearnerBase",
    "SACConfig",
    "SACLearner",
    "WeightedBCConfig",
    "WeightedBCLearner",
    "learner_class",
    "load_checkpoint",
    "load_learner",
    "make_learner",
    "offline_algorithms",
    "read_checkpoint_json",
    "read_checkpoint_state",
    "register",
    "save_checkpoint",
    "uds_datasets",
    "verify_checkpoint",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cvl_algos' has no attribute {name!r}")
