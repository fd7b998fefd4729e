"""Known-answer tests of the MinPV objectives and their optimiser: the plain and bridge target
variances against Monte Carlo, the practical = ideal + path-variance decomposition, gradients
through the stop-gradients and the penalty, time-only weights, the implicit loss, the loss
normaliser (1 without the penalty, a fixed-grid mean with it), and per-group weight decay and
gradient clipping of θ and φ."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from iclr26_jax.core import optim as optim_lib
from iclr26_jax.minpv import benchmarks, losses, paths

D = 10
N_MC = 100_000
PATH_CASES = [(n, {}) for n in paths.FIXED_PATHS] + [("kmm", paths.kmm_init(5))]


def _co(name, phi, t):
  return paths.get_path(name)(phi, jnp.full((1,), t, jnp.float32))


@pytest.mark.parametrize("name,phi", PATH_CASES)
def test_plain_variance_matches_monte_carlo(name, phi):
  rng = np.random.default_rng(0)
  x1 = rng.standard_normal(D) * 1.3
  x0 = jnp.asarray(rng.standard_normal((N_MC, D)), jnp.float32)
  x1b = jnp.broadcast_to(jnp.asarray(x1, jnp.float32), (N_MC, D))
  for t in (0.2, 0.5, 0.8):
    co = _co(name, phi, t)
    cob = paths.PathCoeffs(*(jnp.broadcast_to(v, (N_MC,)) for v in co))
    c, xt = losses.plain_target(cob, x0, x1b, target_eps=0.0)
    c = np.asarray(c, np.float64)
    var = float(losses.plain_variance(co, float(np.sum(x1**2)), D, floor=0.0)[0])
    # Sample variance of c (a χ²_d plus Gaussian mixture, kurtosis ≤ 3 + 12/d) has relative
    # standard error ≤ √(3.2/N) ≈ 0.6 %; 3 % is > 5 standard errors.
    np.testing.assert_allclose(np.var(c), var, rtol=0.03)
    assert abs(np.mean(c)) < 5 * np.sqrt(var / N_MC)  # E[c | x1] = 0
    # The data-score target −x0/α has per-coordinate variance 1/α².
    np.testing.assert_allclose(np.var(np.asarray(xt)[:, 0]), 1 / float(co.alpha[0]) ** 2, rtol=0.03)


@pytest.mark.parametrize("name,phi", PATH_CASES)
def test_bridge_variance_matches_monte_carlo(name, phi):
  rng = np.random.default_rng(1)
  x0v, x1v = rng.standard_normal(D), rng.standard_normal(D) + 0.5 * rng.standard_normal(D)
  z = jnp.asarray(rng.standard_normal((N_MC, D)), jnp.float32)
  x0 = jnp.broadcast_to(jnp.asarray(x0v, jnp.float32), (N_MC, D))
  x1 = jnp.broadcast_to(jnp.asarray(x1v, jnp.float32), (N_MC, D))
  for t in (0.2, 0.5, 0.8):
    co = _co(name, phi, t)
    tt = jnp.full((1,), t)
    v, dv = paths.bridge_variance(co, tt, gamma=0.01, eps_b=0.005)
    cob = paths.PathCoeffs(*(jnp.broadcast_to(u, (N_MC,)) for u in co))
    c, _ = losses.bridge_target(
      cob, jnp.broadcast_to(v, (N_MC,)), jnp.broadcast_to(dv, (N_MC,)), x0, x1, z
    )
    c = np.asarray(c, np.float64)
    var = float(
      losses.bridge_variance_of_target(
        co, v, dv, np.sum(x0v**2), np.sum(x1v**2), np.dot(x0v, x1v), D, cross_term="exact"
      )[0]
    )
    np.testing.assert_allclose(np.var(c), var, rtol=0.03)  # as above: > 5 standard errors
    assert abs(np.mean(c)) < 5 * np.sqrt(var / N_MC)


def test_plain_variance_is_bridge_formula_with_v_alpha_squared():
  # (A) is (B)'s formula with v = α², v̇ = 2αα̇ and μ̇ = β̇ x1.
  co = _co("trig", {}, 0.37)
  m = 7.3
  a = co.alpha
  b = losses.bridge_variance_of_target(
    paths.PathCoeffs(a, co.beta, 0.0 * a, co.dbeta),
    a**2,
    2 * a * co.dalpha,
    0.0,
    m,
    0.0,
    D,
    cross_term="exact",
  )
  np.testing.assert_allclose(b, losses.plain_variance(co, m, D), rtol=1e-5)


def test_decomposition_practical_equals_ideal_plus_path_variance():
  # Gaussian pair, trig, d = 10, t = 0.6: E(g − c)² = E(g − s*)² + E c² − E s*² for any
  # g(x_t), with E c² = E_x1 Var(c | x1) = (2dα̇² + β̇² tr Σ)/α² and E s*² = ½Σ(ṡ/s)² in
  # closed form.
  task = benchmarks.make_task(D)
  n = 200_000
  k0, k1 = jax.random.split(jax.random.PRNGKey(0))
  x0, x1 = benchmarks.sample_p0(k0, n, task), benchmarks.sample_p1(k1, n, task)
  co = paths.PathCoeffs(*(jnp.broadcast_to(v, (n,)) for v in _co("trig", {}, 0.6)))
  xt = paths.interpolate_plain(co, x0, x1)
  c, _ = losses.plain_target(co, x0, x1, target_eps=0.0)
  s_star = benchmarks.time_score(xt, co, task)
  c, s_star = np.asarray(c, np.float64), np.asarray(s_star, np.float64)
  co1 = _co("trig", {}, 0.6)
  ec2 = float(losses.plain_variance(co1, float(D), D)[0])  # tr Σ = d
  es2 = float(benchmarks.time_score_second_moment(co1, task)[0])
  v = ec2 - es2
  # Monte Carlo E c² (relative s.e. ≈ √(Var c²/(E c²)² / n) ≈ √(3/n) ≈ 0.4 %): 2 % tolerance.
  np.testing.assert_allclose(np.mean(c**2), ec2, rtol=0.02)
  np.testing.assert_allclose(np.mean(s_star**2), es2, rtol=0.02)
  np.testing.assert_allclose(np.mean((c - s_star) ** 2), v, rtol=0.02)
  g = 0.05 * np.sum(np.asarray(xt, np.float64) ** 2, axis=1) - 0.4  # an arbitrary "network"
  practical, ideal = np.mean((g - c) ** 2), np.mean((g - s_star) ** 2)
  np.testing.assert_allclose(practical - ideal, v, rtol=0.03)
  assert es2 > 0.05 * ec2  # the dropped E[s*²] matters at moderate t, so V ≠ E c²


def _fake_score(scale):
  def score(net, x, t):
    s = net["w"] * jnp.sum(x**2, axis=1) + net["b"] * t
    return s, scale * x

  return score


def _batch(n=64, seed=0):
  rng = np.random.default_rng(seed)
  return {
    "x0": jnp.asarray(rng.standard_normal((n, D)), jnp.float32),
    "x1": jnp.asarray(rng.standard_normal((n, D)), jnp.float32),
  }


@pytest.mark.parametrize("interpolant", ["plain", "bridge"])
def test_stop_gradients_penalty_is_the_only_path_to_phi(interpolant):
  # x_t, c and λ are under stop_gradient: without the penalty φ gets exactly zero gradient, the
  # penalty does not touch θ's gradient direction, and (plain, penalty at the regression t, the
  # reference's batch normaliser) the φ-gradient equals ∇φ mean Var(c | x1; t, φ) / sg(mean Var_w)
  # computed from the closed form alone. Without the penalty the loss is not normalised, so θ's
  # gradient with the penalty is the one without it divided by the normaliser.
  params = {"net": {"w": jnp.array(0.1), "b": jnp.array(-0.3)}, "path": paths.kmm_init(5)}
  fn = paths.get_path("kmm")
  key = jax.random.PRNGKey(3)
  batch = _batch()

  @jax.jit
  def grads(p):
    out = []
    for pen in (True, False):
      s = losses.LossSettings(
        interpolant=interpolant,
        objective="joint",
        penalty=pen,
        penalty_t="same",
        var_for_weights="exact",
        var_floor=1e-3,
        normalizer="batch",
      )
      out.append(
        jax.grad(lambda q: losses.conditional_loss(_fake_score(0.2), q, batch, key, fn, s)[0])(p)
      )
    return out

  with_pen, without = grads(params)
  assert all(float(jnp.max(jnp.abs(g))) == 0.0 for g in jax.tree.leaves(without["path"]))
  assert max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(with_pen["path"])) > 0
  _, info = losses.conditional_loss(
    _fake_score(0.2),
    params,
    batch,
    key,
    fn,
    losses.LossSettings(
      interpolant=interpolant,
      objective="joint",
      penalty=True,
      penalty_t="same",
      var_for_weights="exact",
      var_floor=1e-3,
      normalizer="batch",
    ),
  )
  np.testing.assert_allclose(info["tsm/normalizer"], info["tsm/var_mean"], rtol=1e-6)
  for a, b in zip(jax.tree.leaves(with_pen["net"]), jax.tree.leaves(without["net"])):
    np.testing.assert_allclose(a * info["tsm/normalizer"], b, rtol=1e-5)
  if interpolant == "plain":
    t = losses.sample_times(jax.random.split(key, 3)[0], 64)
    sq = jnp.sum(batch["x1"] ** 2, axis=1)
    norm = jnp.mean(losses.plain_variance(fn(params["path"], t), sq, D, floor=0.0))
    ref = jax.jit(
      jax.grad(lambda phi: jnp.mean(losses.plain_variance(fn(phi, t), sq, D, floor=1e-3)) / norm)
    )(params["path"])
    for a, b in zip(jax.tree.leaves(with_pen["path"]), jax.tree.leaves(ref)):
      np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-9)


def test_time_only_weights_use_batch_moments():
  batch = _batch()
  key = jax.random.PRNGKey(7)
  fn = paths.get_path("trig")
  params = {"net": {"w": jnp.array(0.0), "b": jnp.array(0.0)}, "path": {}}
  s = losses.LossSettings(weights="time_only", var_for_weights="exact", penalty=False)
  _, info = losses.conditional_loss(_fake_score(0.0), params, batch, key, fn, s)
  t = losses.sample_times(jax.random.split(key, 3)[0], 64)
  m = jnp.mean(jnp.sum(batch["x1"] ** 2, axis=1))
  expect = jnp.mean(losses.plain_variance(fn({}, t), m, D))
  np.testing.assert_allclose(info["tsm/var_mean"], expect, rtol=1e-5)


@pytest.mark.parametrize("interpolant", ["plain", "bridge"])
def test_implicit_loss_is_half_weighted_ideal_loss_up_to_a_constant(interpolant):
  # Around the analytic s* of the Gaussian pair (plain: cov α²I + β²Σ; bridge: + v I), the
  # DRE-∞ loss must satisfy L(s* + h) − L(s*) = ½ ∫ λ h² dt. Split into the part odd in h,
  # ½[L(s*+h) − L(s*−h)], whose expectation is 0 only if the boundary terms, λ̇ s and λ ∂_t s
  # (jvp) all carry the right sign (any one sign error moves it by ≥ κ ∫λ), and the even part,
  # ½[L(s*+h) + L(s*−h)] − L(s*), which must equal ½ ∫ λ h².
  task = benchmarks.make_task(D)
  n = 50_000
  k0, k1, kl = jax.random.split(jax.random.PRNGKey(11), 3)
  batch = {"x0": benchmarks.sample_p0(k0, n, task), "x1": benchmarks.sample_p1(k1, n, task)}
  s = losses.LossSettings(interpolant=interpolant, objective="implicit")
  fn = paths.get_path("trig")

  def star(x, t):
    co = fn({}, t)
    if interpolant == "plain":
      return benchmarks.time_score(x, co, task)
    return benchmarks.time_score(
      x, co, task, bridge=paths.bridge_variance(co, t, gamma=0.01, eps_b=0.005)
    )

  @jax.jit
  def loss(kappa, power):
    score = lambda net, x, t: (star(x, t) + kappa * t**power, None)
    return losses.implicit_loss(score, {"net": {}, "path": {}}, batch, kl, fn, s)[0]

  t_fine = np.linspace(1e-5, 1 - 1e-5, 20001)
  co = fn({}, jnp.asarray(t_fine))
  if interpolant == "plain":
    lam = np.asarray(co.alpha, np.float64) ** 2
  else:
    lam = np.asarray(
      paths.bridge_variance(co, jnp.asarray(t_fine), gamma=0.01, eps_b=0.005)[0], np.float64
    )
  l0 = float(loss(0.0, 0.0))
  for kappa, power in ((1.0, 0.0), (2.0, 1.0)):
    up, dn = float(loss(kappa, power)), float(loss(-kappa, power))
    odd, even = 0.5 * (up - dn), 0.5 * (up + dn) - l0
    expect = 0.5 * np.trapezoid(lam * (kappa * t_fine**power) ** 2, t_fine)
    # Even part: Monte Carlo over 5e4 uniform t of a smooth integrand, relative s.e. < 0.7 %.
    np.testing.assert_allclose(even, expect, rtol=0.03)
    # Odd part: zero-mean noise from λ s* h (≈ 1.5 % of κ∫λ at n = 5e4); a sign error costs ≥ κ∫λ.
    assert abs(odd) < 0.1 * kappa * np.trapezoid(lam, t_fine), (odd, kappa)


def test_optimizer_groups_have_their_own_weight_decay():
  cfg = optim_lib.optim_defaults()
  cfg.name, cfg.learning_rate, cfg.weight_decay, cfg.grad_clip = "adamw", 0.1, 0.01, 1.0
  params = {"net": {"w": jnp.ones(3)}, "path": {"u": jnp.ones(2)}}
  zero = jax.tree.map(jnp.zeros_like, params)
  for trainable, path_wd, expect_path in ((True, 0.5, 1 - 0.1 * 0.5), (False, 0.5, 1.0)):
    tx = losses.make_joint_optimizer(cfg, 100, path_trainable=trainable, path_weight_decay=path_wd)
    upd, _ = tx.update(zero, tx.init(params), params)
    new = optax.apply_updates(params, upd)
    np.testing.assert_allclose(new["net"]["w"], 1 - 0.1 * 0.01, rtol=1e-6)
    np.testing.assert_allclose(new["path"]["u"], expect_path, rtol=1e-6)


def test_settings_and_shape_errors():
  with pytest.raises(ValueError, match="weights"):
    losses.LossSettings(weights="sometimes")
  with pytest.raises(ValueError, match="var_floor"):
    losses.LossSettings(var_floor=-1.0)
  with pytest.raises(ValueError, match="x0 and x1"):
    losses.plain_target(_co("trig", {}, 0.5), jnp.ones((1, 3)), jnp.ones((1, 4)))
  with pytest.raises(ValueError, match="data-score head"):
    losses.conditional_loss(
      lambda n, x, t: (jnp.zeros(x.shape[0]), None),
      {"net": {}, "path": {}},
      _batch(8),
      jax.random.PRNGKey(0),
      paths.get_path("trig"),
      losses.LossSettings(objective="joint"),
    )
  with pytest.raises(ValueError, match="batch"):
    losses.conditional_loss(
      None,
      {"net": {}, "path": {}},
      {"x": 1},
      jax.random.PRNGKey(0),
      paths.get_path("trig"),
      losses.LossSettings(),
    )


# -- the loss normaliser and gradient clipping of θ and φ ------------------------------------------


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
