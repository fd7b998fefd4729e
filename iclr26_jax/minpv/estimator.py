"""Log-ratio, KL / MI and likelihood estimates from a time score by quadrature over t.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE: log r̂(x) = ∫_{t_0}^{1−ε} s_θ(x, t) dt by the trapezoid
rule on 100 uniform nodes. ``log_ratio`` dispatches over ``METHODS``: trapezoid or composite
Simpson (``quadrature_grid``, ``grid="path"`` placing nodes uniformly in 1 − α(t)), fixed-step
Euler / RK4 (``integrate_fixed_step``) and adaptive Dormand–Prince 5(4) (``integrate_dopri5``,
diffrax). The estimators: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.minpv import paths as paths_lib

GRIDS = ("uniform", "path")
METHODS = ("trapezoid", "simpson", "euler", "rk4", "dopri5")


def trapezoid_weights(nodes: jax.Array) -> jax.Array:
  """Trapezoid weights ``(N,)`` for increasing nodes ``(N,)``, N ≥ 2."""
  if nodes.ndim != 1 or nodes.shape[0] < 2:
    raise ValueError(f"nodes must be (N,) with N >= 2; got {nodes.shape}")
  h = jnp.diff(nodes)
  return jnp.concatenate([h[:1], h[:-1] + h[1:], h[-1:]]) * 0.5


def simpson_weights(nodes: jax.Array) -> jax.Array:
  """Composite Simpson weights ``(N,)`` for increasing nodes ``(N,)``, N odd ≥ 3.

  Each pair of intervals [t_{2k}, t_{2k+2}] gets the Simpson rule of its quadratic interpolant
  (exact for quadratics on non-uniform nodes, fourth order on uniform ones).
  """
  if nodes.ndim != 1 or nodes.shape[0] < 3 or nodes.shape[0] % 2 == 0:
    raise ValueError(f"Simpson needs nodes (N,) with N odd >= 3; got {nodes.shape}")
  h = jnp.diff(nodes)
  h0, h1 = h[0::2], h[1::2]
  s = h0 + h1
  w_left = s / 6.0 * (2.0 - h1 / h0)
  w_mid = s**3 / (6.0 * h0 * h1)
  w_right = s / 6.0 * (2.0 - h0 / h1)
  w = jnp.zeros_like(nodes)
  w = w.at[0:-1:2].add(w_left)
  w = w.at[1::2].add(w_mid)
  w = w.at[2::2].add(w_right)
  return w


def quadrature_grid(
  num_nodes: int = 100,
  *,
  t_start: float = 0.0,
  t_end: float = 1.0 - paths_lib.EPS,
  grid: str = "uniform",
  path_fn: Callable | None = None,
  path_params=None,
  bisection_steps: int = 60,
) -> tuple[jax.Array, jax.Array]:
  """Nodes and trapezoid weights ``((N,), (N,))`` on [t_start, t_end].

  Args:
    num_nodes: N ≥ 2.
    t_start, t_end: integration range (reference [0, 1 − ε]).
    grid: "uniform" in t, or "path": uniform in 1 − α(t) (needs ``path_fn`` and
      ``path_params``; α must be non-increasing in t).
    bisection_steps: iterations of the bisection for ``grid="path"``.
  """
  if int(num_nodes) < 2:
    raise ValueError(f"num_nodes must be >= 2; got {num_nodes}")
  if not 0.0 <= t_start < t_end <= 1.0:
    raise ValueError(f"need 0 <= t_start < t_end <= 1; got t_start={t_start}, t_end={t_end}")
  if grid == "uniform":
    nodes = jnp.linspace(t_start, t_end, int(num_nodes))
  elif grid == "path":
    if path_fn is None:
      raise ValueError("grid='path' needs path_fn (and path_params)")
    alpha = lambda t: path_fn(path_params, t).alpha
    a_lo, a_hi = alpha(jnp.asarray(t_start)), alpha(jnp.asarray(t_end))
    targets = jnp.linspace(a_lo, a_hi, int(num_nodes))[1:-1]
    lo = jnp.full_like(targets, t_start)
    hi = jnp.full_like(targets, t_end)

    def body(_, carry):
      lo, hi = carry
      mid = 0.5 * (lo + hi)
      above = alpha(mid) > targets  # α(mid) still above the target: go right
      return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    lo, hi = jax.lax.fori_loop(0, bisection_steps, body, (lo, hi))
    inner = jnp.sort(0.5 * (lo + hi))
    nodes = jnp.concatenate(
      [jnp.asarray([t_start], inner.dtype), inner, jnp.asarray([t_end], inner.dtype)]
    )
  else:
    raise ValueError(f"grid must be one of {GRIDS}; got {grid!r}")
  return nodes, trapezoid_weights(nodes)


def integrate_time_score(
  score_fn: Callable[[jax.Array, jax.Array], jax.Array],
  x: jax.Array,
  nodes: jax.Array,
  weights: jax.Array,
) -> jax.Array:
  """log r̂(x) = Σ_k w_k s(x, t_k), one batched forward pass per node (``lax.scan``).

  Args:
    score_fn: ``(x (B, d), t (B,)) -> (B,)`` time score.
    x: (B, d) points.
    nodes, weights: (N,) each.
  Returns:
    (B,) estimated log p1(x)/p0(x).
  """
  chex.assert_rank(
    x, 2, exception_type=ValueError, custom_message=f"x must be (B, d); got {x.shape}"
  )
  message = f"nodes and weights must be equal (N,) vectors; got {nodes.shape}, {weights.shape}"
  chex.assert_rank(nodes, 1, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([nodes, weights], exception_type=ValueError, custom_message=message)
  b = x.shape[0]

  def step(acc, tw):
    t, w = tw
    return acc + w * score_fn(x, jnp.full((b,), t, x.dtype)), None

  acc, _ = jax.lax.scan(
    step, jnp.zeros((b,), x.dtype), (nodes.astype(x.dtype), weights.astype(x.dtype))
  )
  return acc


def kl_estimate(log_r: jax.Array) -> jax.Array:
  """KL(p1‖p0) ≈ mean of log r̂ over samples of p1; ``log_r`` (B,) → scalar."""
  chex.assert_rank(
    log_r, 1, exception_type=ValueError, custom_message=f"log_r must be (B,); got {log_r.shape}"
  )
  return jnp.mean(log_r)


def mi_estimate(log_r: jax.Array) -> jax.Array:
  """MI ≈ mean of log r̂ over joint samples (p1 = joint, p0 = product of marginals)."""
  return kl_estimate(log_r)


def std_normal_logpdf(x: jax.Array) -> jax.Array:
  """log N(x; 0, I) for x (B, d) → (B,)."""
  chex.assert_rank(
    x, 2, exception_type=ValueError, custom_message=f"x must be (B, d); got {x.shape}"
  )
  return -0.5 * jnp.sum(x**2, axis=1) - 0.5 * x.shape[1] * np.log(2.0 * np.pi)


def log_likelihood(x: jax.Array, log_r: jax.Array) -> jax.Array:
  """log p̂1(x) = log r̂(x) + log N(x; 0, I) (p0 = N(0, I)); x (B, d), log_r (B,) → (B,)."""
  chex.assert_shape(
    log_r,
    x.shape[:1],
    exception_type=ValueError,
    custom_message=(f"log_r must be (B,) = ({x.shape[0]},); got {log_r.shape}"),
  )
  return log_r + std_normal_logpdf(x)


# ------------------------------------------------------------------------------ ODE solvers
def integrate_fixed_step(
  score_fn: Callable[[jax.Array, jax.Array], jax.Array],
  x: jax.Array,
  nodes: jax.Array,
  *,
  method: str = "rk4",
) -> jax.Array:
  """log r̂(x) by Euler or RK4 on d(log r)/dt = s(x, t) over the intervals of ``nodes``.

  The right-hand side does not depend on log r, so RK4's two midpoint stages coincide and each
  interval costs two new score evaluations (midpoint and end; the start is carried over).

  Args:
    score_fn: ``(x (B, d), t (B,)) -> (B,)``.
    x: (B, d).
    nodes: (N,) increasing times, N ≥ 2.
    method: "euler" | "rk4".
  Returns:
    (B,) estimated log-ratios.
  """
  if method not in ("euler", "rk4"):
    raise ValueError(f"method must be 'euler' or 'rk4'; got {method!r}")
  if x.ndim != 2 or nodes.ndim != 1 or nodes.shape[0] < 2:
    raise ValueError(f"need x (B, d) and nodes (N >= 2,); got {x.shape}, {nodes.shape}")
  b = x.shape[0]
  f = lambda t: score_fn(x, jnp.full((b,), t, x.dtype))
  nodes = nodes.astype(x.dtype)

  def step(carry, t_pair):
    y, f0 = carry
    t0, t1 = t_pair
    h = t1 - t0
    if method == "euler":
      return (y + h * f0, f(t1)), None
    fm, f1 = f(t0 + 0.5 * h), f(t1)
    return (y + h / 6.0 * (f0 + 4.0 * fm + f1), f1), None

  (y, _), _ = jax.lax.scan(step, (jnp.zeros((b,), x.dtype), f(nodes[0])), (nodes[:-1], nodes[1:]))
  return y


def integrate_dopri5(
  score_fn: Callable[[jax.Array, jax.Array], jax.Array],
  x: jax.Array,
  *,
  t_start: float = 0.0,
  t_end: float = 1.0 - paths_lib.EPS,
  rtol: float = 1e-5,
  atol: float = 1e-5,
  max_steps: int = 10_000,
  first_step: float = 1e-3,
) -> tuple[jax.Array, jax.Array]:
  """log r̂(x) by adaptive Dormand–Prince 5(4) on d(log r)/dt = s(x, t), solved by diffrax.

  ``diffrax.diffeqsolve(ODETerm, Dopri5(), PIDController(rtol, atol))`` from t_start to t_end
  (forward in t) with y(t_start) = 0 and first step ``first_step``. The state is the whole batch
  (B,), so one step size is shared by the batch; a step is accepted when the RMS over the batch
  of err / (atol + rtol · max(``|y|``, ``|y_new|``)) is ≤ 1, and h is rescaled by
  clip(0.9 · err^(−1/5), 0.2, 10) (diffrax's defaults: the integral controller of torchdiffeq).

  Cost: Dopri5 is first-same-as-last, so the solve evaluates s once at t_start and six times per
  attempted step (accepted or rejected): ``evals = 1 + 6 · stats["num_steps"]``.

  Works under ``jax.jit`` and ``jax.vmap``; diffrax is imported only when this is called.

  Args:
    score_fn: ``(x (B, d), t (B,)) -> (B,)``.
    x: (B, d).
    t_start, t_end: integration range, t_start < t_end.
    rtol, atol: tolerances (reference 1e-5).
    max_steps: bound on attempted steps. A solve that has not reached t_end after max_steps
      steps returns NaN for every row (not a truncated integral; no exception, so it is safe
      under jit on every backend); its evaluation count is 1 + 6 · max_steps.
    first_step: initial step size.
  Returns:
    ``(log_r (B,), number of score evaluations ())``; log_r is NaN where max_steps ran out.
  """
  import diffrax  # lazy: only the adaptive method needs it

  chex.assert_rank(
    x, 2, exception_type=ValueError, custom_message=f"x must be (B, d); got {x.shape}"
  )
  if not t_start < t_end:
    raise ValueError(f"need t_start < t_end; got {t_start}, {t_end}")
  if rtol <= 0 or atol <= 0:
    raise ValueError(f"rtol and atol must be > 0; got {rtol}, {atol}")
  if int(max_steps) < 1:
    raise ValueError(f"max_steps must be >= 1; got {max_steps}")
  b = x.shape[0]
  dt = x.dtype
  term = diffrax.ODETerm(lambda t, y, xx: score_fn(xx, jnp.full((b,), t, dt)))
  sol = diffrax.diffeqsolve(
    term,
    diffrax.Dopri5(),
    t0=t_start,
    t1=t_end,
    dt0=first_step,
    y0=jnp.zeros((b,), dt),
    args=x,
    saveat=diffrax.SaveAt(t1=True),
    stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
    max_steps=int(max_steps),
    throw=False,
  )
  ok = sol.result == diffrax.RESULTS.successful
  log_r = jnp.where(ok, sol.ys[-1], jnp.nan).astype(dt)
  return log_r, 1 + 6 * sol.stats["num_steps"]


def log_ratio(
  score_fn: Callable[[jax.Array, jax.Array], jax.Array],
  x: jax.Array,
  *,
  method: str = "trapezoid",
  num_nodes: int = 100,
  t_start: float = 0.0,
  t_end: float = 1.0 - paths_lib.EPS,
  grid: str = "uniform",
  path_fn: Callable | None = None,
  path_params=None,
  rtol: float = 1e-5,
  atol: float = 1e-5,
  max_steps: int = 10_000,
) -> jax.Array:
  """log r̂(x) = ∫_{t_start}^{t_end} s(x, t) dt by any of ``METHODS``.

  trapezoid / simpson: weights on ``quadrature_grid(num_nodes, grid=...)`` (Simpson rounds
  num_nodes up to odd); euler / rk4: fixed steps over the same nodes; dopri5: adaptive
  (``integrate_dopri5``; ``num_nodes`` and ``grid`` unused; NaN rows if ``max_steps`` runs out).
  Returns (B,).
  """
  if method not in METHODS:
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")
  if method == "dopri5":
    return integrate_dopri5(
      score_fn, x, t_start=t_start, t_end=t_end, rtol=rtol, atol=atol, max_steps=max_steps
    )[0]
  n = int(num_nodes)
  if method == "simpson" and n % 2 == 0:
    n += 1
  nodes, weights = quadrature_grid(
    n, t_start=t_start, t_end=t_end, grid=grid, path_fn=path_fn, path_params=path_params
  )
  if method in ("euler", "rk4"):
    return integrate_fixed_step(score_fn, x, nodes, method=method)
  if method == "simpson":
    weights = simpson_weights(nodes)
  return integrate_time_score(score_fn, x, nodes, weights)
