"""MI benchmarks with analytic truth: the Gaussian pair task (``diag_multi_gauss``) and its kin.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE (task ``diag_multi_gauss``, after DRE-∞ and D3RE).
``GaussianMITask``: p0 = N(0, I_d) (the product of marginals), p1 = N(0, Σ), Σ block-diagonal in
2 × 2 blocks [[1, ρ], [ρ, 1]] over coordinate pairs (2i, 2i + 1); ``MappedMITask``,
``AdditiveNoiseTask`` and ``GammaExponentialTask``: the reference's low-dimensional MI tasks. The
tasks and their closed forms: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.minpv.paths import PathCoeffs


class GaussianMITask(NamedTuple):
  """Static description: dimension d (even) and block correlation ρ ∈ [0, 1)."""

  dim: int
  rho: float

  @property
  def mi(self) -> float:
    """Analytic MI = −(d/4) log(1 − ρ²) in nats."""
    return float(-0.25 * self.dim * np.log1p(-(self.rho**2)))

  @property
  def eigenvalues(self) -> np.ndarray:
    """(d,) eigenvalues of Σ in eigen-coordinate order: (1 + ρ, 1 − ρ) per block."""
    return np.tile(np.array([1.0 + self.rho, 1.0 - self.rho]), self.dim // 2)


def default_mi(dim: int) -> float:
  """The reference's MI for dimension d: 2 nats for d ≤ 10, else d/4."""
  return 2.0 if dim <= 10 else dim / 4.0


def rho_for_mi(dim: int, mi: float) -> float:
  """ρ = √(1 − exp(−4·MI/d))."""
  if mi <= 0:
    raise ValueError(f"mi must be > 0; got {mi}")
  return float(np.sqrt(-np.expm1(-4.0 * mi / dim)))


def make_task(dim: int, *, mi: float | None = None, rho: float | None = None) -> GaussianMITask:
  """The task from d and either ρ or MI (neither: the reference MI rule).

  Raises:
    ValueError: odd ``dim``, both ``mi`` and ``rho`` given, or ρ outside [0, 1).
  """
  if int(dim) < 2 or int(dim) % 2:
    raise ValueError(f"dim must be an even integer >= 2 (2 × 2 blocks); got {dim}")
  if mi is not None and rho is not None:
    raise ValueError(f"give mi or rho, not both; got mi={mi}, rho={rho}")
  if rho is None:
    rho = rho_for_mi(int(dim), default_mi(int(dim)) if mi is None else float(mi))
  if not 0.0 <= rho < 1.0:
    raise ValueError(f"rho must be in [0, 1); got {rho}")
  return GaussianMITask(int(dim), float(rho))


def sample_p0(key: jax.Array, n: int, task: GaussianMITask) -> jax.Array:
  """(n, d) draws of N(0, I)."""
  return jax.random.normal(key, (n * task.dim,)).reshape(n, task.dim)


def sample_p1(key: jax.Array, n: int, task: GaussianMITask) -> jax.Array:
  """(n, d) draws of N(0, Σ): per pair (u, ρu + √(1 − ρ²) w)."""
  e = jax.random.normal(key, (n * task.dim,)).reshape(n, task.dim // 2, 2)
  u, w = e[..., 0], e[..., 1]
  v = task.rho * u + np.sqrt(1.0 - task.rho**2) * w
  return jnp.stack([u, v], axis=-1).reshape(n, task.dim)


def _check_x(x, task):
  chex.assert_shape(
    x,
    (None, task.dim),
    exception_type=ValueError,
    custom_message=(f"x must be (B, {task.dim}); got {x.shape}"),
  )


def eigen_coordinates(x: jax.Array, task: GaussianMITask) -> jax.Array:
  """y = Qᵀx, (B, d) → (B, d): per pair ((x_a + x_b)/√2, (x_a − x_b)/√2), λ = 1 + ρ, 1 − ρ."""
  _check_x(x, task)
  p = x.reshape(x.shape[0], task.dim // 2, 2)
  y = jnp.stack([p[..., 0] + p[..., 1], p[..., 0] - p[..., 1]], axis=-1) / np.sqrt(2.0)
  return y.reshape(x.shape)


def true_log_ratio(x: jax.Array, task: GaussianMITask) -> jax.Array:
  """Analytic log p1(x)/p0(x) = −½ Σ_i [y_i²(1/λ_i − 1) + log λ_i]; (B, d) → (B,)."""
  y = eigen_coordinates(x, task)
  lam = jnp.asarray(task.eigenvalues, x.dtype)
  return -0.5 * jnp.sum(y**2 * (1.0 / lam - 1.0) + jnp.log(lam), axis=1)


def time_score(
  x: jax.Array,
  coeffs: PathCoeffs,
  task: GaussianMITask,
  bridge: tuple[jax.Array, jax.Array] | None = None,
) -> jax.Array:
  """Analytic s*(x, t) = ∂_t log p_t(x); x (B, d), coeffs fields (B,) → (B,).

  Plain interpolant: p_t = N(0, α²I + β²Σ), so with y = ``eigen_coordinates(x)``
  s* = −½ Σ ṡ_i/s_i + ½ Σ ṡ_i y_i²/s_i², s_i = α² + β²λ_i, ṡ_i = 2αα̇ + 2ββ̇λ_i. With
  ``bridge=(v (B,), v̇ (B,))`` the dequantified bridge adds v I to the covariance (x0, x1, z
  independent), so s_i = α² + v + β²λ_i (and ṡ_i gains v̇).
  """
  y = eigen_coordinates(x, task)
  lam = jnp.asarray(task.eigenvalues, x.dtype)[None, :]
  a, b, da, db = (c[:, None] for c in coeffs)
  s = a**2 + b**2 * lam
  ds = 2.0 * a * da + 2.0 * b * db * lam
  if bridge is not None:
    s = s + bridge[0][:, None]
    ds = ds + bridge[1][:, None]
  return jnp.sum(-0.5 * ds / s + 0.5 * ds * y**2 / s**2, axis=1)


def time_score_second_moment(coeffs: PathCoeffs, task: GaussianMITask) -> jax.Array:
  """E_{p_t}[s*²] = ½ Σ_i (ṡ_i/s_i)² (s* has mean 0); fields of shape S → S."""
  lam = jnp.asarray(task.eigenvalues)
  a, b, da, db = (jnp.asarray(c)[..., None] for c in coeffs)
  s = a**2 + b**2 * lam
  ds = 2.0 * a * da + 2.0 * b * db * lam
  return 0.5 * jnp.sum((ds / s) ** 2, axis=-1)


# --------------------------------------------------------------- MI under coordinate-wise maps
# The reference's ``gauss``, ``half_cube_map``, ``asinh_mapping`` tasks (after Czyż et al.,
# "Beyond Normal", NeurIPS 2023): the Gaussian pair through an elementwise bijection f, X = the
# even coordinates, Y = the odd ones. The Jacobian of f enters p(x, y) and p(x)p(y) alike, so
# log p(f(u))/[p_X p_Y](f(u)) = true_log_ratio(u); p0 by shuffled pairing (``shuffle_pairs``).

MAPS = {
  # name: (f, f⁻¹) as functions of (array, array namespace); elementwise and odd
  "gauss": (lambda u, xp: u, lambda z, xp: z),
  "half_cube": (
    lambda u, xp: xp.sign(u) * xp.abs(u) ** 1.5,  # reference half_cube_map
    lambda z, xp: xp.sign(z) * xp.abs(z) ** (2.0 / 3.0),
  ),
  "asinh": (lambda u, xp: xp.arcsinh(u), lambda z, xp: xp.sinh(z)),  # reference asinh_mapping
  "cubic": (lambda u, xp: u**3, lambda z, xp: xp.cbrt(z)),
}


def _xp(a):
  return np if isinstance(a, np.ndarray) else jnp


class MappedMITask(NamedTuple):
  """The Gaussian pair task ``gaussian`` seen through the coordinate-wise bijection ``map``."""

  gaussian: GaussianMITask
  map: str

  @property
  def dim(self) -> int:
    return self.gaussian.dim

  @property
  def mi(self) -> float:
    """MI of the underlying Gaussian pair (invariant under the bijections)."""
    return self.gaussian.mi

  @property
  def p0_is_std_normal(self) -> bool:
    """Only the identity map has the product of marginals N(0, I)."""
    return self.map == "gauss"


def make_mapped_task(
  map_name: str, dim: int, *, mi: float | None = None, rho: float | None = None
) -> MappedMITask:
  """The mapped task; ``dim``, ``mi``, ``rho`` as in ``make_task``.

  Raises:
    ValueError: unknown ``map_name`` (the message lists the choices) or a bad Gaussian task.
  """
  if map_name not in MAPS:
    raise ValueError(f"map must be one of {tuple(MAPS)}; got {map_name!r}")
  return MappedMITask(make_task(dim, mi=mi, rho=rho), map_name)


def apply_map(u: jax.Array, task: MappedMITask) -> jax.Array:
  """x = f(u), elementwise; any shape (NumPy in, NumPy out; otherwise jax)."""
  return MAPS[task.map][0](u, _xp(u))


def invert_map(x: jax.Array, task: MappedMITask) -> jax.Array:
  """u = f⁻¹(x), elementwise; any shape (NumPy in, NumPy out; otherwise jax)."""
  return MAPS[task.map][1](x, _xp(x))


def sample_joint(key: jax.Array, n: int, task: MappedMITask) -> jax.Array:
  """(n, d) draws of the joint law p1 = law of f(u), u ~ N(0, Σ)."""
  return apply_map(sample_p1(key, n, task.gaussian), task)


def shuffle_pairs(x: jax.Array) -> jax.Array:
  """Product-of-marginals pairing of joint rows: Y (odd coordinates) shifted by one row.

  x: (n, d) i.i.d. joint draws, n ≥ 2 → (n, d) i.i.d. draws of p_X ⊗ p_Y.
  """
  if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] % 2:
    raise ValueError(f"x must be (n >= 2, even d); got {x.shape}")
  p = x.reshape(x.shape[0], x.shape[1] // 2, 2)
  y = jnp.roll(p[..., 1], 1, axis=0)
  return jnp.stack([p[..., 0], y], axis=-1).reshape(x.shape)


def sample_marginals(key: jax.Array, n: int, task: MappedMITask) -> jax.Array:
  """(n, d) draws of p0 = p_X ⊗ p_Y by shuffled pairing of an independent joint draw."""
  return shuffle_pairs(sample_joint(key, n, task))


def mapped_log_ratio(x: jax.Array, task: MappedMITask) -> jax.Array:
  """Analytic log p(x, y)/(p(x)p(y)) at mapped points: ``true_log_ratio(f⁻¹(x))``; (B, d) → (B,)."""
  _check_x(x, task.gaussian)
  return true_log_ratio(invert_map(x, task), task.gaussian)


# ------------------------------------------------------------------------ additive uniform noise
class AdditiveNoiseTask(NamedTuple):
  """The reference's ``additive_noise`` task (after Czyż et al., NeurIPS 2023): d/2 independent
  (X, X + U(−ε, ε)) pairs, X ~ U(0, 1), ε in (0, ½]; MI = (d/2)(ε − log 2ε) nats."""

  dim: int
  eps: float

  @property
  def mi(self) -> float:
    return float(0.5 * self.dim * (self.eps - np.log(2.0 * self.eps)))

  p0_is_std_normal = False


def make_additive_noise_task(dim: int, eps: float) -> AdditiveNoiseTask:
  """Raises ValueError for odd ``dim`` or ε outside (0, ½] (the closed form needs ε ≤ ½)."""
  if int(dim) < 2 or int(dim) % 2:
    raise ValueError(f"dim must be an even integer >= 2 (pairs); got {dim}")
  if not 0.0 < eps <= 0.5:
    raise ValueError(f"eps must be in (0, 0.5]; got {eps}")
  return AdditiveNoiseTask(int(dim), float(eps))


def additive_noise_joint(rng: np.random.Generator, n: int, task: AdditiveNoiseTask) -> np.ndarray:
  """(n, d) float64 joint draws (host NumPy; flat draws reshaped)."""
  x = rng.random((n, task.dim // 2))
  y = x + task.eps * (2.0 * rng.random((n, task.dim // 2)) - 1.0)
  return np.stack([x, y], axis=-1).reshape(n, task.dim)


def additive_noise_log_ratio(x: jax.Array, task: AdditiveNoiseTask) -> jax.Array:
  """Analytic log p(x, y)/(p(x)p(y)); (B, d) → (B,).

  Per pair −log 2ε − log p_Y(y), p_Y(y) = |[0, 1] ∩ [y − ε, y + ε]| / (2ε), inside |y − x| ≤ ε;
  −∞ off the joint's support (where the product of marginals still has mass).
  """
  _check_x(x, task)
  xp = _xp(x)
  p = x.reshape(x.shape[0], task.dim // 2, 2)
  u, y = p[..., 0], p[..., 1]
  e = task.eps
  p_y = xp.clip(xp.minimum(y + e, 1.0) - xp.maximum(y - e, 0.0), 0.0, None) / (2.0 * e)
  inside = (xp.abs(y - u) <= e) & (u >= 0.0) & (u <= 1.0)
  with np.errstate(divide="ignore"):
    lr = xp.where(inside, -np.log(2.0 * e) - xp.log(xp.maximum(p_y, 1e-30)), -xp.inf)
  return xp.sum(lr, axis=1)


class GammaExponentialTask(NamedTuple):
  """d/2 independent (X, Y) pairs, X ~ Gamma(k, 1), Y | X ~ Exp(rate X).

  The ``gamma_exponential`` task of the MI benchmarks (Czyż et al., "Beyond Normal", 2023; used
  by OpenDRE). Y's marginal is Lomax: p(y) = k (1 + y)^(−k−1), so per pair
  log p(x, y)/(p(x)p(y)) = log x − x y − log k + (k + 1) log(1 + y) and
  MI = ψ(k) − log k + 1/k nats (h(Y) − E h(Y | X) with h(Y | X = x) = 1 − log x).
  """

  dim: int
  shape: float

  @property
  def mi(self) -> float:
    from scipy.special import digamma

    k = self.shape
    return float(0.5 * self.dim * (digamma(k) - np.log(k) + 1.0 / k))

  p0_is_std_normal = False


def make_gamma_exponential_task(dim: int, shape: float) -> GammaExponentialTask:
  """Raises ValueError for odd ``dim`` or a non-positive shape k."""
  if int(dim) < 2 or int(dim) % 2:
    raise ValueError(f"dim must be an even integer >= 2 (pairs); got {dim}")
  if not shape > 0:
    raise ValueError(f"gamma shape must be > 0; got {shape}")
  return GammaExponentialTask(int(dim), float(shape))


def gamma_exponential_joint(
  rng: np.random.Generator, n: int, task: GammaExponentialTask
) -> np.ndarray:
  """(n, d) float64 joint draws (host NumPy): columns alternate X, Y of each pair."""
  x = rng.gamma(task.shape, 1.0, size=(n, task.dim // 2))
  y = rng.exponential(1.0, size=(n, task.dim // 2)) / x
  return np.stack([x, y], axis=-1).reshape(n, task.dim)


def gamma_exponential_log_ratio(x: jax.Array, task: GammaExponentialTask) -> jax.Array:
  """Analytic log p(x, y)/(p(x)p(y)); (B, d) → (B,); −∞ outside (0, ∞)²."""
  _check_x(x, task)
  xp = _xp(x)
  p = x.reshape(x.shape[0], task.dim // 2, 2)
  u, y = p[..., 0], p[..., 1]
  k = task.shape
  inside = (u > 0) & (y >= 0)
  u_s, y_s = xp.where(inside, u, 1.0), xp.where(inside, y, 0.0)
  lr = xp.log(u_s) - u_s * y_s - np.log(k) + (k + 1.0) * xp.log1p(y_s)
  return xp.sum(xp.where(inside, lr, -xp.inf), axis=1)
