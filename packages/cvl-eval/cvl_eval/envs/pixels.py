"""Headless pixel observations for Meta-World (MuJoCo + EGL).

Facts this module is built around (measured, see DESIGN.md section 3):

- ``MUJOCO_GL=egl`` renders headless on CPU (Mesa llvmpipe). Meta-World scenes render at
  ~12-15 fps with shadows, reflections and 4x offscreen multisampling, and ~10x faster with
  them off: ``model.vis.quality.shadowsize = 0``, ``model.vis.quality.offsamples = 0`` (both
  read when the GPU context is created) and scene flags ``mjRND_SHADOW`` /
  ``mjRND_REFLECTION`` = 0.
- The ``corner*`` cameras of Meta-World are mounted upside down: their frames are rotated by
  180 degrees here (a rotation, not a mirror: left and right are swapped too).
- gymnasium's MuJoCo renderer only makes its GL context current when it owns more than one
  viewer, so after another env in the same process creates or frees a context, it renders into
  the wrong (or a destroyed) context and returns black frames. `OffscreenRenderer` owns its
  context and makes it current before every render and before freeing it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

UPSIDE_DOWN_CAMERAS = ("corner", "corner2", "corner3", "corner4")
"""Meta-World cameras whose raw frames are upside down."""


@dataclass(frozen=True)
class RenderConfig:
    """How pixel observations are rendered.

    Attributes:
        image_size: frame height and width in pixels.
        camera: name of a camera of the MuJoCo model (Meta-World: ``corner``, ``corner2``,
            ``corner3``, ``corner4``, ``topview``, ``behindGripper``, ``gripperPOV``).
        fast: switch off shadows, reflections and offscreen multisampling.
    """

    image_size: int = 84
    camera: str = "corner"
    fast: bool = True

    def __post_init__(self) -> None:
        if self.image_size <= 0:
            raise ValueError(f"image_size must be positive, got {self.image_size}")


class OffscreenRenderer:
    """Render one camera of a MuJoCo model into (H, W, 3) uint8 arrays, headless.

    The renderer owns an EGL context (``mujoco.GLContext``) and a ``MjrContext``; both are
    released by `close` (call it explicitly: freeing EGL contexts during interpreter teardown is
    noisy). Fast mode edits ``model.vis.quality`` of the given model in place (it only affects
    rendering).
    """

    def __init__(self, model: mujoco.MjModel, config: RenderConfig):
        self.config = config
        self._model = model
        self._camera_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, config.camera)
        if self._camera_id < 0:
            names = [
                mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)
            ]
            raise ValueError(f"unknown camera {config.camera!r}; this model has {names}")
        size = config.image_size
        if config.fast:
            model.vis.quality.shadowsize = 0
            model.vis.quality.offsamples = 0
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, size)
        model.vis.global_.offheight = max(model.vis.global_.offheight, size)

        self._gl = mujoco.GLContext(size, size)
        self._gl.make_current()
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._context)
        self._scene = mujoco.MjvScene(model, maxgeom=1000)
        if config.fast:
            self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        self._option = mujoco.MjvOption()
        self._perturb = mujoco.MjvPerturb()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._camera.fixedcamid = self._camera_id
        self._rect = mujoco.MjrRect(0, 0, size, size)
        self._rotate = config.camera in UPSIDE_DOWN_CAMERAS
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether `close` has been called."""
        return self._closed

    def render(self, data: mujoco.MjData) -> np.ndarray:
        """Render the current state ``data``; returns (H, W, 3) uint8, upright."""
        if self._closed:
            raise RuntimeError("render called on a closed OffscreenRenderer")
        # Another renderer in this process may have made its own context current (or freed it):
        # always make ours current first.
        self._gl.make_current()
        mujoco.mjv_updateScene(
            self._model,
            data,
            self._option,
            self._perturb,
            self._camera,
            mujoco.mjtCatBit.mjCAT_ALL,
            self._scene,
        )
        mujoco.mjr_render(self._rect, self._scene, self._context)
        size = self.config.image_size
        frame = np.empty((size, size, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(frame, None, self._rect, self._context)
        # OpenGL rows start at the bottom: flip vertically. An upside-down camera additionally
        # needs a 180-degree rotation, which together with the flip is a left-right mirror.
        frame = frame[:, ::-1] if self._rotate else frame[::-1]
        return np.ascontiguousarray(frame)

    def close(self) -> None:
        """Free the MjrContext (with our context current) and then the EGL context."""
        if self._closed:
            return
        self._closed = True
        self._gl.make_current()
        self._context.free()
        self._gl.free()

    def __del__(self) -> None:
        # Best effort only; explicit `close` is the supported path.
        if not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):  # interpreter teardown: nothing to report to
                self.close()


class PixelObservation(gym.Wrapper):
    """Replace a MuJoCo env's observation by a rendered (H, W, 3) uint8 frame.

    With ``keep_state=True`` the wrapped observation (the state) is kept in ``info["state"]``,
    so one rollout can record both the state and the pixel dataset.
    """

    def __init__(self, env: gym.Env, config: RenderConfig, keep_state: bool = True):
        super().__init__(env)
        raw = env.unwrapped
        if not hasattr(raw, "model") or not hasattr(raw, "data"):
            raise TypeError(f"{type(raw).__name__} is not a MuJoCo env: cannot render pixels")
        self.config = config
        self.keep_state = keep_state
        self._renderer = OffscreenRenderer(raw.model, config)
        size = config.image_size
        self.observation_space = gym.spaces.Box(0, 255, (size, size, 3), dtype=np.uint8)

    def _frame(self) -> np.ndarray:
        return self._renderer.render(self.env.unwrapped.data)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and return its first frame."""
        state, info = self.env.reset(seed=seed, options=options)
        if self.keep_state:
            info = {**info, "state": state}
        return self._frame(), info

    def step(self, action):
        """Step the env and return the frame after the step."""
        state, reward, terminated, truncated, info = self.env.step(action)
        if self.keep_state:
            info = {**info, "state": state}
        return self._frame(), reward, terminated, truncated, info

    def render_frame(self) -> np.ndarray:
        """The current frame (same as the last observation)."""
        return self._frame()

    def close(self) -> None:
        """Release the rendering context, then close the env."""
        self._renderer.close()
        super().close()
