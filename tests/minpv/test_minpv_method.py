"""Config and trainer plumbing of the MinPV method package: the configs and their errors, batches,
the smoke run's logs, checkpoints and resume, the presolve, the data tasks, and the integrators
and importance-sampled times through ``MinPVMethod``."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs.minpv import gaussian_mi
from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv import benchmarks, losses, paths
from iclr26_jax.minpv.config import default_config
from iclr26_jax.minpv.method import MinPVMethod, loss_settings, make_task


def test_default_config_is_faithful_except_the_documented_departures():
  c = default_config()
  s = loss_settings(c)
  # Every reference switch, except the deterministic normaliser and φ clipped apart.
  assert s == losses.LossSettings(objective="joint", penalty=True, normalizer="grid")
  assert c.path.grad_clip == 1.0 and c.model.time_scale == 0.0
  # gaussian_mi.py's default is the measured conditional + fixed-preset recipe; its `faithful`
  # variant restores the reference's switches including its batch normaliser and shared clip.
  g = gaussian_mi.get_config("faithful")
  assert loss_settings(g) == losses.LossSettings(
    objective="joint", penalty=True, normalizer="batch"
  )
  assert g.path.grad_clip == 0.0
  d = loss_settings(gaussian_mi.get_config(None))
  assert (d.objective, d.weights, d.var_for_weights, d.penalty) == (
    "conditional",
    "time_only",
    "exact",
    True,
  )
  # One variant per row of the MI table.
  imp, br = gaussian_mi.get_config("implicit"), gaussian_mi.get_config("bridge")
  assert (imp.loss.objective, imp.path.name) == ("implicit", "trig")
  assert (br.interpolant, br.path.name, br.loss.objective, br.bridge.gamma) == (
    "bridge",
    "linear",
    "implicit",
    1.0,
  )
  assert gaussian_mi.get_config("quadratic").model.kind == "quadratic"
  assert gaussian_mi.get_config("paper").batch_size == 9600
  assert (c.path.name, c.path.constraint, c.path.num_components) == ("kmm", "spherical", 5)
  assert (c.optim.name, c.optim.learning_rate, c.optim.weight_decay, c.optim.grad_clip) == (
    "adamw",
    1e-3,
    1e-5,
    1.0,
  )
  assert (c.estimate.nodes, c.estimate.grid) == (100, "uniform")


def test_experiment_config_variants_and_overrides():
  c = gaussian_mi.get_config("smoke,data.dim=20,path.name=trig,data.rho=0.5")
  assert c.num_steps == 20 and c.path.name == "trig"
  task = make_task(c)
  assert (task.dim, task.rho) == (20, 0.5)
  c = gaussian_mi.get_config("data.dim=40")
  assert make_task(c).mi == pytest.approx(10.0)  # d/4 rule
  assert make_task(gaussian_mi.get_config("data.mi=3.0")).mi == pytest.approx(3.0)
  c = gaussian_mi.get_config("fixed")
  s = loss_settings(c)
  assert (s.weights, s.var_for_weights, s.cross_term) == ("time_only", "exact", "exact")
  with pytest.raises(config_lib.ConfigError, match="variant"):
    gaussian_mi.get_config("nosuchvariant")


def test_config_errors_name_the_key():
  with pytest.raises(config_lib.ConfigError, match="loss.objective"):
    loss_settings(gaussian_mi.get_config("loss.objective=implicit"))
  # A frozen KMM with the implicit objective is a fixed schedule: allowed.
  s = loss_settings(gaussian_mi.get_config("loss.objective=implicit,path.training=frozen"))
  assert not s.penalty
  with pytest.raises(config_lib.ConfigError, match="data"):
    make_task(gaussian_mi.get_config("data.dim=7"))
  with pytest.raises(config_lib.ConfigError, match="path.name"):
    MinPVMethod(gaussian_mi.get_config("smoke,path.name=spline"))
  with pytest.raises(config_lib.ConfigError, match="loss"):
    loss_settings(gaussian_mi.get_config("loss.weights=sometimes"))


def test_batches_depend_on_the_step_only_and_have_the_task_law():
  m = MinPVMethod(gaussian_mi.get_config("smoke,batch_size=4096"))
  a, b = m.get_batch(3), m.get_batch(3)
  np.testing.assert_array_equal(a["x1"], b["x1"])
  assert not np.array_equal(a["x1"], m.get_batch(4)["x1"])
  cov = np.cov(a["x1"].T.astype(np.float64))
  np.testing.assert_allclose(cov[0, 1], m.task.rho, atol=0.06)  # s.e. ≈ 0.01
  np.testing.assert_allclose(np.cov(a["x0"].T)[0, 1], 0.0, atol=0.06)
  np.testing.assert_allclose(
    m.log_r_eval, benchmarks.true_log_ratio(jnp.asarray(m.x_eval), m.task), rtol=1e-6
  )


@pytest.mark.slow
def test_smoke_run_logs_checkpoints_and_resumes(tmp_path):
  from iclr26_jax.core import trainer

  cfg = gaussian_mi.get_config("smoke,progress_bar=False")
  res = trainer.train(MinPVMethod(cfg), cfg, str(tmp_path))
  for key in ("eval/mi_estimate", "eval/mi_true", "eval/log_ratio_rmse", "eval/quad_gap"):
    assert np.isfinite(res.eval_metrics[key]), key
  assert res.eval_metrics["eval/mi_true"] == pytest.approx(2.0)
  for key in ("tsm/loss", "path/penalty", "path/alpha_at_0.5", "train/grad_norm"):
    assert np.isfinite(res.metrics[key]), key
  # φ is trained: α(0.5) moved from its initial value.
  alpha0 = float(paths.kmm(paths.kmm_init(5), jnp.array([0.5])).alpha[0])
  assert res.metrics["path/alpha_at_0.5"] != pytest.approx(alpha0, abs=1e-7)
  assert os.path.isdir(tmp_path / "checkpoints" / "20")
  with open(tmp_path / "config.json") as f:
    assert json.load(f)["loss"]["weights"] == "time_only"  # gaussian_mi.py's measured default
  again = trainer.train(MinPVMethod(cfg), cfg, str(tmp_path))
  assert again.resumed_from == 20


@pytest.mark.slow
def test_presolve_freeze_fits_the_geodesic_and_bridge_update_runs():
  import jax
  from iclr26_jax.minpv import analysis

  # presolve_freeze: init_state solves the path-only problem (m = E‖x1‖² = tr Σ = d) and the
  # optimiser leaves φ alone afterwards.
  cfg = gaussian_mi.get_config("smoke,path.training=presolve_freeze,path.presolve_steps=1000")
  m = MinPVMethod(cfg)
  state = jax.jit(m.init_state)(jax.random.PRNGKey(0))
  probes = jnp.asarray([0.1, 0.25, 0.5, 0.75, 0.9])
  geo = analysis.geodesic(dim=10, m=m.second_moment)
  alpha = paths.kmm(state.params["path"], probes).alpha
  # The tolerance of the path-only fit in test_minpv_analysis.py.
  np.testing.assert_allclose(alpha, geo.alpha_at(np.asarray(probes)), atol=0.04)
  batch = jax.tree.map(jnp.asarray, m.get_batch(0))
  new, metrics = jax.jit(m.update)(state, batch)
  for a, b in zip(jax.tree.leaves(new.params["path"]), jax.tree.leaves(state.params["path"])):
    np.testing.assert_array_equal(a, b)
  assert float(metrics["path/penalty"]) == 0.0
  # The dequantified bridge with a trainable KMM and the joint objective: one finite step that
  # moves φ.
  cfg = gaussian_mi.get_config("smoke,interpolant=bridge,loss.cross_term=exact")
  m = MinPVMethod(cfg)
  state = jax.jit(m.init_state)(jax.random.PRNGKey(0))
  new, metrics = jax.jit(m.update)(state, jax.tree.map(jnp.asarray, m.get_batch(0)))
  assert all(np.isfinite(float(v)) for v in metrics.values())
  moved = [
    float(jnp.max(jnp.abs(a - b)))
    for a, b in zip(jax.tree.leaves(new.params["path"]), jax.tree.leaves(state.params["path"]))
  ]
  assert max(moved) > 0


# ----------------------------------------------------- task selection (data.name) and new configs
def test_data_name_selects_the_task_and_is_validated():
  from experiments.configs.minpv import density_2d, digits, nonlinear_mi
  from iclr26_jax.minpv.method import TASKS

  m = MinPVMethod(nonlinear_mi.get_config("smoke,data.name=asinh_mi,data.dim=4,data.rho=0.5"))
  assert (m.data.kind, m.data.dim, m.data.map) == ("mi", 4, "asinh")
  assert m.data.mi == pytest.approx(-np.log1p(-0.25), rel=1e-12)  # 2 pairs × −½ log(1 − ρ²)
  task = benchmarks.make_mapped_task("asinh", 4, rho=0.5)
  np.testing.assert_allclose(
    m.log_r_eval, benchmarks.mapped_log_ratio(jnp.asarray(m.x_eval), task), rtol=1e-6
  )
  assert MinPVMethod(nonlinear_mi.get_config("smoke,implicit")).settings.objective == "implicit"
  m = MinPVMethod(density_2d.get_config("smoke,data.name=two_moons,path.name=trig"))
  assert (m.data.kind, m.data.dim, m.data.nll_true) == ("density", 2, None)
  assert digits.get_config("smoke").data.name == "digits"
  with pytest.raises(config_lib.ConfigError, match="data.name.*gaussian_mi.*checkerboard"):
    MinPVMethod(gaussian_mi.get_config("smoke,data.name=mnist"))
  assert set(TASKS) >= {"gaussian_mi", "half_cube_mi", "two_moons", "digits", "uci"}
  # Shuffled pairs are not N(0, I): the plain interpolant's conditional target is refused.
  with pytest.raises(config_lib.ConfigError, match="interpolant"):
    MinPVMethod(nonlinear_mi.get_config("smoke,interpolant=plain"))
  with pytest.raises(config_lib.ConfigError, match="estimate.method"):
    MinPVMethod(gaussian_mi.get_config("smoke,estimate.method=gauss"))


def test_mapped_mi_batches_pair_joint_and_product_of_marginals():
  from experiments.configs.minpv import nonlinear_mi

  m = MinPVMethod(nonlinear_mi.get_config("smoke,batch_size=20000,data.rho=0.8"))
  a = m.get_batch(5)
  np.testing.assert_array_equal(a["x0"], m.get_batch(5)["x0"])
  x0, x1 = a["x0"].astype(np.float64), a["x1"].astype(np.float64)
  # Half-cube of a ρ = 0.8 pair: strongly correlated; the shuffled pairs are not (s.e. ≈ 0.007).
  assert np.corrcoef(x1.T)[0, 1] > 0.6
  assert abs(np.corrcoef(x0.T)[0, 1]) < 0.035
  # Same marginals: E x² = E|u|³ = 2√(2/π) ≈ 1.60 in both (relative s.e. ≈ 1.6 %).
  for x in (x0, x1):
    np.testing.assert_allclose(np.mean(x**2, 0), 2 * np.sqrt(2 / np.pi), rtol=0.08)


def test_integrators_agree_through_the_method():
  # The untrained network's time score oscillates in t (sinusoidal features of 1000·t, periods
  # down to ≈ 0.006). Measured max deviations from trapezoid at 80000 nodes: trapezoid-20000
  # 1.5e-5, RK4-2001 (hω ≈ 0.5) 2.1e-5, dopri5 (diffrax) at tolerance 1e-7 7.8e-5 (470 steps,
  # 2821 evaluations); at the default 1e-5 dopri5 takes 96 steps and its global error grows to
  # 1.1e-2 (local error control). Every estimate.method is wired alike if all agree with the
  # trapezoid reference.
  from experiments.configs.minpv import nonlinear_mi

  outs = {}
  for method, nodes, tol in (("trapezoid", 20000, 1e-5), ("rk4", 2001, 1e-5), ("dopri5", 2, 1e-7)):
    cfg = nonlinear_mi.get_config(
      f"smoke,estimate.method={method},estimate.nodes={nodes},estimate.rtol={tol},"
      f"estimate.atol={tol},path.name=trig,loss.objective=conditional"
    )
    m = MinPVMethod(cfg)
    state = m.init_state(jax.random.PRNGKey(0))
    outs[method, tol] = m.log_ratio(state.params, m.x_eval[:64])
  ref = outs["trapezoid", 1e-5]
  np.testing.assert_allclose(outs["rk4", 1e-5], ref, atol=2e-4)
  np.testing.assert_allclose(outs["dopri5", 1e-7], ref, atol=3e-4)


# --------------------------------------------------------------- importance-sampled times (``is``)
def test_is_sampler_draws_times_with_density_proportional_to_one_over_the_variance():
  # With s_θ ≡ 0, time-only weights and the true (batch) moments, E[c² | t] = Var(t) on the
  # grid, so the mean of c² over IS draws is Σ_k q_k Var_k = G / Σ_k 1/Var_k (the harmonic mean
  # of Var); uniform draws give the arithmetic mean instead, orders of magnitude larger. The grid
  # law itself is checked against an independent NumPy evaluation of the trig-path variance.
  import jax

  task = benchmarks.make_task(2, rho=0.5)
  n = 40_000
  k0, k1 = jax.random.split(jax.random.PRNGKey(0))
  batch = {"x0": benchmarks.sample_p0(k0, n, task), "x1": benchmarks.sample_p1(k1, n, task)}
  zero = lambda net, x, t: (jnp.zeros_like(t), None)
  path_fn = paths.get_path("trig")
  s = losses.LossSettings(
    objective="conditional",
    weights="time_only",
    var_for_weights="exact",
    penalty=False,
    time_sampler="is",
    is_moments="data",
    is_grid=2000,
  )
  grid, logp = losses.is_log_probs(path_fn, {}, s, batch["x0"], batch["x1"])
  g = np.linspace(1e-5, 1 - 1e-5, 2000)
  a, da = np.cos(np.pi * g / 2), -np.pi / 2 * np.sin(np.pi * g / 2)
  db = np.pi / 2 * np.cos(np.pi * g / 2)
  m = float(np.mean(np.sum(np.asarray(batch["x1"], np.float64) ** 2, 1)))
  var = (2 * 2 * da**2 + db**2 * m) / a**2  # exact (A), d = 2
  # float32 α near t = 1 (α ≈ 1e-5) limits the relative accuracy of the smallest probabilities.
  np.testing.assert_allclose(
    np.exp(np.asarray(logp, np.float64)), (1 / var) / np.sum(1 / var), rtol=2e-3, atol=1e-9
  )
  _, info = jax.jit(
    lambda b: losses.conditional_loss(
      zero, {"net": {}, "path": {}}, b, jax.random.PRNGKey(3), path_fn, s
    )
  )(batch)
  harmonic, arithmetic = 1 / np.mean(1 / var), np.mean(var)
  assert arithmetic > 100 * harmonic
  # c² has a heavy tail (4th moment of a Gaussian quadratic form): 5 % at n = 40000.
  np.testing.assert_allclose(float(info["tsm/loss_normalised"]), harmonic, rtol=0.05)
  with pytest.raises(ValueError, match="is_log_probs"):
    losses.sample_times(jax.random.PRNGKey(0), 4, sampler="is")


def test_is_grid_path_is_refreshed_every_is_refresh_steps():
  import jax

  m = MinPVMethod(
    gaussian_mi.get_config("smoke,loss.time_sampler=is,loss.is_refresh=3,loss.is_grid=500")
  )
  state = jax.jit(m.init_state)(jax.random.PRNGKey(0))
  step = jax.jit(m.update)
  history = []
  for i in range(5):
    before = state.params["path"]
    state, metrics = step(state, jax.tree.map(jnp.asarray, m.get_batch(i)))
    assert np.isfinite(float(metrics["tsm/loss"]))
    history.append((before, state.extras["is_path"]))
  same = lambda x, y: all(
    np.array_equal(a, b) for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y))
  )
  # Steps 0, 3 refresh the grid to the φ they start from; steps 1, 2, 4 keep it.
  assert same(history[0][1], history[0][0]) and same(history[3][1], history[3][0])
  assert same(history[1][1], history[0][0]) and same(history[2][1], history[0][0])
  assert same(history[4][1], history[3][0]) and not same(history[3][0], history[0][0])


def test_additive_noise_task_through_the_method():
  from experiments.configs.minpv import nonlinear_mi

  m = MinPVMethod(
    nonlinear_mi.get_config("smoke,data.name=additive_noise_mi,data.noise_eps=0.2,batch_size=20000")
  )
  assert m.data.mi == pytest.approx(0.2 - np.log(0.4), rel=1e-12) and m.task is None
  assert np.all(np.isfinite(m.log_r_eval))
  b = m.get_batch(0)
  x0, x1 = b["x0"].astype(np.float64), b["x1"].astype(np.float64)
  # Corr(X, X + N) = √(1/12 / (1/12 + ε²/3)) ≈ 0.82 at ε = 0.2; shuffled: 0 (s.e. ≈ 0.007).
  np.testing.assert_allclose(
    np.corrcoef(x1.T)[0, 1], np.sqrt(1 / 12 / (1 / 12 + 0.04 / 3)), atol=0.02
  )
  assert abs(np.corrcoef(x0.T)[0, 1]) < 0.035
  np.testing.assert_allclose(x0[:, 0].mean(), 0.5, atol=0.01)  # U(0, 1) marginal
  with pytest.raises(config_lib.ConfigError, match="interpolant"):
    MinPVMethod(nonlinear_mi.get_config("smoke,data.name=additive_noise_mi,interpolant=plain"))
  with pytest.raises(config_lib.ConfigError, match="eps"):
    MinPVMethod(nonlinear_mi.get_config("smoke,data.name=additive_noise_mi,data.noise_eps=0.9"))


def test_gamma_exponential_task_through_the_method():
  from scipy import special
  from experiments.configs.minpv import nonlinear_mi

  m = MinPVMethod(
    nonlinear_mi.get_config(
      "smoke,data.name=gamma_exponential_mi,data.dim=2,data.gamma_shape=2.0,batch_size=20000"
    )
  )
  assert m.data.mi == pytest.approx(special.digamma(2.0) - np.log(2.0) + 0.5, rel=1e-12)
  assert np.all(np.isfinite(m.log_r_eval))
  b = m.get_batch(0)
  x0, x1 = b["x0"].astype(np.float64), b["x1"].astype(np.float64)
  # E[X] = k = 2 in both; joint: Y | X ~ Exp(X) so E[XY] = 1, product of marginals: E[X]E[Y] = 2.
  np.testing.assert_allclose(x1[:, 0].mean(), 2.0, atol=0.05)
  np.testing.assert_allclose((x1[:, 0] * x1[:, 1]).mean(), 1.0, atol=0.05)
  np.testing.assert_allclose((x0[:, 0] * x0[:, 1]).mean(), 2.0, atol=0.15)
  with pytest.raises(config_lib.ConfigError, match="shape"):
    MinPVMethod(nonlinear_mi.get_config("smoke,data.name=gamma_exponential_mi,data.gamma_shape=-1"))
