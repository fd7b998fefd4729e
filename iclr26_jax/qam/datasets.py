"""Offline data for QAM: the point-maze generator and chunk sampling.

Datasets are dicts of flat per-transition arrays (OGBench layout): ``observations (T, S)``,
``actions (T, d)``, ``rewards (T,)``, ``masks (T,)``, ``terminals (T,)`` (1 on the last
transition of each episode) and ``next_observations (T, S)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.qam.envs import pointmaze as pm

# The fields ``sample_chunks`` reads (what the trainer keeps on the devices for QAM).
REQUIRED_KEYS = ("observations", "actions", "rewards", "masks", "terminals", "next_observations")


def sample_chunks(
  data: dict, key: jax.Array, batch_size: int, horizon: int, discount: float
) -> dict:
  """Samples B chunks of H consecutive transitions; a pure function of (data, key).

  For a start index t: ``observations`` s_t ``(B, S)``, ``actions`` a_{t..t+H−1} ``(B, H, d)``,
  ``rewards`` R_t = Σ_{i<H} γ^i r_{t+i} ``(B,)``, ``masks`` min_i mask_{t+i} ``(B,)``,
  ``valid`` 0 when the chunk crosses an episode boundary (a terminal among t..t+H−2), else 1
  ``(B,)``, and ``next_observations`` s_{t+H} (the next observation of transition t+H−1)
  ``(B, S)``. Start indices are uniform over 0..T−H.
  """
  for k in REQUIRED_KEYS:
    if k not in data:
      raise ValueError(f"data must contain {k!r}; got keys {sorted(data)}")
  t_len = data["rewards"].shape[0]
  if horizon < 1 or horizon > t_len:
    raise ValueError(f"horizon must be in [1, {t_len}]; got {horizon}")
  idx = jax.random.randint(key, (batch_size,), 0, t_len - horizon + 1)
  return chunks_at(data, idx, horizon, discount)


def chunks_at(data: dict, idx: jax.Array, horizon: int, discount: float) -> dict:
  """The chunks starting at ``idx (B,)``; see ``sample_chunks`` for the fields."""
  ids = idx[:, None] + jnp.arange(horizon)[None]
  r = jnp.asarray(data["rewards"])[ids]
  disc = discount ** jnp.arange(horizon, dtype=jnp.float32)
  if horizon > 1:
    crosses = jnp.max(jnp.asarray(data["terminals"])[ids[:, :-1]], axis=1)
  else:
    crosses = jnp.zeros(idx.shape, jnp.float32)
  return {
    "observations": jnp.asarray(data["observations"])[idx],
    "actions": jnp.asarray(data["actions"])[ids],
    "rewards": jnp.sum(r * disc[None], axis=1),
    "masks": jnp.min(jnp.asarray(data["masks"])[ids], axis=1),
    "valid": 1.0 - crosses.astype(jnp.float32),
    "next_observations": jnp.asarray(data["next_observations"])[ids[:, -1]],
  }


def _unit_toward(p, aim):
  d = aim - p
  n = jnp.sqrt(jnp.sum(d * d) + 1e-12)
  return d / n * jnp.minimum(1.0, n / pm.STEP)


def scripted_action(p: jax.Array, target: jax.Array, gap_y: jax.Array) -> jax.Array:
  """Noise-free waypoint controller ``(2,)``: head to ``target``, through the gap at ``gap_y``
  when the target is on the other side of the wall (entry point, then exit point)."""
  t_left = target[0] < 0
  same = jnp.where(t_left, p[0] < -pm.WALL_HALF, p[0] > pm.WALL_HALF)
  side = jnp.where(t_left, -1.0, 1.0)
  entry = jnp.stack([-0.15 * side, gap_y])
  exit_ = jnp.stack([0.15 * side, gap_y])
  in_corridor = (jnp.abs(p[0]) <= 0.16) & (jnp.abs(p[1] - gap_y) <= 0.1)
  aim = jnp.where(same, target, jnp.where(in_corridor, exit_, entry))
  return _unit_toward(p, aim)


def generate_pointmaze(
  seed: int,
  num_episodes: int = 2000,
  episode_length: int = pm.HORIZON,
  p_goal: float = 0.15,
  noise: float = 0.3,
  retarget_steps: int = 40,
):
  """Noisy multimodal "play" data on the point maze, vmapped over episodes, scanned over time.

  Each episode starts from the environment's start distribution and picks one of the two gaps
  (multimodal behaviour). It repeatedly draws a target, the goal centre with probability
  ``p_goal`` and otherwise a uniform random waypoint (sub-optimal play), and drives toward it
  with the scripted controller plus Gaussian action noise of std ``noise``; a new target is
  drawn when the current one is within 0.1 or after ``retarget_steps`` steps. Episodes run the
  full ``episode_length`` (they do not stop at the goal); rewards and masks come from the
  environment (−1 / 0 and mask 0 inside the goal).

  Args:
    seed: integer seed; the output is a deterministic function of all arguments.
    num_episodes, episode_length: dataset size T = num_episodes·episode_length.
  Returns:
    (data, info): flat numpy arrays (see the module docstring) and ``info`` with per-episode
    ``success (E,)`` (goal visited) and ``gap (E,)`` (0 upper, 1 lower).
  """
  if num_episodes < 1 or episode_length < 1:
    raise ValueError(
      f"num_episodes and episode_length must be >= 1; got {num_episodes}, {episode_length}"
    )
  if not 0.0 <= p_goal <= 1.0:
    raise ValueError(f"p_goal must be in [0, 1]; got {p_goal}")
  gaps_y = jnp.asarray([0.5 * (lo + hi) for lo, hi in pm.GAPS])
  goal = jnp.asarray(pm.GOAL)

  def draw_target(key):
    k1, k2 = jax.random.split(key)
    wp = jax.random.uniform(k2, (2,), minval=-0.95, maxval=0.95)
    return jnp.where(jax.random.uniform(k1) < p_goal, goal, wp)

  def episode(key):
    k_start, k_gap, k_t, k_run = jax.random.split(key, 4)
    p0 = pm.reset(k_start, 1)[0]
    gap = jax.random.bernoulli(k_gap).astype(jnp.int32)
    gap_y = gaps_y[gap]

    def body(carry, k):
      p, target, since = carry
      kk = jax.random.fold_in(k_run, k)
      k_noise, k_new = jax.random.split(kk)
      a = scripted_action(p, target, gap_y) + noise * jax.random.normal(k_noise, (2,))
      a = jnp.clip(a, -1.0, 1.0)
      p_next, r, m = pm.step(p, a)
      reached = jnp.sum(jnp.square(p_next - target)) < 0.01
      renew = reached | (since + 1 >= retarget_steps)
      target = jnp.where(renew, draw_target(k_new), target)
      since = jnp.where(renew, 0, since + 1)
      return (p_next, target, since), (p, a, r, m, p_next)

    _, out = jax.lax.scan(body, (p0, draw_target(k_t), jnp.int32(0)), jnp.arange(episode_length))
    return out, gap

  keys = jax.random.split(jax.random.PRNGKey(seed), num_episodes)
  (obs, act, rew, msk, nxt), gap = jax.jit(jax.vmap(episode))(keys)
  e, t = num_episodes, episode_length
  term = np.zeros((e, t), np.float32)
  term[:, -1] = 1.0
  data = {
    "observations": np.asarray(obs, np.float32).reshape(e * t, 2),
    "actions": np.asarray(act, np.float32).reshape(e * t, 2),
    "rewards": np.asarray(rew, np.float32).reshape(e * t),
    "masks": np.asarray(msk, np.float32).reshape(e * t),
    "terminals": term.reshape(e * t),
    "next_observations": np.asarray(nxt, np.float32).reshape(e * t, 2),
  }
  info = {"success": np.asarray(msk).min(axis=1) == 0.0, "gap": np.asarray(gap)}
  return data, info
