"""Critic ensemble targets and TD loss with action chunking (spec §6, Eq. 9)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def pessimistic_target(
  next_q: jax.Array, rewards: jax.Array, masks: jax.Array, discount: float, horizon: int, rho: float
) -> jax.Array:
  """Eq. 9: y = R + γ^H·m·[mean_j Q̄_j − ρ·std_j Q̄_j] (population std over the K members).

  Args:
    next_q: ``(K, B)`` target-ensemble values at (s_{t+H}, a').
    rewards: ``(B,)`` discounted chunk returns R_t = Σ_{i<H} γ^i r_{t+i}.
    masks: ``(B,)`` min over the chunk of the per-step masks.
    discount: γ; horizon: H; rho: ρ.
  Returns:
    ``(B,)`` targets.
  """
  chex.assert_rank(
    next_q,
    2,
    exception_type=ValueError,
    custom_message=f"next_q must have shape (K, B); got {next_q.shape}",
  )
  b = next_q.shape[1]
  for name, x in (("rewards", rewards), ("masks", masks)):
    chex.assert_shape(
      x,
      (b,),
      exception_type=ValueError,
      custom_message=f"{name} must have shape ({b},); got {x.shape}",
    )
  boot = jnp.mean(next_q, axis=0) - rho * jnp.std(next_q, axis=0)
  return rewards + (discount**horizon) * masks * boot


def td_loss(q: jax.Array, target: jax.Array, valid: jax.Array) -> jax.Array:
  """L_Q = mean_{j, batch} valid·(Q_j − y)²; every member regresses to the same y.

  Args:
    q: ``(K, B)``; target: ``(B,)`` (treated as constant); valid: ``(B,)``.
  Returns:
    scalar.
  """
  message = (
    f"q must be (K, B) with target and valid (B,); got {q.shape}, {target.shape}, {valid.shape}"
  )
  chex.assert_rank(q, 2, exception_type=ValueError, custom_message=message)
  chex.assert_shape(
    [target, valid], (q.shape[1],), exception_type=ValueError, custom_message=message
  )
  return jnp.mean(valid[None] * jnp.square(q - jax.lax.stop_gradient(target)[None]))
