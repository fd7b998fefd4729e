"""The MI benchmarks against closed forms, numerical marginals and quadrature: the Gaussian task,
the coordinate-wise mapped tasks, the additive-noise and the gamma-exponential tasks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from iclr26_jax.minpv import benchmarks


def test_mi_rules_and_rho_inversion():
  assert benchmarks.make_task(10).mi == pytest.approx(2.0, rel=1e-9)
  for d in (40, 80, 160):
    assert benchmarks.make_task(d).mi == pytest.approx(d / 4, rel=1e-9)
  t = benchmarks.make_task(8, rho=0.5)
  assert t.mi == pytest.approx(-2 * np.log(0.75), rel=1e-12)
  assert benchmarks.make_task(8, mi=t.mi).rho == pytest.approx(0.5, rel=1e-9)


def test_samples_have_the_block_covariance_and_log_ratio_matches_scipy():
  task = benchmarks.make_task(6, rho=0.7)
  n = 100_000
  x = np.asarray(benchmarks.sample_p1(jax.random.PRNGKey(0), n, task), np.float64)
  cov = np.kron(np.eye(3), np.array([[1.0, 0.7], [0.7, 1.0]]))
  np.testing.assert_allclose(np.cov(x.T), cov, atol=0.02)  # s.e. of a covariance ≈ 0.005
  x0 = np.asarray(benchmarks.sample_p0(jax.random.PRNGKey(1), n, task), np.float64)
  np.testing.assert_allclose(np.cov(x0.T), np.eye(6), atol=0.02)
  pts = x[:200]
  ref = stats.multivariate_normal(np.zeros(6), cov).logpdf(pts) - stats.multivariate_normal(
    np.zeros(6)
  ).logpdf(pts)
  got = benchmarks.true_log_ratio(jnp.asarray(pts, jnp.float32), task)
  np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
  # Monte Carlo MI from the pointwise truth (s.e. = std(log r)/√n ≈ 0.005).
  lr = np.asarray(benchmarks.true_log_ratio(jnp.asarray(x, jnp.float32), task), np.float64)
  assert abs(lr.mean() - task.mi) < 5 * lr.std() / np.sqrt(n)


def test_second_moment_of_time_score():
  # E[s*²] = ½ Σ (ṡ/s)² under p_t, checked by Monte Carlo on the plain interpolant.
  from iclr26_jax.minpv import paths

  task = benchmarks.make_task(4, rho=0.8)
  n = 200_000
  co = paths.trig({}, jnp.full((n,), 0.4))
  k0, k1 = jax.random.split(jax.random.PRNGKey(3))
  xt = paths.interpolate_plain(
    co, benchmarks.sample_p0(k0, n, task), benchmarks.sample_p1(k1, n, task)
  )
  s = np.asarray(benchmarks.time_score(xt, co, task), np.float64)
  expect = float(benchmarks.time_score_second_moment(paths.trig({}, jnp.array([0.4])), task)[0])
  np.testing.assert_allclose(np.mean(s**2), expect, rtol=0.03)  # relative s.e. ≈ 0.5 %
  assert abs(s.mean()) < 5 * s.std() / np.sqrt(n)


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match="dim"):
    benchmarks.make_task(5)
  with pytest.raises(ValueError, match="mi or rho"):
    benchmarks.make_task(4, mi=1.0, rho=0.2)
  with pytest.raises(ValueError, match="rho"):
    benchmarks.make_task(4, rho=1.0)
  with pytest.raises(ValueError, match="x must be"):
    benchmarks.true_log_ratio(jnp.ones((2, 3)), benchmarks.make_task(4))


# -------------------------------------------------------- coordinate-wise mapped MI tasks
# Independent NumPy inverses of the maps (the task code holds its own).
_INVERSES = {
  "gauss": lambda z: z,
  "half_cube": lambda z: np.sign(z) * np.abs(z) ** (2 / 3),
  "asinh": np.sinh,
  "cubic": np.cbrt,
}


@pytest.mark.parametrize("name", sorted(benchmarks.MAPS))
def test_mapped_task_mi_and_log_ratio_equal_the_gaussian_ones(name):
  task = benchmarks.make_mapped_task(name, 4, rho=0.8)
  assert task.mi == pytest.approx(-np.log1p(-0.64), rel=1e-12)  # −½ log(1 − ρ²) per pair
  n = 100_000
  x = benchmarks.sample_joint(jax.random.PRNGKey(5), n, task)
  lr = np.asarray(benchmarks.mapped_log_ratio(x, task), np.float64)
  # Monte Carlo MI over joint draws: s.e. = std/√n ≈ 0.004.
  assert abs(lr.mean() - task.mi) < 5 * lr.std() / np.sqrt(n)
  # Pointwise: scipy's Gaussian log-ratio at the independently inverted points.
  pts = np.asarray(x[:300], np.float64)
  u = _INVERSES[name](pts)
  cov = np.kron(np.eye(2), np.array([[1.0, 0.8], [0.8, 1.0]]))
  ref = stats.multivariate_normal(np.zeros(4), cov).logpdf(u) - stats.norm.logpdf(u).sum(1)
  np.testing.assert_allclose(lr[:300], ref, rtol=1e-4, atol=2e-4)
  np.testing.assert_allclose(
    benchmarks.invert_map(benchmarks.apply_map(u, task), task), u, rtol=1e-10, atol=1e-10
  )


def test_asinh_log_ratio_against_dense_numerical_marginals():
  # Dense reference that does not use the Jacobian cancellation: the joint density of
  # (asinh u, asinh v) by change of variables on a grid, its marginals by trapezoid integration
  # over the grid, then log p(x, y) − log p(x) − log p(y). Grid [−4, 4] (mass outside ≈ 1e-7
  # per marginal: sinh 4 ≈ 27 s.d.), spacing 2e-3: integration error far below 1e-4.
  task = benchmarks.make_mapped_task("asinh", 2, rho=0.7)
  g = np.linspace(-4.0, 4.0, 4001)
  cov = np.array([[1.0, 0.7], [0.7, 1.0]])
  mvn = stats.multivariate_normal(np.zeros(2), cov)
  x_pts = np.array([-1.3, -0.2, 0.4, 1.9])
  y_pts = np.array([-0.8, 0.1, 0.9, 1.5])

  def joint(x, y):  # density of the mapped pair at (x, y), broadcasting
    u = np.stack(np.broadcast_arrays(np.sinh(x), np.sinh(y)), -1)
    return mvn.pdf(u) * np.cosh(x) * np.cosh(y)

  px = np.trapezoid(joint(x_pts[:, None], g[None, :]), g, axis=1)
  py = np.trapezoid(joint(g[None, :], y_pts[:, None]), g, axis=1)
  ref = np.log(joint(x_pts, y_pts)) - np.log(px) - np.log(py)
  got = benchmarks.mapped_log_ratio(jnp.asarray(np.stack([x_pts, y_pts], 1), jnp.float32), task)
  np.testing.assert_allclose(got, ref, atol=2e-4)


def test_shuffled_pairs_are_draws_of_the_product_of_marginals():
  task = benchmarks.make_mapped_task("half_cube", 2, rho=0.9)
  n = 50_000
  joint = np.asarray(benchmarks.sample_joint(jax.random.PRNGKey(2), n, task), np.float64)
  prod = np.asarray(benchmarks.shuffle_pairs(jnp.asarray(joint)), np.float64)
  np.testing.assert_array_equal(prod[:, 0], joint[:, 0])  # X kept
  np.testing.assert_array_equal(prod[:, 1], np.roll(joint[:, 1], 1))  # Y moved one row
  assert abs(np.corrcoef(joint.T)[0, 1]) > 0.8
  assert abs(np.corrcoef(prod.T)[0, 1]) < 5 / np.sqrt(n)  # s.e. of r ≈ 1/√n
  # Marginals: half-cube of N(0, 1) has E x² = E|u|³ = 2√(2/π).
  np.testing.assert_allclose(np.mean(prod**2, 0), 2 * np.sqrt(2 / np.pi), rtol=0.04)
  assert not task.p0_is_std_normal and benchmarks.make_mapped_task("gauss", 2).p0_is_std_normal
  with pytest.raises(ValueError, match="map must be one of"):
    benchmarks.make_mapped_task("square", 2)


def test_additive_noise_mi_and_log_ratio_against_numerical_convolution():
  task = benchmarks.make_additive_noise_task(4, 0.1)
  assert task.mi == pytest.approx(2 * (0.1 - np.log(0.2)), rel=1e-12)
  n = 100_000
  x = benchmarks.additive_noise_joint(np.random.default_rng(0), n, task)
  lr = benchmarks.additive_noise_log_ratio(x, task)
  assert np.all(np.isfinite(lr))
  assert abs(lr.mean() - task.mi) < 5 * lr.std() / np.sqrt(n)  # s.e. ≈ 0.002
  # p_Y by numerical convolution of U(0, 1) with U(−ε, ε) on a grid (h = 1e-4), then
  # log p(y | x) − log p_Y(y) = −log 2ε − log p_Y(y) for one pair.
  h = 1e-4
  g = np.arange(-0.2, 1.2, h)
  p_x = ((g >= 0) & (g <= 1)).astype(float)
  k = np.arange(-0.1, 0.1 + h / 2, h)
  p_y = np.convolve(p_x, np.full(k.size, 1 / 0.2), mode="same") * h
  pts = x[:200, :2]
  ref = -np.log(0.2) - np.log(np.interp(pts[:, 1], g, p_y))
  got = benchmarks.additive_noise_log_ratio(
    np.concatenate([pts, np.tile([[0.5, 0.5]], (200, 1))], 1), task
  )
  own = -np.log(0.2) - np.log(1.0)  # the (½, ½) pair
  np.testing.assert_allclose(got - own, ref, atol=5e-3)  # grid error O(h/ε)
  # Shuffled pairs off the support get −∞.
  assert benchmarks.additive_noise_log_ratio(np.array([[0.1, 0.5, 0.5, 0.5]]), task)[0] == -np.inf
  with pytest.raises(ValueError, match="eps"):
    benchmarks.make_additive_noise_task(2, 0.7)


def test_gamma_exponential_mi_and_log_ratio_against_quadrature():
  from scipy import integrate, special, stats

  task = benchmarks.make_gamma_exponential_task(4, 2.5)
  k = 2.5
  assert task.mi == pytest.approx(2 * (special.digamma(k) - np.log(k) + 1 / k), rel=1e-12)
  n = 100_000
  x = benchmarks.gamma_exponential_joint(np.random.default_rng(0), n, task)
  lr = np.asarray(benchmarks.gamma_exponential_log_ratio(x, task))
  assert np.all(np.isfinite(lr))
  assert abs(lr.mean() - task.mi) < 5 * lr.std() / np.sqrt(n)
  # Pointwise: log p(y | x) − log p(y) with p(y) = ∫ Gamma(u; k) u e^{−u y} du by quadrature
  # (no Lomax closed form used).
  for u, y in [(0.7, 0.3), (2.0, 1.5), (4.0, 0.05)]:
    p_y = integrate.quad(lambda v: stats.gamma.pdf(v, k) * v * np.exp(-v * y), 0, np.inf)[0]
    ref = np.log(u) - u * y - np.log(p_y)
    got = benchmarks.gamma_exponential_log_ratio(np.array([[u, y, 1.0, 0.0]]), task)[0]
    own = np.log(1.0) - np.log(k)  # the (1, 0) pair
    np.testing.assert_allclose(got - own, ref, rtol=1e-6)
  assert (
    benchmarks.gamma_exponential_log_ratio(np.array([[-1.0, 0.5, 1.0, 1.0]]), task)[0] == -np.inf
  )
  with pytest.raises(ValueError, match="shape"):
    benchmarks.make_gamma_exponential_task(2, 0.0)
