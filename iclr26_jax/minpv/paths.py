"""Interpolation schedules (α_t, β_t) and the two interpolants of MinPV.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and
Stable Score-Based Models" (ICLR 2026); reference code github.com/Hoemr/OpenDRE (PyTorch,
``KMMBayesianTrajectory`` under ``--mvp``). Behaviour follows the reference; the code is ours.

Every schedule (fixed: ``linear``, ``vp``, ``cosine``, ``follmer``, ``trig``, which ignore
``params``; learned: ``kmm``) is a pure function ``(params, t) -> PathCoeffs(alpha, beta, dalpha,
dbeta)`` with α_0 = 1, β_0 = 0, α_1 = 0, β_1 = 1, analytic time derivatives, outputs of t's shape
and t clipped to ``[eps, 1 − eps]``. x0 ~ p0 sits at t = 0 (the reference side), x1 ~ p1 at t = 1
(the data side); ``interpolate_plain`` and ``interpolate_bridge`` draw x_t. The schedules and
interpolants with their equations: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

EPS = 1e-5  # reference ``--eps``: t clip and α clip of the KMM path
A_MIN, A_MAX = 0.1, 10.0  # reference clip of the Kumaraswamy shapes a_k, b_k
VP_BETA_MIN, VP_BETA_MAX = 0.1, 20.0
COSINE_S = 0.008
CONSTRAINTS = ("spherical", "affine")
FIXED_PATHS = ("linear", "vp", "cosine", "follmer", "trig")
PATH_NAMES = FIXED_PATHS + ("kmm",)


class PathCoeffs(NamedTuple):
  """Schedule values at t; each field has the shape of t."""

  alpha: jax.Array
  beta: jax.Array
  dalpha: jax.Array
  dbeta: jax.Array


def _clip_t(t, eps):
  t = jnp.asarray(t, dtype=jnp.result_type(t, jnp.float32))
  return jnp.clip(t, eps, 1.0 - eps)


def _spherical_beta(alpha, dalpha, eps_div=0.0):
  beta = jnp.sqrt(jnp.maximum(1.0 - alpha**2, 0.0))
  return beta, -alpha * dalpha / (beta + eps_div)


# ------------------------------------------------------------------------------ fixed schedules
def linear(params, t, *, eps: float = EPS) -> PathCoeffs:
  """α = 1 − t, β = t (the affine baseline)."""
  del params
  t = _clip_t(t, eps)
  one = jnp.ones_like(t)
  return PathCoeffs(1.0 - t, t, -one, one)


def vp(
  params, t, *, eps: float = EPS, beta_min: float = VP_BETA_MIN, beta_max: float = VP_BETA_MAX
) -> PathCoeffs:
  """VP-SDE: α = exp(−¼t²(β_max − β_min) − ½tβ_min), β = √(1 − α²)."""
  del params
  t = _clip_t(t, eps)
  alpha = jnp.exp(-0.25 * t**2 * (beta_max - beta_min) - 0.5 * t * beta_min)
  dalpha = alpha * (-0.5 * t * (beta_max - beta_min) - 0.5 * beta_min)
  beta, dbeta = _spherical_beta(alpha, dalpha)
  return PathCoeffs(alpha, beta, dalpha, dbeta)


def cosine(params, t, *, eps: float = EPS, s: float = COSINE_S) -> PathCoeffs:
  """iDDPM cosine: α = cos(π/2·(t + s)/(1 + s)) / cos(π/2·s/(1 + s)), β = √(1 − α²)."""
  del params
  t = _clip_t(t, eps)
  c0 = np.cos(0.5 * np.pi * s / (1.0 + s))
  th = 0.5 * jnp.pi * (t + s) / (1.0 + s)
  alpha = jnp.cos(th) / c0
  dalpha = -jnp.sin(th) * (0.5 * jnp.pi / (1.0 + s)) / c0
  beta, dbeta = _spherical_beta(alpha, dalpha)
  return PathCoeffs(alpha, beta, dalpha, dbeta)


def follmer(params, t, *, eps: float = EPS) -> PathCoeffs:
  """Föllmer: α = √(1 − t²), β = t."""
  del params
  t = _clip_t(t, eps)
  alpha = jnp.sqrt(1.0 - t**2)
  return PathCoeffs(alpha, t, -t / alpha, jnp.ones_like(t))


def trig(params, t, *, eps: float = EPS) -> PathCoeffs:
  """Trigonometric: α = cos(πt/2), β = sin(πt/2)."""
  del params
  t = _clip_t(t, eps)
  h = 0.5 * jnp.pi
  return PathCoeffs(jnp.cos(h * t), jnp.sin(h * t), -h * jnp.sin(h * t), h * jnp.cos(h * t))


# ------------------------------------------------------------------------- Kumaraswamy mixture
def kmm_init(num_components: int = 5) -> dict:
  """The reference initialisation of the KMM parameters φ (``KMMBayesianTrajectory``).

  Centres c_k = linspace(0.1, 0.9, K). If c_k < 0.5: raw a = 1.5 + 0.5k, raw b = 3 + 2(K − k);
  else raw a = 3 + 2k, raw b = 1.5 + 0.5(K − k). Logits 0; u = log(raw a), q = log(raw b). The
  shape constraint is softplus, so the effective initial shapes are log(1 + raw).

  Returns:
    ``{"logits": (K,), "u": (K,), "q": (K,)}`` float32.
  """
  k_num = int(num_components)
  if k_num < 1:
    raise ValueError(f"num_components must be >= 1; got {num_components}")
  centres = np.linspace(0.1, 0.9, k_num)
  raw_a, raw_b = np.zeros(k_num), np.zeros(k_num)
  for k, c in enumerate(centres):
    if c < 0.5:
      raw_a[k], raw_b[k] = 1.5 + 0.5 * k, 3.0 + 2.0 * (k_num - k)
    else:
      raw_a[k], raw_b[k] = 3.0 + 2.0 * k, 1.5 + 0.5 * (k_num - k)
  return {
    "logits": jnp.zeros((k_num,), jnp.float32),
    "u": jnp.asarray(np.log(raw_a), jnp.float32),
    "q": jnp.asarray(np.log(raw_b), jnp.float32),
  }


def _check_kmm_params(params):
  if not isinstance(params, dict) or set(params) != {"logits", "u", "q"}:
    keys = sorted(params) if isinstance(params, dict) else ""
    raise ValueError(
      "params of the kmm path must be a dict with keys logits, u, q; got "
      f"{type(params).__name__} {keys}"
    )
  shapes = {k: jnp.shape(v) for k, v in params.items()}
  if len(set(shapes.values())) != 1 or len(shapes["logits"]) != 1:
    raise ValueError(f"params of the kmm path must be three vectors of one length K; got {shapes}")


def kmm_shapes(params) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Mixture weights and shapes ``(w, a, b)``, each (K,): softmax and clipped softplus."""
  _check_kmm_params(params)
  w = jax.nn.softmax(params["logits"])
  a = jnp.clip(jax.nn.softplus(params["u"]), A_MIN, A_MAX)
  b = jnp.clip(jax.nn.softplus(params["q"]), A_MIN, A_MAX)
  return w, a, b


def kmm(params, t, *, constraint: str = "spherical", eps: float = EPS) -> PathCoeffs:
  """The Kumaraswamy-mixture path (MinPV's learned schedule).

  F(t) = Σ_k w_k [1 − (1 − t^{a_k})^{b_k}], f = F', α = clip(1 − F, ε, 1 − ε), α̇ = −f;
  spherical β = √(1 − α²), β̇ = −αα̇/(β + ε); affine β = 1 − α, β̇ = −α̇. Powers are computed
  as exp(y·log x) and exp(y·log1p(−t^a)) for stability.

  Spherical β̇ ~ t^{a/2 − 1} is singular at t = 0 for every a < 2 (the initial shapes all are),
  so when p1 has a mean a uniform trapezoid over-counts the log-ratio accrued near t = 0; the
  affine constraint has β̇ = f, finite for a ≥ 1.

  Args:
    params: ``{"logits", "u", "q"}``, each (K,).
    t: times, any shape S.
    constraint: "spherical" (reference default) or "affine".
    eps: clip of t and α.
  Returns:
    PathCoeffs with fields of shape S.
  """
  if constraint not in CONSTRAINTS:
    raise ValueError(f"constraint must be one of {CONSTRAINTS}; got {constraint!r}")
  w, a, b = kmm_shapes(params)
  t = _clip_t(t, eps)[..., None]  # S + (1,)
  log_t = jnp.log(t)
  t_a = jnp.exp(a * log_t)  # t^a
  log1m = jnp.log1p(-t_a)  # log(1 − t^a)
  cdf = 1.0 - jnp.exp(b * log1m)
  pdf = a * b * jnp.exp((a - 1.0) * log_t + (b - 1.0) * log1m)
  big_f = jnp.sum(w * cdf, axis=-1)
  f = jnp.sum(w * pdf, axis=-1)
  alpha = jnp.clip(1.0 - big_f, eps, 1.0 - eps)
  dalpha = -f
  if constraint == "spherical":
    beta, dbeta = _spherical_beta(alpha, dalpha, eps_div=eps)
  else:
    beta, dbeta = 1.0 - alpha, -dalpha
  return PathCoeffs(alpha, beta, dalpha, dbeta)


# ----------------------------------------------------------------------------------- dispatch
def get_path(
  name: str, *, constraint: str = "spherical", eps: float = EPS
) -> Callable[[dict, jax.Array], PathCoeffs]:
  """The schedule ``name`` as a pure function ``(params, t) -> PathCoeffs``.

  ``constraint`` applies to ``kmm`` only (the fixed schedules carry their own β).
  """
  fns = {"linear": linear, "vp": vp, "cosine": cosine, "follmer": follmer, "trig": trig}
  if name in fns:
    return functools.partial(fns[name], eps=eps)
  if name == "kmm":
    if constraint not in CONSTRAINTS:
      raise ValueError(f"constraint must be one of {CONSTRAINTS}; got {constraint!r}")
    return functools.partial(kmm, constraint=constraint, eps=eps)
  raise ValueError(f"path name must be one of {PATH_NAMES}; got {name!r}")


def init_path_params(name: str, num_components: int = 5) -> dict:
  """Initial φ: the KMM reference initialisation, or ``{}`` for a fixed schedule."""
  if name == "kmm":
    return kmm_init(num_components)
  if name in FIXED_PATHS:
    return {}
  raise ValueError(f"path name must be one of {PATH_NAMES}; got {name!r}")


# -------------------------------------------------------------------------------- interpolants
def _check_pair(x0, x1):
  message = f"x0 and x1 must both be (B, d); got x0 {x0.shape}, x1 {x1.shape}"
  chex.assert_rank(x0, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x0, x1], exception_type=ValueError, custom_message=message)


def _check_coeffs(c: PathCoeffs, batch: int):
  chex.assert_shape(
    c.alpha,
    (batch,),
    exception_type=ValueError,
    custom_message=(f"path coefficients must be (B,) = ({batch},); got {jnp.shape(c.alpha)}"),
  )


def interpolate_plain(coeffs: PathCoeffs, x0: jax.Array, x1: jax.Array) -> jax.Array:
  """x_t = α x0 + β x1. ``coeffs`` fields (B,), x0, x1 (B, d) → (B, d)."""
  _check_pair(x0, x1)
  _check_coeffs(coeffs, x0.shape[0])
  return coeffs.alpha[:, None] * x0 + coeffs.beta[:, None] * x1


def bridge_variance(
  coeffs: PathCoeffs, t: jax.Array, *, gamma: float, eps_b: float, eps: float = EPS
) -> tuple[jax.Array, jax.Array]:
  """Bridge noise variance and its time derivative ``(v, v̇)``, each of t's shape.

  v = γ t(1 − t) + ε_b (α² + β²),  v̇ = γ(1 − 2t) + 2ε_b (αα̇ + ββ̇)  (t clipped like the path);
  γ and ε_b are variances, not standard deviations (D3RE's dequantified diffusion bridge).
  """
  if gamma < 0 or eps_b < 0 or gamma + eps_b <= 0:
    raise ValueError(f"gamma and eps_b must be >= 0 with a positive sum; got {gamma}, {eps_b}")
  t = _clip_t(t, eps)
  a, b, da, db = coeffs
  v = gamma * t * (1.0 - t) + eps_b * (a**2 + b**2)
  dv = gamma * (1.0 - 2.0 * t) + 2.0 * eps_b * (a * da + b * db)
  return v, dv


def interpolate_bridge(
  coeffs: PathCoeffs,
  t: jax.Array,
  x0: jax.Array,
  x1: jax.Array,
  z: jax.Array,
  *,
  gamma: float,
  eps_b: float,
  eps: float = EPS,
) -> jax.Array:
  """Dequantified bridge sample x_t = α x0 + β x1 + σ_t z.

  Args: coeffs fields (B,), t (B,), x0, x1, z (B, d). Returns (B, d).
  """
  _check_pair(x0, x1)
  _check_pair(x0, z)
  _check_coeffs(coeffs, x0.shape[0])
  v, _ = bridge_variance(coeffs, t, gamma=gamma, eps_b=eps_b, eps=eps)
  return interpolate_plain(coeffs, x0, x1) + jnp.sqrt(v)[:, None] * z
