"""`ReplayBuffer`: transitions in preallocated tensors on the training device, never evicted.

An online learner's memory (e.g. the SAC that generates the paper's datasets in cvl-eval): its
capacity is the frame budget, so nothing is ever evicted and the buffer holds the same
transitions as the dataset written beside it. `add_episode` takes an episode as
`cvl_data.Dataset.episode` returns it, so a resumed generation refills the buffer from the
committed episodes on disk (`cvl_data.open_committed`) instead of keeping a second copy.
"""

from __future__ import annotations

import numpy as np
import torch

from cvl_data.batches import TransitionBatch

__all__ = ["ReplayBuffer"]


class ReplayBuffer:
    """Transitions ``(s, a, r, s', terminated)`` in tensors on ``device``, never evicted.

    Args:
        capacity: the most transitions it will hold (a generation's frame budget).
        obs_shape: shape of one state observation.
        action_dim: size of one action.
        device: where the tensors live and batches are drawn.
    """

    def __init__(
        self, capacity: int, obs_shape: tuple[int, ...], action_dim: int, device: str = "cpu"
    ):
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.obs_shape = tuple(obs_shape)
        self.action_dim = int(action_dim)
        self.device = torch.device(device)
        kw = {"dtype": torch.float32, "device": self.device}
        self.obs = torch.zeros((self.capacity, *self.obs_shape), **kw)
        self.obs_next = torch.zeros((self.capacity, *self.obs_shape), **kw)
        self.action = torch.zeros((self.capacity, self.action_dim), **kw)
        self.reward = torch.zeros((self.capacity,), **kw)
        self.terminated = torch.zeros((self.capacity,), **kw)
        self.size = 0

    def add(
        self, obs: np.ndarray, action: np.ndarray, reward: float, obs_next: np.ndarray, term: bool
    ) -> None:
        """Append one transition (``obs``/``obs_next`` of ``obs_shape``, ``action`` of (A,))."""
        self.add_many(obs[None], action[None], np.float32([reward]), obs_next[None], [term])

    def add_many(self, obs, action, reward, obs_next, terminated) -> None:
        """Append ``n`` transitions: ``obs``/``obs_next`` (n, *obs_shape), ``action`` (n, A),
        ``reward``/``terminated`` (n,)."""
        n = len(action)
        assert np.shape(obs) == np.shape(obs_next) == (n, *self.obs_shape), np.shape(obs)
        assert np.shape(action) == (n, self.action_dim), np.shape(action)
        assert np.shape(reward) == np.shape(terminated) == (n,), np.shape(reward)
        if self.size + n > self.capacity:
            raise ValueError(f"replay buffer full: {self.size} + {n} > {self.capacity}")
        rows = slice(self.size, self.size + n)

        def put(target: torch.Tensor, values) -> None:
            target[rows] = torch.from_numpy(np.array(values, dtype=np.float32)).to(self.device)

        put(self.obs, obs)
        put(self.obs_next, obs_next)
        put(self.action, action)
        put(self.reward, reward)
        put(self.terminated, terminated)
        self.size += n

    def add_episode(self, episode: dict[str, np.ndarray]) -> None:
        """Append the T transitions of an episode as stored on disk (T + 1 observations)."""
        obs = np.asarray(episode["observations"])
        self.add_many(
            obs[:-1], episode["actions"], episode["rewards"], obs[1:], episode["terminated"]
        )

    def generator(self, seed: int) -> torch.Generator:
        """A generator on the buffer's device for `sample`, seeded with ``seed``."""
        return torch.Generator(self.device).manual_seed(int(seed))

    def sample(self, batch_size: int, generator: torch.Generator) -> TransitionBatch:
        """``batch_size`` transitions drawn uniformly with replacement (on the buffer's device)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = torch.randint(0, self.size, (batch_size,), generator=generator, device=self.device)
        return TransitionBatch(
            obs=self.obs[idx],
            action=self.action[idx],
            reward=self.reward[idx],
            obs_next=self.obs_next[idx],
            terminated=self.terminated[idx],
        )
