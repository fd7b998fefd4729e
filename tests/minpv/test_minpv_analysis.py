"""Path analysis: J[α], the Cauchy–Schwarz bound, the geodesic, path-only MinPV, the schedule
curves and the MI α-band diagnostic."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.minpv import analysis, benchmarks, estimator, paths

D = M = 10
PROBES = np.array([0.1, 0.25, 0.5, 0.75, 0.9])


@pytest.fixture(scope="module")
def fitted():
  """Path-only MinPV fit (K = 5, spherical, floored penalty, m = d = 10)."""
  return analysis.optimize_path(paths.kmm_init(5), dim=D, m=M, num_steps=1000)


@pytest.fixture(scope="module")
def geo():
  return analysis.geodesic(dim=D, m=M)


def test_geodesic_reference_values(geo):
  # Reference values (floored metric, δ = 1e-5, m = d): α ≈ .91/.74/.32/.07/.014/.005 at
  # t = .05/.1/.25/.5/.75/.9 and L² ≈ 76·d. Values are quoted to 2 significant digits.
  np.testing.assert_allclose(
    geo.alpha_at([0.05, 0.1, 0.25, 0.5, 0.75, 0.9]),
    [0.91, 0.74, 0.32, 0.07, 0.014, 0.005],
    rtol=0.05,
    atol=0.005,
  )
  np.testing.assert_allclose(geo.length_sq / D, 76.0, rtol=0.01)
  # g_δ ∝ d when m = d, so the schedule does not depend on d.
  g40 = analysis.geodesic(dim=40, m=40)
  np.testing.assert_allclose(g40.alpha_at(PROBES), geo.alpha_at(PROBES), atol=1e-6)
  np.testing.assert_allclose(g40.length_sq, 4 * geo.length_sq, rtol=1e-6)


def test_geodesic_attains_the_bound(geo):
  # On the geodesic √g |α̇| is constant, so J = ∫ α̇² g dt equals L² (Cauchy–Schwarz equality).
  t, a = geo.t, geo.alpha
  t, a = t[1:-1], a[1:-1]  # g is singular at α = 1 (the integrand is not)
  da = np.gradient(a, t)
  j = np.trapezoid(da**2 * analysis.metric(a, dim=D, m=M), t)
  np.testing.assert_allclose(j, geo.length_sq, rtol=0.01)  # finite-difference α̇ on 2e5 nodes


def test_spec_values_of_j():
  # Reference values on t ∈ [1e-5, 1 − 1e-5], d = m = 10: J ≈ 9.9e3 (linear), 7.8e3 (trig), 3.8e3 (KMM
  # init), quoted to 2 digits; the dense geometric grid resolves both ends (grid-converged below).
  for name, expect in (("linear", 9.9e3), ("trig", 7.8e3), ("kmm", 3.8e3)):
    fn, phi = paths.get_path(name), paths.init_path_params(name)
    j = float(analysis.path_variance_integral(fn, phi, dim=D, m=M))
    np.testing.assert_allclose(j, expect, rtol=0.02)
    if name == "kmm":
      j_coarse = float(
        analysis.path_variance_integral(fn, phi, dim=D, m=M, grid=analysis.t_grid(1000))
      )
      np.testing.assert_allclose(j_coarse, j, rtol=2e-3)


@pytest.mark.parametrize("name", list(paths.FIXED_PATHS) + ["kmm"])
def test_every_schedule_respects_the_lower_bound(name):
  # J ≥ (∫√g dα)² over the schedule's own endpoints, with its own constraint's metric.
  fn, phi = paths.get_path(name), paths.init_path_params(name)
  grid = analysis.t_grid()
  j = float(analysis.path_variance_integral(fn, phi, dim=D, m=M, grid=grid))
  ends = fn(phi, jnp.asarray([grid[0], grid[-1]]))
  constraint = "affine" if name == "linear" else "spherical"
  bound = analysis.length_squared(
    float(ends.alpha[0]), float(ends.alpha[1]), dim=D, m=M, constraint=constraint
  )
  assert j >= bound * (1 - 1e-3), (j, bound)  # 1e-3: quadrature error of J (see above)


def test_affine_geodesic_is_exponential_without_floor():
  # Affine, exact variance: g = (2d + m)/α², so log α is linear in t between the clamps.
  g = analysis.geodesic(dim=D, m=M, floor=0.0, constraint="affine", alpha_end=1e-3)
  t = np.array([0.2, 0.5, 0.8])
  np.testing.assert_allclose(np.log(g.alpha_at(t)), t * np.log(1e-3), rtol=1e-3)
  with pytest.raises(ValueError, match="alpha_end"):
    analysis.geodesic(dim=D, m=M, floor=0.0)


def test_path_only_minpv_reaches_the_geodesic(fitted, geo):
  # J approaches L² (within 2 %), falls far below trig, α matches the geodesic.
  j_trig = float(analysis.path_variance_integral(paths.get_path("trig"), {}, dim=D, m=M))
  j_fit = float(analysis.path_variance_integral(paths.get_path("kmm"), fitted.params, dim=D, m=M))
  assert fitted.history[-1] < 0.25 * fitted.history[0]
  assert j_fit < 1.02 * geo.length_sq, (j_fit, geo.length_sq)
  assert j_fit < 0.2 * j_trig
  alpha = paths.kmm(fitted.params, jnp.asarray(PROBES)).alpha
  # A K = 5 mixture cannot reproduce the geodesic exactly; 0.04 is ~10 % of α at t = 0.25, and
  # the KMM initialisation is off by 0.44 there.
  np.testing.assert_allclose(alpha, geo.alpha_at(PROBES), atol=0.04)


def test_oracle_integration_on_the_geodesic_path(fitted):
  # The analytic s* through the integrator, on the front-loaded (geodesic-fit) path.
  # Observed: 100 uniform nodes leave a bias of about 0.013 nats (RMSE 0.016); 1000 nodes
  # remove it to ~5e-4 (the bias of a uniform grid depends on the path).
  task = benchmarks.make_task(D)
  x = benchmarks.sample_p1(jax.random.PRNGKey(0), 1000, task)
  truth = benchmarks.true_log_ratio(x, task)
  fn = paths.get_path("kmm")
  score = lambda xx, tt: benchmarks.time_score(xx, fn(fitted.params, tt), task)
  integrate = jax.jit(lambda nodes, w: estimator.integrate_time_score(score, x, nodes, w))
  rmse = {}
  for n in (100, 1000):
    nodes, w = estimator.quadrature_grid(n)
    # Pad to 1000 entries with zero weights: one compiled scan serves both node counts.
    nodes = jnp.concatenate([nodes, jnp.full((1000 - n,), 0.5)])
    w = jnp.concatenate([w, jnp.zeros((1000 - n,))])
    rmse[n] = float(jnp.sqrt(jnp.mean((integrate(nodes, w) - truth) ** 2)))
  assert rmse[1000] < 2e-3 and rmse[100] < 0.05
  assert rmse[1000] < rmse[100] / 5


def test_schedule_curves_match_closed_forms():
  # Trig: α = cos(πt/2) and exact Var(c_t | ‖x1‖² = m) = (2dα̇² + β̇²m)/α² written out in numpy
  # float64 (independent of losses.plain_variance); float32 evaluation → rtol 1e-4.
  t = np.linspace(0.05, 0.95, 7)
  cur = analysis.schedule_curves({"trig": (paths.get_path("trig"), {})}, dim=D, m=M, t=t)
  h = np.pi / 2
  a, da, db = np.cos(h * t), -h * np.sin(h * t), h * np.cos(h * t)
  np.testing.assert_allclose(cur.alpha["trig"], a, rtol=1e-5)
  np.testing.assert_allclose(cur.variance["trig"], (2 * D * da**2 + db**2 * M) / a**2, rtol=1e-4)
  with pytest.raises(ValueError, match="schedules"):
    analysis.schedule_curves({}, dim=D, m=M)


def test_plot_schedules_writes_a_png(tmp_path, geo):
  out = tmp_path / "schedules.png"
  fig = analysis.plot_schedules(
    {"kmm init": (paths.get_path("kmm"), paths.kmm_init(5)), "trig": (paths.get_path("trig"), {})},
    dim=D,
    m=M,
    geo=geo,
    path=str(out),
  )
  assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
  ax_alpha = fig.axes[0]
  assert len(ax_alpha.lines) == 3  # two schedules and the geodesic


def test_mi_alpha_band_holds_the_stated_share_of_the_mi():
  # G(α) = E_{p1} log p_α(x) by Monte Carlo (p_α Gaussian, scipy-free closed density) at the band
  # edges: the MI accrued between them is 90 % of G(0) − G(1) = MI.
  task = benchmarks.make_task(D)
  lo, hi = analysis.mi_alpha_band(task, mass=0.9)
  assert 0.0 <= lo < hi <= 1.0
  x = np.asarray(benchmarks.sample_p1(jax.random.PRNGKey(3), 200_000, task), np.float64)
  sigma = np.asarray(benchmarks.eigen_coordinates(jnp.eye(D), task)).T
  sigma = sigma.T @ np.diag(task.eigenvalues) @ sigma

  def g(alpha):
    cov = alpha**2 * np.eye(D) + (1 - alpha**2) * sigma
    inv = np.linalg.inv(cov)
    quad = np.einsum("ni,ij,nj->n", x, inv, x)
    return float(np.mean(-0.5 * quad) - 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1])

  g0, g1 = g(0.0), g(1.0)
  np.testing.assert_allclose(g0 - g1, task.mi, rtol=0.02)  # MC of KL(p1‖p0), s.e. < 1 %
  share = (g(lo) - g(hi)) / (g0 - g1)
  np.testing.assert_allclose(share, 0.9, atol=0.02)
  # Fractions: a path spending all its time in the band scores 1, none 0; weights normalise.
  assert analysis.band_fraction(np.full(5, 0.5 * (lo + hi)), (lo, hi)) == 1.0
  assert analysis.band_fraction(np.array([lo / 2, 1.0]), (lo, hi)) == 0.0
  assert (
    analysis.band_fraction(np.array([0.5 * (lo + hi), 1.0]), (lo, hi), weights=np.array([3.0, 1.0]))
    == 0.75
  )
