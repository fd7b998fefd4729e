"""Time-score matching objectives, closed-form target variances and the MinPV penalty.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and
Stable Score-Based Models" (ICLR 2026), reference code github.com/Hoemr/OpenDRE (``--mvp
--condition True``); baselines DRE-∞ (Choi et al., AISTATS 2022, implicit time-score matching)
and D3RE (dequantified diffusion bridge, ICML 2025).

Holds ``LossSettings`` (the switches where the reference and the exact derivation differ), the
conditional targets ``plain_target`` / ``bridge_target`` and their variances ``plain_variance`` /
``bridge_variance_of_target``, the objectives ``conditional_loss`` (with the MinPV penalty),
``implicit_loss`` and ``minpv_loss``, and ``make_joint_optimizer``. The targets, variances,
penalty and switches: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import chex
import jax
import jax.numpy as jnp
import optax

from iclr26_jax.core import optim as optim_lib
from iclr26_jax.minpv import paths as paths_lib
from iclr26_jax.minpv.paths import PathCoeffs

ScoreFn = Callable[[object, jax.Array, jax.Array], tuple[jax.Array, jax.Array | None]]

INTERPOLANTS = ("plain", "bridge")
OBJECTIVES = ("conditional", "joint", "implicit")
TIME_SAMPLERS = ("uniform", "lognorm", "is")
IS_MOMENTS = ("unit", "data")
NORMALIZERS = ("grid", "batch", "none")
NORM_GRID = 64  # midpoints of [eps, 1 − eps] for the deterministic "grid" normaliser


@dataclasses.dataclass(frozen=True)
class LossSettings:
  """Static settings of the objectives (hashable; the switches: docs/methods/minpv.md)."""

  interpolant: str = "plain"  # "plain" (p0 = N(0, I) needed) | "bridge"
  objective: str = "conditional"  # "conditional" | "joint" (+ data-score head) | "implicit"
  weights: str = "per_sample"  # "per_sample" (reference) | "time_only"
  var_for_weights: str = "floored"  # "floored" (reference) | "exact" (plain only; bridge v > 0)
  var_floor: float = 1e-5  # δ in v = α² + δ (weights when floored, and the penalty)
  target_eps: float = 1e-5  # 1/(α + target_eps) in the plain target
  cross_term: str = "abs"  # bridge variance: "abs" (reference) | "exact"
  penalty: bool = True  # add the MinPV penalty (only meaningful for a trainable path)
  penalty_t: str = "fresh"  # "fresh" uniform t' (reference) | "same" t as the regression
  time_sampler: str = "uniform"  # "uniform" | "lognorm" sigmoid(N(−0.4, 1)) | "is" ∝ 1/Var(t)
  is_moments: str = "unit"  # IS variance with d = 1, ‖x1‖² = 1 (reference) | "data"
  is_grid: int = 10_000  # IS grid points on [eps, 1 − eps]
  gamma: float = 0.01  # bridge γ (a variance)
  eps_b: float = 0.005  # bridge ε_b (a variance; the reference's sample_noise_std)
  eps: float = paths_lib.EPS  # t clip
  data_weight: float = 1.0  # multiplier of the joint data-score loss
  normalizer: str = "grid"  # with the penalty only: "grid" | "batch" (reference) | "none"
  flip_cross_sign: bool = False  # negative control: flips β̇⟨x0,x1⟩, ⟨μ̇,z⟩/√v or λ ∂_t s

  @classmethod
  def recommended(cls, **overrides) -> "LossSettings":
    """The settings the project recommends (used by ``api.fit_log_ratio``; the dataclass defaults
    are the reference's switches): the ``fixed`` preset on the bridge with γ = 1 (γ = 0.01 leaves
    v_t ≤ 0.0075 and a near-zero-signal target) — conditional objective, time-only weights, exact
    variance in the weights, exact cross term. ``overrides`` replace any field."""
    base = dict(
      interpolant="bridge",
      objective="conditional",
      weights="time_only",
      var_for_weights="exact",
      cross_term="exact",
      gamma=1.0,
    )
    base.update(overrides)
    return cls(**base)

  def __post_init__(self):
    choices = {
      "interpolant": INTERPOLANTS,
      "objective": OBJECTIVES,
      "weights": ("per_sample", "time_only"),
      "var_for_weights": ("floored", "exact"),
      "cross_term": ("abs", "exact"),
      "penalty_t": ("fresh", "same"),
      "time_sampler": TIME_SAMPLERS,
      "is_moments": IS_MOMENTS,
      "normalizer": NORMALIZERS,
    }
    for field, options in choices.items():
      if getattr(self, field) not in options:
        raise ValueError(f"{field} must be one of {options}; got {getattr(self, field)!r}")
    for field in ("var_floor", "target_eps", "gamma", "eps_b"):
      if getattr(self, field) < 0:
        raise ValueError(f"{field} must be >= 0; got {getattr(self, field)}")
    if int(self.is_grid) < 2:
      raise ValueError(f"is_grid must be >= 2; got {self.is_grid}")


# ------------------------------------------------------------------------- targets, variances
def plain_target(
  coeffs: PathCoeffs,
  x0: jax.Array,
  x1: jax.Array,
  *,
  target_eps: float = 1e-5,
  flip_cross_sign: bool = False,
) -> tuple[jax.Array, jax.Array]:
  """Conditional time-score and data-score targets of the plain interpolant.

  Args:
    coeffs: path at the sample times, fields (B,).
    x0, x1: (B, d).
    target_eps: 1/(α + target_eps) as in the reference.
    flip_cross_sign: negative control; never set in real runs.
  Returns:
    ``(c (B,), data_target (B, d))`` with c = [α̇(‖x0‖² − d) + β̇⟨x0,x1⟩]/α, data −x0/α.
  """
  message = f"x0 and x1 must both be (B, d); got {x0.shape} and {x1.shape}"
  chex.assert_rank(x0, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x0, x1], exception_type=ValueError, custom_message=message)
  d = x0.shape[1]
  a, _, da, db = coeffs
  inv = 1.0 / (a + target_eps)
  cross = jnp.sum(x0 * x1, axis=1)
  sign = -1.0 if flip_cross_sign else 1.0
  c = (da * (jnp.sum(x0**2, axis=1) - d) + sign * db * cross) * inv
  return c, -x0 * inv[:, None]


def bridge_target(
  coeffs: PathCoeffs,
  v: jax.Array,
  dv: jax.Array,
  x0: jax.Array,
  x1: jax.Array,
  z: jax.Array,
  *,
  flip_cross_sign: bool = False,
) -> tuple[jax.Array, jax.Array]:
  """Conditional targets of the dequantified bridge x_t = α x0 + β x1 + √v z.

  Args: coeffs, v, dv fields (B,); x0, x1, z (B, d); flip_cross_sign: negative control only
  (flips the ⟨μ̇, z⟩/√v term, the one that carries the pairing of x0 and x1).
  Returns: ``(c (B,), data_target (B, d))``, c = −(d/2)v̇/v + v̇/(2v)‖z‖² + ⟨μ̇, z⟩/√v, data −z/√v.
  """
  message = f"x0, x1, z must all be (B, d); got {x0.shape}, {x1.shape}, {z.shape}"
  chex.assert_rank(x0, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x0, x1, z], exception_type=ValueError, custom_message=message)
  d = x0.shape[1]
  _, _, da, db = coeffs
  sigma = jnp.sqrt(v)
  mu_dot = da[:, None] * x0 + db[:, None] * x1
  sign = -1.0 if flip_cross_sign else 1.0
  c = (
    -0.5 * d * dv / v
    + 0.5 * dv / v * jnp.sum(z**2, axis=1)
    + sign * jnp.sum(mu_dot * z, axis=1) / sigma
  )
  return c, -z / sigma[:, None]


def plain_variance(
  coeffs: PathCoeffs, sq_x1: jax.Array, dim: int, *, floor: float = 0.0
) -> jax.Array:
  """Var(c | x1) of the plain target; broadcasts over the shapes of coeffs and ``sq_x1``.

  With v = α² + floor: ½ d (2αα̇/v)² + β̇² ‖x1‖²/v; floor = 0 is the exact (2dα̇² + β̇²‖x1‖²)/α².

  Args:
    coeffs: path fields, shape S.
    sq_x1: ‖x1‖², broadcastable to S (a batch mean for time-only weights).
    dim: d.
    floor: δ ≥ 0.
  """
  if floor < 0:
    raise ValueError(f"floor must be >= 0; got {floor}")
  a, _, da, db = coeffs
  v = a**2 + floor
  return 0.5 * dim * (2.0 * a * da / v) ** 2 + db**2 * sq_x1 / v


def bridge_variance_of_target(
  coeffs: PathCoeffs,
  v: jax.Array,
  dv: jax.Array,
  sq_x0: jax.Array,
  sq_x1: jax.Array,
  dot01: jax.Array,
  dim: int,
  *,
  cross_term: str = "abs",
) -> jax.Array:
  """Var(c | x0, x1) = (d/2)(v̇/v)² + ‖μ̇‖²/v of the bridge target (broadcasting shapes).

  ``cross_term="abs"`` writes the cross term of ‖μ̇‖² as 2|α̇β̇|⟨x0,x1⟩ (reference), "exact" as
  2α̇β̇⟨x0,x1⟩ (the true variance).
  """
  if cross_term not in ("abs", "exact"):
    raise ValueError(f"cross_term must be 'abs' or 'exact'; got {cross_term!r}")
  _, _, da, db = coeffs
  prod = jnp.abs(da * db) if cross_term == "abs" else da * db
  mu_dot_sq = da**2 * sq_x0 + db**2 * sq_x1 + 2.0 * prod * dot01
  return 0.5 * dim * (dv / v) ** 2 + mu_dot_sq / v


# ----------------------------------------------------------------------------------- samplers
def sample_times(
  key: jax.Array, n: int, *, sampler: str = "uniform", eps: float = paths_lib.EPS
) -> jax.Array:
  """(n,) times in [eps, 1 − eps]: ``uniform`` or ``lognorm`` = sigmoid(N(−0.4, 1)).

  (``is`` depends on the path: see ``is_log_probs``.)"""
  if sampler == "is":
    raise ValueError("sampler 'is' needs the path: draw from is_log_probs(...) instead")
  if sampler == "uniform":
    return jax.random.uniform(key, (n,), minval=eps, maxval=1.0 - eps)
  if sampler == "lognorm":
    return jnp.clip(jax.nn.sigmoid(-0.4 + jax.random.normal(key, (n,))), eps, 1.0 - eps)
  raise ValueError(f"sampler must be one of {TIME_SAMPLERS}; got {sampler!r}")


def is_log_probs(
  path_fn: Callable, phi, settings: "LossSettings", x0: jax.Array, x1: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """The importance-sampling grid of the reference's ``t_mode="is"``.

  Grid t_k = linspace(eps, 1 − eps, is_grid) with probabilities ∝ 1/Var(t_k), Var the
  conditional-target variance of the weights (``var_for_weights`` floor) evaluated with d = 1
  and ‖x1‖² = 1 (and ‖x0‖² = 1, ⟨x0, x1⟩ = 0 on the bridge) under ``is_moments="unit"``, or with
  the true d and the batch means of ‖x1‖², ‖x0‖², ⟨x0, x1⟩ under "data".

  Args:
    path_fn, phi: the path used for the grid (the caller passes a detached or stale φ).
    settings: ``LossSettings``.
    x0, x1: (B, d) batch (used for the "data" moments and d).
  Returns:
    ``(grid (G,), log_probs (G,))``.
  """
  s = settings
  grid = jnp.linspace(s.eps, 1.0 - s.eps, int(s.is_grid))
  co = path_fn(phi, grid)
  if s.is_moments == "unit":
    d, sq0, sq1, dot = 1, 1.0, 1.0, 0.0
  else:
    d = x0.shape[1]
    sq0, sq1 = jnp.mean(jnp.sum(x0**2, 1)), jnp.mean(jnp.sum(x1**2, 1))
    dot = jnp.mean(jnp.sum(x0 * x1, 1))
  if s.interpolant == "plain":
    floor = s.var_floor if s.var_for_weights == "floored" else 0.0
    var = plain_variance(co, sq1, d, floor=floor)
  else:
    v, dv = paths_lib.bridge_variance(co, grid, gamma=s.gamma, eps_b=s.eps_b, eps=s.eps)
    var = bridge_variance_of_target(co, v, dv, sq0, sq1, dot, d, cross_term=s.cross_term)
  logits = -jnp.log(jnp.maximum(var, 1e-30))
  return grid, jax.nn.log_softmax(logits)


def _normal(key, shape):
  """Standard normal draws, flat then reshaped (rank ≥ 3 draws compile slowly on CPU)."""
  n = 1
  for s in shape:
    n *= int(s)
  return jax.random.normal(key, (n,)).reshape(shape)


def _check_batch(batch):
  if not isinstance(batch, Mapping) or "x0" not in batch or "x1" not in batch:
    raise ValueError("batch must be a mapping with 'x0' and 'x1' arrays of shape (B, d)")
  x0, x1 = batch["x0"], batch["x1"]
  message = f"batch['x0'] and batch['x1'] must both be (B, d); got {x0.shape}, {x1.shape}"
  chex.assert_rank(x0, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x0, x1], exception_type=ValueError, custom_message=message)
  return x0, x1


# -------------------------------------------------------------------------- conditional / MinPV
def loss_normalizer(
  s: "LossSettings", path_fn: Callable, phi_sg, x0: jax.Array, x1: jax.Array, var_w: jax.Array
) -> jax.Array:
  """The scalar the MinPV loss is divided by (under ``stop_gradient``); 1 without the penalty.

  The reference divides ℓ + P by the batch mean of the weight variances (only under ``--mvp``),
  which is heavy-tailed (Var ∝ 1/α² near α = 0). Choices (``settings.normalizer``):
    "grid":  mean of the weight variance over ``NORM_GRID`` fixed midpoints of [eps, 1 − eps] at
             the batch means of the moments — deterministic given φ and smooth in the batch;
    "batch": the reference's sg(mean_j Var_j) over the batch (``var_w``, shape (B,));
    "none":  1.
  Without the penalty (fixed path) the loss is never normalised, as in the reference.

  Args:
    s: settings; path_fn, phi_sg: the (detached) path; x0, x1: (B, d); var_w: (B,).
  Returns: a positive scalar.
  """
  if not s.penalty or s.normalizer == "none":
    return jnp.ones(())
  if s.normalizer == "batch":
    return jnp.mean(var_w)
  k = NORM_GRID
  t = s.eps + (1.0 - 2.0 * s.eps) * (jnp.arange(k, dtype=jnp.float32) + 0.5) / k
  floor = s.var_floor if s.var_for_weights == "floored" else 0.0  # plain only
  return jnp.mean(_variance(s, path_fn(phi_sg, t), t, x0, x1, floor=floor, per_sample=False))


def _variance(s: LossSettings, coeffs, t, x0, x1, *, floor, per_sample, v=None, dv=None):
  d = x0.shape[1]
  sq1 = jnp.sum(x1**2, axis=1)
  if s.interpolant == "plain":
    if not per_sample:
      sq1 = jnp.mean(sq1)
    return plain_variance(coeffs, sq1, d, floor=floor)
  sq0, dot = jnp.sum(x0**2, axis=1), jnp.sum(x0 * x1, axis=1)
  if not per_sample:
    sq0, sq1, dot = jnp.mean(sq0), jnp.mean(sq1), jnp.mean(dot)
  if v is None:
    v, dv = paths_lib.bridge_variance(coeffs, t, gamma=s.gamma, eps_b=s.eps_b, eps=s.eps)
  return bridge_variance_of_target(coeffs, v, dv, sq0, sq1, dot, d, cross_term=s.cross_term)


def conditional_loss(
  score_fn: ScoreFn,
  params: Mapping,
  batch: Mapping,
  key: jax.Array,
  path_fn: Callable,
  settings: LossSettings,
  is_path_params=None,
) -> tuple[jax.Array, dict]:
  """Conditional time-score matching with the MinPV penalty.

  loss = mean_i (ℓ_i + P_i) / N with ℓ_i = λ_i (s_t(x_t, t_i) − c_i)² (+ the joint data-score
  term), where x_t, c and λ = 1/Var use the path under ``stop_gradient``; the penalty
  P_i = Var(c | ζ_i; t'_i, φ) is the only path to φ, and N is ``loss_normalizer``.

  Args:
    score_fn: ``(net_params, x (B, d), t (B,)) -> (s_t (B,), s_x (B, d) or None)``.
    params: ``{"net": θ, "path": φ}`` (φ = {} for a fixed schedule).
    batch: ``{"x0": (B, d) samples of p0, "x1": (B, d) samples of p1}``, paired row by row.
    key: PRNG key of this step.
    path_fn: ``(φ, t) -> PathCoeffs``.
    settings: ``LossSettings`` with objective "conditional" or "joint".
    is_path_params: φ of the importance-sampling grid (``time_sampler="is"``; the reference
      refreshes it every 1000 steps); None = the current φ (detached).
  Returns:
    ``(loss, info)``; info has ``tsm/loss``, ``tsm/loss_normalised``, ``tsm/data_loss``,
    ``path/penalty``, ``tsm/var_mean`` (batch mean of the weight variances) and
    ``tsm/normalizer`` (what the loss was divided by: ``loss_normalizer``).
  """
  s = settings
  if s.objective not in ("conditional", "joint"):
    raise ValueError(f"settings.objective must be conditional|joint here; got {s.objective!r}")
  x0, x1 = _check_batch(batch)
  n, d = x0.shape
  k_t, k_z, k_p = jax.random.split(key, 3)
  phi_sg = jax.lax.stop_gradient(params["path"])
  if s.time_sampler == "is":
    grid_phi = phi_sg if is_path_params is None else jax.lax.stop_gradient(is_path_params)
    grid, logp = is_log_probs(path_fn, grid_phi, s, x0, x1)
    t = grid[jax.random.categorical(k_t, logp, shape=(n,))]
  else:
    t = sample_times(k_t, n, sampler=s.time_sampler, eps=s.eps)
  co = path_fn(phi_sg, t)
  w_floor = s.var_floor if s.var_for_weights == "floored" else 0.0
  if s.interpolant == "plain":
    xt = paths_lib.interpolate_plain(co, x0, x1)
    c, x_target = plain_target(
      co, x0, x1, target_eps=s.target_eps, flip_cross_sign=s.flip_cross_sign
    )
    var_w = _variance(s, co, t, x0, x1, floor=w_floor, per_sample=s.weights == "per_sample")
    lam_x = co.alpha**2
  else:
    z = _normal(k_z, (n, d))
    v, dv = paths_lib.bridge_variance(co, t, gamma=s.gamma, eps_b=s.eps_b, eps=s.eps)
    xt = paths_lib.interpolate_plain(co, x0, x1) + jnp.sqrt(v)[:, None] * z
    c, x_target = bridge_target(co, v, dv, x0, x1, z, flip_cross_sign=s.flip_cross_sign)
    var_w = _variance(s, co, t, x0, x1, floor=0.0, per_sample=s.weights == "per_sample", v=v, dv=dv)
    lam_x = v
  xt, c, x_target, var_w, lam_x = jax.lax.stop_gradient((xt, c, x_target, var_w, lam_x))
  var_w = jnp.broadcast_to(var_w, (n,))
  lam = 1.0 / var_w
  if s.time_sampler == "is":
    # The sampling density ∝ 1/Var carries the time weight (λ = 1); the data-score weight
    # becomes (time variance)/(data-score variance).
    lam = jnp.ones_like(var_w)
    lam_x = var_w * lam_x

  s_t, s_x = score_fn(params["net"], xt, t)
  time_term = lam * (s_t - c) ** 2
  ell = time_term
  data_loss = jnp.zeros(())
  if s.objective == "joint":
    if s_x is None:
      raise ValueError("objective 'joint' needs a network with a data-score head (s_x is None)")
    per = jnp.mean((s_x - x_target) ** 2, axis=1)
    ell = ell + s.data_weight * lam_x * per
    data_loss = jnp.mean(lam_x * per)

  if s.penalty:
    tp = t if s.penalty_t == "same" else sample_times(k_p, n, sampler="uniform", eps=s.eps)
    co_p = path_fn(params["path"], tp)
    pen = _variance(s, co_p, tp, x0, x1, floor=s.var_floor, per_sample=True)
  else:
    pen = jnp.zeros((n,))
  norm = jax.lax.stop_gradient(loss_normalizer(s, path_fn, phi_sg, x0, x1, var_w))
  loss = jnp.mean((ell + pen) / norm)
  info = {
    "tsm/loss": loss,
    "tsm/loss_normalised": jnp.mean(time_term),
    "tsm/data_loss": data_loss,
    "path/penalty": jnp.mean(pen),
    "tsm/var_mean": jnp.mean(var_w),
    "tsm/normalizer": norm,
  }
  return loss, info


# -------------------------------------------------------------------------- DRE-∞ implicit TSM
def implicit_loss(
  score_fn: ScoreFn,
  params: Mapping,
  batch: Mapping,
  key: jax.Array,
  path_fn: Callable,
  settings: LossSettings,
) -> tuple[jax.Array, dict]:
  """DRE-∞ implicit time-score matching (Choi et al., 2022), reference ``--condition False``.

      E_{p_ε}[λ(ε) s(x, ε)] − E_{p_{1−ε}}[λ(1−ε) s(x, 1−ε)]
        + (1 − 2ε) E_{t ~ U[ε, 1−ε]} E_{p_t}[λ̇ s + λ ∂_t s + ½ λ s²]

  with λ = α² (plain) or v (bridge), ∂_t s by ``jax.jvp`` in t. In expectation this is
  ½ ∫ E λ (s − s*)² dt minus a path constant. x0 and x1 are used as independent draws.
  The λ ∂_t s term differentiates the time embedding, so this objective takes a slow one
  (``networks.time_scale_for``: 30·t); ∂_t s is exact, not the reference's 1/B-scaled form, which
  moves the optimum.

  Args: as ``conditional_loss``; ``params["path"]`` is used under ``stop_gradient``.
  Returns: ``(loss, {"implicit/loss", "implicit/boundary"})``.
  """
  s = settings
  x0, x1 = _check_batch(batch)
  n, d = x0.shape
  k_t, k_z = jax.random.split(key)
  phi = jax.lax.stop_gradient(params["path"])
  net = params["net"]
  z = _normal(k_z, (n, d)) if s.interpolant == "bridge" else None

  def sample_and_weight(t):
    co = path_fn(phi, t)
    x = paths_lib.interpolate_plain(co, x0, x1)
    if s.interpolant == "plain":
      return x, co.alpha**2, 2.0 * co.alpha * co.dalpha
    v, dv = paths_lib.bridge_variance(co, t, gamma=s.gamma, eps_b=s.eps_b, eps=s.eps)
    return x + jnp.sqrt(v)[:, None] * z, v, dv

  lo, hi = s.eps, 1.0 - s.eps
  t_lo, t_hi = jnp.full((n,), lo), jnp.full((n,), hi)
  x_lo, lam_lo, _ = sample_and_weight(t_lo)
  x_hi, lam_hi, _ = sample_and_weight(t_hi)
  boundary = jnp.mean(lam_lo * score_fn(net, x_lo, t_lo)[0]) - jnp.mean(
    lam_hi * score_fn(net, x_hi, t_hi)[0]
  )
  t = jax.random.uniform(k_t, (n,), minval=lo, maxval=hi)
  xt, lam, dlam = sample_and_weight(t)
  s_val, ds_dt = jax.jvp(lambda tt: score_fn(net, xt, tt)[0], (t,), (jnp.ones_like(t),))
  sign = -1.0 if s.flip_cross_sign else 1.0  # negative control only
  interior = (hi - lo) * jnp.mean(dlam * s_val + sign * lam * ds_dt + 0.5 * lam * s_val**2)
  loss = boundary + interior
  return loss, {"implicit/loss": loss, "implicit/boundary": boundary}


def minpv_loss(
  score_fn: ScoreFn,
  params: Mapping,
  batch: Mapping,
  key: jax.Array,
  path_fn: Callable,
  settings: LossSettings,
  is_path_params=None,
) -> tuple[jax.Array, dict]:
  """Dispatches on ``settings.objective`` to ``conditional_loss`` or ``implicit_loss``."""
  if settings.objective == "implicit":
    return implicit_loss(score_fn, params, batch, key, path_fn, settings)
  return conditional_loss(
    score_fn, params, batch, key, path_fn, settings, is_path_params=is_path_params
  )


# ---------------------------------------------------------------------------------- optimiser
def make_joint_optimizer(
  optim_cfg,
  num_steps: int,
  *,
  path_trainable: bool,
  path_weight_decay: float = 1e-5,
  path_lr: float | None = None,
  path_grad_clip: float = 0.0,
) -> optax.GradientTransformation:
  """One optax chain for ``{"net": θ, "path": φ}``: AdamW per group (``optax.multi_transform``)
  with its own weight decay; a frozen φ gets zero updates.

  Clipping: ``path_grad_clip <= 0`` is the reference's one global-norm clip (``optim.grad_clip``)
  over θ and φ together; ``path_grad_clip > 0`` clips each group by its own global norm (θ by
  ``optim.grad_clip``, φ by ``path_grad_clip``), so the MinPV penalty's large φ-gradient cannot
  shrink the network's step.

  Args:
    optim_cfg: ``core.optim.optim_defaults()`` fields (lr, schedule, b1, b2, eps, weight_decay,
      grad_clip); ``name`` must be "adamw" or "adam".
    num_steps: run length (for the schedule).
    path_trainable: False freezes φ (fixed schedule, ``frozen``, ``presolve_freeze``).
    path_weight_decay: AdamW weight decay of φ.
    path_lr: peak LR of φ (None or <= 0: the network's).
    path_grad_clip: > 0 clips φ's gradient apart from θ's (see above).
  """
  if optim_cfg.name not in ("adam", "adamw"):
    raise ValueError(f"optim.name must be adam|adamw for minpv; got {optim_cfg.name!r}")
  sched = optim_lib.make_schedule(optim_cfg, num_steps)
  wd = optim_cfg.weight_decay if optim_cfg.name == "adamw" else 0.0
  net_tx = optax.adamw(sched, b1=optim_cfg.b1, b2=optim_cfg.b2, eps=optim_cfg.eps, weight_decay=wd)
  clip = float(optim_cfg.grad_clip or 0.0)
  apart = path_grad_clip is not None and path_grad_clip > 0
  if path_trainable:
    if path_lr is None or path_lr <= 0:
      psched = sched
    else:
      ratio = float(path_lr) / float(optim_cfg.learning_rate)
      psched = lambda step: sched(step) * ratio  # same shape of schedule, other peak
    path_tx = optax.adamw(
      psched, b1=optim_cfg.b1, b2=optim_cfg.b2, eps=optim_cfg.eps, weight_decay=path_weight_decay
    )
    if apart:
      path_tx = optax.chain(optax.clip_by_global_norm(float(path_grad_clip)), path_tx)
  else:
    path_tx = optax.set_to_zero()
  if apart and clip > 0:
    net_tx = optax.chain(optax.clip_by_global_norm(clip), net_tx)

  def labels(params):
    return {k: jax.tree.map(lambda _: k, v) for k, v in params.items()}

  parts = []
  if not apart and clip > 0:
    parts.append(optax.clip_by_global_norm(clip))
  parts.append(optax.multi_transform({"net": net_tx, "path": path_tx}, labels))
  return optax.chain(*parts)
