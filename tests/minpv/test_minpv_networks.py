"""Issue #15 mends, each against an independent oracle: the loss normaliser (deterministic, only
with the penalty), separate clipping of θ and φ, the time-scale rule, the parametric Gaussian
time-score model (contains the analytic score) and the MI α-band diagnostic."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import optim as optim_lib
from iclr26_jax.minpv import analysis, benchmarks, losses, networks, paths

D = 10


def _batch(n=64, seed=0):
  rng = np.random.default_rng(seed)
  return {
    "x0": jnp.asarray(rng.standard_normal((n, D)), jnp.float32),
    "x1": jnp.asarray(rng.standard_normal((n, D)), jnp.float32),
  }


def _zero_score(net, x, t):
  return net["b"] * t, None


def test_normalizer_is_one_without_penalty_and_a_fixed_grid_mean_with_it():
  fn = paths.get_path("kmm")
  phi = paths.kmm_init(5)
  params = {"net": {"b": jnp.array(0.0)}, "path": phi}
  batch = _batch()
  out = {}
  for name, pen, normalizer in (
    ("off", False, "grid"),
    ("grid", True, "grid"),
    ("batch", True, "batch"),
    ("none", True, "none"),
  ):
    s = losses.LossSettings(penalty=pen, normalizer=normalizer, var_for_weights="exact")
    out[name] = [
      losses.conditional_loss(_zero_score, params, batch, jax.random.PRNGKey(k), fn, s)[1][
        "tsm/normalizer"
      ]
      for k in (0, 1)
    ]
  assert float(out["off"][0]) == 1.0 and float(out["none"][0]) == 1.0
  # Grid: the mean exact variance on 64 midpoints of [eps, 1 − eps] at the batch mean ‖x1‖²,
  # written out here from the closed form; it does not depend on the step's key.
  t = paths.EPS + (1 - 2 * paths.EPS) * (np.arange(64) + 0.5) / 64
  m = float(jnp.mean(jnp.sum(batch["x1"] ** 2, axis=1)))
  a = fn(phi, jnp.asarray(t, jnp.float32))
  expect = np.mean(
    (2 * D * np.asarray(a.dalpha) ** 2 + np.asarray(a.dbeta) ** 2 * m) / np.asarray(a.alpha) ** 2
  )
  np.testing.assert_allclose(out["grid"][0], expect, rtol=1e-4)
  assert float(out["grid"][0]) == float(out["grid"][1])
  # The reference's batch mean moves with the sampled times (it is heavy-tailed).
  assert float(out["batch"][0]) != float(out["batch"][1])


def test_path_gradient_is_clipped_apart_from_the_network_gradient():
  # With Adam's eps far above |g| the first update is −lr·g_clipped/eps (bias-corrected moments
  # equal g and g²), so the update reads off the clipped gradient of each group.
  cfg = optim_lib.optim_defaults()
  cfg.name, cfg.learning_rate, cfg.grad_clip, cfg.eps = "adam", 1.0, 1.0, 1e6
  params = {"net": {"w": jnp.zeros(2)}, "path": {"u": jnp.zeros(2)}}
  grads = {"net": {"w": jnp.array([0.3, 0.4])}, "path": {"u": jnp.array([300.0, 400.0])}}
  total = float(np.sqrt(0.5**2 + 500.0**2))
  for apart, net_want, path_want in (
    (0.0, np.array([0.3, 0.4]) / total, np.array([300.0, 400.0]) / total),
    (1.0, np.array([0.3, 0.4]), np.array([0.6, 0.8])),
  ):
    tx = losses.make_joint_optimizer(
      cfg, 10, path_trainable=True, path_weight_decay=0.0, path_grad_clip=apart
    )
    upd, _ = tx.update(grads, tx.init(params), params)
    np.testing.assert_allclose(-np.asarray(upd["net"]["w"]) * cfg.eps, net_want, rtol=1e-3)
    np.testing.assert_allclose(-np.asarray(upd["path"]["u"]) * cfg.eps, path_want, rtol=1e-3)


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
