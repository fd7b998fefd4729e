"""Path analysis: the integrated path variance J[α], its Cauchy–Schwarz bound and the geodesic.

Chen et al., "Don't Forget Its Variance! The Minimum Path Variance Principle …" (ICLR 2026),
reference code github.com/Hoemr/OpenDRE. For the plain interpolant with m = E‖x1‖², the
time-integrated MinPV penalty is J[α] = ∫ Var(c_t) dt (``path_variance_integral``); with β tied
to α, J = ∫ α̇² g(α) dt (``metric``) ≥ L² = (∫ √g dα)², with equality on the geodesic
(``geodesic``, ``length_squared``). ``optimize_path`` minimises J over the KMM parameters alone
(``path_training="presolve_freeze"``); ``schedule_curves`` / ``plot_schedules`` tabulate and
draw schedules against the geodesic; ``mi_alpha_band`` / ``band_fraction`` locate training
times against the MI. The equations: docs/methods/minpv.md ("The algorithm").
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.minpv import losses, paths as paths_lib


def t_grid(num: int = 4000, eps: float = paths_lib.EPS) -> np.ndarray:
  """A dense float64 grid on [eps, 1 − eps], geometric towards both ends; (2·num − 1,)."""
  if num < 4:
    raise ValueError(f"num must be >= 4; got {num}")
  left = np.geomspace(eps, 0.5, num)
  return np.concatenate([left, 1.0 - left[-2::-1]])


def path_variance_integral(
  path_fn: Callable,
  params,
  *,
  dim: int,
  m: float,
  floor: float = 1e-5,
  grid: np.ndarray | None = None,
) -> jax.Array:
  """J = ∫ Var(c_t | ‖x1‖² = m) dt of the plain interpolant by the trapezoid rule.

  Works for any path (its own β and β̇). Args: ``path_fn(params, t)``; ``grid`` (N,) increasing
  times (default ``t_grid()``); ``floor`` δ. Returns a scalar (differentiable in ``params``).
  """
  g = jnp.asarray(t_grid() if grid is None else grid)
  if g.ndim != 1 or g.shape[0] < 2:
    raise ValueError(f"grid must be (N,) with N >= 2; got {g.shape}")
  var = losses.plain_variance(path_fn(params, g), m, dim, floor=floor)
  return jnp.sum(0.5 * (var[1:] + var[:-1]) * jnp.diff(g))


def metric(alpha, *, dim: int, m: float, floor: float = 1e-5, constraint: str = "spherical"):
  """g_δ(α) of the constraint (numpy or jax arrays, any shape), v = α² + δ:

  spherical (β = √(1 − α²)) 2dα²/v² + mα²/((1 − α²) v); affine (β = 1 − α) 2dα²/v² + m/v.
  """
  v = alpha**2 + floor
  if constraint == "spherical":
    return 2.0 * dim * alpha**2 / v**2 + m * alpha**2 / ((1.0 - alpha**2) * v)
  if constraint == "affine":
    return 2.0 * dim * alpha**2 / v**2 + m / v
  raise ValueError(f"constraint must be one of {paths_lib.CONSTRAINTS}; got {constraint!r}")


class Geodesic(NamedTuple):
  """Tabulated minimum-variance schedule: ``alpha`` (N,) decreasing from alpha_start to
  alpha_end, ``t`` (N,) increasing from 0 to 1, and ``length_sq`` = L² = (∫√g dα)²."""

  t: np.ndarray
  alpha: np.ndarray
  length_sq: float

  def alpha_at(self, t) -> np.ndarray:
    """α of the geodesic at times ``t`` (any shape), by linear interpolation."""
    return np.interp(np.asarray(t, np.float64), self.t, self.alpha)


def geodesic(
  *,
  dim: int,
  m: float,
  floor: float = 1e-5,
  constraint: str = "spherical",
  alpha_start: float = 1.0,
  alpha_end: float = 0.0,
  num: int = 200_001,
) -> Geodesic:
  """The analytic minimum-variance schedule of the plain interpolant (float64 tabulation).

  Integrates √g in θ with α = cos θ (the Jacobian sin θ removes the 1/√(1 − α²) endpoint
  singularity of the spherical metric), cumulative trapezoid, t(α) = ∫_α^{α_start} √g / L.
  Exact variance (floor = 0) diverges at α → 0: pass ``alpha_end > 0`` then.
  """
  if not 0.0 <= alpha_end < alpha_start <= 1.0:
    raise ValueError(f"need 0 <= alpha_end < alpha_start <= 1; got {alpha_end}, {alpha_start}")
  if floor == 0.0 and alpha_end == 0.0:
    raise ValueError("floor = 0 (exact variance) needs alpha_end > 0: ∫√g dα diverges at α → 0")
  theta = np.linspace(np.arccos(alpha_start), np.arccos(alpha_end), int(num))
  alpha = np.cos(theta)
  sin = np.sin(theta)
  v = alpha**2 + floor
  if constraint == "spherical":
    # √g · sin θ written without the 1/(1 − α²) = 1/sin²θ singularity.
    dens = np.sqrt(2.0 * dim * alpha**2 / v**2 * sin**2 + m * alpha**2 / v)
  else:
    dens = np.sqrt(metric(alpha, dim=dim, m=m, floor=floor, constraint=constraint)) * sin
  cum = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(theta))])
  length = cum[-1]
  return Geodesic(t=cum / length, alpha=alpha, length_sq=float(length**2))


def length_squared(
  alpha_start: float,
  alpha_end: float,
  *,
  dim: int,
  m: float,
  floor: float = 1e-5,
  constraint: str = "spherical",
) -> float:
  """The Cauchy–Schwarz lower bound L² of J over a path from alpha_start to alpha_end."""
  return geodesic(
    dim=dim, m=m, floor=floor, constraint=constraint, alpha_start=alpha_start, alpha_end=alpha_end
  ).length_sq


class PathFit(NamedTuple):
  """Output of ``optimize_path``: final φ, and J per step (num_steps,)."""

  params: dict
  history: jax.Array


def optimize_path(
  params: dict,
  *,
  dim: int,
  m: float,
  floor: float = 1e-5,
  constraint: str = "spherical",
  num_steps: int = 2000,
  learning_rate: float = 3e-2,
  grid: np.ndarray | None = None,
  eps: float = paths_lib.EPS,
) -> PathFit:
  """Path-only MinPV: minimise J[α_φ] over the KMM parameters with Adam (one ``lax.scan``).

  Args:
    params: initial KMM φ (``paths.kmm_init``).
    dim, m: d and E‖x1‖².
    floor: δ of the penalty (keep > 0: with δ = 0 the penalty of a path reaching α = 0 diverges).
    grid: (N,) times (default ``t_grid(1000)``).
  Returns:
    PathFit(params, history (num_steps,) of J).
  """
  path_fn = paths_lib.get_path("kmm", constraint=constraint, eps=eps)
  g = t_grid(1000, eps) if grid is None else grid
  objective = lambda p: path_variance_integral(path_fn, p, dim=dim, m=m, floor=floor, grid=g)
  tx = optax.adam(learning_rate)

  def step(carry, _):
    p, s = carry
    val, grads = jax.value_and_grad(objective)(p)
    upd, s = tx.update(grads, s, p)
    return (optax.apply_updates(p, upd), s), val

  @jax.jit
  def run(p):
    (p, _), hist = jax.lax.scan(step, (p, tx.init(p)), None, length=int(num_steps))
    return p, hist

  p, hist = run(params)
  return PathFit(p, hist)


class ScheduleCurves(NamedTuple):
  """α(t) and the per-t target variance of named schedules on a common grid.

  ``t`` (N,); ``alpha`` and ``variance`` map a name to (N,) arrays, where ``variance`` is
  Var(c_t | ‖x1‖² = m) of the plain interpolant (``floor`` δ; 0 = exact), i.e. E[c_t²].
  """

  t: np.ndarray
  alpha: dict
  variance: dict


def schedule_curves(
  schedules, *, dim: int, m: float, floor: float = 0.0, t: np.ndarray | None = None
) -> ScheduleCurves:
  """Evaluates α(t) and Var(c_t) for ``schedules`` = {name: (path_fn, params)}.

  Args:
    schedules: mapping name → ``(path_fn(params, t) -> PathCoeffs, params)``.
    dim, m: d and E‖x1‖².
    floor: δ of the variance (0: exact (2dα̇² + β̇²m)/α²).
    t: (N,) times (default 400 points on [1e-3, 1 − 1e-3]).
  """
  if not schedules:
    raise ValueError("schedules must name at least one (path_fn, params) pair")
  grid = np.linspace(1e-3, 1.0 - 1e-3, 400) if t is None else np.asarray(t, np.float64)
  if grid.ndim != 1 or grid.shape[0] < 2:
    raise ValueError(f"t must be (N,) with N >= 2; got {grid.shape}")
  alpha, variance = {}, {}
  for name, (fn, params) in schedules.items():
    co = fn(params, jnp.asarray(grid, jnp.float32))
    alpha[name] = np.asarray(co.alpha, np.float64)
    variance[name] = np.asarray(losses.plain_variance(co, m, dim, floor=floor), np.float64)
  return ScheduleCurves(grid, alpha, variance)


def plot_schedules(
  schedules,
  *,
  dim: int,
  m: float,
  geo: Geodesic | None = None,
  floor: float = 0.0,
  t: np.ndarray | None = None,
  path: str | None = None,
  title: str | None = None,
):
  """Two panels: α(t) of every schedule (plus the geodesic, dashed) and Var(c_t) (log scale).

  Args:
    schedules: {name: (path_fn, params)}, e.g. the learned KMM and fixed paths.
    dim, m: d and E‖x1‖² of the variance panel.
    geo: optional ``Geodesic`` (the analytic minimum-variance schedule) drawn in black.
    floor: δ of the plotted variance (0: exact).
    t: (N,) times of the curves (``schedule_curves`` default otherwise).
    path: if given, the figure is saved there (PNG by extension).
    title: optional figure title.
  Returns:
    The ``matplotlib.figure.Figure`` (built without pyplot, so no global state).
  """
  from matplotlib.figure import Figure

  curves = schedule_curves(schedules, dim=dim, m=m, floor=floor, t=t)
  fig = Figure(figsize=(10, 3.8))
  ax_a, ax_v = fig.subplots(1, 2)
  for name in curves.alpha:
    ax_a.plot(curves.t, curves.alpha[name], label=name)
    ax_v.plot(curves.t, curves.variance[name], label=name)
  if geo is not None:
    ax_a.plot(geo.t, geo.alpha, "k--", lw=1.5, label="geodesic (min. variance)")
  ax_a.set_xlabel("t")
  ax_a.set_ylabel("α(t)")
  ax_a.set_title("schedules")
  ax_a.legend(fontsize=8)
  ax_v.set_yscale("log")
  ax_v.set_xlabel("t")
  ax_v.set_ylabel("Var(c_t) = E[c_t²]")
  ax_v.set_title(f"target variance (d = {dim}, m = {m:g})")
  if title:
    fig.suptitle(title)
  fig.tight_layout()
  if path is not None:
    fig.savefig(path, dpi=110)
  return fig


def mi_alpha_band(task, *, mass: float = 0.9, num: int = 20001) -> tuple[float, float]:
  """The α-interval that carries the central ``mass`` of the MI of a Gaussian MI task.

  Along any spherical path the MI accrued between α and 1 is G(α) − G(1), G(α) = E_{p1} log p_α
  = −½ Σ_k [log 2π s_k + λ_k/s_k], s_k = α² + (1 − α²)λ_k. The band is [α at cumulative share
  (1 + mass)/2, α at (1 − mass)/2] of that accrual.

  Args:
    task: ``benchmarks.GaussianMITask`` (uses ``eigenvalues``).
    mass: central share of the MI, in (0, 1).
    num: α grid points on [0, 1].
  Returns:
    ``(alpha_lo, alpha_hi)`` with 0 <= alpha_lo < alpha_hi <= 1.
  """
  if not 0.0 < mass < 1.0:
    raise ValueError(f"mass must be in (0, 1); got {mass}")
  alpha = np.linspace(0.0, 1.0, int(num))
  lam = np.asarray(task.eigenvalues, np.float64)[None, :]
  s = alpha[:, None] ** 2 + (1.0 - alpha[:, None] ** 2) * lam
  g = -0.5 * np.sum(np.log(2.0 * np.pi * s) + lam / s, axis=1)
  share = (g - g[-1]) / (g[0] - g[-1])  # share of the MI accrued on [α, 1]: 1 at α = 0
  lo = float(np.interp((1.0 + mass) / 2.0, share[::-1], alpha[::-1]))
  hi = float(np.interp((1.0 - mass) / 2.0, share[::-1], alpha[::-1]))
  return lo, hi


def band_fraction(alpha_t, band: tuple[float, float], weights=None) -> float:
  """Share of training times whose α(t) falls in ``band`` = (alpha_lo, alpha_hi).

  Args:
    alpha_t: (N,) α at N training-time draws (or at grid points, with ``weights``).
    band: from ``mi_alpha_band``.
    weights: optional (N,) probabilities of the points (importance-sampling grid).
  """
  a = np.asarray(alpha_t, np.float64)
  inside = (a >= band[0]) & (a <= band[1])
  if weights is None:
    return float(np.mean(inside))
  w = np.asarray(weights, np.float64)
  return float(np.sum(w * inside) / np.sum(w))
