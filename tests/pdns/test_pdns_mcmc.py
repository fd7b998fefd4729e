"""PDNS particle benchmarks: MCMC reference samples and diagnostics (``pdns.mcmc``), the particle
metrics (``pdns.metrics.particle_metrics``) and the E(n)-equivariant control (``pdns.egnn``).

Oracles: quadrature of a 1-D double-well density (the MCMC law), the closed-form integrated
autocorrelation time of an AR(1) process (ESS), closed-form W2 between Gaussians, scipy's
``wasserstein_distance`` (W1), hand-computed distances of a square configuration, and exact
rotations / permutations / translations of the input (EGNN).
"""

import importlib
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from iclr26_jax.pdns import egnn, mcmc, method, metrics, particles


def _tilted_double_well(x, a):
  """E(x) = a (x^2 - 1)^2 + 0.5 x, x (N, 1) -> (N,); barrier about a (in units of kT)."""
  return a * (x[..., 0] ** 2 - 1.0) ** 2 + 0.5 * x[..., 0]


def _quadrature_cdf(a):
  g = np.linspace(-3.0, 3.0, 60001)
  p = np.exp(-np.asarray(_tilted_double_well(g[:, None], a), np.float64))
  cdf = np.cumsum(p)
  return g, cdf / cdf[-1]


def _ks(samples, g, cdf):
  xs = np.sort(np.asarray(samples, np.float64).ravel())
  f = np.interp(xs, g, cdf)
  n = xs.size
  return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


@pytest.mark.parametrize("temps,a", [(1, 1.0), (3, 3.0)])
def test_mcmc_double_well_matches_quadrature(temps, a):
  """MALA (barrier 1 kT) and parallel tempering (3 temperatures, barrier 3 kT, where plain MALA
  chains stay in their well at this length: split R-hat ~ 1.2) on a tilted double well, every
  chain started in the less likely well at x = +1, against the quadrature CDF. Bound: the 99%
  Kolmogorov-Smirnov quantile 1.63 / sqrt(n) for n independent draws, with n the measured bulk
  ESS (draws are 40 MCMC steps apart and nearly independent; the test also asserts
  ESS >= n_draws / 3 and R-hat < 1.05)."""
  chains, draws = 128, 10
  x0 = jnp.ones((chains, 1))
  key = jax.random.PRNGKey(temps)
  if temps == 1:
    out = mcmc.mala(
      lambda x: -_tilted_double_well(x, a),
      x0,
      key,
      num_burnin=300,
      num_samples=draws,
      thin=40,
      step_size=0.05,
    )
  else:
    out = mcmc.parallel_tempering(
      lambda x: _tilted_double_well(x, a),
      x0,
      key,
      (1.0, 0.5, 0.25),
      num_burnin=300,
      num_samples=draws,
      thin=40,
      swap_every=5,
      step_size=0.05,
    )
    assert np.all(np.asarray(out["swap_rate"]) > 0.2)
  s = np.asarray(out["samples"])[..., 0]  # (draws, chains)
  assert 0.4 < float(np.mean(out["accept_rate"])) < 0.75  # adapted to 0.574
  ess = mcmc.ess_bulk(s.T)
  assert ess >= s.size / 3, ess
  assert mcmc.split_rhat(s.T) < 1.05
  g, cdf = _quadrature_cdf(a)
  ks = _ks(s, g, cdf)
  assert ks < 1.63 / np.sqrt(min(ess, s.size)), (ks, ess)
  p_left = float(np.interp(0.0, g, cdf))
  assert abs(np.mean(s < 0) - p_left) < 4 * np.sqrt(p_left * (1 - p_left) / min(ess, s.size))


def test_diagnostics_match_ar1_closed_form():
  """Bulk ESS of AR(1) chains vs M N (1 - rho) / (1 + rho); split R-hat near 1 for stationary
  chains and well above 1 when one chain is shifted by one standard deviation."""
  rng = np.random.default_rng(0)
  rho, m, n = 0.6, 4, 4000
  e = rng.normal(size=(m, n))
  x = np.empty((m, n))
  x[:, 0] = e[:, 0] / np.sqrt(1 - rho**2)
  for t in range(1, n):
    x[:, t] = rho * x[:, t - 1] + e[:, t]
  want = m * n * (1 - rho) / (1 + rho)
  assert abs(mcmc.ess_bulk(x) / want - 1) < 0.12
  assert mcmc.split_rhat(x) < 1.01
  iid = rng.normal(size=(4, 1000))
  assert abs(mcmc.ess_bulk(iid) / 4000 - 1) < 0.12
  iid[0] += 1.0
  assert mcmc.split_rhat(iid) > 1.05
  trend = np.linspace(0, 3, 1000)[None] + rng.normal(size=(4, 1000))  # non-stationary
  assert mcmc.split_rhat(trend) > 1.1  # caught by splitting


def test_particle_metrics_closed_forms():
  rng = np.random.default_rng(1)
  a = jnp.asarray(rng.normal(0.0, 1.0, 20000), jnp.float32)
  b = jnp.asarray(rng.normal(1.0, 2.0, 20000), jnp.float32)
  # W2(N(0, 1), N(1, 4))^2 = (0 - 1)^2 + (1 - 2)^2 = 2; sampling sd of the estimate ~ 0.01.
  assert abs(float(metrics.w2_1d(a, b)) - np.sqrt(2.0)) < 0.04
  np.testing.assert_allclose(
    float(metrics.w1_1d(a[:300], b[:200])),
    stats.wasserstein_distance(np.asarray(a[:300]), np.asarray(b[:200])),
    rtol=1e-4,
  )
  assert float(metrics.histogram_tv(a, a, 50, -4.0, 4.0)) == 0.0
  assert abs(float(metrics.histogram_tv(a, a + 20.0, 50, -30.0, 30.0)) - 1.0) < 1e-6
  # A square of side 2 (DW-4 layout): distances 2 (x4) and 2 sqrt 2 (x2); scaled by 1.5.
  sq = jnp.asarray([[0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 2.0]])
  system = particles.dw4()
  pm = metrics.particle_metrics(system.energy, sq, 1.5 * sq, 4, 2, bins=80, dist_range=(0, 8))
  r = np.array([2.0] * 4 + [2 * np.sqrt(2)] * 2)
  np.testing.assert_allclose(float(pm["distance_w1"]), np.mean(0.5 * r), rtol=1e-5)
  np.testing.assert_allclose(float(pm["distance_w2"]), np.sqrt(np.mean((0.5 * r) ** 2)), rtol=1e-5)
  assert float(pm["distance_tv"]) == 1.0  # disjoint bins
  e = lambda rr: np.sum(-4 * (rr - 4) ** 2 + 0.9 * (rr - 4) ** 4)
  np.testing.assert_allclose(float(pm["energy_w2"]), abs(e(r) - e(1.5 * r)), rtol=1e-5)


def _random_params(params, seed, scale=0.3):
  """Every leaf redrawn N(0, scale^2) with numpy (the zero-initialised head included)."""
  rng = np.random.default_rng(seed)
  return jax.tree_util.tree_map(
    lambda l: np.asarray(scale * rng.normal(size=l.shape), np.float32), params
  )


@pytest.mark.parametrize("n,s", [(4, 2), (5, 3)])
def test_egnn_is_e_n_equivariant(n, s):
  """u(R x P + t) = R u(x) P (rotation / reflection, permutation, translation), to 1e-5; the
  output is CoM-free and zero at initialisation."""
  net = egnn.EGNNControl(n_particles=n, spatial_dim=s, hidden=8, depth=1)
  rng = np.random.default_rng(n)
  x = jnp.asarray(rng.normal(size=(3, n * s)), jnp.float32)
  t = jnp.asarray([0.1, 0.5, 0.9])
  params0 = jax.jit(net.init)(jax.random.PRNGKey(n), t, x)
  apply = jax.jit(net.apply)
  assert float(jnp.max(jnp.abs(apply(params0, t, x)))) == 0.0  # u = 0: P^theta = P^ref
  params = _random_params(params0, n)
  u = apply(params, t, x).reshape(3, n, s)
  assert float(jnp.max(jnp.abs(u))) > 1e-2  # not trivially zero
  np.testing.assert_allclose(np.asarray(u).sum(1), 0.0, atol=1e-5)
  q, _ = np.linalg.qr(rng.normal(size=(s, s)))
  q[:, 0] *= -1.0  # include reflections
  perm = np.roll(np.arange(n), 1)
  shift = np.arange(1.0, s + 1.0)
  xt = (np.asarray(x).reshape(3, n, s)[:, perm] @ q.T + shift).reshape(3, n * s)
  ut = np.asarray(apply(params, t, jnp.asarray(xt, jnp.float32))).reshape(3, n, s)
  np.testing.assert_allclose(ut, np.asarray(u)[:, perm] @ q.T, atol=1e-5)


def _config(name, arg):
  return importlib.import_module(f"experiments.configs.pdns.{name}").get_config(arg)


def test_dw4_smoke_eval_reports_particle_metrics(tmp_path, capsys):
  """dw4 smoke with the EGNN control: the tiny MCMC reference is generated once (with a
  message), cached by its settings and reloaded; the eval reports the particle metrics, and
  the reference energies stored by the sampler agree with the target's energy function."""
  arg = (
    "smoke,sampler.network=egnn,sampler.hidden=8,sampler.sde_steps=4,eval.num_samples=64,"
    f"eval.reference.cache_dir={tmp_path}"
  )
  m = method.PDNSMethod(_config("dw4", arg))
  assert "generating dw4 reference samples" in capsys.readouterr().err
  assert not m.reference["cached"] and os.path.exists(m.reference["path"])
  ref = m.reference
  np.testing.assert_allclose(
    ref["energy"],
    np.asarray(particles.dw4().energy(jnp.asarray(ref["samples"]))),
    rtol=1e-4,
    atol=1e-3,
  )
  np.testing.assert_allclose(ref["samples"].reshape(-1, 4, 2).mean(1), 0.0, atol=1e-4)
  assert {"energy/rhat", "energy/ess_bulk", "mean_dist/rhat", "accept_rate"} <= set(ref["diag"])
  state = types.SimpleNamespace(
    extras={"ema": jax.jit(m.sampler.init_params)(jax.random.PRNGKey(0))}
  )  # evaluate reads the EMA parameters only
  out = m.evaluate(state)
  for k in ("eval/energy_w2", "eval/distance_w2", "eval/distance_w1", "eval/distance_tv"):
    assert np.isfinite(out[k]), (k, out)
  np.testing.assert_allclose(out["eval/energy_mean_ref"], np.mean(ref["energy"]), rtol=1e-4)
  again = method.PDNSMethod(_config("dw4", arg))
  assert again.reference["cached"]
  np.testing.assert_array_equal(again.reference["samples"], ref["samples"])
