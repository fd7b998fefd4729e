"""Log-ratio, KL / MI and likelihood estimates from a time score by quadrature over t.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE: log r̂(x) = ∫_{t_0}^{1−ε} s_θ(x, t) dt by the trapezoid
rule (reference: 100 uniform nodes). ``grid="path"`` places the nodes uniformly in 1 − α(t)
(bisection on the monotone α), which removes the node bias of front-loaded paths (spec §9).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.minpv import paths as paths_lib

GRIDS = ("uniform", "path")


def trapezoid_weights(nodes: jax.Array) -> jax.Array:
  """Trapezoid weights ``(N,)`` for increasing nodes ``(N,)``, N ≥ 2."""
  if nodes.ndim != 1 or nodes.shape[0] < 2:
    raise ValueError(f"nodes must be (N,) with N >= 2; got {nodes.shape}")
  h = jnp.diff(nodes)
  return jnp.concatenate([h[:1], h[:-1] + h[1:], h[-1:]]) * 0.5


def quadrature_grid(num_nodes: int = 100, *, t_start: float = 0.0,
                    t_end: float = 1.0 - paths_lib.EPS, grid: str = "uniform",
                    path_fn: Callable | None = None, path_params=None,
                    bisection_steps: int = 60) -> tuple[jax.Array, jax.Array]:
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
      above = alpha(mid) > targets          # α(mid) still above the target: go right
      return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    lo, hi = jax.lax.fori_loop(0, bisection_steps, body, (lo, hi))
    inner = jnp.sort(0.5 * (lo + hi))
    nodes = jnp.concatenate([jnp.asarray([t_start], inner.dtype), inner,
                             jnp.asarray([t_end], inner.dtype)])
  else:
    raise ValueError(f"grid must be one of {GRIDS}; got {grid!r}")
  return nodes, trapezoid_weights(nodes)


def integrate_time_score(score_fn: Callable[[jax.Array, jax.Array], jax.Array], x: jax.Array,
                         nodes: jax.Array, weights: jax.Array) -> jax.Array:
  """log r̂(x) = Σ_k w_k s(x, t_k), one batched forward pass per node (``lax.scan``).

  Args:
    score_fn: ``(x (B, d), t (B,)) -> (B,)`` time score.
    x: (B, d) points.
    nodes, weights: (N,) each.
  Returns:
    (B,) estimated log p1(x)/p0(x).
  """
  if x.ndim != 2:
    raise ValueError(f"x must be (B, d); got {x.shape}")
  if nodes.shape != weights.shape or nodes.ndim != 1:
    raise ValueError(f"nodes and weights must be equal (N,) vectors; got {nodes.shape}, "
                     f"{weights.shape}")
  b = x.shape[0]

  def step(acc, tw):
    t, w = tw
    return acc + w * score_fn(x, jnp.full((b,), t, x.dtype)), None

  acc, _ = jax.lax.scan(step, jnp.zeros((b,), x.dtype), (nodes.astype(x.dtype),
                                                           weights.astype(x.dtype)))
  return acc


def kl_estimate(log_r: jax.Array) -> jax.Array:
  """KL(p1‖p0) ≈ mean of log r̂ over samples of p1; ``log_r`` (B,) → scalar."""
  if log_r.ndim != 1:
    raise ValueError(f"log_r must be (B,); got {log_r.shape}")
  return jnp.mean(log_r)


def mi_estimate(log_r: jax.Array) -> jax.Array:
  """MI ≈ mean of log r̂ over joint samples (p1 = joint, p0 = product of marginals)."""
  return kl_estimate(log_r)


def std_normal_logpdf(x: jax.Array) -> jax.Array:
  """log N(x; 0, I) for x (B, d) → (B,)."""
  if x.ndim != 2:
    raise ValueError(f"x must be (B, d); got {x.shape}")
  return -0.5 * jnp.sum(x ** 2, axis=1) - 0.5 * x.shape[1] * np.log(2.0 * np.pi)


def log_likelihood(x: jax.Array, log_r: jax.Array) -> jax.Array:
  """log p̂1(x) = log r̂(x) + log N(x; 0, I) (p0 = N(0, I)); x (B, d), log_r (B,) → (B,)."""
  if log_r.shape != x.shape[:1]:
    raise ValueError(f"log_r must be (B,) = ({x.shape[0]},); got {log_r.shape}")
  return log_r + std_normal_logpdf(x)
