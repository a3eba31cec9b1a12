"""Headless pixel observations (EGL): shape, content, camera orientation, GL-context handling."""

import mujoco
import numpy as np
import pytest

from cvl_eval.envs.make import make_env
from cvl_eval.envs.pixels import OffscreenRenderer, RenderConfig


def _not_blank(frame: np.ndarray) -> bool:
    return frame.std() > 5.0 and frame.max() > 50


def test_pixel_observation_shape_dtype_and_content():
    env = make_env("drawer-open", seed=0, pixels=True, image_size=64)
    try:
        frame, info = env.reset()
        assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8
        assert env.observation_space.shape == (64, 64, 3)
        assert env.observation_space.dtype == np.uint8
        assert _not_blank(frame)
        assert info["state"].shape == (39,)
        moved = frame
        for _ in range(10):
            moved, _, _, _, info = env.step(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))
        assert moved.shape == (64, 64, 3) and _not_blank(moved)
        assert not np.array_equal(moved, frame), "frames follow the simulation"
    finally:
        env.close()


def test_fast_render_switches_off_shadows_reflections_and_multisampling():
    env = make_env("reach", seed=0, goals="random")
    try:
        model = env.unwrapped.model
        renderer = OffscreenRenderer(model, RenderConfig(image_size=32, camera="topview"))
        try:
            assert model.vis.quality.shadowsize == 0
            assert model.vis.quality.offsamples == 0
            assert renderer._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] == 0
            assert renderer._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] == 0
            env.reset()
            assert _not_blank(renderer.render(env.unwrapped.data))
        finally:
            renderer.close()
    finally:
        env.close()


def test_corner_camera_is_rotated_upright():
    """The raw corner frame is upside down: ours is its 180-degree rotation."""
    env = make_env("reach", seed=0, goals="random")
    try:
        env.reset()
        model, data = env.unwrapped.model, env.unwrapped.data
        config = RenderConfig(image_size=48, camera="corner", fast=False)  # same as the plain one
        ours = OffscreenRenderer(model, config)
        upright = ours.render(data)
        ours.close()
        with mujoco.Renderer(model, 48, 48) as plain:  # flips rows only, like any camera
            plain.update_scene(data, camera="corner")
            raw = plain.render()
        np.testing.assert_array_equal(upright, np.rot90(raw, 2))
    finally:
        env.close()


def test_closing_one_rendering_env_leaves_the_other_rendering():
    first = make_env("reach", seed=0, pixels=True, image_size=48, goals="random")
    second = make_env("push", seed=1, pixels=True, image_size=48, goals="random")
    try:
        first.reset()
        before, _ = second.reset()
        assert _not_blank(before)
        first.close()
        after, *_ = second.step(np.zeros(4, dtype=np.float32))
        assert _not_blank(after), "the surviving env renders black frames"
        assert np.abs(after.astype(int) - before.astype(int)).mean() < 10
    finally:
        second.close()


def test_interleaved_rendering_envs_each_render_their_own_scene():
    reach = make_env("reach", seed=0, pixels=True, image_size=48, camera="topview", goals="random")
    door = make_env(
        "door-open", seed=0, pixels=True, image_size=48, camera="topview", goals="random"
    )
    try:
        a, _ = reach.reset()
        b, _ = door.reset()
        a2, *_ = reach.step(np.zeros(4, dtype=np.float32))
        assert _not_blank(a) and _not_blank(b)
        assert (
            np.abs(a2.astype(int) - a.astype(int)).mean()
            < np.abs(b.astype(int) - a.astype(int)).mean()
        )
    finally:
        reach.close()
        door.close()


def test_unknown_camera_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown camera 'nope'"):
        make_env("reach", pixels=True, camera="nope", goals="random")
