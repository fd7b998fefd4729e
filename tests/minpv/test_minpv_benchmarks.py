"""The Gaussian MI benchmark against closed forms (spec §12)."""

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
  np.testing.assert_allclose(np.cov(x.T), cov, atol=0.02)       # s.e. of a covariance ≈ 0.005
  x0 = np.asarray(benchmarks.sample_p0(jax.random.PRNGKey(1), n, task), np.float64)
  np.testing.assert_allclose(np.cov(x0.T), np.eye(6), atol=0.02)
  pts = x[:200]
  ref = (stats.multivariate_normal(np.zeros(6), cov).logpdf(pts)
         - stats.multivariate_normal(np.zeros(6)).logpdf(pts))
  got = benchmarks.log_ratio(jnp.asarray(pts, jnp.float32), task)
  np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
  # Monte Carlo MI from the pointwise truth (s.e. = std(log r)/√n ≈ 0.005).
  lr = np.asarray(benchmarks.log_ratio(jnp.asarray(x, jnp.float32), task), np.float64)
  assert abs(lr.mean() - task.mi) < 5 * lr.std() / np.sqrt(n)


def test_second_moment_of_time_score():
  # E[s*²] = ½ Σ (ṡ/s)² under p_t, checked by Monte Carlo on the plain interpolant.
  from iclr26_jax.minpv import paths
  task = benchmarks.make_task(4, rho=0.8)
  n = 200_000
  co = paths.trig({}, jnp.full((n,), 0.4))
  k0, k1 = jax.random.split(jax.random.PRNGKey(3))
  xt = paths.interpolate_plain(co, benchmarks.sample_p0(k0, n, task),
                               benchmarks.sample_p1(k1, n, task))
  s = np.asarray(benchmarks.time_score(xt, co, task), np.float64)
  expect = float(benchmarks.time_score_second_moment(paths.trig({}, jnp.array([0.4])), task)[0])
  np.testing.assert_allclose(np.mean(s ** 2), expect, rtol=0.03)   # relative s.e. ≈ 0.5 %
  assert abs(s.mean()) < 5 * s.std() / np.sqrt(n)


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match="dim"):
    benchmarks.make_task(5)
  with pytest.raises(ValueError, match="mi or rho"):
    benchmarks.make_task(4, mi=1.0, rho=0.2)
  with pytest.raises(ValueError, match="rho"):
    benchmarks.make_task(4, rho=1.0)
  with pytest.raises(ValueError, match="x must be"):
    benchmarks.log_ratio(jnp.ones((2, 3)), benchmarks.make_task(4))
