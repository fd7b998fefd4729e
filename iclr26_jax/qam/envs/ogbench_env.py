"""OGBench single-task environments and locally generated datasets for QAM.

``load`` reads ``<dataset_dir>/<dataset>.npz`` and ``<dataset>-val.npz`` (written by
``qam.envs.ogbench_generate``; nothing is downloaded) through ``ogbench.make_env_and_datasets``,
after ``check_files`` has checked them, and converts them to the dict layout of
``qam.datasets``. ``evaluate`` runs episodes with open-loop chunks; ``OnlineEnv`` is the host
environment of the online phase. Rewards r = #satisfied sub-tasks − #sub-tasks, mask 0 iff all
are satisfied; ``sparse=True`` (puzzle and scene) maps r → −1·[r ≠ 0]. Headless use needs no
``MUJOCO_GL``: state-based environments never render.

The data, the reward convention and the checks: docs/methods/qam.md ("OGBench data, generated
here").
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Callable

import numpy as np

from iclr26_jax.core.datacheck import (
  DataError,
  open_npz,
  require_array,
  require_finite,
  require_same_rows,
)
from iclr26_jax.qam.envs import ogbench_generate as gen

ACTION_CLIP = 1.0 - 1e-5
# OGBench's manipulation environments build a float32 Box from float64 bounds on every
# ``action_space`` read; gymnasium warns each time (harmless: the bounds are +-1).
warnings.filterwarnings("ignore", message=r".*Box (low|high)'s precision lowered by casting")
_TASK_RE = re.compile(r"^task\d+$")


def dataset_name_of(env_name: str) -> str:
  """``'puzzle-3x3-play-singletask-task1-v0' -> 'puzzle-3x3-play-v0'`` (OGBench's rule)."""
  splits = env_name.split("-")
  if "singletask" not in splits or len(splits) < 4:
    raise ValueError(
      f"env_name must be an OGBench single-task name like "
      f"'puzzle-3x3-play-singletask-task1-v0'; got {env_name!r}"
    )
  pos = splits.index("singletask")
  name = "-".join(splits[:pos] + splits[-1:])
  rest = splits[pos + 1 : -1]
  if len(rest) > 1 or (rest and not _TASK_RE.match(rest[0])):
    raise ValueError(f"env_name must end in '-singletask[-task<i>]-v0'; got {env_name!r}")
  gen.parse_dataset_name(name)  # validates domain and data style
  return name


def load(
  env_name: str,
  dataset_dir: str,
  sparse: bool = False,
  action_clip: float = ACTION_CLIP,
  add_info: bool = False,
  **env_kwargs,
):
  """Builds the single-task environment and the train / validation datasets.

  Args:
    env_name: e.g. ``'puzzle-3x3-play-singletask-task1-v0'`` or
      ``'cube-double-play-singletask-task2-v0'`` (no ``task<i>``: OGBench's default task).
    dataset_dir: directory holding ``<dataset>.npz`` and ``<dataset>-val.npz``.
    sparse: puzzle and scene only: r → −1·[r ≠ 0] (−1 until full success).
    action_clip: dataset actions are clipped to ±action_clip.
    add_info: keep ``qpos``, ``qvel`` (and ``button_states``) aligned with ``observations``.
    **env_kwargs: passed to ``gymnasium.make`` (e.g. ``max_episode_steps``).
  Returns:
    ``(env, train, val)``: the gymnasium environment and two dicts of float32 numpy arrays
    ``observations (T, S)``, ``actions (T, d)``, ``rewards (T,)``, ``masks (T,)``,
    ``terminals (T,)`` (1 on each episode's last transition) and ``next_observations (T, S)``.
  Raises:
    ImportError: ``ogbench`` is not installed (names ``pip install -e ".[rl]"``).
    FileNotFoundError: a dataset file is missing (names the generator command).
    ValueError: malformed name, or ``sparse`` for a domain other than puzzle / scene.
    DataError: a dataset file is unreadable, lacks an array, holds one of the wrong dtype
      (integer observations), width (not the environment's) or row count, or a NaN / inf
      (``check_files``; names the file, the array and what was expected).
  """
  gen.require_ogbench()
  import ogbench

  name = dataset_name_of(env_name)
  domain, _ = gen.parse_dataset_name(name)
  if sparse and not (domain.startswith("puzzle") or domain == "scene"):
    raise ValueError(f"sparse rewards are defined for puzzle and scene only; got {env_name!r}")
  if not 0.0 < action_clip <= 1.0:
    raise ValueError(f"action_clip must be in (0, 1]; got {action_clip}")
  paths = gen.dataset_paths(name, dataset_dir)
  missing = [p for p in paths if not os.path.exists(p)]
  if missing:
    raise FileNotFoundError(
      f"OGBench dataset file(s) {missing} not found (nothing is downloaded). Generate them "
      f"with:\n  {gen.generator_command(name, dataset_dir)}\n(official size: 1000 episodes "
      f"of 1000 transitions; use fewer --episodes for a quick run)"
    )
  widths = check_files(paths, domain)
  env, train, val = ogbench.make_env_and_datasets(
    env_name,
    dataset_dir=os.path.expanduser(dataset_dir),
    add_info=add_info,
    **{"success_timing": SUCCESS_TIMING, **env_kwargs},
  )
  dims = env_dims(env)
  for path, (obs_w, act_w) in zip(paths, widths):
    for key, got, want, what in (
      ("observations", obs_w, dims["obs_dim"], "observation"),
      ("actions", act_w, dims["action_dim"], "action"),
    ):
      if got != want:
        env.close()
        raise DataError(
          f"{path}[{key!r}]: expected {want} columns (the {what} size of {env_name}); got "
          f"{got}: the file was written for another environment"
        )
  return env, convert(train, sparse, action_clip), convert(val, sparse, action_clip)


# The arrays OGBench's single-task loader reads from a file (``button_states`` for puzzle and
# scene, whose rewards it relabels from them), and the kind of values each must hold.
FILE_KEYS = {
  "observations": "floating",
  "actions": "floating",
  "terminals": "numeric",
  "qpos": "floating",
  "qvel": "floating",
}


def button_count(domain: str) -> int:
  """Buttons whose states OGBench relabels from: R·C for ``puzzle-RxC``, 2 for ``scene``, else 0."""
  m = re.fullmatch(r"puzzle-(\d+)x(\d+)", domain)
  if m:
    return int(m.group(1)) * int(m.group(2))
  return 2 if domain == "scene" else 0


def check_files(paths, domain: str = "") -> list[tuple[int, int]]:
  """Checks the ``.npz`` files ``paths`` before OGBench reads them; returns their
  ``(observation width, action width)``.

  Each file must be a readable archive holding ``FILE_KEYS`` (plus ``button_states`` for puzzle
  and scene domains) as 2-d float arrays (``terminals`` 1-d, 0 / 1) with the same number of
  rows, at least one full episode, ending on a terminal row (a file cut short ends mid-episode),
  the same widths in every file, and no NaN or inf (the first bad row is named, 0-based as
  stored). Integer observations are refused, not cast.

  Every array is decompressed once more (OGBench reads the files again after this), which costs
  far less than a bad value surfacing later as a divergence in training.

  Raises:
    DataError: one line naming the file, the array and what was expected.
  """
  required = dict(FILE_KEYS)
  buttons = button_count(domain)
  if buttons:
    required["button_states"] = "numeric"
  widths = []
  for path in paths:
    z = open_npz(path, required=tuple(required))
    arrays = {}
    for key, kind in required.items():
      src = f"{path}[{key!r}]"
      shape = (None,) if key == "terminals" else (None, None)
      arrays[key] = require_array(z[key], src, kind=kind, shape=shape, min_rows=2)
      require_finite(arrays[key], src)
    require_same_rows(arrays, path)
    if buttons:
      # OGBench's relabelling compares these rows with the task's target states by broadcasting:
      # a wrong width or a value other than 0 / 1 would give wrong rewards without an error.
      bs = arrays["button_states"]
      if bs.shape[1] != buttons:
        raise DataError(
          f"{path}['button_states']: expected {buttons} columns (the buttons of {domain}); got "
          f"{bs.shape[1]}: the file was written for another environment"
        )
      if not np.isin(bs, (0, 1)).all():
        raise DataError(
          f"{path}['button_states']: expected 0 / 1 values; got {np.unique(bs)[:5].tolist()}"
        )
    term = arrays["terminals"]
    if not np.isin(term, (0, 1)).all():
      raise DataError(f"{path}['terminals']: expected 0 / 1 values; got {np.unique(term)[:5]}")
    if term[-1] != 1:
      raise DataError(
        f"{path}['terminals']: the last row is not an episode's end (the file was cut short, "
        f"{term.shape[0]} rows); regenerate it"
      )
    widths.append((arrays["observations"].shape[1], arrays["actions"].shape[1]))
  if len(set(widths)) > 1:
    raise DataError(f"the files {list(paths)} have different (observation, action) widths {widths}")
  return widths


def check_finite_files(paths) -> None:
  """Raises ``DataError`` at the first array of the ``.npz`` files ``paths`` holding a NaN or
  inf, naming the file, the array key and the first bad row (0-based, as stored in the file)."""
  for path in paths:
    for key, value in open_npz(path).items():
      require_finite(value, f"{path}[{key!r}]")


def convert(ds: dict, sparse: bool = False, action_clip: float = ACTION_CLIP) -> dict:
  """An OGBench single-task dataset (regular, with ``next_observations``) → QAM dict layout."""
  for k in ("observations", "actions", "rewards", "masks", "terminals", "next_observations"):
    if k not in ds:
      raise ValueError(f"dataset must contain {k!r}; got keys {sorted(ds)}")
  r = np.asarray(ds["rewards"], np.float32)
  if sparse:
    r = -(r != 0).astype(np.float32)
  out = {
    "observations": np.asarray(ds["observations"], np.float32),
    "actions": np.clip(np.asarray(ds["actions"], np.float32), -action_clip, action_clip),
    "rewards": r,
    "masks": np.asarray(ds["masks"], np.float32),
    "terminals": np.asarray(ds["terminals"], np.float32),
    "next_observations": np.asarray(ds["next_observations"], np.float32),
  }
  for k in ("qpos", "qvel", "button_states"):
    if k in ds:
      out[k] = np.asarray(ds[k])
  return out


def env_dims(env) -> dict:
  """``{'obs_dim': S, 'action_dim': d}`` of a (state-based) environment."""
  return {
    "obs_dim": int(np.prod(env.observation_space.shape)),
    "action_dim": int(np.prod(env.action_space.shape)),
  }


def evaluate(
  env,
  policy: Callable,
  num_episodes: int = 10,
  horizon: int | None = None,
  seed: int = 0,
  chunk: int | None = None,
) -> dict:
  """Runs episodes with open-loop action chunks.

  The policy is called as ``policy(obs (S,) float32, key)`` with a JAX PRNG key (fresh per query)
  and returns H·d numbers (any shape that reshapes to ``(H, d)``, e.g. ``(H·d,)``); the H
  actions are executed in order (each clipped to the action box), then the policy is queried
  again. An episode ends on termination (single-task OGBench environments terminate at
  success), truncation (the environment's time limit) or after ``horizon`` steps.

  Args:
    env: a single-task OGBench environment (from ``load``).
    policy: see above.
    num_episodes: episodes, reset with seeds ``seed, seed + 1, …``.
    horizon: step limit per episode (default: the environment's own time limit).
    seed: evaluation seed (resets and policy keys).
    chunk: expected H; when given, a policy output of another size is a ValueError.
  Returns:
    dict: ``success`` (rate over episodes: ``info['success']`` seen at some step),
    ``return`` (mean undiscounted return), ``episode_length`` (mean), per-episode
    ``successes``, ``returns``, ``lengths`` (numpy arrays) and ``num_queries`` (policy calls).
  """
  import jax

  if num_episodes < 1:
    raise ValueError(f"num_episodes must be >= 1; got {num_episodes}")
  if horizon is not None and horizon < 1:
    raise ValueError(f"horizon must be >= 1; got {horizon}")
  d = env_dims(env)["action_dim"]
  lo, hi = env.action_space.low, env.action_space.high
  limit = horizon if horizon is not None else (getattr(env.spec, "max_episode_steps", None) or 1000)
  base = jax.random.PRNGKey(seed)
  successes, returns, lengths, queries = [], [], [], 0
  for ep in range(num_episodes):
    env.action_space.seed(seed + ep)
    ob, info = env.reset(seed=seed + ep)
    keys = jax.random.split(jax.random.fold_in(base, ep), limit)
    ret, length, succ, done, q = 0.0, 0, False, False, 0
    while not done and length < limit:
      out = np.asarray(policy(np.asarray(ob, np.float32), keys[q]), np.float64)
      q += 1
      if out.size % d != 0 or out.size == 0 or (chunk is not None and out.size != chunk * d):
        want = f"{chunk}·{d}" if chunk is not None else f"a positive multiple of {d}"
        raise ValueError(f"policy output must have {want} elements; got shape {out.shape}")
      for a in out.reshape(-1, d):
        ob, r, terminated, truncated, info = env.step(np.clip(a, lo, hi))
        ret += float(r)
        length += 1
        succ = succ or bool(info.get("success", False))
        done = terminated or truncated
        if done or length >= limit:
          break
    queries += q
    successes.append(succ)
    returns.append(ret)
    lengths.append(length)
  successes = np.asarray(successes)
  return {
    "success": float(successes.mean()),
    "return": float(np.mean(returns)),
    "episode_length": float(np.mean(lengths)),
    "successes": successes,
    "returns": np.asarray(returns),
    "lengths": np.asarray(lengths),
    "num_queries": queries,
  }


# When OGBench computes a step's reward, success and termination: "pre" = from the state s the
# action is taken in (OGBench >= 1.2 and the reference code), "post" = from the next state s'.
# Passed explicitly (``make_env``, ``load``, the online environment) so that the offline rewards,
# the online transitions and the evaluation agree whatever OGBench's default becomes;
# ``success_timing="post"`` in ``env_kwargs`` overrides it.
SUCCESS_TIMING = "pre"


def make_env(env_name: str, **env_kwargs):
  """A fresh single-task environment for ``env_name`` (OGBench's rule: the dataset type is
  dropped, ``'puzzle-3x3-play-singletask-task1-v0'`` → ``gymnasium.make('puzzle-3x3-singletask-
  task1-v0')``), like the one ``load`` returns. ``disable_env_checker=True`` skips gymnasium's
  passive checker, which only warns and doubles the build time."""
  gen.require_ogbench()
  import gymnasium
  import ogbench  # noqa: F401  (registers the environments)

  dataset_name_of(env_name)  # validates the name
  splits = env_name.split("-")
  pos = splits.index("singletask")
  env_kwargs = {"success_timing": SUCCESS_TIMING, **env_kwargs}
  return gymnasium.make("-".join(splits[: pos - 1] + splits[pos:]), **env_kwargs)


class OnlineEnv:
  """The host side of QAM's online phase on OGBench: one MuJoCo environment that a jitted update
  steps through ``jax.experimental.io_callback`` and that can always be rebuilt from the
  checkpointed online state.

  Resumability is by replay, not a MuJoCo state dump: episode ``e`` is reset with
  ``reset_seed(e)`` (a function of the run seed and ``e`` alone), and an OGBench manipulation
  environment is a deterministic function of its reset seed and the actions since. This object
  keeps a cursor ``(e, t)``; when a call arrives for another ``(e, t)`` (a fresh process after a
  restore, or a second run in one process), it resets with ``reset_seed(e)``, replays the ``t``
  recorded actions and requires the resulting observation to equal the caller's ``obs`` bitwise
  (``RuntimeError`` otherwise: the run would no longer be reproducible).

  Transitions follow the offline data's convention (``ogbench.relabel_dataset`` with
  ``success_timing='pre'``): ``reward`` is the environment's reward of the state the action is
  taken in (mapped by ``-1·[r ≠ 0]`` when ``sparse``), ``mask = 1 − info['success']``; an episode
  ends on termination (success), truncation (the environment's time limit) or after ``limit``
  steps. A separate environment object from the one ``evaluate`` uses, so evaluations in the
  middle of the online phase do not disturb it.

  Args:
    env_name: single-task OGBench name, e.g. ``'puzzle-3x3-play-singletask-task1-v0'``.
    seed: run seed (reset seeds are ``SeedSequence([seed, 0x0471, e])``; evaluation resets use
      ``eval.seed + ep``).
    episode_length: step limit per online episode (0: the environment's own time limit).
    sparse: reward mapping of ``convert``.
  """

  def __init__(self, env_name: str, seed: int, episode_length: int = 0, sparse: bool = False):
    self.env = make_env(env_name, disable_env_checker=True)
    env_limit = getattr(self.env.spec, "max_episode_steps", None) or 1000
    if episode_length < 0:
      raise ValueError(f"episode_length must be >= 0; got {episode_length}")
    self.limit = int(min(episode_length, env_limit) if episode_length else env_limit)
    self.seed = int(seed)
    self.sparse = bool(sparse)
    dims = env_dims(self.env)
    self.obs_dim, self.action_dim = dims["obs_dim"], dims["action_dim"]
    box = self.env.action_space
    self.action_low = np.asarray(box.low, np.float32)
    self.action_high = np.asarray(box.high, np.float32)
    self._cursor: tuple[int, int] | None = None
    self.rebuilds = 0  # how many times the environment was rebuilt by replay

  def reset_seed(self, episode: int) -> int:
    return int(np.random.SeedSequence([self.seed, 0x0471, int(episode)]).generate_state(1)[0])

  def _reset(self, episode: int) -> np.ndarray:
    ob, _ = self.env.reset(seed=self.reset_seed(episode))
    self._cursor = (int(episode), 0)
    return np.asarray(ob, np.float32)

  def initial_observation(self) -> np.ndarray:
    """``(S,)`` float32: the first observation of episode 0 (the environment is left there)."""
    return self._reset(0)

  def _rebuild(self, episode: int, t: int, obs: np.ndarray, actions: np.ndarray) -> None:
    ob = self._reset(episode)
    for i in range(t):
      ob = np.asarray(self.env.step(actions[i])[0], np.float32)
    if not np.array_equal(ob, obs):
      raise RuntimeError(
        f"replaying episode {episode} (reset seed {self.reset_seed(episode)}, {t} recorded "
        f"actions) did not reproduce the checkpointed observation (max |diff| "
        f"{np.max(np.abs(ob - obs)):.3g}): this environment is not deterministic given its "
        "reset seed and actions, so the online phase cannot resume exactly"
      )
    self._cursor = (int(episode), int(t))
    self.rebuilds += 1

  def step(self, episode, t, action, obs, actions):
    """One environment step (called from the jitted update through ``io_callback``).

    Args:
      episode, t: int32 scalars: the current episode's index and the steps taken in it.
      action: ``(d,)`` float32, inside the action box (the caller clips).
      obs: ``(S,)`` float32: the current observation the caller holds.
      actions: ``(L, d)`` float32: the episode's actions; rows ``< t`` are the ones taken.
    Returns:
      ``(next_obs (S,), reward (), mask (), success (), done (), start_obs (S,))``, float32;
      ``start_obs`` is the first observation of episode ``episode + 1`` when ``done`` (the
      environment is reset), else ``next_obs``.
    """
    episode, t = int(episode), int(t)
    if self._cursor != (episode, t):
      self._rebuild(episode, t, np.asarray(obs, np.float32), np.asarray(actions, np.float32))
    ob, r, terminated, truncated, info = self.env.step(np.asarray(action, np.float32))
    ob = np.asarray(ob, np.float32)
    success = bool(info.get("success", False))
    if self.sparse:
      r = -float(r != 0)
    done = bool(terminated or truncated or t + 1 >= self.limit)
    start = self._reset(episode + 1) if done else ob
    if not done:
      self._cursor = (episode, t + 1)
    f = np.float32
    return ob, f(r), f(1.0 - success), f(success), f(done), np.asarray(start, np.float32)
