"""Flow matching, the Euler ODE sampler and the analytic Gaussian velocity.

Conventions: flow time t ∈ [0, 1], t = 0 noise, t = 1 action; linear interpolant
x_t = (1 − t)·x_0 + t·x_1. A velocity function is ``v(obs (B, S), x (B, D), t (B,)) -> (B, D)``.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp

Velocity = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def _check_2d(name: str, x: jax.Array, rows: int | None = None, cols: int | None = None):
  chex.assert_shape(
    x,
    (rows, cols),
    exception_type=ValueError,
    custom_message=(
      f"{name} must have shape ({rows if rows is not None else 'B'}, "
      f"{cols if cols is not None else 'D'}); got {x.shape}"
    ),
  )


def flow_matching_loss(
  velocity: Velocity,
  obs: jax.Array,
  actions: jax.Array,
  key: jax.Array,
  weights: jax.Array | None = None,
) -> jax.Array:
  """Eq. 2: mean_B w·‖v(s, (1−t)x_0 + t·a, t) − (a − x_0)‖² / D.

  Args:
    velocity: v(obs, x, t).
    obs: ``(B, S)`` states.
    actions: ``(B, D)`` flattened action chunks x_1.
    key: PRNG key for x_0 ~ N(0, I) and t ~ U[0, 1].
    weights: optional ``(B,)`` validity weights (default ones).
  Returns:
    scalar loss.
  """
  _check_2d("actions", actions)
  _check_2d("obs", obs, rows=actions.shape[0])
  b, d = actions.shape
  k0, k1 = jax.random.split(key)
  x0 = jax.random.normal(k0, (b * d,)).reshape(b, d)
  t = jax.random.uniform(k1, (b,))
  xt = (1.0 - t[:, None]) * x0 + t[:, None] * actions
  err = jnp.mean(jnp.square(velocity(obs, xt, t) - (actions - x0)), axis=-1)
  if weights is None:
    return jnp.mean(err)
  chex.assert_shape(
    weights,
    (b,),
    exception_type=ValueError,
    custom_message=f"weights must have shape ({b},); got {weights.shape}",
  )
  return jnp.mean(weights * err)


def euler_ode(
  velocity: Velocity, obs: jax.Array, x0: jax.Array, num_steps: int, unroll: int | bool = 1
) -> jax.Array:
  """Eq. 3 without the clip: x ← x + (1/N)·v(s, x, k/N) for k = 0..N−1.

  Args:
    velocity: v(obs, x, t).
    obs: ``(B, S)``.
    x0: ``(B, D)`` initial noise.
    num_steps: N ≥ 1.
    unroll: ``jax.lax.scan``'s ``unroll`` (1 rolled, ``True`` straight-line; same arithmetic).
  Returns:
    ``(B, D)`` unclipped samples x_1.
  """
  _check_2d("x0", x0)
  _check_2d("obs", obs, rows=x0.shape[0])
  if num_steps < 1:
    raise ValueError(f"num_steps must be >= 1; got {num_steps}")
  h = 1.0 / num_steps
  b = x0.shape[0]

  def step(x, k):
    t = jnp.full((b,), k * h, x.dtype)
    return x + h * velocity(obs, x, t), None

  x, _ = jax.lax.scan(step, x0, jnp.arange(num_steps), unroll=unroll)
  return x


def gaussian_velocity(x: jax.Array, t: jax.Array, mean: jax.Array, var) -> jax.Array:
  """Exact velocity of the linear interpolant from N(0, I) to N(m, κI).

  It is the frozen behaviour velocity of the analytic Gaussian-tilt check (``experiments/qam_known_answers.py``).

      v(x, t) = m + [(t·κ − (1−t)) / (t²·κ + (1−t)²)]·(x − t·m)

  Args:
    x: ``(B, D)``; t: ``(B,)``; mean: ``(B, D)`` or ``(D,)``; var: scalar or ``(B,)`` κ.
  Returns:
    ``(B, D)`` velocity.
  """
  var = jnp.asarray(var)
  if var.ndim == 1:
    var = var[:, None]
  tt = t[:, None]
  coef = (tt * var - (1.0 - tt)) / (tt * tt * var + (1.0 - tt) ** 2)
  return mean + coef * (x - tt * mean)
