"""The MinPV score networks' time scale and the parametric Gaussian time-score model.

Oracles: the rule of ``networks.time_scale_for`` written out per objective, and for
``QuadraticTimeScore`` the analytic scores of the Gaussian task (``benchmarks.time_score`` and the
data score −C_t⁻¹x from the task's covariance): the model family contains them, so with the
analytic coefficients set by hand it must reproduce both (to float32 rounding).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.minpv import benchmarks, networks, paths

D = 10


def test_time_scale_rule():
  assert networks.time_scale_for("implicit", 0.0) == 30.0
  assert networks.time_scale_for("conditional", -1.0) == 1000.0
  assert networks.time_scale_for("joint", 0.0) == 1000.0
  assert networks.time_scale_for("implicit", 250.0) == 250.0
  with pytest.raises(ValueError, match="objective"):
    networks.time_scale_for("nope", 0.0)


def test_quadratic_model_contains_the_analytic_time_and_data_scores():
  # Set W = Qᵀ (the task's eigenvectors), zero the coefficient MLP's kernel and put the analytic
  # coefficients at one t into its bias: the model must then equal benchmarks.time_score and the
  # data score −C_t⁻¹x at that t for every x.
  task = benchmarks.make_task(D)
  fn = paths.get_path("trig")
  t0 = 0.37
  model = networks.QuadraticTimeScore(dim=D, width=8, time_features=4, data_head=True)
  x = benchmarks.sample_p1(jax.random.PRNGKey(0), 32, task)
  t = jnp.full((32,), t0)
  params = model.init(jax.random.PRNGKey(1), x, t)["params"]
  q_t = np.asarray(benchmarks.eigen_coordinates(jnp.eye(D), task)).T  # rows: y = Qᵀ x
  co = fn({}, jnp.asarray([t0]))
  a, b, da, db = (float(np.asarray(v)[0]) for v in co)
  lam = task.eigenvalues
  s = a**2 + b**2 * lam
  ds = 2 * a * da + 2 * b * db * lam
  bias = np.concatenate([[-0.5 * np.sum(ds / s)], 0.5 * ds / s**2, 1.0 / s])
  params = dict(params, w=jnp.asarray(q_t, jnp.float32))
  params["t_out"] = {
    "kernel": jnp.zeros_like(params["t_out"]["kernel"]),
    "bias": jnp.asarray(bias, jnp.float32),
  }
  s_t, s_x = model.apply({"params": params}, x, t)
  want = benchmarks.time_score(x, jax.tree.map(lambda v: jnp.full((32,), v[0]), co), task)
  np.testing.assert_allclose(s_t, want, rtol=2e-4, atol=2e-4)
  sigma = q_t.T @ np.diag(lam) @ q_t
  cov = a**2 * np.eye(D) + b**2 * sigma
  np.testing.assert_allclose(
    s_x, -np.asarray(x, np.float64) @ np.linalg.inv(cov).T, rtol=2e-4, atol=2e-4
  )
