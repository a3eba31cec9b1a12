"""cvl_data: offline datasets on disk, truncated-geometric future sampling, relabelling.

Part of the CVL monorepo ("Contrastive Value Learning: Implicit Models for Simple Offline RL",
Mazoure, Eysenbach, Nachum, Tompson).
"""

__version__ = "0.1.0"

from cvl_data.batches import ContrastiveBatch, PolicyAnchors, TransitionBatch
from cvl_data.concat import ConcatDataset, concat_datasets
from cvl_data.convert import ConvertOptions, convert
from cvl_data.d4rl import export_npz, import_d4rl
from cvl_data.errors import DatasetError
from cvl_data.geometric import sample_truncated_geometric, truncated_geometric_pmf
from cvl_data.minari_export import export_minari
from cvl_data.minari_import import import_minari
from cvl_data.peek import (
    dataset_fingerprint,
    episode_lengths,
    is_dataset,
    open_committed,
    read_spec,
    recorded_spec,
)
from cvl_data.reader import Dataset, open_dataset
from cvl_data.replay import ReplayBuffer
from cvl_data.samplers import ContrastiveSampler, TransitionSampler
from cvl_data.source import EpisodeSource
from cvl_data.spec import DatasetSpec
from cvl_data.subset import EpisodeSubset, episode_returns, select_episodes, top_episodes
from cvl_data.tasks import related_tasks, task_domain
from cvl_data.views import RelabelledView, reward_free, union_with_shared, zero_reward
from cvl_data.writer import DatasetWriter

__all__ = [
    "ConcatDataset",
    "ContrastiveBatch",
    "ContrastiveSampler",
    "ConvertOptions",
    "Dataset",
    "DatasetError",
    "DatasetSpec",
    "DatasetWriter",
    "EpisodeSource",
    "EpisodeSubset",
    "PolicyAnchors",
    "RelabelledView",
    "ReplayBuffer",
    "TransitionBatch",
    "TransitionSampler",
    "__version__",
    "concat_datasets",
    "convert",
    "dataset_fingerprint",
    "episode_lengths",
    "episode_returns",
    "export_minari",
    "export_npz",
    "import_d4rl",
    "import_minari",
    "is_dataset",
    "open_committed",
    "open_dataset",
    "read_spec",
    "recorded_spec",
    "related_tasks",
    "reward_free",
    "sample_truncated_geometric",
    "select_episodes",
    "task_domain",
    "top_episodes",
    "truncated_geometric_pmf",
    "union_with_shared",
    "zero_reward",
]
