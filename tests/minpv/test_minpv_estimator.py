"""Quadrature, log-ratio integration, likelihood and the score network."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from iclr26_jax.minpv import benchmarks, estimator, networks, paths


def test_trapezoid_weights_integrate_polynomials():
  nodes, w = estimator.quadrature_grid(101, t_start=0.0, t_end=1.0)
  np.testing.assert_allclose(float(jnp.sum(w)), 1.0, rtol=1e-6)
  np.testing.assert_allclose(float(jnp.sum(w * nodes)), 0.5, rtol=1e-6)
  # Trapezoid error for t² is h²/6 = 1/60000.
  np.testing.assert_allclose(float(jnp.sum(w * nodes**2)), 1 / 3 + 1 / 60000, rtol=1e-5)


def test_path_grid_is_uniform_in_alpha():
  fn = paths.get_path("kmm")
  phi = paths.kmm_init(5)
  nodes, w = jax.jit(
    lambda p: estimator.quadrature_grid(50, grid="path", path_fn=fn, path_params=p)
  )(phi)
  assert np.all(np.diff(np.asarray(nodes)) > 0)
  alpha = np.asarray(fn(phi, nodes).alpha)
  np.testing.assert_allclose(np.diff(alpha), np.diff(alpha).mean(), atol=1e-5)
  np.testing.assert_allclose(float(jnp.sum(w)), 1 - 1e-5, rtol=1e-6)


@pytest.mark.parametrize("name", ["trig", "linear", "cosine"])
def test_analytic_time_score_reproduces_analytic_log_ratio(name):
  # ∫ s* dt through the integrator equals log p1/p0 up to the quadrature error; for these
  # smooth schedules 100 nodes give an RMSE below 1e-3 and 1000 nodes a smaller one. A sign or
  # t-grid error is off by O(1) nats.
  task = benchmarks.make_task(10)
  x = benchmarks.sample_p1(jax.random.PRNGKey(1), 1000, task)
  truth = benchmarks.true_log_ratio(x, task)
  fn = paths.get_path(name)
  score = lambda xx, tt: benchmarks.time_score(xx, fn({}, tt), task)
  errs = []
  for n in (100, 1000):
    nodes, w = estimator.quadrature_grid(n)
    errs.append(
      float(jnp.sqrt(jnp.mean((estimator.integrate_time_score(score, x, nodes, w) - truth) ** 2)))
    )
  assert errs[0] < 1e-3 and errs[1] <= errs[0] + 1e-5, errs
  lr = estimator.integrate_time_score(score, x, *estimator.quadrature_grid(100))
  np.testing.assert_allclose(float(estimator.mi_estimate(lr)), float(jnp.mean(truth)), atol=1e-3)


def test_log_likelihood_matches_scipy():
  task = benchmarks.make_task(6, rho=0.6)
  x = benchmarks.sample_p1(jax.random.PRNGKey(2), 50, task)
  ll = estimator.log_likelihood(x, benchmarks.true_log_ratio(x, task))
  cov = np.kron(np.eye(3), np.array([[1.0, 0.6], [0.6, 1.0]]))
  ref = stats.multivariate_normal(np.zeros(6), cov).logpdf(np.asarray(x, np.float64))
  np.testing.assert_allclose(ll, ref, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(
    estimator.std_normal_logpdf(x),
    stats.multivariate_normal(np.zeros(6)).logpdf(np.asarray(x)),
    rtol=1e-5,
  )


def test_score_network_shapes_and_time_dependence():
  net = networks.ScoreNetwork(dim=4, width=16, depth=1, time_features=8, data_head=True)
  x, t = jnp.ones((3, 4)), jnp.array([0.1, 0.5, 0.9])
  s_t, s_x = jax.jit(lambda k: net.apply(net.init(k, x, t), x, t))(jax.random.PRNGKey(0))
  assert s_t.shape == (3,) and s_x.shape == (3, 4)
  assert float(jnp.std(s_t)) > 0  # identical x, different t: the output must differ
  emb = networks.sinusoidal_embedding(t, 8)
  assert emb.shape == (3, 8)
  np.testing.assert_allclose(emb[:, :4] ** 2 + emb[:, 4:] ** 2, 1.0, rtol=1e-5)
  small = networks.ScoreNetwork(dim=4, width=8, depth=1, time_features=4)
  s_only, none = jax.eval_shape(
    lambda k: small.apply(small.init(k, x, t), x, t), jax.random.PRNGKey(1)
  )
  assert s_only.shape == (3,) and none is None


def test_errors_name_the_argument():
  with pytest.raises(ValueError, match="num_nodes"):
    estimator.quadrature_grid(1)
  with pytest.raises(ValueError, match="grid"):
    estimator.quadrature_grid(10, grid="gauss")
  with pytest.raises(ValueError, match="path_fn"):
    estimator.quadrature_grid(10, grid="path")
  with pytest.raises(ValueError, match="log_r"):
    estimator.log_likelihood(jnp.ones((3, 2)), jnp.ones((4,)))
  with pytest.raises(ValueError, match="num_features"):
    networks.sinusoidal_embedding(jnp.ones(3), 5)


# ------------------------------------------------------------- Simpson and ODE integrators
def test_simpson_weights_are_exact_for_cubics_and_quadratics():
  nodes, _ = estimator.quadrature_grid(11, t_start=0.0, t_end=1.0)
  w = estimator.simpson_weights(nodes)
  np.testing.assert_allclose(float(jnp.sum(w * nodes**3)), 0.25, rtol=1e-6)  # exact: cubic
  # Non-uniform nodes: exact for quadratics (each panel integrates its interpolant).
  nu = jnp.asarray(np.sort(np.concatenate([[0.0, 1.0], np.random.default_rng(0).random(7)])))
  w = estimator.simpson_weights(nu)
  np.testing.assert_allclose(float(jnp.sum(w * (3 * nu**2 - nu))), 0.5, rtol=1e-5)
  with pytest.raises(ValueError, match="odd"):
    estimator.simpson_weights(jnp.linspace(0, 1, 10))


def _oracle(name):
  task = benchmarks.make_task(10)
  x = benchmarks.sample_p1(jax.random.PRNGKey(7), 500, task)
  fn = paths.get_path(name)
  phi = paths.init_path_params(name)
  score = lambda xx, tt: benchmarks.time_score(xx, fn(phi, tt), task)
  return x, benchmarks.true_log_ratio(x, task), score, fn, phi


@pytest.mark.parametrize(
  "method,nodes,tol",
  [
    # trapezoid / Euler: O(h²) / O(h) global error; Simpson / RK4: O(h⁴). The trig time score
    # vanishes at both ends, so even Euler's leading h/2·(s(1) − s(0)) term is small. dopri5 at
    # rtol = atol = 1e-5 in float32. A sign, grid or midpoint error is off by O(1) nats.
    ("trapezoid", 100, 1e-3),
    ("simpson", 101, 2e-4),
    ("rk4", 51, 2e-4),
    ("euler", 1000, 2e-3),
    ("dopri5", 0, 5e-4),
  ],
)
def test_every_integrator_reproduces_the_analytic_log_ratio(method, nodes, tol):
  x, truth, score, _, _ = _oracle("trig")
  lr = jax.jit(lambda xx: estimator.log_ratio(score, xx, method=method, num_nodes=max(nodes, 2)))(x)
  rmse = float(jnp.sqrt(jnp.mean((lr - truth) ** 2)))
  assert rmse < tol, rmse


def test_rk4_on_the_path_grid_and_dopri5_step_control_on_the_kmm_path():
  # The front-loaded KMM initialisation (a_0 ≈ 0.92 < 1: s* has an integrable t^(a−1) spike at
  # t → 0, so fixed rules lose their order). Measured: trapezoid-100 RMSE ≈ 1.2e-2, RK4 on 101
  # nodes uniform in α ≈ 2.7e-3, dopri5 (diffrax) at 1e-5 ≈ 8.3e-5 in 79 evaluations (at 1e-3:
  # 3.6e-3 in 49). RK4 must beat the trapezoid clearly and dopri5 must reach the analytic log r,
  # with more evaluations at a tighter tolerance.
  x, truth, score, fn, phi = _oracle("kmm")
  rmse = lambda lr: float(jnp.sqrt(jnp.mean((lr - truth) ** 2)))
  trap = rmse(estimator.log_ratio(score, x, num_nodes=100))
  rk4 = rmse(
    estimator.log_ratio(
      score, x, method="rk4", num_nodes=101, grid="path", path_fn=fn, path_params=phi
    )
  )
  assert rk4 < min(5e-3, trap / 2), (rk4, trap)
  run = lambda tol: jax.jit(lambda xx: estimator.integrate_dopri5(score, xx, rtol=tol, atol=tol))(x)
  lr_a, ev_a = run(1e-3)
  lr_b, ev_b = run(1e-5)
  assert rmse(lr_b) < 3e-4 and rmse(lr_b) < rmse(lr_a)
  assert int(ev_b) > int(ev_a) > 0
  # The reported count is the number of score calls, counted by a host callback (the oracle):
  # FSAL Dopri5 costs 1 + 6 per attempted step, so it is ≡ 1 mod 6.
  calls = []

  def counted(xx, tt):
    jax.debug.callback(lambda: calls.append(1))
    return score(xx, tt)

  lr_c, ev_c = jax.jit(lambda xx: estimator.integrate_dopri5(counted, xx, rtol=1e-3, atol=1e-3))(
    x[:16]
  )
  jax.block_until_ready(lr_c)
  assert len(calls) == int(ev_c) and int(ev_c) % 6 == 1, (len(calls), int(ev_c))
  # max_steps runs out before t_end: NaN rows, not a truncated integral, and 1 + 6·3 calls.
  lr_m, ev_m = estimator.integrate_dopri5(score, x[:16], max_steps=3)
  assert bool(jnp.all(jnp.isnan(lr_m))) and int(ev_m) == 19, (lr_m, ev_m)
  assert not bool(jnp.any(jnp.isnan(lr_b)))
  with pytest.raises(ValueError, match="method"):
    estimator.log_ratio(score, x, method="midpoint")
