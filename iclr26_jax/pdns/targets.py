"""Continuous targets with known answers for PDNS (spec §11, §14).

Paper: W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026;
reference code github.com/AlexandreGUO2001/PDNS.

Each target is a frozen pytree with ``log_prob_unnorm(x) -> (...,)`` equal to
log Z + log pi(x) for a chosen ``log_z`` (so the normaliser is known exactly), ``sample(key, n)``
drawing exact samples and, for mixtures, the component parameters used by the analytic optimal
control (``continuous.gmm_optimal_control``).
"""

from __future__ import annotations

import math

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["GaussianMixture", "gaussian", "gmm_2d"]


class GaussianMixture(flax.struct.PyTreeNode):
  """pi~(x) = Z sum_j w_j N(x; m_j, S_j).

  Attributes:
    log_weights: (J,) normalised log mixture weights.
    means: (J, d).
    covs: (J, d, d) positive definite.
    log_z: scalar, the exact log normaliser log int pi~.
  """
  log_weights: jax.Array
  means: jax.Array
  covs: jax.Array
  log_z: jax.Array

  @classmethod
  def create(cls, weights, means, covs, log_z: float = 0.0) -> "GaussianMixture":
    """Validates shapes: weights (J,) positive, means (J, d), covs (J, d, d) or (J, d) diagonal."""
    w = np.asarray(weights, np.float64)
    m = np.asarray(means, np.float64)
    c = np.asarray(covs, np.float64)
    if w.ndim != 1 or np.any(w <= 0):
      raise ValueError(f"weights must be a positive (J,) vector; got {w}")
    j = w.shape[0]
    if m.ndim != 2 or m.shape[0] != j:
      raise ValueError(f"means must have shape ({j}, d); got {m.shape}")
    d = m.shape[1]
    if c.shape == (j, d):
      c = np.einsum("jd,de->jde", c, np.eye(d))
    if c.shape != (j, d, d):
      raise ValueError(f"covs must have shape ({j}, {d}, {d}) or ({j}, {d}); got {c.shape}")
    if np.any(np.linalg.eigvalsh(c) <= 0):
      raise ValueError("covs must be positive definite")
    return cls(log_weights=jnp.asarray(np.log(w / w.sum()), jnp.float32),
               means=jnp.asarray(m, jnp.float32), covs=jnp.asarray(c, jnp.float32),
               log_z=jnp.asarray(log_z, jnp.float32))

  @property
  def dim(self) -> int:
    return self.means.shape[1]

  def log_prob_unnorm(self, x: jax.Array) -> jax.Array:
    """log pi~(x): (..., d) -> (...,)."""
    d = self.dim
    if x.shape[-1] != d:
      raise ValueError(f"x must have shape (..., {d}); got {tuple(x.shape)}")
    chol = jnp.linalg.cholesky(self.covs)                                  # (J, d, d)
    diff = x[..., None, :] - self.means                                    # (..., J, d)
    inv_chol = jnp.linalg.inv(chol)                                        # (J, d, d)
    sol = jnp.einsum("jde,...je->...jd", inv_chol, diff)                   # (..., J, d)
    maha = jnp.sum(sol ** 2, -1)                                           # (..., J)
    logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), -1)
    comp = -0.5 * maha - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
    return self.log_z + jax.nn.logsumexp(self.log_weights + comp, -1)

  def sample(self, key: jax.Array, n: int) -> jax.Array:
    """n exact draws: (n, d)."""
    kc, kz = jax.random.split(key)
    comp = jax.random.categorical(kc, self.log_weights, shape=(n,))
    z = jax.random.normal(kz, (n * self.dim,)).reshape(n, self.dim)
    chol = jnp.linalg.cholesky(self.covs)[comp]
    return self.means[comp] + jnp.einsum("nde,ne->nd", chol, z)

  def mean(self) -> jax.Array:
    """Exact mean: (d,)."""
    return jnp.sum(jnp.exp(self.log_weights)[:, None] * self.means, 0)

  def cov(self) -> jax.Array:
    """Exact covariance: (d, d)."""
    w = jnp.exp(self.log_weights)
    mu = self.mean()
    second = jnp.einsum("j,jde->de", w, self.covs + jnp.einsum("jd,je->jde", self.means,
                                                               self.means))
    return second - jnp.outer(mu, mu)


def gaussian(mean, cov, log_z: float = 0.0) -> GaussianMixture:
  """A single Gaussian N(mean, cov) (cov (d, d) or (d,) diagonal) with normaliser e^{log_z}."""
  mean = np.asarray(mean, np.float64)
  cov = np.asarray(cov, np.float64)
  return GaussianMixture.create([1.0], mean[None], cov[None], log_z)


def gmm_2d(weights=(0.3, 0.7), separation: float = 4.0, std: float = 0.7,
           log_z: float = 1.5) -> GaussianMixture:
  """Two-component 2-D mixture with means (+-separation/2, 0), isotropic std, weights as given."""
  h = separation / 2
  return GaussianMixture.create(weights, [[-h, 0.0], [h, 0.0]], [[std ** 2] * 2] * 2, log_z)
