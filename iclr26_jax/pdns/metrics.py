"""Evaluation metrics for PDNS samplers.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference code github.com/AlexandreGUO2001/PDNS.

Importance weights W = l + r (Eq. 2): ``log_z_hat``, ``elbo``, ``ess``, ``ess_per_stage``,
``weight_stats``. Distances to reference samples: ``sinkhorn_divergence`` and the authors'
``sinkhorn_corrected``, ``mmd``, ``w2_1d``, ``w1_1d``, ``histogram_tv``; particle systems:
``energy_w2``, ``distance_w2``, ``particle_metrics``. Modes: ``nearest_center``,
``mode_weights``, ``mode_weight_tv``. Lattices (x in {0, 1}, s = 2x - 1): ``ising_sample_stats``,
``magnetisation_error``, ``correlation_error``, ``empirical_tv``. The metrics and the evaluators
they follow: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import math
from functools import partial
from typing import Callable, Optional

import chex
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "log_z_hat",
  "elbo",
  "ess",
  "ess_per_stage",
  "weight_stats",
  "sinkhorn_divergence",
  "sinkhorn_corrected",
  "mmd",
  "median_bandwidth",
  "w2_1d",
  "w1_1d",
  "histogram",
  "histogram_tv",
  "energy_w2",
  "distance_w2",
  "particle_metrics",
  "nearest_center",
  "mode_weights",
  "mode_weight_tv",
  "ising_sample_stats",
  "magnetisation_error",
  "correlation_error",
  "empirical_tv",
]


def _check_log_w(log_w: jax.Array, ndim: int = 1) -> None:
  chex.assert_rank(
    log_w,
    ndim,
    exception_type=ValueError,
    custom_message=(f"log_w must have {ndim} dimension(s); got shape {tuple(log_w.shape)}"),
  )


def log_z_hat(log_w: jax.Array) -> jax.Array:
  """log of the importance-sampling estimate of Z: (N,) -> scalar."""
  _check_log_w(log_w)
  return jax.nn.logsumexp(log_w) - math.log(log_w.shape[0])


def elbo(log_w: jax.Array) -> jax.Array:
  """mean log-weight, a lower bound on log Z in expectation: (N,) -> scalar."""
  _check_log_w(log_w)
  return jnp.mean(log_w)


@jax.jit
def ess_per_stage(log_w: jax.Array) -> jax.Array:
  """Normalised ESS along the last axis: (..., N) -> (...,), each in (0, 1]."""
  n = log_w.shape[-1]
  return jnp.exp(2 * jax.nn.logsumexp(log_w, -1) - jax.nn.logsumexp(2 * log_w, -1)) / n


def ess(log_w: jax.Array) -> jax.Array:
  """Normalised ESS (sum e^W)^2 / (N sum e^{2W}): (N,) -> scalar."""
  _check_log_w(log_w)
  return ess_per_stage(log_w)


def weight_stats(log_w: jax.Array) -> dict:
  """``eval/log_z``, ``eval/elbo``, ``eval/path_kl`` (= log Z^ - ELBO), ``eval/ess``,
  ``weights/max_wbar`` (largest self-normalised weight) from W: (N,)."""
  lz, el = log_z_hat(log_w), elbo(log_w)
  return {
    "eval/log_z": lz,
    "eval/elbo": el,
    "eval/path_kl": lz - el,
    "eval/ess": ess(log_w),
    "weights/max_wbar": jnp.max(jax.nn.softmax(log_w)),
  }


# ----------------------------------------------------------------------------- sample distances


def _check_clouds(x: jax.Array, y: jax.Array) -> None:
  if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
    raise ValueError(
      f"x and y must have shapes (N, d) and (M, d); got {tuple(x.shape)}, {tuple(y.shape)}"
    )


def sinkhorn_divergence(
  x: jax.Array,
  y: jax.Array,
  epsilon: float,
  *,
  anneal_decay: float = 0.99,
  threshold: float = 1e-4,
  extra_iterations: int = 2000,
) -> tuple[jax.Array, dict]:
  """Debiased Sinkhorn divergence S_eps(x, y) = OT_eps(x, y) - (OT_eps(x, x) + OT_eps(y, y)) / 2.

  Cost |x - y|^2 (no 1/2), uniform weights, OT_eps the entropic OT value (dual objective, as in
  geomloss / ott). Solved by ott-jax's log-domain Sinkhorn (``ott.tools.sinkhorn_divergence``
  with ``PointCloud`` geometries) with epsilon annealed geometrically, by ``anneal_decay`` per
  iteration, from the squared diameter of the pooled clouds (rounded up to a power of 2) down
  to ``epsilon``; at least the annealing iterations are run, then up to ``extra_iterations``
  more until the marginal error is below ``threshold``. S_eps >= 0, = 0 for identical clouds,
  -> W2^2 as eps -> 0. Float32 potentials carry rounding errors proportional to epsilon, so an
  epsilon far above the costs is inaccurate.
  Host-level function (the annealing length is computed from the data); the solve is jitted.

  Args:
    x: (N, d) model samples. y: (M, d) reference samples.
    epsilon: target entropic regularisation, in units of the cost.
  Returns:
    (divergence scalar, info dict: ``converged`` (all three problems), ``n_iters`` (3,),
    ``epsilon``).
  """
  _check_clouds(x, y)
  if epsilon <= 0 or not 0 < anneal_decay <= 1:
    raise ValueError(f"need epsilon > 0 and anneal_decay in (0, 1]; got {epsilon}, {anneal_decay}")
  x = jnp.asarray(x, jnp.float32)
  y = jnp.asarray(y, jnp.float32)
  both = np.concatenate([np.asarray(x), np.asarray(y)])
  diam2 = float(np.sum((both.max(0) - both.min(0)) ** 2))
  init = 2.0 ** max(math.ceil(math.log2(max(diam2 / epsilon, 1.0))), 0)  # power of 2: few compiles
  inner = 10
  n_anneal = 0 if anneal_decay == 1 else int(math.ceil(math.log(init) / -math.log(anneal_decay)))
  min_iter = inner * int(math.ceil(n_anneal / inner))
  max_iter = min_iter + inner * int(math.ceil(extra_iterations / inner))
  div, conv, iters = _sinkhorn_jit(
    x,
    y,
    float(epsilon),
    float(init),
    float(anneal_decay),
    float(threshold),
    min_iter,
    max_iter,
    inner,
  )
  return div, {"converged": conv, "n_iters": iters, "epsilon": epsilon}


@partial(jax.jit, static_argnums=(2, 3, 4, 5, 6, 7, 8))
def _sinkhorn_jit(x, y, epsilon, init, decay, threshold, min_iter, max_iter, inner):
  from ott.geometry import epsilon_scheduler, pointcloud
  from ott.tools import sinkhorn_divergence as sd

  eps = epsilon_scheduler.Epsilon(jnp.asarray(epsilon, jnp.float32), init=init, decay=decay)
  div, out = sd.sinkhorn_divergence(
    pointcloud.PointCloud,
    x,
    y,
    epsilon=eps,
    solve_kwargs={
      "threshold": threshold,
      "min_iterations": min_iter,
      "max_iterations": max_iter,
      "inner_iterations": inner,
    },
  )
  conv = jnp.all(jnp.stack([jnp.asarray(c) for c in out.converged]))
  return div, conv, jnp.stack([jnp.asarray(n) for n in out.n_iters])


def sinkhorn_corrected(x: jax.Array, y: jax.Array, **kwargs) -> tuple[jax.Array, dict]:
  """The authors' corrected GMM evaluator: geomloss SamplesLoss("sinkhorn", p=2,
  blur=1e-3, scaling=0.99) doubled = debiased divergence for cost |x - y|^2 at eps = 2e-6."""
  return sinkhorn_divergence(x, y, 2e-6, anneal_decay=0.99, **kwargs)


@jax.jit
def median_bandwidth(x: jax.Array, y: jax.Array) -> jax.Array:
  """Median heuristic: the median pairwise distance over the pooled sample (scalar).

  Memory O((N + M)^2): subsample large sets before calling.
  """
  z = jnp.concatenate([x, y])
  d2 = _sq_dists(z, z)
  iu = np.triu_indices(z.shape[0], 1)
  return jnp.sqrt(jnp.median(d2[iu]))


def _sq_dists(a: jax.Array, b: jax.Array) -> jax.Array:
  d2 = jnp.sum(a**2, -1)[:, None] + jnp.sum(b**2, -1)[None] - 2 * a @ b.T
  return jnp.maximum(d2, 0.0)


def mmd(
  x: jax.Array, y: jax.Array, bandwidth: Optional[float] = None
) -> tuple[jax.Array, jax.Array]:
  """Unbiased squared MMD with the Gaussian kernel k(a, b) = exp(-|a - b|^2 / (2 h^2)).

  MMD^2_u = mean_{i != i'} k(x_i, x_i') + mean_{j != j'} k(y_j, y_j') - 2 mean_{i, j} k(x_i, y_j)
  (Gretton et al. 2012, Eq. 3; can be slightly negative). h = ``bandwidth`` or, if None, the
  median heuristic over the pooled sample.

  Args:
    x: (N, d), y: (M, d), N, M >= 2.
  Returns:
    (MMD^2_u scalar, the bandwidth h used).
  """
  _check_clouds(x, y)
  n, m = x.shape[0], y.shape[0]
  if n < 2 or m < 2:
    raise ValueError(f"need at least two samples on each side; got {n}, {m}")
  h = median_bandwidth(x, y) if bandwidth is None else jnp.asarray(bandwidth, x.dtype)
  return _mmd_jit(x, y, h), h


@jax.jit
def _mmd_jit(x, y, h):
  n, m = x.shape[0], y.shape[0]
  k = lambda a, b: jnp.exp(-_sq_dists(a, b) / (2 * h**2))
  kxx, kyy, kxy = k(x, x), k(y, y), k(x, y)
  sxx = (jnp.sum(kxx) - jnp.trace(kxx)) / (n * (n - 1))
  syy = (jnp.sum(kyy) - jnp.trace(kyy)) / (m * (m - 1))
  return sxx + syy - 2 * jnp.mean(kxy)


def w2_1d(a: jax.Array, b: jax.Array, squared: bool = False) -> jax.Array:
  """Exact Wasserstein-2 between two 1-D empirical laws (uniform weights), by quantiles.

  W2^2 = int_0^1 (F_a^{-1}(u) - F_b^{-1}(u))^2 du; both quantile functions are step functions,
  integrated exactly over the merged breakpoints {i/N} U {j/M}.

  Args:
    a: (N,), b: (M,).
  Returns:
    W2 (or W2^2 if ``squared``), scalar.
  """
  chex.assert_rank(
    [a, b],
    1,
    exception_type=ValueError,
    custom_message=f"a and b must be 1-D; got {tuple(a.shape)}, {tuple(b.shape)}",
  )
  n, m = a.shape[0], b.shape[0]
  sa, sb = jnp.sort(a), jnp.sort(b)
  if n == m:
    w2 = jnp.mean((sa - sb) ** 2)
  else:
    levels = np.unique(np.concatenate([np.arange(1, n + 1) / n, np.arange(1, m + 1) / m]))
    lo = np.concatenate([[0.0], levels[:-1]])
    mid = 0.5 * (lo + levels)
    ia = np.minimum((mid * n).astype(np.int64), n - 1)
    ib = np.minimum((mid * m).astype(np.int64), m - 1)
    w2 = jnp.sum(jnp.asarray(levels - lo, a.dtype) * (sa[ia] - sb[ib]) ** 2)
  return w2 if squared else jnp.sqrt(w2)


def energy_w2(energy_fn: Callable, x: jax.Array, y: jax.Array) -> jax.Array:
  """1-D W2 between the energies E(x) of model samples (N, d) and reference samples (M, d)."""
  return w2_1d(energy_fn(x), energy_fn(y))


def _pooled_distances(z: jax.Array, n_particles: int, spatial_dim: int) -> jax.Array:
  """The inter-atomic distances r_ij (i < j) of samples z (N, n s), pooled: (N n (n - 1) / 2,)."""
  p = z.reshape(z.shape[0], n_particles, spatial_dim)
  i, j = np.triu_indices(n_particles, 1)
  return jnp.sqrt(jnp.sum((p[:, i] - p[:, j]) ** 2, -1)).reshape(-1)


def distance_w2(x: jax.Array, y: jax.Array, n_particles: int, spatial_dim: int) -> jax.Array:
  """1-D W2 between the pooled inter-atomic distances of two sample sets (N, n s), (M, n s)."""
  return w2_1d(
    _pooled_distances(x, n_particles, spatial_dim), _pooled_distances(y, n_particles, spatial_dim)
  )


def w1_1d(a: jax.Array, b: jax.Array) -> jax.Array:
  """Exact Wasserstein-1 between two 1-D empirical laws (uniform weights): int |F_a - F_b| dz.

  Args:
    a: (N,), b: (M,).
  Returns:
    W1, scalar (the area between the two empirical CDFs, evaluated on the merged sorted points).
  """
  chex.assert_rank(
    [a, b],
    1,
    exception_type=ValueError,
    custom_message=f"a and b must be 1-D; got {tuple(a.shape)}, {tuple(b.shape)}",
  )
  z = jnp.sort(jnp.concatenate([a, b]))
  fa = jnp.searchsorted(jnp.sort(a), z[:-1], side="right") / a.shape[0]
  fb = jnp.searchsorted(jnp.sort(b), z[:-1], side="right") / b.shape[0]
  return jnp.sum(jnp.abs(fa - fb) * jnp.diff(z))


def histogram(v: jax.Array, bins: int, lo: float, hi: float) -> jax.Array:
  """Normalised histogram (probabilities, sum 1 over the in-range values) of v (N,) on ``bins``
  equal bins of [lo, hi]; values outside are dropped. -> (bins,)."""
  edges = jnp.linspace(lo, hi, bins + 1)
  counts, _ = jnp.histogram(v, bins=edges)
  return counts / jnp.maximum(jnp.sum(counts), 1)


def histogram_tv(a: jax.Array, b: jax.Array, bins: int, lo: float, hi: float) -> jax.Array:
  """Total variation 1/2 sum |p_a - p_b| between the ``histogram``s of a (N,) and b (M,)."""
  return 0.5 * jnp.sum(jnp.abs(histogram(a, bins, lo, hi) - histogram(b, bins, lo, hi)))


def particle_metrics(
  energy_fn: Callable,
  x: jax.Array,
  ref: jax.Array,
  n_particles: int,
  spatial_dim: int,
  *,
  bins: int = 100,
  dist_range: tuple = (0.0, 8.0),
) -> dict:
  """The particle benchmarks' metrics of model samples x (N, n s) against reference samples
  ref (M, n s) (jittable):

  ``energy_w2`` (1-D W2 between the empirical laws of E), ``distance_w2`` / ``distance_w1``
  (1-D W2 / W1 between the pooled inter-atomic distances), ``distance_tv`` (TV between the
  distance histograms: ``bins`` bins on ``dist_range``).
  """
  dx = _pooled_distances(x, n_particles, spatial_dim)
  dr = _pooled_distances(ref, n_particles, spatial_dim)
  return {
    "energy_w2": w2_1d(energy_fn(x), energy_fn(ref)),
    "distance_w2": w2_1d(dx, dr),
    "distance_w1": w1_1d(dx, dr),
    "distance_tv": histogram_tv(dx, dr, bins, float(dist_range[0]), float(dist_range[1])),
  }


# ----------------------------------------------------------------------------------------- modes


def nearest_center(x: jax.Array, centers: jax.Array) -> jax.Array:
  """Index of the nearest center (Euclidean): x (..., d), centers (J, d) -> (...,) int32."""
  chex.assert_axis_dimension(
    x,
    -1,
    centers.shape[-1],
    exception_type=ValueError,
    custom_message=(f"x (..., {centers.shape[-1]}) expected; got {tuple(x.shape)}"),
  )
  d2 = jnp.sum((x[..., None, :] - centers) ** 2, -1)
  return jnp.argmin(d2, -1).astype(jnp.int32)


def mode_weights(assignment: jax.Array, num_modes: int) -> jax.Array:
  """Fraction of samples per mode: (N,) int in [0, J) -> (J,)."""
  counts = jnp.bincount(assignment.reshape(-1), length=num_modes)
  return counts / assignment.size


def mode_weight_tv(assignment: jax.Array, exact_weights: jax.Array) -> jax.Array:
  """TV between the empirical mode weights and the exact ones: 1/2 sum_j |w^_j - w_j|."""
  w = mode_weights(assignment, exact_weights.shape[0])
  return 0.5 * jnp.sum(jnp.abs(w - exact_weights))


# -------------------------------------------------------------------------------------- lattices


def ising_sample_stats(x: jax.Array) -> dict:
  """Magnetisation and two-point statistics of Ising samples x (N, D) in {0, 1}, s = 2x - 1.

  Returns:
    ``abs_mag`` = E|M| / D, ``p_neg`` = P(M < 0), ``p_pos`` = P(M > 0), ``corr`` (D, D) = E s_i s_j.
  """
  chex.assert_rank(
    x,
    2,
    exception_type=ValueError,
    custom_message=f"x must have shape (N, D); got {tuple(x.shape)}",
  )
  return _ising_stats_jit(x)


@jax.jit
def _ising_stats_jit(x):
  s = 2.0 * x.astype(jnp.float32) - 1.0
  mag = jnp.sum(s, -1)
  return {
    "abs_mag": jnp.mean(jnp.abs(mag)) / x.shape[1],
    "p_neg": jnp.mean(mag < 0),
    "p_pos": jnp.mean(mag > 0),
    "corr": s.T @ s / x.shape[0],
  }


def magnetisation_error(stats: dict, ref: dict) -> jax.Array:
  """|E|M|/D (model) - E|M|/D (reference)| from two ``ising_sample_stats`` / exact dicts."""
  return jnp.abs(stats["abs_mag"] - ref["abs_mag"])


def correlation_error(stats: dict, ref: dict) -> jax.Array:
  """Mean absolute difference of the off-diagonal two-point correlations E s_i s_j."""
  c, r = stats["corr"], ref["corr"]
  d = c.shape[0]
  off = 1.0 - jnp.eye(d)
  return jnp.sum(off * jnp.abs(c - r)) / (d * (d - 1))


def empirical_tv(x: jax.Array, log_probs: np.ndarray, q: int) -> jax.Array:
  """TV 1/2 sum_x |p^(x) - pi(x)| between the empirical law of samples x (N, D) in {0..q-1} and an
  enumerated distribution ``log_probs`` (q^D,) in lexicographic order (last site fastest)."""
  lp = jnp.asarray(log_probs)
  dim = x.shape[-1]
  chex.assert_shape(
    lp,
    (q**dim,),
    exception_type=ValueError,
    custom_message=(f"log_probs must have shape ({q**dim},) = (q^D,); got {lp.shape}"),
  )
  return _tv_jit(x, lp, q)


@partial(jax.jit, static_argnums=(2,))
def _tv_jit(x, lp, q):
  dim = x.shape[-1]
  powers = jnp.asarray(q ** np.arange(dim - 1, -1, -1), jnp.int32)
  idx = jnp.sum(x.astype(jnp.int32) * powers, -1)
  freq = jnp.bincount(idx, length=q**dim) / x.shape[0]
  return 0.5 * jnp.sum(jnp.abs(freq - jnp.exp(lp)))
