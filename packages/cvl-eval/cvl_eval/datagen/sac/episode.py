"""One episode of the SAC replay-buffer generation: act, step, store, update (`generate_sac`).

`run_sac_episode` follows the protocol of `cvl_eval.datagen.sac.generate` for one episode: uniform
random (optionally held) actions during warm-up, SAC policy samples afterwards, every transition
into the replay buffer, ``updates_per_step`` SAC updates per env step once warm-up is over.
Everything random in it is a function of ``(seed, episode index)`` or lives in the learner, and
it can replay an episode's stored actions, so that a resumed generation retraces an interrupted
one exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cvl_data import ReplayBuffer
from cvl_eval.datagen.recording import episode_seed
from cvl_eval.datagen.sac.config import SACDataConfig
from cvl_eval.rollout.episode import Episode, step_success

__all__ = ["run_sac_episode"]


# Longer than our ~60-line rule on purpose: one loop over an episode's env steps whose order
# (act, step, store, update) is the protocol, with the per-episode RNGs and counters that make a
# resumed episode retrace an interrupted one in plain view rather than spread over helpers.
def run_sac_episode(
    env,
    learner,
    buffer: ReplayBuffer,
    config: SACDataConfig,
    e: int,
    frames: int,
    stored_actions: np.ndarray | None,
    tick: Callable[[], None],
) -> tuple[Episode, int]:
    """Collect episode ``e`` (training SAC as it goes); returns it and the new frame count.

    With ``stored_actions`` (an episode already committed after the last checkpoint) those
    actions are sent to the env instead of the sampled ones; everything else runs as usual, so
    the learner and the buffer end up where the interrupted run had them.
    """
    rng = np.random.default_rng([config.seed, 0x5AC, e])  # warm-up actions of this episode
    sampler = buffer.generator(episode_seed(config.seed + 1, e))
    low, high = env.action_space.low, env.action_space.high
    obs, info = env.reset(seed=episode_seed(config.seed, e))
    pixels = env.observation_space.dtype == np.uint8
    state = np.asarray(info["state"] if pixels else obs, dtype=np.float32)
    states, frames_seen = [state], [obs] if pixels else None
    actions, rewards, terminated, truncated = [], [], [], []
    success, held = False, None
    while True:
        t = len(actions)
        if frames < config.warmup_frames:
            if t % config.warmup_action_repeat == 0:
                held = rng.uniform(low, high).astype(np.float32)
            action = held
        else:
            action = learner.act(state, deterministic=False)
        if stored_actions is not None:
            if t >= len(stored_actions):
                raise RuntimeError(f"episode {e}: replay ran past its {t} stored actions")
            action = stored_actions[t]
        action = np.clip(np.asarray(action, dtype=np.float32), low, high)
        obs, reward, term, trunc, info = env.step(action)
        next_state = np.asarray(info["state"] if pixels else obs, dtype=np.float32)
        frames += 1
        trunc = bool(trunc) or frames >= config.frames  # the budget ends the last episode
        reward = float(np.float32(reward))
        buffer.add(state, action, reward, next_state, bool(term))
        if frames >= config.warmup_frames:
            for _ in range(config.updates_per_step):
                learner.update(buffer.sample(config.sac.batch_size, sampler))
        states.append(next_state)
        if pixels:
            frames_seen.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(bool(term))
        truncated.append(trunc)
        success |= step_success(info, bool(term))
        state = next_state
        tick()
        if term or trunc:
            break
    if stored_actions is not None and len(stored_actions) != len(actions):
        raise RuntimeError(
            f"episode {e}: replay ended after {len(actions)} steps, stored {len(stored_actions)}"
        )
    episode = Episode(
        states=np.stack(states),
        actions=np.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float32),
        terminated=np.asarray(terminated, dtype=bool),
        truncated=np.asarray(truncated, dtype=bool),
        success=bool(success),
        frames=np.stack(frames_seen) if pixels else None,
    )
    return episode, frames
