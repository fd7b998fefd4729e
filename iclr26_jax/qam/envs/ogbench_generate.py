"""Local OGBench manipulation datasets from the scripted oracles of the ``ogbench`` wheel.

The wheel ships the oracles but not the driver that produced the official files; this module is
the project's own driver (``generate``, ``generate_to_dir``, ``make_oracles``), with the command
line ``python -m experiments.ogbench_generate`` (``generator_command`` spells it out). Files have
OGBench's on-disk layout: ``episode_length + 1`` rows per episode, ``terminals`` 1 on the last
(``load_dataset`` drops it). MuJoCo dominates the time, about a hundred oracle steps per second
per process: run several processes with distinct seeds and directories for large datasets.

The driver's steps, the oracles' settings and the file layout: docs/methods/qam.md ("OGBench
data, generated here"); the speed figures: docs/development/qam_notes.md.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings

import numpy as np

# Importing MuJoCo's GLFW binding without a display warns once; state-based environments never
# render, so the note is noise on a headless host.
warnings.filterwarnings("ignore", message=r".*DISPLAY environment variable is missing")

try:  # Optional dependency: the ``[rl]`` extra.
  import gymnasium
  import ogbench  # noqa: F401  (registers the environments with gymnasium)

  _IMPORT_ERROR = None
except ImportError as e:  # pragma: no cover - exercised only without the extra
  gymnasium = None
  _IMPORT_ERROR = e

DATASET_TYPES = ("play", "noisy")
_NAME_RE = re.compile(
  r"^(?P<domain>(cube-(single|double|triple|quadruple)|scene|"
  r"puzzle-(3x3|4x4|4x5|4x6)))-(?P<kind>play|noisy)-v0$"
)


def require_ogbench():
  """Raises an ImportError with the install command when ``ogbench`` is missing."""
  if _IMPORT_ERROR is not None:
    raise ImportError(
      "OGBench environments need the optional `ogbench` package (with mujoco, "
      'dm_control, gymnasium): pip install -e ".[rl]"'
    ) from _IMPORT_ERROR


def parse_dataset_name(name: str) -> tuple[str, str]:
  """``'puzzle-3x3-play-v0' -> ('puzzle-3x3', 'play')``; ValueError for unsupported names."""
  m = _NAME_RE.match(name)
  if m is None:
    raise ValueError(
      f"env must look like '<domain>-<play|noisy>-v0' with domain in cube-single/"
      f"double/triple/quadruple, scene, puzzle-3x3/4x4/4x5/4x6; got {name!r}"
    )
  return m.group("domain"), m.group("kind")


def generator_command(
  name: str, dataset_dir: str, episodes: int = 1000, episode_length: int = 1000, seed: int = 0
) -> str:
  """The shell command that writes ``<dataset_dir>/<name>.npz`` and ``<name>-val.npz``."""
  return (
    f"python -m experiments.ogbench_generate --env={name} --episodes={episodes} "
    f"--episode_length={episode_length} --dataset_dir={dataset_dir} --seed={seed}"
  )


def _p_stack(domain: str) -> float:
  """Per-episode probability of a stacking target (cube domains; unused elsewhere)."""
  if domain == "cube-double":
    return float(np.random.uniform(0.0, 0.25))
  if domain in ("cube-triple", "cube-quadruple"):
    return float(np.random.uniform(0.05, 0.35))
  return 0.0


def make_oracles(env, domain: str, kind: str) -> dict:
  """Oracles keyed by ``info['privileged/target_task']`` ('cube', 'button', 'drawer', 'window')."""
  if kind == "play":
    from ogbench.manipspace.oracles.plan.button_plan import ButtonPlanOracle
    from ogbench.manipspace.oracles.plan.cube_plan import CubePlanOracle
    from ogbench.manipspace.oracles.plan.drawer_plan import DrawerPlanOracle
    from ogbench.manipspace.oracles.plan.window_plan import WindowPlanOracle

    kw = dict(env=env, noise=0.1, noise_smoothing=0.5)
    if domain.startswith("cube"):
      return {"cube": CubePlanOracle(**kw)}
    if domain.startswith("puzzle"):
      return {"button": ButtonPlanOracle(gripper_always_closed=True, **kw)}
    return {
      "cube": CubePlanOracle(**kw),
      "button": ButtonPlanOracle(**kw),
      "drawer": DrawerPlanOracle(**kw),
      "window": WindowPlanOracle(**kw),
    }
  from ogbench.manipspace.oracles.markov.button_markov import ButtonMarkovOracle
  from ogbench.manipspace.oracles.markov.cube_markov import CubeMarkovOracle
  from ogbench.manipspace.oracles.markov.drawer_markov import DrawerMarkovOracle
  from ogbench.manipspace.oracles.markov.window_markov import WindowMarkovOracle

  if domain.startswith("cube"):
    return {"cube": CubeMarkovOracle(env=env)}
  if domain.startswith("puzzle"):
    return {"button": ButtonMarkovOracle(env=env, gripper_always_closed=True)}
  return {
    "cube": CubeMarkovOracle(env=env),
    "button": ButtonMarkovOracle(env=env),
    "drawer": DrawerMarkovOracle(env=env),
    "window": WindowMarkovOracle(env=env),
  }


def generate(
  name: str,
  num_episodes: int,
  episode_length: int = 1000,
  seed: int = 0,
  noise: float = 0.1,
  p_random_action: float | None = None,
  progress: bool = False,
  env=None,
) -> dict:
  """Collects ``num_episodes`` oracle episodes in OGBench's on-disk layout.

  Args:
    name: dataset name, e.g. ``'puzzle-3x3-play-v0'`` or ``'cube-double-noisy-v0'``.
    num_episodes: E.
    episode_length: L, transitions per episode after loading (L + 1 rows are recorded).
    seed: seeds the environment (scene randomisation, targets) and NumPy's global generator
      (used by the oracles for plan noise and final poses; its previous state is restored).
    noise: noisy style only: upper end of the per-episode noise level xi.
    p_random_action: noisy style only: probability of a uniformly random action
      (default 0.2 for puzzle, 0.1 otherwise).
    progress: print a progress line to stderr every 10% of the episodes.
    env: optional environment from ``make_collection_env(name, episode_length)`` to reuse
      (building one costs a few seconds).
  Returns:
    dict with ``observations (E·(L+1), S)`` float32, ``actions (E·(L+1), 5)`` float32 in
    [−1, 1], ``terminals (E·(L+1),)`` float32, ``qpos (E·(L+1), nq)``, ``qvel (E·(L+1), nv)``
    float32 and, for puzzle and scene, ``button_states (E·(L+1), num_buttons)`` int64.
  """
  require_ogbench()
  domain, kind = parse_dataset_name(name)
  if num_episodes < 1 or episode_length < 1:
    raise ValueError(
      f"num_episodes and episode_length must be >= 1; got {num_episodes}, {episode_length}"
    )
  if noise < 0:
    raise ValueError(f"noise must be >= 0; got {noise}")
  if p_random_action is None:
    p_random_action = 0.2 if domain.startswith("puzzle") else 0.1
  if not 0.0 <= p_random_action <= 1.0:
    raise ValueError(f"p_random_action must be in [0, 1]; got {p_random_action}")
  if kind == "play":
    p_random_action = 0.0
  saved_rng = np.random.get_state()  # the oracles draw from NumPy's global generator
  np.random.seed(seed)
  own_env = env is None
  try:
    if own_env:
      env = make_collection_env(name, episode_length)
    elif env.spec.max_episode_steps != episode_length + 1:
      raise ValueError(
        f"env has max_episode_steps={env.spec.max_episode_steps}; expected "
        f"episode_length + 1 = {episode_length + 1}"
      )
    return _collect(
      env, name, domain, kind, num_episodes, episode_length, seed, noise, p_random_action, progress
    )
  finally:
    np.random.set_state(saved_rng)
    if own_env and env is not None:
      env.close()


def make_collection_env(name: str, episode_length: int):
  """The data-collection environment of ``name`` (``episode_length + 1`` steps per episode)."""
  require_ogbench()
  domain, _ = parse_dataset_name(name)
  return gymnasium.make(
    f"{domain}-v0",
    terminate_at_goal=False,
    mode="data_collection",
    max_episode_steps=episode_length + 1,
  )


def _collect(
  env, name, domain, kind, num_episodes, episode_length, seed, noise, p_random_action, progress
):
  oracles = make_oracles(env, domain, kind)
  has_buttons = domain.startswith("puzzle") or domain == "scene"
  keys = ["observations", "actions", "terminals", "qpos", "qvel"]
  if has_buttons:
    keys.append("button_states")
  out = {k: [] for k in keys}
  env.action_space.seed(seed)
  t0 = time.time()
  for ep in range(num_episodes):
    ob, info = env.reset(seed=seed * 1_000_003 + ep)
    p_stack = _p_stack(domain)
    xi = float(np.random.uniform(0.0, noise)) if kind == "noisy" else 0.0
    oracle = oracles[info["privileged/target_task"]]
    oracle.reset(ob, info)
    done = False
    while not done:
      if kind == "noisy" and np.random.rand() < p_random_action:
        action = env.action_space.sample()
      else:
        action = np.asarray(oracle.select_action(ob, info), np.float64)
        if kind == "noisy":
          action = action + np.random.normal(0.0, 1.0, 5) * xi * np.array([1, 1, 1, 3, 10.0])
      action = np.clip(action, -1.0, 1.0)
      next_ob, _, terminated, truncated, info = env.step(action)
      done = terminated or truncated
      out["observations"].append(ob)
      out["actions"].append(action)
      out["terminals"].append(done)
      out["qpos"].append(info["prev_qpos"])
      out["qvel"].append(info["prev_qvel"])
      if has_buttons:
        out["button_states"].append(info["prev_button_states"])
      ob = next_ob
      if oracle.done and not done:
        ob, info = env.unwrapped.set_new_target(p_stack=p_stack)
        oracle = oracles[info["privileged/target_task"]]
        oracle.reset(ob, info)
    if progress and ((ep + 1) % max(1, num_episodes // 10) == 0 or ep + 1 == num_episodes):
      n = (ep + 1) * (episode_length + 1)
      dt = time.time() - t0
      print(
        f"[ogbench_generate] {name} seed={seed}: {ep + 1}/{num_episodes} episodes, "
        f"{n} steps, {n / max(dt, 1e-9):.0f} steps/s",
        file=sys.stderr,
        flush=True,
      )
  data = {
    "observations": np.asarray(out["observations"], np.float32),
    "actions": np.asarray(out["actions"], np.float32),
    "terminals": np.asarray(out["terminals"], np.float32),
    "qpos": np.asarray(out["qpos"], np.float32),
    "qvel": np.asarray(out["qvel"], np.float32),
  }
  if has_buttons:
    data["button_states"] = np.asarray(out["button_states"], np.int64)
  rows = num_episodes * (episode_length + 1)
  if data["terminals"].shape != (rows,) or data["terminals"].sum() != num_episodes:
    raise RuntimeError(
      f"episode bookkeeping failed: {data['terminals'].shape[0]} rows, "
      f"{int(data['terminals'].sum())} terminals; expected {rows}, "
      f"{num_episodes}"
    )
  return data


def dataset_paths(name: str, dataset_dir: str) -> tuple[str, str]:
  """``(<dir>/<name>.npz, <dir>/<name>-val.npz)`` with ``~`` expanded."""
  d = os.path.expanduser(dataset_dir)
  return os.path.join(d, f"{name}.npz"), os.path.join(d, f"{name}-val.npz")


def generate_to_dir(
  name: str,
  dataset_dir: str,
  num_episodes: int,
  episode_length: int = 1000,
  seed: int = 0,
  val_fraction: float = 0.1,
  progress: bool = False,
  **kwargs,
) -> dict:
  """Writes the train and validation files; returns paths, sizes and the measured speed.

  The validation split has ``max(1, round(val_fraction·num_episodes))`` extra episodes drawn
  with seed ``seed + 1_000_000`` (disjoint from the training episodes).

  Returns:
    dict with ``train_path``, ``val_path``, ``steps`` (recorded env steps, both files),
    ``seconds`` and ``steps_per_second``.
  """
  if not 0.0 <= val_fraction <= 1.0:
    raise ValueError(f"val_fraction must be in [0, 1]; got {val_fraction}")
  train_path, val_path = dataset_paths(name, dataset_dir)
  os.makedirs(os.path.dirname(train_path), exist_ok=True)
  num_val = max(1, int(round(val_fraction * num_episodes)))
  t0 = time.time()
  env = make_collection_env(name, episode_length)
  steps = 0
  for path, n, s in ((train_path, num_episodes, seed), (val_path, num_val, seed + 1_000_000)):
    data = generate(name, n, episode_length, seed=s, progress=progress, env=env, **kwargs)
    steps += data["terminals"].shape[0]
    tmp = path + ".tmp.npz"
    np.savez_compressed(tmp, **data)
    os.replace(tmp, path)
  env.close()
  dt = time.time() - t0
  return {
    "train_path": train_path,
    "val_path": val_path,
    "steps": steps,
    "seconds": dt,
    "steps_per_second": steps / max(dt, 1e-9),
  }


if __name__ == "__main__":  # the command line moved to experiments/ (absl flags)
  import shlex

  print(
    f"iclr26_jax.qam.envs.ogbench_generate is a library module; its command line moved: "
    f"python -m experiments.ogbench_generate {shlex.join(sys.argv[1:])}".rstrip(),
    file=sys.stderr,
  )
  sys.exit(2)
