"""Known-answer tests of the PDNS references: OU / Brownian bridges and terminal scores.

Oracles: Gaussian conditioning of the joint (X_0, X_t, X_1) of the reference process, written
here from its covariance function (float64 numpy), and autodiff of the analytic log-density.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.pdns import references

# int alpha = 10.05 (>= 10): residual correlation e^{-5.03} < 0.01 (spec §2.1, §18).
DECREASING = references.ou_reference(3, schedule="linear_decreasing", sigma_bar=1.5,
                                     alpha_min=0.1, alpha_max=20.0)
INCREASING = references.ou_reference(3, schedule="linear_increasing", sigma_bar=1.5,
                                     alpha_min=0.1, alpha_max=20.0)


def _ou_cond(ref, t, x0, x1):
  """Mean and variance of X_t | X_0, X_1 from the stationary OU covariance
  Cov(X_s, X_u) = sigma_bar^2 exp(-1/2 int_s^u alpha), s <= u (per coordinate)."""
  s2 = ref.sigma_bar ** 2
  def k(a, b):
    lo, hi = min(a, b), max(a, b)
    return s2 * math.exp(-0.5 * ref.int_alpha(lo, hi))
  obs = np.array([[k(0, 0), k(0, 1)], [k(1, 0), k(1, 1)]])
  cross = np.array([k(t, 0), k(t, 1)])
  gain = np.linalg.solve(obs, cross)
  mean = gain[0] * np.asarray(x0, np.float64) + gain[1] * np.asarray(x1, np.float64)
  return mean, k(t, t) - cross @ gain


def test_schedules_directions_and_residual_correlation():
  assert DECREASING.alpha_start == 20.0 and DECREASING.alpha_end == 0.1
  assert INCREASING.alpha_start == 0.1 and INCREASING.alpha_end == 20.0
  assert DECREASING.residual_correlation == pytest.approx(math.exp(-0.5 * 10.05), rel=1e-12)
  with pytest.warns(UserWarning, match="not memoryless"):
    ref = references.ou_reference(2)                   # the released code's 10 -> 0.1
  assert ref.residual_correlation == pytest.approx(math.exp(-2.525), rel=1e-9)
  with pytest.raises(ValueError, match="schedule"):
    references.ou_reference(2, schedule="cosine")


@pytest.mark.parametrize("ref", [DECREASING, INCREASING], ids=["decreasing", "increasing"])
def test_ou_bridge_matches_gaussian_conditioning(ref):
  rng = np.random.default_rng(0)
  x0 = rng.normal(size=(3,)) * 1.5
  x1 = rng.normal(size=(3,)) * 1.5
  for t in (0.05, 0.3, 0.7, 0.97):
    mean, var = ref.bridge_mean_var(t, jnp.asarray(x0, jnp.float32), jnp.asarray(x1, jnp.float32))
    want_mean, want_var = _ou_cond(ref, t, x0, x1)
    # float32 evaluation of O(1) closed forms: relative round-off ~1e-6; 1e-4 leaves margin.
    np.testing.assert_allclose(np.asarray(mean), want_mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(var), want_var, rtol=1e-4, atol=1e-6)
  # End points: the bridge is pinned.
  for t, want in ((1e-6, x0), (1 - 1e-6, x1)):
    mean, var = ref.bridge_mean_var(t, jnp.asarray(x0, jnp.float32), jnp.asarray(x1, jnp.float32))
    np.testing.assert_allclose(np.asarray(mean), want, atol=1e-3)
    assert float(var) < 1e-3


@pytest.mark.parametrize("ref", [DECREASING, INCREASING], ids=["decreasing", "increasing"])
def test_ou_bridge_sampling_monte_carlo(ref):
  n, t = 40000, 0.4
  x0 = jnp.asarray([[0.5, -1.0, 2.0]], jnp.float32)
  x1 = jnp.asarray([[-1.0, 0.3, 1.0]], jnp.float32)
  draws = ref.sample_bridge(jax.random.PRNGKey(1), t, jnp.tile(x0, (n, 1)), jnp.tile(x1, (n, 1)))
  want_mean, want_var = _ou_cond(ref, t, x0[0], x1[0])
  sd = math.sqrt(want_var)
  # Sample mean: standard error sd / sqrt(n); sample variance: se var * sqrt(2 / (n - 1)).
  # 5 standard errors per coordinate (3 coordinates): a false failure has probability < 2e-6.
  np.testing.assert_allclose(np.asarray(draws.mean(0)), want_mean, atol=5 * sd / math.sqrt(n))
  np.testing.assert_allclose(np.asarray(draws.var(0)), want_var,
                             atol=5 * want_var * math.sqrt(2 / (n - 1)))


def test_bm_bridge_sampling_monte_carlo():
  ref = references.BMReference(dim=2, sigma_const=0.8, source=(1.0, -1.0))
  n, t = 40000, 0.3
  x1 = jnp.tile(jnp.asarray([[2.0, 0.5]]), (n, 1))
  x0 = ref.sample_source(jax.random.PRNGKey(0), n)
  draws = ref.sample_bridge(jax.random.PRNGKey(1), t, x0, x1)
  # Brownian bridge oracle: mean (1 - t) a + t b, variance sigma^2 t (1 - t).
  want_mean = 0.7 * np.array([1.0, -1.0]) + 0.3 * np.array([2.0, 0.5])
  want_var = 0.64 * 0.3 * 0.7
  np.testing.assert_allclose(np.asarray(draws.mean(0)), want_mean,
                             atol=5 * math.sqrt(want_var / n))
  np.testing.assert_allclose(np.asarray(draws.var(0)), want_var,
                             atol=5 * want_var * math.sqrt(2 / (n - 1)))


def _ou_log_p1_given_t(ref, t, xt, x1):
  """log N(x1; a xt, sigma_bar^2 (1 - a^2) I), a = exp(-1/2 int_t^1 alpha), written from the OU
  transition law (independent of the library's closed form)."""
  a = jnp.exp(-0.5 * (ref.alpha_start * (1 - t) + 0.5 * (ref.alpha_end - ref.alpha_start)
                      * (1 - t ** 2)))
  var = ref.sigma_bar ** 2 * (1 - a ** 2)
  return jnp.sum(-0.5 * (x1 - a * xt) ** 2 / var - 0.5 * jnp.log(2 * jnp.pi * var))


@pytest.mark.parametrize("ref", [DECREASING, INCREASING], ids=["decreasing", "increasing"])
def test_terminal_score_equals_autodiff(ref):
  rng = np.random.default_rng(3)
  for t in (0.1, 0.5, 0.9):
    xt = jnp.asarray(rng.normal(size=(3,)), jnp.float32)
    x1 = jnp.asarray(rng.normal(size=(3,)), jnp.float32)
    want = jax.grad(lambda x: _ou_log_p1_given_t(ref, t, x, x1))(xt)
    got = ref.terminal_score(t, xt[None], x1[None])[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(ref.terminal_log_prob(t, xt[None], x1[None])[0]),
                               float(_ou_log_p1_given_t(ref, t, xt, x1)), rtol=1e-5, atol=1e-5)
  bm = references.BMReference(dim=3, sigma_const=0.7)
  xt, x1 = jnp.ones((1, 3)), jnp.asarray([[0.0, 1.0, 3.0]])
  want = jax.grad(lambda x: jnp.sum(jax.scipy.stats.norm.logpdf(x1[0], x, 0.7 * math.sqrt(0.6))))(
      xt[0])
  np.testing.assert_allclose(np.asarray(bm.terminal_score(0.4, xt, x1)[0]), np.asarray(want),
                             rtol=1e-5)


def test_reward_keeps_log_nu_constant():
  ref = references.OUReference(dim=2, sigma_bar=2.0, alpha_start=20.0, alpha_end=0.1)
  x = jnp.asarray([[0.3, -0.2]])
  want = float(jnp.sum(jax.scipy.stats.norm.logpdf(x, 0.0, 2.0)))
  assert float(ref.log_nu(x)[0]) == pytest.approx(want, rel=1e-5)
  dropped = references.OUReference(dim=2, sigma_bar=2.0, drop_log_nu_const=True)
  assert float(dropped.log_nu(x)[0]) == pytest.approx(want + math.log(2 * math.pi * 4.0), rel=1e-5)
  with pytest.raises(ValueError, match="x must have shape"):
    ref.log_nu(jnp.zeros((4, 3)))
