"""Memoryless reference processes of the continuous PDNS sampler, horizon T = 1.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS (``continuous/``).

``OUReference`` (stationary Ornstein–Uhlenbeck, linear alpha schedule; ``ou_reference`` builds the
named schedules) and ``BMReference`` (Brownian motion from a point source) give the drift, sigma_t,
source draws, log nu, the bridge X_t | X_0, X_1, log p_{1|t}(x1 | x_t), its score and the reward
r = log pi~ - log nu. With ``n_particles`` and ``spatial_dim`` both given they are centre-of-mass
free: every Gaussian draw is projected onto the zero-CoM subspace (``project``, else the identity)
and densities count (n - 1) s degrees of freedom (``dof``). t is a scalar or broadcasts against
the leading axes of x (..., d). The algorithm, with its equations and reference hyperparameters:
docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Callable

import chex
import jax
import jax.numpy as jnp

from iclr26_jax.pdns import particles

__all__ = ["OUReference", "BMReference", "ou_reference", "SCHEDULES", "Reference"]

SCHEDULES = ("linear_decreasing", "linear_increasing", "explicit")


def _check_dim(x: jax.Array, dim: int, name: str) -> None:
  chex.assert_shape(
    x,
    (..., dim),
    exception_type=ValueError,
    custom_message=(f"{name} must have shape (..., {dim}); got {tuple(x.shape)}"),
  )


def _t_col(t, x: jax.Array) -> jax.Array:
  """t as an array broadcastable against x (..., d): scalars stay, (...,) gains a trailing axis."""
  t = jnp.asarray(t, x.dtype)
  if t.ndim == 0 or (t.ndim == x.ndim and t.shape[-1] == 1):
    return t
  if t.ndim == x.ndim - 1:
    return t[..., None]
  raise ValueError(
    f"t must be a scalar, (...,) or (..., 1) against x of shape {tuple(x.shape)}; "
    f"got {tuple(t.shape)}"
  )


class _GaussianReference:
  """What both references share: the CoM-free projection, Gaussian noise, the reward
  r = log pi~ - log nu, the Gaussian source density and bridge sampling (subclasses give
  ``_nu_center``, ``_nu_sigma`` and ``bridge_mean_var``)."""

  def _check_layout(self) -> None:
    """The checks both references share: dim, and the CoM-free particle layout."""
    if int(self.dim) < 1:
      raise ValueError(f"dim must be >= 1; got {self.dim}")
    n_p, s = int(self.n_particles), int(self.spatial_dim)
    if (n_p == 0) != (s == 0):
      raise ValueError(
        "n_particles and spatial_dim must both be given (CoM-free) or both be 0; "
        f"got ({self.n_particles}, {self.spatial_dim})"
      )
    if n_p and (n_p < 2 or s < 1 or n_p * s != int(self.dim)):
      raise ValueError(
        f"CoM-free reference needs n_particles >= 2, spatial_dim >= 1 and "
        f"n_particles * spatial_dim == dim; got ({n_p}, {s}, dim={self.dim})"
      )

  @property
  def com_free(self) -> bool:
    """True when noise and source live on the zero-centre-of-mass subspace."""
    return int(self.n_particles) > 0

  @property
  def dof(self) -> int:
    """Degrees of freedom of the reference's Gaussians: (n - 1) s if CoM-free, else d."""
    if self.com_free:
      return (int(self.n_particles) - 1) * int(self.spatial_dim)
    return int(self.dim)

  def project(self, x: jax.Array) -> jax.Array:
    """Orthogonal projection onto the state space: remove_com if CoM-free, else x: (..., d)."""
    if not self.com_free:
      return x
    return particles.remove_com(x, int(self.n_particles), int(self.spatial_dim))

  def noise(self, key: jax.Array, shape: tuple, dtype=jnp.float32) -> jax.Array:
    """Standard Gaussian of the state space, shape (..., d): one flat draw, reshaped, projected."""
    size = math.prod(shape)
    return self.project(jax.random.normal(key, (size,), dtype).reshape(shape))

  def _sq_norm(self, v: jax.Array) -> jax.Array:
    return jnp.sum(self.project(v) ** 2, -1)

  def log_nu(self, x: jax.Array) -> jax.Array:
    """log nu(x) = log N(x; center, sigma^2 I) on the state space ((n - 1) s dof if CoM-free;
    constant dropped if drop_log_nu_const): (...,)."""
    _check_dim(x, self.dim, "x")
    sig = self._nu_sigma()
    quad = -0.5 * self._sq_norm(x - self._nu_center(x.dtype)) / sig**2
    if self.drop_log_nu_const:
      return quad
    return quad - 0.5 * self.dof * math.log(2 * math.pi * sig**2)

  def reward(self, log_prob_unnorm: Callable, x: jax.Array) -> jax.Array:
    """r(x) = log pi~(x) - log nu(x): (..., d) -> (...,)."""
    return log_prob_unnorm(x) - self.log_nu(x)

  def sample_bridge(self, key: jax.Array, t, x0: jax.Array, x1: jax.Array) -> jax.Array:
    """A draw of X_t | X_0 = x0, X_1 = x1: (..., d), one flat normal draw reshaped (projected
    when CoM-free; CoM-free end points then give a CoM-free draw)."""
    mean, var = self.bridge_mean_var(t, x0, x1)
    z = self.noise(key, mean.shape, mean.dtype)
    return mean + jnp.sqrt(var) * z


@dataclasses.dataclass(frozen=True)
class OUReference(_GaussianReference):
  """Stationary OU reference with a linear alpha schedule. Frozen and hashable.

  dX_t = -1/2 alpha_t X_t dt + sigma_bar sqrt(alpha_t) dW_t, X_0 ~ mu = N(0, sigma_bar^2 I) = nu,
  alpha_t = alpha_start + (alpha_end - alpha_start) t; per coordinate Corr(X_0, X_1) =
  exp(-1/2 int_0^1 alpha) (``residual_correlation``), so it is only approximately memoryless.

  Attributes:
    dim: d, the state dimension.
    sigma_bar: stationary standard deviation sigma_bar > 0.
    alpha_start: alpha_0 >= 0 (rate at t = 0).
    alpha_end: alpha_1 >= 0 (rate at t = 1).
    drop_log_nu_const: drop (dof/2) log(2 pi sigma_bar^2) from r (the released code's convention:
      its log Z estimate is then offset by that constant).
    n_particles, spatial_dim: both > 0 for the centre-of-mass-free variant (see the module
      docstring), both 0 (default) for the plain reference.
  """

  dim: int
  sigma_bar: float = 1.0
  alpha_start: float = 10.0
  alpha_end: float = 0.1
  drop_log_nu_const: bool = False
  n_particles: int = 0
  spatial_dim: int = 0

  def __post_init__(self):
    self._check_layout()
    if not self.sigma_bar > 0:
      raise ValueError(f"sigma_bar must be > 0; got {self.sigma_bar}")
    if self.alpha_start < 0 or self.alpha_end < 0 or self.alpha_start + self.alpha_end <= 0:
      raise ValueError(
        "alpha_start and alpha_end must be >= 0 and not both 0; got "
        f"({self.alpha_start}, {self.alpha_end})"
      )

  # Schedule -------------------------------------------------------------------------------
  def alpha(self, t):
    """alpha_t, same shape as t."""
    return self.alpha_start + (self.alpha_end - self.alpha_start) * t

  def int_alpha(self, t0, t1):
    """int_{t0}^{t1} alpha_s ds (elementwise)."""
    return self.alpha_start * (t1 - t0) + 0.5 * (self.alpha_end - self.alpha_start) * (
      t1**2 - t0**2
    )

  @property
  def residual_correlation(self) -> float:
    """Corr(X_0, X_1) per coordinate = exp(-1/2 int_0^1 alpha); memoryless needs it near 0."""
    return math.exp(-0.5 * self.int_alpha(0.0, 1.0))

  def c1(self, t):
    """-1/2 int_0^t alpha."""
    return -0.5 * self.int_alpha(0.0, t)

  def c2(self, t):
    """-1/2 int_t^1 alpha."""
    return -0.5 * self.int_alpha(t, 1.0)

  # SDE ------------------------------------------------------------------------------------
  def drift(self, t, x: jax.Array) -> jax.Array:
    """b_t(x) = -1/2 alpha_t x; x (..., d) -> (..., d)."""
    return -0.5 * self.alpha(_t_col(t, x)) * x

  def sigma(self, t):
    """sigma_t = sigma_bar sqrt(alpha_t), same shape as t."""
    return self.sigma_bar * jnp.sqrt(self.alpha(jnp.asarray(t)))

  def sample_source(self, key: jax.Array, n: int, dtype=jnp.float32) -> jax.Array:
    """n draws of X_0 ~ mu = N(0, sigma_bar^2 I) (on the zero-CoM subspace if CoM-free): (n, d)."""
    return self.sigma_bar * self.noise(key, (n, self.dim), dtype)

  def _nu_center(self, dtype) -> jax.Array:
    return jnp.zeros((self.dim,), dtype)  # nu = N(0, sigma_bar^2 I), the stationary law

  def _nu_sigma(self) -> float:
    return self.sigma_bar

  # Bridge and terminal score (§2.4) -------------------------------------------------------
  def bridge_mean_var(self, t, x0: jax.Array, x1: jax.Array):
    """Mean (..., d) and variance (broadcastable) of X_t | X_0 = x0, X_1 = x1."""
    _check_dim(x0, self.dim, "x0")
    _check_dim(x1, self.dim, "x1")
    tc = _t_col(t, x1)
    e1, e2, e3 = jnp.exp(self.c1(tc)), jnp.exp(self.c2(tc)), math.exp(self.c1(1.0))
    den = 1.0 - e3**2
    mean = e1 * (1 - e2**2) / den * x0 + e2 * (1 - e1**2) / den * x1
    var = self.sigma_bar**2 * (1 - e1**2) * (1 - e2**2) / den
    return mean, var

  def terminal_log_prob(self, t, xt: jax.Array, x1: jax.Array) -> jax.Array:
    """log p^ref_{1|t}(x1 | x_t) = log N(x1; e^{c2} x_t, sigma_bar^2 (1 - e^{2 c2}) I) (on the
    subspace, dof dimensions, if CoM-free): (...,)."""
    tc = _t_col(t, xt)
    e2 = jnp.exp(self.c2(tc))
    var = self.sigma_bar**2 * (1 - e2**2)
    var_row = var[..., 0] if jnp.ndim(var) else var
    return -0.5 * self._sq_norm(x1 - e2 * xt) / var_row - 0.5 * self.dof * jnp.log(
      2 * math.pi * var_row
    )

  def terminal_score(self, t, xt: jax.Array, x1: jax.Array) -> jax.Array:
    """s_t(x_t; x1) = e^{c2} P(x1 - e^{c2} x_t) / (sigma_bar^2 (1 - e^{2 c2})) with P the
    projection (identity unless CoM-free): (..., d)."""
    _check_dim(xt, self.dim, "xt")
    _check_dim(x1, self.dim, "x1")
    tc = _t_col(t, xt)
    e2 = jnp.exp(self.c2(tc))
    return e2 * self.project(x1 - e2 * xt) / (self.sigma_bar**2 * (1 - e2**2))

  def terminal_mean_coef(self, t):
    """a_t = exp(-1/2 int_t^1 alpha): E_ref[X_1 | X_t = x] = a_t x."""
    return jnp.exp(self.c2(t))


def ou_reference(
  dim: int,
  *,
  schedule: str = "linear_decreasing",
  sigma_bar: float = 1.0,
  alpha_min: float = 0.1,
  alpha_max: float = 10.0,
  alpha_start: float | None = None,
  alpha_end: float | None = None,
  drop_log_nu_const: bool = False,
  warn_correlation: float = 0.05,
  n_particles: int = 0,
  spatial_dim: int = 0,
) -> OUReference:
  """Builds an ``OUReference`` from a named schedule.

  Args:
    dim: d.
    schedule: "linear_decreasing" (released code: alpha from alpha_max to alpha_min),
      "linear_increasing" (paper text: alpha_min to alpha_max) or "explicit" (alpha_start,
      alpha_end given).
    sigma_bar: stationary std.
    alpha_min, alpha_max: the end points of the named schedules.
    alpha_start, alpha_end: the explicit schedule's end points.
    drop_log_nu_const: see ``OUReference``.
    warn_correlation: warn when the residual correlation exp(-1/2 int alpha) exceeds this.
    n_particles, spatial_dim: the centre-of-mass-free variant (see ``OUReference``).
  """
  if schedule == "linear_decreasing":
    a0, a1 = alpha_max, alpha_min
  elif schedule == "linear_increasing":
    a0, a1 = alpha_min, alpha_max
  elif schedule == "explicit":
    if alpha_start is None or alpha_end is None:
      raise ValueError("schedule='explicit' needs alpha_start and alpha_end")
    a0, a1 = alpha_start, alpha_end
  else:
    raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
  ref = OUReference(
    dim=dim,
    sigma_bar=sigma_bar,
    alpha_start=float(a0),
    alpha_end=float(a1),
    drop_log_nu_const=drop_log_nu_const,
    n_particles=int(n_particles),
    spatial_dim=int(spatial_dim),
  )
  if ref.residual_correlation > warn_correlation:
    warnings.warn(
      f"OU reference is not memoryless: Corr(X_0, X_1) = "
      f"{ref.residual_correlation:.3g} > {warn_correlation} (int alpha = "
      f"{ref.int_alpha(0.0, 1.0):.3g}; use int alpha >= 10 for known-answer work)",
      stacklevel=2,
    )
  return ref


@dataclasses.dataclass(frozen=True)
class BMReference(_GaussianReference):
  """Brownian motion dX_t = sigma dW_t from the point source X_0 = x_source (PIS-like).

  Exactly memoryless (mu is a Dirac), nu = N(x_source, sigma^2 I), and Euler–Maruyama is exact on
  any grid.

  Attributes:
    dim: d.
    sigma_const: diffusion coefficient sigma > 0 (constant in t).
    source: the point source as a tuple of d floats, or None for the origin (CoM-free: the
      source must have zero centre of mass).
    drop_log_nu_const: drop (dof/2) log(2 pi sigma^2) from r.
    n_particles, spatial_dim: both > 0 for the centre-of-mass-free variant (see the module
      docstring), both 0 (default) for the plain reference.
  """

  dim: int
  sigma_const: float = 1.0
  source: tuple | None = None
  drop_log_nu_const: bool = False
  n_particles: int = 0
  spatial_dim: int = 0

  def __post_init__(self):
    self._check_layout()
    if not self.sigma_const > 0:
      raise ValueError(f"sigma_const must be > 0; got {self.sigma_const}")
    if self.source is not None and len(self.source) != self.dim:
      raise ValueError(f"source must have {self.dim} entries; got {len(self.source)}")
    if self.source is not None and self.com_free:
      com = [
        sum(self.source[i * self.spatial_dim + k] for i in range(self.n_particles))
        / self.n_particles
        for k in range(self.spatial_dim)
      ]
      if max(abs(v) for v in com) > 1e-9:
        raise ValueError(
          f"source must have zero centre of mass for a CoM-free reference; got centre {com}"
        )

  residual_correlation = 0.0

  def _x0(self, dtype=jnp.float32) -> jax.Array:
    if self.source is None:
      return jnp.zeros((self.dim,), dtype)
    return jnp.asarray(self.source, dtype)

  def drift(self, t, x: jax.Array) -> jax.Array:
    """b_t(x) = 0: (..., d)."""
    del t
    return jnp.zeros_like(x)

  def sigma(self, t):
    """sigma_t = sigma (constant), same shape as t."""
    return jnp.full(jnp.shape(t), self.sigma_const, jnp.result_type(t, jnp.float32))

  def sample_source(self, key: jax.Array, n: int, dtype=jnp.float32) -> jax.Array:
    """n copies of the point source: (n, d) (the key is unused: mu is a Dirac)."""
    del key
    return jnp.broadcast_to(self._x0(dtype), (n, self.dim))

  def _nu_center(self, dtype) -> jax.Array:
    return self._x0(dtype)  # nu = N(x_source, sigma^2 I): the law of X_1 under the reference

  def _nu_sigma(self) -> float:
    return self.sigma_const

  def bridge_mean_var(self, t, x0: jax.Array, x1: jax.Array):
    """Brownian bridge: mean (1 - t) x0 + t x1, variance sigma^2 t (1 - t)."""
    _check_dim(x0, self.dim, "x0")
    _check_dim(x1, self.dim, "x1")
    tc = _t_col(t, x1)
    return (1 - tc) * x0 + tc * x1, self.sigma_const**2 * tc * (1 - tc)

  def terminal_log_prob(self, t, xt: jax.Array, x1: jax.Array) -> jax.Array:
    """log N(x1; x_t, sigma^2 (1 - t) I) (on the subspace, dof dimensions, if CoM-free): (...,)."""
    tc = _t_col(t, xt)
    var = self.sigma_const**2 * (1 - tc)
    var_row = var[..., 0] if jnp.ndim(var) else var
    return -0.5 * self._sq_norm(x1 - xt) / var_row - 0.5 * self.dof * jnp.log(2 * math.pi * var_row)

  def terminal_score(self, t, xt: jax.Array, x1: jax.Array) -> jax.Array:
    """P(x1 - x_t) / (sigma^2 (1 - t)), P the projection (identity unless CoM-free): (..., d)."""
    _check_dim(xt, self.dim, "xt")
    _check_dim(x1, self.dim, "x1")
    tc = _t_col(t, xt)
    return self.project(x1 - xt) / (self.sigma_const**2 * (1 - tc))


Reference = OUReference | BMReference
