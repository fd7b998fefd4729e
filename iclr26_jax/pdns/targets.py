"""Continuous targets with known answers for PDNS.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference code github.com/AlexandreGUO2001/PDNS.

Each target is a frozen pytree with ``log_prob_unnorm(x) -> (...,)`` (x of shape (..., d)),
``dim``, the exact ``log_z`` = log int pi~, ``sample(key, n) -> (n, d)`` drawing exact samples
and, for multimodal targets, ``assign(x) -> (...,)`` (mode index) and ``mode_weights_exact()``:
``GaussianMixture`` (``gaussian``, ``gmm_2d``, ``gmm40``, ``well_separated_mixture``,
``two_mode_10d``), ``MixtureOfStudents`` (``mos50``), ``Funnel`` and ``ManyWell``
(``many_well_54``). Particle systems are in ``particles``. The targets and their benchmark
parameters: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import math
from functools import partial

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from iclr26_jax.pdns.metrics import mode_weights, nearest_center


@partial(jax.jit, static_argnums=(2,))
def _jit_sample(target, key: jax.Array, n: int) -> jax.Array:
  return target._sample(key, n)


@jax.jit
def _jit_log_prob(target, x: jax.Array) -> jax.Array:
  return target._log_prob(x)


def _check_dim(x: jax.Array, dim: int) -> None:
  chex.assert_axis_dimension(
    x,
    -1,
    dim,
    exception_type=ValueError,
    custom_message=(f"x must have shape (..., {dim}); got {tuple(x.shape)}"),
  )


__all__ = [
  "GaussianMixture",
  "gaussian",
  "gmm_2d",
  "gmm40",
  "well_separated_mixture",
  "two_mode_10d",
  "MixtureOfStudents",
  "mos50",
  "Funnel",
  "ManyWell",
  "many_well_54",
]


class GaussianMixture(flax.struct.PyTreeNode):
  """pi~(x) = Z sum_j w_j N(x; m_j, S_j).

  Attributes:
    log_weights: (J,) normalised log mixture weights.
    means: (J, d).
    covs: (J, d, d) positive definite.
    log_z: scalar, the exact log normaliser log int pi~.
    chol: (J, d, d) Cholesky factors L_j of covs (host-computed in float64 by ``create``).
    inv_chol: (J, d, d) L_j^{-1}.
    log_norm: (J,) -1/2 log det(2 pi S_j).
  """

  log_weights: jax.Array
  means: jax.Array
  covs: jax.Array
  log_z: jax.Array
  chol: jax.Array
  inv_chol: jax.Array
  log_norm: jax.Array

  @classmethod
  def create(cls, weights, means, covs, log_z: float = 0.0) -> "GaussianMixture":
    """Validates shapes: weights (J,) positive, means (J, d), covs (J, d, d) or (J, d) diagonal."""
    w = np.asarray(weights, np.float64)
    m = np.asarray(means, np.float64)
    c = np.asarray(covs, np.float64)
    if w.ndim != 1 or np.any(w <= 0):
      raise ValueError(f"weights must be a positive (J,) vector; got {w}")
    j = w.shape[0]
    chex.assert_shape(
      m,
      (j, None),
      exception_type=ValueError,
      custom_message=f"means must have shape ({j}, d); got {m.shape}",
    )
    d = m.shape[1]
    if c.shape == (j, d):
      c = np.einsum("jd,de->jde", c, np.eye(d))
    chex.assert_shape(
      c,
      (j, d, d),
      exception_type=ValueError,
      custom_message=(f"covs must have shape ({j}, {d}, {d}) or ({j}, {d}); got {c.shape}"),
    )
    if np.any(np.linalg.eigvalsh(c) <= 0):
      raise ValueError("covs must be positive definite")
    chol = np.linalg.cholesky(c)
    inv_chol = np.linalg.inv(chol)
    log_norm = -np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), -1) - 0.5 * d * math.log(
      2 * math.pi
    )
    f32 = lambda a: jnp.asarray(a, jnp.float32)
    return cls(
      log_weights=f32(np.log(w / w.sum())),
      means=f32(m),
      covs=f32(c),
      log_z=f32(log_z),
      chol=f32(chol),
      inv_chol=f32(inv_chol),
      log_norm=f32(log_norm),
    )

  @property
  def dim(self) -> int:
    return self.means.shape[1]

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x): (..., d) -> (...,) (jitted)."""
    _check_dim(x, self.dim)
    return _jit_log_prob(self, x)

  def _log_prob(self, x: jax.Array) -> jax.Array:
    diff = x[..., None, :] - self.means  # (..., J, d)
    sol = jnp.einsum("jde,...je->...jd", self.inv_chol, diff)  # (..., J, d)
    comp = -0.5 * jnp.sum(sol**2, -1) + self.log_norm  # (..., J)
    return self.log_z + jax.nn.logsumexp(self.log_weights + comp, -1)

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n exact draws: (n, d) (jitted per n; memory O(n d), a scan over the J components)."""
    return _jit_sample(self, key, int(n))

  def _sample(self, key: jax.Array, n: int) -> jax.Array:
    kc, kz = jax.random.split(key)
    comp = jax.random.categorical(kc, self.log_weights, shape=(n,))
    z = jax.random.normal(kz, (n * self.dim,)).reshape(n, self.dim)
    chol = self.chol  # (J, d, d)

    def add(acc, jc):
      j, c = jc
      return acc + jnp.where((comp == j)[:, None], z @ c.T, 0.0), None

    noise, _ = jax.lax.scan(add, jnp.zeros_like(z), (jnp.arange(chol.shape[0]), chol))
    return self.means[comp] + noise

  def assign(self, x: jax.Array) -> jax.Array:
    """Nearest-mean component index: (..., d) -> (...,) int32."""
    return nearest_center(x, self.means)

  def mode_weights_exact(self) -> jax.Array:
    """The mixture weights: (J,)."""
    return jnp.exp(self.log_weights)

  def mode_weights(self, x: jax.Array) -> jax.Array:
    """Fraction of the samples x (N, d) assigned to each component: (J,)."""
    return mode_weights(self.assign(x), self.means.shape[0])

  def mean(self) -> jax.Array:
    """Exact mean: (d,)."""
    return jnp.sum(jnp.exp(self.log_weights)[:, None] * self.means, 0)

  def cov(self) -> jax.Array:
    """Exact covariance: (d, d)."""
    w = jnp.exp(self.log_weights)
    mu = self.mean()
    second = jnp.einsum(
      "j,jde->de", w, self.covs + jnp.einsum("jd,je->jde", self.means, self.means)
    )
    return second - jnp.outer(mu, mu)


def gaussian(mean, cov, log_z: float = 0.0) -> GaussianMixture:
  """A single Gaussian N(mean, cov) (cov (d, d) or (d,) diagonal) with normaliser e^{log_z}."""
  mean = np.asarray(mean, np.float64)
  cov = np.asarray(cov, np.float64)
  return GaussianMixture.create([1.0], mean[None], cov[None], log_z)


def gmm_2d(
  weights=(0.3, 0.7), separation: float = 4.0, std: float = 0.7, log_z: float = 1.5
) -> GaussianMixture:
  """Two-component 2-D mixture with means (+-separation/2, 0), isotropic std, weights as given."""
  h = separation / 2
  return GaussianMixture.create(weights, [[-h, 0.0], [h, 0.0]], [[std**2] * 2] * 2, log_z)


def gmm40(
  dim: int = 50,
  n_modes: int = 40,
  box: float = 40.0,
  std: float = 1.0,
  seed: int = 0,
  log_z: float = 0.0,
) -> GaussianMixture:
  """GMM-40: ``n_modes`` equal-weight isotropic components with standard deviation
  ``std`` and means i.i.d. uniform in [-box, box]^dim, drawn by ``np.random.default_rng(seed)``.

  The FAB / iDEM code base builds its GMM with covariance softplus(1)^2 I (std 1.313); the
  default here is unit variance. The means cannot match FAB's torch seed; any seed gives
  an instance of the same random benchmark.
  """
  if n_modes < 1 or dim < 1 or box <= 0 or std <= 0:
    raise ValueError(f"need n_modes, dim >= 1 and box, std > 0; got {n_modes}, {dim}, {box}, {std}")
  rng = np.random.default_rng(seed)
  means = rng.uniform(-box, box, size=(n_modes, dim))
  return GaussianMixture.create(np.ones(n_modes), means, np.full((n_modes, dim), std**2), log_z)


def well_separated_mixture(
  weights, dim: int = 10, separation: float = 8.0, std: float = 1.0, log_z: float = 0.0
) -> GaussianMixture:
  """Mixture with the given (e.g. unequal) weights and means at (separation / sqrt 2) e_j.

  Every pair of means is ``separation`` apart (J <= dim). With separation / std >= 8 the modes
  are separated by a barrier of at least separation^2 / (8 std^2) = 8 nats.
  """
  w = np.asarray(weights, np.float64)
  if w.ndim != 1 or w.shape[0] > dim:
    raise ValueError(f"weights must be a (J,) vector with J <= dim = {dim}; got shape {w.shape}")
  if separation <= 0 or std <= 0:
    raise ValueError(f"separation and std must be > 0; got {separation}, {std}")
  means = separation / math.sqrt(2.0) * np.eye(dim)[: w.shape[0]]
  return GaussianMixture.create(w, means, np.full((w.shape[0], dim), std**2), log_z)


def two_mode_10d(
  weights=(0.3, 0.7), separation: float = 8.0, std: float = 1.0, log_z: float = 2.0
) -> GaussianMixture:
  """The 10-D two-component mixture of the known-answer tests (weights 0.3 / 0.7, chosen log Z)."""
  if len(weights) != 2:
    raise ValueError(f"weights must have two entries; got {weights}")
  return well_separated_mixture(weights, 10, separation, std, log_z)


class MixtureOfStudents(flax.struct.PyTreeNode):
  """pi~(x) = Z (1/J) sum_j prod_i t_nu(x_i - m_ji) (unit scale Student-t, nu d.o.f.).

  Attributes:
    means: (J, d).
    log_z: scalar exact log normaliser.
    df: degrees of freedom nu (static).
  """

  means: jax.Array
  log_z: jax.Array
  df: float = flax.struct.field(pytree_node=False, default=2.0)

  @property
  def dim(self) -> int:
    return self.means.shape[1]

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x): (..., d) -> (...,) (jitted)."""
    _check_dim(x, self.dim)
    return _jit_log_prob(self, x)

  def _log_prob(self, x: jax.Array) -> jax.Array:
    nu = self.df
    const = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * math.log(nu * math.pi)
    diff = x[..., None, :] - self.means  # (..., J, d)
    comp = jnp.sum(const - 0.5 * (nu + 1) * jnp.log1p(diff**2 / nu), -1)
    j = self.means.shape[0]
    return self.log_z + jax.nn.logsumexp(comp, -1) - math.log(j)

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n exact draws: (n, d) (jitted per n)."""
    return _jit_sample(self, key, int(n))

  def _sample(self, key: jax.Array, n: int) -> jax.Array:
    kc, kz, kg = jax.random.split(key, 3)
    comp = jax.random.randint(kc, (n,), 0, self.means.shape[0])
    m = n * self.dim
    z = jax.random.normal(kz, (m,))
    if self.df == 2.0:  # chi^2_2 / 2 = Exp(1): t_2 = z / sqrt(Exp(1))
      v = jax.random.exponential(kg, (m,))
    else:  # chi^2_nu / nu = Gamma(nu / 2) / (nu / 2)
      v = jax.random.gamma(kg, self.df / 2, (m,)) / (self.df / 2)
    return self.means[comp] + (z / jnp.sqrt(v)).reshape(n, self.dim)

  def assign(self, x: jax.Array) -> jax.Array:
    """Nearest-mean component index: (..., d) -> (...,) int32."""
    return nearest_center(x, self.means)

  def mode_weights_exact(self) -> jax.Array:
    """(J,) all equal to 1 / J."""
    j = self.means.shape[0]
    return jnp.full((j,), 1.0 / j)

  def mode_weights(self, x: jax.Array) -> jax.Array:
    """Fraction of the samples x (N, d) assigned to each component: (J,)."""
    return mode_weights(self.assign(x), self.means.shape[0])


def mos50(
  dim: int = 50,
  n_modes: int = 10,
  box: float = 10.0,
  df: float = 2.0,
  seed: int = 0,
  log_z: float = 0.0,
) -> MixtureOfStudents:
  """MoS: equal-weight Student-t products, means uniform in [-box, box]^dim."""
  if n_modes < 1 or dim < 1 or box <= 0 or df <= 0:
    raise ValueError(f"need n_modes, dim >= 1 and box, df > 0; got {n_modes}, {dim}, {box}, {df}")
  means = np.random.default_rng(seed).uniform(-box, box, size=(n_modes, dim))
  return MixtureOfStudents(
    means=jnp.asarray(means, jnp.float32), log_z=jnp.asarray(log_z, jnp.float32), df=float(df)
  )


class Funnel(flax.struct.PyTreeNode):
  """Neal's funnel: pi~(x) = Z N(x_1; 0, sigma^2) prod_{i>=2} N(x_i; 0, e^{x_1}).

  Attributes:
    log_z: scalar, the chosen exact log normaliser.
    dim: d (static).
    sigma: standard deviation of x_1 (static; 3 in the benchmark).
  """

  log_z: jax.Array
  dim: int = flax.struct.field(pytree_node=False, default=10)
  sigma: float = flax.struct.field(pytree_node=False, default=3.0)

  @classmethod
  def create(cls, dim: int = 10, sigma: float = 3.0, log_z: float = 0.0) -> "Funnel":
    if dim < 2 or sigma <= 0:
      raise ValueError(f"need dim >= 2 and sigma > 0; got dim={dim}, sigma={sigma}")
    return cls(log_z=jnp.asarray(log_z, jnp.float32), dim=int(dim), sigma=float(sigma))

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x): (..., d) -> (...,) (jitted)."""
    _check_dim(x, self.dim)
    return _jit_log_prob(self, x)

  def _log_prob(self, x: jax.Array) -> jax.Array:
    x1, rest = x[..., 0], x[..., 1:]
    lp1 = -0.5 * (x1 / self.sigma) ** 2 - math.log(self.sigma) - 0.5 * math.log(2 * math.pi)
    k = self.dim - 1
    lpr = (
      -0.5 * jnp.sum(rest**2, -1) * jnp.exp(-x1) - 0.5 * k * x1 - 0.5 * k * math.log(2 * math.pi)
    )
    return self.log_z + lp1 + lpr

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n exact draws: (n, d) (jitted per n)."""
    return _jit_sample(self, key, int(n))

  def _sample(self, key: jax.Array, n: int) -> jax.Array:
    z = jax.random.normal(key, (n * self.dim,)).reshape(n, self.dim)
    x1 = self.sigma * z[:, :1]
    return jnp.concatenate([x1, jnp.exp(0.5 * x1) * z[:, 1:]], -1)


def _well_log_factor(x: np.ndarray, delta: float) -> np.ndarray:
  return -((x**2 - delta) ** 2)


class ManyWell(flax.struct.PyTreeNode):
  """Many-well: log pi~(x) = -E(x), E = sum_{i<m} (x_i^2 - delta)^2 + 1/2 sum_{i>=m} x_i^2.

  The coordinates are independent, so log Z = m log z_w + (d - m)/2 log 2 pi with
  z_w = int exp(-(t^2 - delta)^2) dt (computed by float64 quadrature at construction) and exact
  samples come from the 1-D inverse CDF of the well on a fine grid (linear CDF interpolation).
  Modes: the 2^m sign patterns of the first m coordinates, all of weight 2^-m.

  Attributes:
    log_z: scalar exact log Z.
    grid: (G,) abscissae of the well's CDF table.
    cdf: (G,) CDF of the normalised 1-D well density at ``grid``.
    dim, m, delta: static.
  """

  log_z: jax.Array
  grid: jax.Array
  cdf: jax.Array
  dim: int = flax.struct.field(pytree_node=False, default=5)
  m: int = flax.struct.field(pytree_node=False, default=5)
  delta: float = flax.struct.field(pytree_node=False, default=4.0)

  @classmethod
  def create(
    cls, dim: int = 5, m: int = 5, delta: float = 4.0, grid_size: int = 40001
  ) -> "ManyWell":
    if not 1 <= m <= dim or delta <= 0 or grid_size < 1001:
      raise ValueError(
        f"need 1 <= m <= dim, delta > 0, grid_size >= 1001; got m={m}, dim={dim},"
        f" delta={delta}, grid_size={grid_size}"
      )
    half = math.sqrt(delta) + 4.0  # (t^2 - delta)^2 > 256 outside: density < e^-256
    t = np.linspace(-half, half, grid_size)
    f = np.exp(_well_log_factor(t, delta))
    h = t[1] - t[0]
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * h)])
    z_w = cum[-1]
    log_z = m * math.log(z_w) + 0.5 * (dim - m) * math.log(2 * math.pi)
    return cls(
      log_z=jnp.asarray(log_z, jnp.float32),
      grid=jnp.asarray(t, jnp.float32),
      cdf=jnp.asarray(cum / z_w, jnp.float32),
      dim=int(dim),
      m=int(m),
      delta=float(delta),
    )

  def energy(self, x: jax.Array) -> jax.Array:
    """E(x): (..., d) -> (...,)."""
    _check_dim(x, self.dim)
    w = x[..., : self.m]
    g = x[..., self.m :]
    return jnp.sum((w**2 - self.delta) ** 2, -1) + 0.5 * jnp.sum(g**2, -1)

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x) = -E(x): (..., d) -> (...,) (jitted)."""
    _check_dim(x, self.dim)
    return _jit_log_prob(self, x)

  def _log_prob(self, x: jax.Array) -> jax.Array:
    return -self.energy(x)

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n draws (exact up to the CDF grid): (n, d) (jitted per n)."""
    return _jit_sample(self, key, int(n))

  def _sample(self, key: jax.Array, n: int) -> jax.Array:
    ku, kg = jax.random.split(key)
    u = jax.random.uniform(ku, (n * self.m,), minval=1e-7, maxval=1 - 1e-7)
    wells = jnp.interp(u, self.cdf, self.grid).reshape(n, self.m)
    if self.dim == self.m:
      return wells
    g = jax.random.normal(kg, (n * (self.dim - self.m),)).reshape(n, self.dim - self.m)
    return jnp.concatenate([wells, g], -1)

  def assign(self, x: jax.Array) -> jax.Array:
    """Mode index sum_{i<m} 1[x_i > 0] 2^i: (..., d) -> (...,) int32."""
    bits = (x[..., : self.m] > 0).astype(jnp.int32)
    return jnp.sum(bits * (2 ** jnp.arange(self.m, dtype=jnp.int32)), -1)

  def mode_weights_exact(self) -> jax.Array:
    """(2^m,) all equal to 2^-m (each well is symmetric)."""
    return jnp.full((2**self.m,), 2.0**-self.m)

  def mode_weights(self, x: jax.Array) -> jax.Array:
    """Fraction of the samples x (N, d) in each of the 2^m sign patterns: (2^m,)."""
    return mode_weights(self.assign(x), 2**self.m)


def many_well_54() -> ManyWell:
  """MW54, the many-well of the SCLD / NAAS suite: (d, m, delta) = (5, 5, 4), 32 modes."""
  return ManyWell.create(5, 5, 4.0)
