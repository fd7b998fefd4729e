"""A jittable, vmappable 2-D point maze with a sparse reward.

Geometry (all in [−1, 1]²): a vertical wall of half-thickness ``WALL_HALF`` at x = 0 with two
gaps (``GAPS``, in y), so there are two ways from the start region on the left to the goal disc
on the right. Dynamics: p' = clip(p + ``STEP``·clip(a, −1, 1), −1, 1); a move whose end point
lies inside the wall is rejected (the point stays where it was). Because the wall is as thick as
the largest per-axis move, no step can tunnel through it.

OGBench convention: reward −1 per step, reward 0 and mask 0 when p' is inside the goal disc;
horizon ``HORIZON``; evaluation episodes end on success.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp

STEP = 0.1  # displacement per unit action
WALL_HALF = 0.05  # wall occupies |x| <= WALL_HALF outside the gaps
GAPS = ((0.4, 0.7), (-0.7, -0.4))  # (y_low, y_high) of the upper and lower gap
GOAL = (0.7, 0.0)  # goal disc centre
GOAL_RADIUS = 0.15
START = (-0.7, 0.0)  # centre of the start square
START_NOISE = 0.1  # start ~ START + U[−START_NOISE, START_NOISE]²
HORIZON = 100
OBS_DIM = 2
ACTION_DIM = 2


def _check_last(name, x, n):
  chex.assert_axis_dimension(
    x,
    -1,
    n,
    exception_type=ValueError,
    custom_message=(f"{name} must have shape (..., {n}); got {x.shape}"),
  )


def in_wall(p: jax.Array) -> jax.Array:
  """``(..., 2) -> (...)`` bool: inside the wall (and not in a gap)."""
  _check_last("p", p, 2)
  x, y = p[..., 0], p[..., 1]
  in_gap = jnp.zeros_like(y, dtype=bool)
  for lo, hi in GAPS:
    in_gap = in_gap | ((y >= lo) & (y <= hi))
  return (jnp.abs(x) <= WALL_HALF) & ~in_gap


def in_goal(p: jax.Array) -> jax.Array:
  """``(..., 2) -> (...)`` bool: inside the goal disc."""
  _check_last("p", p, 2)
  return jnp.sum(jnp.square(p - jnp.asarray(GOAL)), axis=-1) <= GOAL_RADIUS**2


def step(p: jax.Array, a: jax.Array):
  """One transition.

  Args:
    p: ``(..., 2)`` positions; a: ``(..., 2)`` actions (clipped to [−1, 1]).
  Returns:
    (p', reward, mask): ``(..., 2)``, ``(...)``, ``(...)`` float32; reward = −1 + success,
    mask = 1 − success, success = p' in the goal disc.
  """
  _check_last("p", p, 2)
  _check_last("a", a, 2)
  cand = jnp.clip(p + STEP * jnp.clip(a, -1.0, 1.0), -1.0, 1.0)
  p_next = jnp.where(in_wall(cand)[..., None], p, cand)
  success = in_goal(p_next).astype(jnp.float32)
  return p_next, success - 1.0, 1.0 - success


def reset(key: jax.Array, num: int) -> jax.Array:
  """``num`` start positions ``(num, 2)``: START + U[−START_NOISE, START_NOISE]²."""
  u = jax.random.uniform(key, (num * 2,), minval=-START_NOISE, maxval=START_NOISE)
  return jnp.asarray(START) + u.reshape(num, 2)


def evaluate(
  policy: Callable[[jax.Array, jax.Array], jax.Array],
  key: jax.Array,
  num_episodes: int = 100,
  horizon: int = HORIZON,
  chunk: int = 1,
) -> dict:
  """Vectorised evaluation: all episodes in one ``lax.scan``.

  The policy is queried once per chunk for every episode at once; the ``chunk`` actions are
  executed open-loop (the pending-action queue empties at the same step for all episodes).
  Episodes end on success (their state freezes).

  Args:
    policy: ``policy(obs (E, 2), key) -> (E, chunk, 2)`` actions.
    key: PRNG key.
    num_episodes: E.
    horizon: steps per episode.
    chunk: H, actions per policy query.
  Returns:
    dict of scalars: ``success`` (rate), ``episode_length`` (mean), per-episode ``successes``
    ``(E,)`` bool and ``positions`` ``(E, horizon + 1, 2)`` (the start state, then one position
    per step; frozen after success).
  """
  if num_episodes < 1 or horizon < 1 or chunk < 1:
    raise ValueError(
      f"num_episodes, horizon, chunk must be >= 1; got {num_episodes}, {horizon}, {chunk}"
    )
  k_reset, k_pol = jax.random.split(key)
  p0 = reset(k_reset, num_episodes)
  num_queries = -(-horizon // chunk)

  def query(carry, q):
    p, done, length = carry
    acts = policy(p, jax.random.fold_in(k_pol, q))
    chex.assert_shape(
      acts,
      (num_episodes, chunk, 2),
      exception_type=ValueError,
      custom_message=(
        f"policy output must have shape ({num_episodes}, {chunk}, 2); got {acts.shape}"
      ),
    )

    def inner(c, i):
      p, done, length = c
      live = (~done) & (q * chunk + i < horizon)
      p_next, _, mask = step(p, acts[:, i])
      p = jnp.where(live[:, None], p_next, p)
      length = length + live.astype(jnp.int32)
      done = done | (live & (mask == 0.0))
      return (p, done, length), p

    carry, ps = jax.lax.scan(inner, (p, done, length), jnp.arange(chunk))
    return carry, ps

  init = (p0, jnp.zeros((num_episodes,), bool), jnp.zeros((num_episodes,), jnp.int32))
  (p, done, length), ps = jax.lax.scan(query, init, jnp.arange(num_queries))
  ps = ps.reshape(num_queries * chunk, num_episodes, 2)[:horizon]
  positions = jnp.concatenate([p0[None], ps], 0).transpose(1, 0, 2)
  return {
    "success": jnp.mean(done.astype(jnp.float32)),
    "episode_length": jnp.mean(length.astype(jnp.float32)),
    "successes": done,
    "positions": positions,
  }
