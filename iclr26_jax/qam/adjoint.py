"""Memoryless SDE rollout, lean adjoint and the adjoint-matching loss.

The discretisation is the reference one (github.com/ColinQiyangLi/qam): N steps, h = 1/N,
t_k = k·h, noise scale and drift time shifted by h to avoid t = 0, last forward step an ODE step
with the target behaviour flow, and a backward explicit-Euler sweep of the lean adjoint with one
VJP of the base drift per step.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp

from iclr26_jax.qam.flows import Velocity, _check_2d


def sigmas(num_steps: int) -> jax.Array:
  """σ_k = sqrt(2(1 − t_k + h)/(t_k + h)), k = 0..N−1: ``(N,)``."""
  h = 1.0 / num_steps
  t = jnp.arange(num_steps) * h
  return jnp.sqrt(2.0 * (1.0 - t + h) / (t + h))


def _check_rollout_args(x0, obs, noise, num_steps: int) -> None:
  """x0 (B, D), obs (B, ·), num_steps >= 2 and noise (N − 1, B, D), or a ValueError naming it."""
  _check_2d("x0", x0)
  _check_2d("obs", obs, rows=x0.shape[0])
  if num_steps < 2:
    raise ValueError(f"num_steps must be >= 2; got {num_steps}")
  chex.assert_shape(
    noise,
    (num_steps - 1,) + x0.shape,
    exception_type=ValueError,
    custom_message=(f"noise must have shape {(num_steps - 1,) + x0.shape}; got {noise.shape}"),
  )


def rollout(
  v_fine: Velocity,
  v_base: Velocity,
  obs: jax.Array,
  x0: jax.Array,
  noise: jax.Array,
  num_steps: int,
  unroll: int | bool = 1,
) -> jax.Array:
  """Forward memoryless rollout, no stop-gradient applied here.

  X_{k+1} = X_k + h·[2·v_fine(s, X_k, t_k) − X_k/(t_k + h)] + sqrt(h)·σ_k·ε_k for k ≤ N−2, then
  X_N = X_{N−1} + h·v_base(s, X_{N−1}, t_{N−1}).

  Args:
    v_fine: fine-tuned velocity v_θ(obs, x, t).
    v_base: target behaviour velocity v_β̄(obs, x, t) (used only for the last ODE step).
    obs: ``(B, S)``.
    x0: ``(B, D)`` initial noise X_0.
    noise: ``(N−1, B, D)`` standard normal ε_k.
    num_steps: N ≥ 2.
    unroll: ``jax.lax.scan``'s ``unroll`` (1: a rolled loop; ``True``: the N − 1 steps traced
      as straight-line code, which XLA schedules and buffers as one graph; same arithmetic).
  Returns:
    ``(N+1, B, D)`` the states X_0..X_N.
  """
  _check_rollout_args(x0, obs, noise, num_steps)
  h = 1.0 / num_steps
  b = x0.shape[0]
  sig = sigmas(num_steps)

  def step(x, inp):
    k, eps = inp
    t = jnp.full((b,), k * h, x.dtype)
    drift = 2.0 * v_fine(obs, x, t) - x / (k * h + h)
    x_next = x + h * drift + jnp.sqrt(h) * sig[k] * eps
    return x_next, x_next

  x_last, xs = jax.lax.scan(step, x0, (jnp.arange(num_steps - 1), noise), unroll=unroll)
  t_last = jnp.full((b,), (num_steps - 1) * h, x0.dtype)
  x_n = x_last + h * v_base(obs, x_last, t_last)
  return jnp.concatenate([x0[None], xs, x_n[None]], axis=0)


def rollout_with_velocities(
  v_fine: Velocity,
  v_base: Velocity,
  obs: jax.Array,
  x0: jax.Array,
  noise: jax.Array,
  num_steps: int,
) -> tuple[jax.Array, jax.Array]:
  """``rollout`` that also returns the fine-tuned velocities it evaluates, for the loss (Eq. 8).

  The rollout already evaluates v_θ(s, X_k, t_k) for k = 0..N−2 at the current parameters;
  Eq. 8 needs exactly these values (plus k = N−1) with the gradient path to θ. Here the scan
  keeps that path (the states are stop-gradient, only the velocity outputs carry it), so
  reverse-mode differentiation reuses the activations the rollout stored instead of running a
  second forward pass of v_θ on (N−1)·B points. The states are bitwise those of ``rollout``
  (same arithmetic per step) and ``adjoint_matching_loss`` of the returned velocities equals
  ``grid_adjoint_matching_loss`` on the same rollout whenever the backend runs the B-row and
  N·B-row matmuls with the same kernel (up to 1 ulp otherwise).

  Args:
    v_fine: v_θ(obs, x, t) with θ traced (gradients flow through its outputs only).
    v_base: target behaviour velocity v_β̄ (last ODE step only).
    obs: ``(B, S)``; x0: ``(B, D)``; noise: ``(N−1, B, D)``; num_steps: N ≥ 2.
  Returns:
    ``(xs, v_fine_at)``: ``(N+1, B, D)`` states X_0..X_N (stop-gradient) and ``(N, B, D)``
    v_θ(s, X_k, t_k) for k = 0..N−1 (the last one an extra scan step at X_{N−1}).
  """
  _check_rollout_args(x0, obs, noise, num_steps)
  h = 1.0 / num_steps
  b = x0.shape[0]
  sig = sigmas(num_steps)
  x0 = jax.lax.stop_gradient(x0)

  def step(x, inp):
    k, eps = inp
    t = jnp.full((b,), k * h, x.dtype)
    v = v_fine(obs, x, t)
    drift = 2.0 * jax.lax.stop_gradient(v) - x / (k * h + h)
    x_next = x + h * drift + jnp.sqrt(h) * sig[k] * eps
    return x_next, (x_next, v)

  # N scan steps so that every v_θ evaluation, including the extra one at X_{N−1}, is the same
  # compiled computation (a separate call can be emitted differently and round differently); the
  # N-th SDE step's state is discarded, the last state comes from the ODE step below.
  noise = jnp.concatenate([noise, jnp.zeros_like(noise[:1])], axis=0)
  _, (xs, vs) = jax.lax.scan(step, x0, (jnp.arange(num_steps), noise))
  x_last = xs[num_steps - 2]
  t_last = jnp.full((b,), (num_steps - 1) * h, x0.dtype)
  x_n = x_last + h * v_base(obs, x_last, t_last)
  xs = jax.lax.stop_gradient(jnp.concatenate([x0[None], xs[: num_steps - 1], x_n[None]], axis=0))
  return xs, vs


def terminal_adjoint(
  q_fn: Callable[[jax.Array, jax.Array], jax.Array], obs: jax.Array, x_n: jax.Array, inv_temp
) -> jax.Array:
  """ã_N = −λ·∇_a mean_j Q̄_j(s, clip(a, −1, 1)) at a = X_N, the lean adjoint's terminal value.

  Args:
    q_fn: ``q_fn(obs (B, S), actions (B, D)) -> (K, B)`` (the target ensemble).
    obs: ``(B, S)``; x_n: ``(B, D)``; inv_temp: λ (scalar).
  Returns:
    ``(B, D)``; zero in every coordinate where X_N lies outside [−1, 1].
  """
  _check_2d("x_n", x_n)

  def total_q(a):
    return jnp.sum(jnp.mean(q_fn(obs, jnp.clip(a, -1.0, 1.0)), axis=0))

  return -inv_temp * jax.grad(total_q)(x_n)


def terminal_adjoint_by_member(
  member: Callable, members, obs: jax.Array, x_n: jax.Array, inv_temp
) -> jax.Array:
  """``terminal_adjoint`` with a ``jax.lax.scan`` over the K target members: one member's
  forward and backward live at a time; equal to it up to the order of the f32 sum over members.

  Args:
    member: ``member(p_j, obs (B, S), actions (B, D)) -> (B,)`` (``networks.critic_member``).
    members: the target members' parameters stacked on a leading K axis.
    obs: ``(B, S)``; x_n: ``(B, D)``; inv_temp: λ.
  Returns:
    ``(B, D)`` ã_N = −λ·∇_a mean_j Q̄_j(s, clip(a, −1, 1)) at a = X_N.
  """
  _check_2d("x_n", x_n)
  k = jax.tree.leaves(members)[0].shape[0]

  def body(acc, p_j):
    q_sum = lambda a: jnp.sum(member(p_j, obs, jnp.clip(a, -1.0, 1.0))) / k
    return acc + jax.grad(q_sum)(x_n), None

  acc, _ = jax.lax.scan(body, jnp.zeros_like(x_n), members)
  return -inv_temp * acc


def lean_adjoint(
  v_base: Velocity,
  obs: jax.Array,
  xs: jax.Array,
  adj_terminal: jax.Array,
  num_steps: int,
  unroll: int | bool = 1,
) -> jax.Array:
  """Backward lean-adjoint sweep (explicit Euler, one VJP of the base drift per step).

  ã_k = ã_{k+1} + h·J_kᵀ ã_{k+1},  J_k = ∂_x[2·v_base(s, x, t_k + h) − x/(t_k + h)] at x = X_k,
  for k = N−1 down to 0, one VJP per step.

  Args:
    v_base: target behaviour velocity v_β̄.
    obs: ``(B, S)``.
    xs: ``(N+1, B, D)`` or ``(N, B, D)`` rollout states (only X_0..X_{N−1} are used).
    adj_terminal: ``(B, D)`` ã_N.
    num_steps: N.
    unroll: ``jax.lax.scan``'s ``unroll`` (1 rolled, ``True`` straight-line; same arithmetic).
  Returns:
    ``(N, B, D)`` the adjoints ã_0..ã_{N−1}.
  """
  _check_2d("adj_terminal", adj_terminal)
  b, d = adj_terminal.shape
  if xs.ndim != 3 or xs.shape[0] < num_steps or xs.shape[1:] != (b, d):
    raise ValueError(f"xs must have shape ({num_steps}+, {b}, {d}); got {xs.shape}")
  h = 1.0 / num_steps

  def step(adj, inp):
    k, x = inp
    ts = k * h + h
    t = jnp.full((b,), ts, x.dtype)
    drift = lambda y: 2.0 * v_base(obs, y, t) - y / ts
    _, vjp = jax.vjp(drift, x)
    adj_k = adj + h * vjp(adj)[0]
    return adj_k, adj_k

  ks = jnp.arange(num_steps)
  _, adjs = jax.lax.scan(step, adj_terminal, (ks, xs[:num_steps]), reverse=True, unroll=unroll)
  return adjs


def adjoint_matching_loss(
  v_fine_at: jax.Array, v_base_at: jax.Array, adjs: jax.Array, num_steps: int
) -> jax.Array:
  """Eq. 8: mean_B Σ_k Σ_d [(2/σ_k)(v_θ − v_β̄)(s, X_k, t_k) + σ_k·ã_k]².

  Args:
    v_fine_at: ``(N, B, D)`` v_θ(s, X_k, t_k) (the only term carrying gradient).
    v_base_at: ``(N, B, D)`` v_β̄(s, X_k, t_k) (constant).
    adjs: ``(N, B, D)`` ã_k (constant).
    num_steps: N.
  Returns:
    scalar loss, summed over steps and action dimensions, averaged over the batch.
  """
  message = (
    f"v_fine_at, v_base_at, adjs must share shape ({num_steps}, B, D); got "
    f"{v_fine_at.shape}, {v_base_at.shape}, {adjs.shape}"
  )
  chex.assert_equal_shape(
    [v_fine_at, v_base_at, adjs], exception_type=ValueError, custom_message=message
  )
  chex.assert_axis_dimension(
    v_fine_at, 0, num_steps, exception_type=ValueError, custom_message=message
  )
  sig = sigmas(num_steps)[:, None, None]
  res = (2.0 / sig) * (v_fine_at - v_base_at) + sig * adjs
  return jnp.mean(jnp.sum(jnp.square(res), axis=(0, 2)))


def grid_adjoint_matching_loss(
  v_fine: Velocity, v_base: Velocity, obs: jax.Array, xs: jax.Array, adjs: jax.Array, num_steps: int
) -> jax.Array:
  """Eq. 8 on a rollout: one batched forward of each velocity on the N·B points (s, X_k, t_k).

  Args:
    v_fine: v_θ(obs, x, t) (the only term carrying gradient).
    v_base: v_β̄(obs, x, t) (held constant).
    obs: ``(B, S)``.
    xs: ``(N + 1, B, D)`` the rollout X_0..X_N (``rollout``); X_N is not used.
    adjs: ``(N, B, D)`` lean adjoints ã_k (held constant).
    num_steps: N.
  Returns:
    scalar ``adjoint_matching_loss``.
  """
  n, b = num_steps, obs.shape[0]
  d = xs.shape[-1]
  obs_rep = jnp.broadcast_to(obs[None], (n,) + obs.shape).reshape(n * b, -1)
  x_flat = xs[:n].reshape(n * b, d)
  t_flat = jnp.repeat(jnp.arange(n) * (1.0 / n), b)
  v_fine_at = v_fine(obs_rep, x_flat, t_flat).reshape(n, b, d)
  v_base_at = jax.lax.stop_gradient(v_base(obs_rep, x_flat, t_flat)).reshape(n, b, d)
  return adjoint_matching_loss(v_fine_at, v_base_at, jax.lax.stop_gradient(adjs), n)


def base_velocities_on_grid(
  v_base: Velocity, obs: jax.Array, xs: jax.Array, num_steps: int
) -> jax.Array:
  """v_β̄(s, X_k, t_k) for k = 0..N−1 as one batched forward on N·B points, stop-gradient.

  Args:
    v_base: target behaviour velocity; obs: ``(B, S)``; xs: ``(N + 1, B, D)`` (X_N unused).
  Returns:
    ``(N, B, D)``.
  """
  n, b = num_steps, obs.shape[0]
  d = xs.shape[-1]
  obs_rep = jnp.broadcast_to(obs[None], (n,) + obs.shape).reshape(n * b, -1)
  x_flat = xs[:n].reshape(n * b, d)
  t_flat = jnp.repeat(jnp.arange(n) * (1.0 / n), b)
  return jax.lax.stop_gradient(v_base(obs_rep, x_flat, t_flat)).reshape(n, b, d)


def adjoint_matching_loss_and_grad_by_step(
  v_fine: Callable,
  params,
  obs: jax.Array,
  xs: jax.Array,
  adjs: jax.Array,
  v_base_at: jax.Array,
  num_steps: int,
  unroll: int | bool = 1,
):
  """Eq. 8 and its gradient in θ, one flow step at a time (a ``jax.lax.scan`` over k).

  Step k runs v_θ's forward and backward on the B points (s, X_k, t_k) and adds its term
  mean_B Σ_d [(2/σ_k)(v_θ − v_β̄) + σ_k·ã_k]² and its gradient to the sums, so one step's
  activations are live instead of the N·B points' of ``grid_adjoint_matching_loss`` (same
  arithmetic per point; the N terms and gradients are summed in another order).

  Args:
    v_fine: ``v_fine(params, obs, x, t) -> (B, D)``.
    params: θ.
    obs: ``(B, S)``; xs: ``(N + 1, B, D)`` or ``(N, B, D)`` (X_N unused).
    adjs: ``(N, B, D)`` ã_k; v_base_at: ``(N, B, D)`` v_β̄(s, X_k, t_k) (both constant).
    num_steps: N.
    unroll: the scan's ``unroll``.
  Returns:
    ``(loss, grads)`` with ``grads`` shaped like ``params``.
  """
  n, b = num_steps, obs.shape[0]
  sig = sigmas(n)
  adjs, v_base_at = jax.lax.stop_gradient((adjs, v_base_at))

  def body(carry, inp):
    k, x_k, adj_k, vb_k = inp
    t = jnp.full((b,), k * (1.0 / n), x_k.dtype)

    def loss_k(p):
      res = (2.0 / sig[k]) * (v_fine(p, obs, x_k, t) - vb_k) + sig[k] * adj_k
      return jnp.mean(jnp.sum(jnp.square(res), axis=-1))

    l_k, g_k = jax.value_and_grad(loss_k)(params)
    loss, grads = carry
    return (loss + l_k, jax.tree.map(jnp.add, grads, g_k)), None

  init = (jnp.zeros((), v_base_at.dtype), jax.tree.map(jnp.zeros_like, params))
  (loss, grads), _ = jax.lax.scan(
    body, init, (jnp.arange(n), xs[:n], adjs, v_base_at), unroll=unroll
  )
  return loss, grads
