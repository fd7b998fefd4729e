"""Critic ensemble targets and TD loss with action chunking."""

from __future__ import annotations

from typing import Callable

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


def td_loss_and_grad_by_member(
  member: Callable, members, obs: jax.Array, actions: jax.Array, target: jax.Array, valid: jax.Array
):
  """``td_loss`` and its gradient, one ensemble member at a time (a ``jax.lax.scan`` over K).

  Each step runs one member's forward and backward, so only one member's activations are live at
  a time (the vmapped ensemble keeps all K members' for the backward pass). The members'
  parameters are independent, so member j's gradient is that of its own term
  mean_B valid·(Q_j − y)²/K; the loss is the sum of the K terms (equal to ``td_loss`` up to
  the order of the f32 summation).

  Args:
    member: ``member(p_j, obs (B, S), actions (B, D)) -> (B,)`` (``networks.critic_member``).
    members: the members' parameters stacked on a leading K axis.
    obs: ``(B, S)``; actions: ``(B, D)``; target: ``(B,)`` y (constant); valid: ``(B,)``.
  Returns:
    ``(loss, q (K, B), grads)`` with ``grads`` shaped like ``members``.
  """
  k = jax.tree.leaves(members)[0].shape[0]
  target = jax.lax.stop_gradient(target)

  def body(_, p_j):
    def loss_j(p):
      q_j = member(p, obs, actions)
      return jnp.mean(valid * jnp.square(q_j - target)) / k, q_j

    (l_j, q_j), g_j = jax.value_and_grad(loss_j, has_aux=True)(p_j)
    return None, (l_j, q_j, g_j)

  _, (losses, q, grads) = jax.lax.scan(body, None, members)
  return jnp.sum(losses), q, grads
