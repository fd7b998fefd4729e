"""Known-answer tests of the PDNS metrics: importance-sampling log Z / ELBO /
ESS against closed forms, MMD against the Gaussian closed form, Sinkhorn divergence against W2^2
of a translated cloud, 1-D W2 against replication and Gaussian closed forms, mode weights, lattice
statistics and TV against exact enumeration.

PDNS: Guo, Choi, Zhu, Tao, Chen, ICLR 2026; reference code github.com/AlexandreGUO2001/PDNS.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize, spatial, stats

from iclr26_jax.pdns import discrete_targets, metrics, particles, targets


def _normal(seed, n, d):
  return jax.random.normal(jax.random.PRNGKey(seed), (n * d,)).reshape(n, d)


# --------------------------------------------------------------------------- importance weights


def test_exact_proposal_gives_exact_log_z_and_unit_ess():
  mean, cov, log_z = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, 2.0]), 1.3
  tgt = targets.gaussian(mean, cov, log_z=log_z)
  x = np.asarray(tgt.sample(jax.random.PRNGKey(0), 2000), np.float64)
  lw = np.asarray(
    tgt.log_prob_unnorm(jnp.asarray(x, jnp.float32)), np.float64
  ) - stats.multivariate_normal(mean, np.diag(cov)).logpdf(x)
  lw = jnp.asarray(lw, jnp.float32)
  assert abs(float(metrics.log_z_hat(lw)) - log_z) < 1e-4
  assert abs(float(metrics.elbo(lw)) - log_z) < 1e-4
  assert abs(float(metrics.ess(lw)) - 1.0) < 1e-5
  st = metrics.weight_stats(lw)
  assert abs(float(st["eval/path_kl"])) < 1e-4
  assert abs(float(st["weights/max_wbar"]) - 1 / 2000) < 1e-6


def test_gaussian_importance_sampling_log_z_elbo_ess_closed_forms():
  # target pi~ = e^{log_z} N(1, 1), proposal q = N(0, 2^2)
  n, log_z = 200000, -0.4
  x = 2.0 * np.asarray(jax.random.normal(jax.random.PRNGKey(1), (n,)), np.float64)
  lw = log_z + stats.norm(1, 1).logpdf(x) - stats.norm(0, 2).logpdf(x)
  w = np.exp(lw - log_z)
  lw = jnp.asarray(lw, jnp.float32)
  assert abs(float(metrics.log_z_hat(lw)) - log_z) < 5 * np.std(w) / math.sqrt(n)
  # ELBO = log Z - KL(q || p), KL(N(0,4) || N(1,1)) = log(1/2) + (4 + 1) / 2 - 1/2
  kl = math.log(0.5) + 2.5 - 0.5
  assert abs(float(metrics.elbo(lw)) - (log_z - kl)) < 5 * np.std(np.log(w)) / math.sqrt(n)
  # ESS -> 1 / E_q[(p/q)^2]
  m2, _ = integrate.quad(
    lambda t: math.exp(2 * stats.norm(1, 1).logpdf(t) - stats.norm(0, 2).logpdf(t)), -30, 30
  )
  assert abs(float(metrics.ess(lw)) - 1 / m2) < 0.02
  # per-stage ESS matches the global one row by row; a single dominant weight gives 1/N
  stacked = jnp.stack([lw[:1000], lw[1000:2000], jnp.zeros(1000).at[3].set(80.0)])
  per = np.asarray(metrics.ess_per_stage(stacked))
  np.testing.assert_allclose(
    per[:2], [float(metrics.ess(lw[:1000])), float(metrics.ess(lw[1000:2000]))], rtol=1e-5
  )
  assert abs(per[2] - 1e-3) < 1e-6
  with pytest.raises(ValueError, match="log_w"):
    metrics.ess(stacked)


# ---------------------------------------------------------------------------- sample distances


def test_mmd_closed_form_null_and_median_bandwidth():
  n, d, h = 500, 2, 1.5
  shift = jnp.array([1.0, 0.0])
  # E k(a, b) for a ~ N(0, I), b ~ N(mu, I): (h^2 / (h^2 + 2))^{d/2} exp(-|mu|^2 / (2 (h^2 + 2)))
  base = (h * h / (h * h + 2)) ** (d / 2)
  exact = 2 * base * (1 - math.exp(-1.0 / (2 * (h * h + 2))))
  vals, nulls = [], []
  for seed in range(8):  # independent replicates: unbiasedness within their SE
    x, y = _normal(10 * seed, n, d), _normal(10 * seed + 1, n, d)
    val, bw = metrics.mmd(x, y + shift, bandwidth=h)
    vals.append(float(val))
    nulls.append(float(metrics.mmd(x, y, bandwidth=h)[0]))
  assert float(bw) == pytest.approx(h)
  vals, nulls = np.array(vals), np.array(nulls)
  assert abs(vals.mean() - exact) < 5 * vals.std(ddof=1) / math.sqrt(8)
  assert abs(nulls.mean()) < 5 * nulls.std(ddof=1) / math.sqrt(8)
  assert vals.min() > 10 * np.abs(nulls).max()
  # median heuristic equals the median pairwise distance of the pooled sample
  x, y2 = _normal(2, 200, d), _normal(3, 200, d) + shift
  pooled = np.concatenate([np.asarray(x), np.asarray(y2)])
  _, bw_med = metrics.mmd(x, y2)
  assert abs(float(bw_med) - np.median(spatial.distance.pdist(pooled))) < 1e-4


def test_sinkhorn_divergence_identical_translated_and_independent_clouds():
  n, d = 150, 3
  x = _normal(5, n, d)
  v = jnp.array([1.0, 0.5, 0.0])
  same, info = metrics.sinkhorn_corrected(x, x)
  assert bool(info["converged"]) and info["epsilon"] == 2e-6
  assert abs(float(same)) < 1e-4
  # independent clouds of equal size: at eps = 2e-6, S_eps = exact W2^2 (linear assignment) up
  # to O(eps log n)
  y = _normal(6, n, d)
  indep, info = metrics.sinkhorn_corrected(x, y)
  assert bool(info["converged"])
  cost = spatial.distance.cdist(np.asarray(x), np.asarray(y), "sqeuclidean")
  rows, cols = optimize.linear_sum_assignment(cost)
  w2sq = cost[rows, cols].mean()
  assert abs(float(indep) - w2sq) < 1e-3 * w2sq
  # any eps: a translation adds a separable term to the cost, so the plans are unchanged and
  # S_eps(x, x + v) = |v|^2 exactly
  coarse, info = metrics.sinkhorn_divergence(x, x + v, 0.5)
  assert bool(info["converged"])
  assert abs(float(coarse) - float(jnp.sum(v**2))) < 1e-3
  with pytest.raises(ValueError, match="shapes"):
    metrics.sinkhorn_divergence(x, x[:, :2], 1e-3)


def test_w2_1d_replication_gaussian_and_energy_w2():
  a = np.asarray(_normal(7, 300, 1))[:, 0]
  b = np.asarray(_normal(8, 200, 1))[:, 0] * 1.3 + 0.4
  got = float(metrics.w2_1d(jnp.asarray(a), jnp.asarray(b), squared=True))
  # same empirical laws with equal sizes: repeat each sample of a 2x, of b 3x, then sort
  ref = np.mean((np.sort(np.repeat(a, 2)) - np.sort(np.repeat(b, 3))) ** 2)
  assert abs(got - ref) < 1e-5 * max(1.0, ref)
  assert abs(float(metrics.w2_1d(jnp.asarray(a), jnp.asarray(a + 0.7))) - 0.7) < 1e-5
  # Gaussians with equal sigma: W2 = |mu1 - mu2|
  n = 40000
  g1 = jax.random.normal(jax.random.PRNGKey(9), (n,))
  g2 = jax.random.normal(jax.random.PRNGKey(10), (n,)) + 1.5
  assert abs(float(metrics.w2_1d(g1, g2)) - 1.5) < 0.05
  # energy W2 of DW-4 samples against themselves is zero, positive against a perturbed set
  dw = particles.dw4()
  cfg = jnp.asarray(
    np.tile([0.0, 0.0, 4.0, 0.0, 0.0, 4.0, 4.0, 4.0], (64, 1))
    + 0.2 * np.random.default_rng(0).standard_normal((64, 8)),
    jnp.float32,
  )
  assert float(metrics.energy_w2(dw.energy, cfg, cfg)) == 0.0
  assert float(metrics.energy_w2(dw.energy, cfg, cfg * 1.2)) > 0.1
  dd = float(metrics.distance_w2(cfg, cfg * 1.2, 4, 2))
  # every distance scales by 1.2: W2 = 0.2 * sqrt(mean r^2)
  r = np.asarray(particles.pair_distances(cfg, 4, 2)).reshape(-1)
  assert abs(dd - 0.2 * math.sqrt(np.mean(r**2))) < 1e-4


# ----------------------------------------------------------------------------------------- modes


def test_mode_weights_on_exact_samples_and_collapse():
  g = targets.two_mode_10d((0.3, 0.7))
  x = g.sample(jax.random.PRNGKey(11), 10000)
  a = metrics.nearest_center(x, g.means)
  brute = np.argmin(((np.asarray(x)[:, None] - np.asarray(g.means)[None]) ** 2).sum(-1), 1)
  np.testing.assert_array_equal(np.asarray(a), brute)
  w = np.asarray(metrics.mode_weights(a, 2))
  assert abs(w[0] - 0.3) < 5 * math.sqrt(0.21 / 10000)
  tv = float(metrics.mode_weight_tv(a, g.mode_weights_exact()))
  assert tv < 5 * math.sqrt(0.21 / 10000)
  collapsed = jnp.ones(500, jnp.int32)  # every sample in the 0.7 mode
  assert abs(float(metrics.mode_weight_tv(collapsed, g.mode_weights_exact())) - 0.3) < 1e-6


# -------------------------------------------------------------------------------------- lattices


@pytest.fixture(scope="module")
def ising3():
  beta = 0.5
  return (discrete_targets.ising(3, beta), discrete_targets.lattice_exact_stats(3, beta, chunk=64))


def test_ising_sample_stats_match_exact_within_mc_error(ising3):
  tgt, exact = ising3
  n = 20000
  x = tgt.sample(jax.random.PRNGKey(12), n)
  st = metrics.ising_sample_stats(x)
  assert abs(float(st["p_neg"]) - exact["p_neg"]) < 5 * math.sqrt(0.25 / n)
  mag = np.abs(2 * np.asarray(x).sum(-1) - 9) / 9
  assert float(metrics.magnetisation_error(st, exact)) < 5 * mag.std() / math.sqrt(n)
  assert float(metrics.correlation_error(st, exact)) < 3 / math.sqrt(n)
  # a sign-collapsed sampler (only samples with M > 0) has P(M < 0) = 0, while at h = 0 its
  # two-point correlations (even under the global flip) stay correct: only P(M < 0) detects it
  pos = x[np.asarray(x).sum(-1) >= 5]
  st_pos = metrics.ising_sample_stats(pos)
  assert float(st_pos["p_neg"]) == 0.0 and exact["p_neg"] > 0.45
  assert float(metrics.correlation_error(st_pos, exact)) < 3 / math.sqrt(pos.shape[0])
  # the all-up lattice: E|m| = 1, every correlation = 1
  ones = metrics.ising_sample_stats(jnp.ones((4, 9), jnp.int32))
  assert float(ones["abs_mag"]) == 1.0 and np.all(np.asarray(ones["corr"]) == 1.0)


def test_empirical_tv_vs_exact(ising3):
  tgt, _ = ising3
  lp = tgt.log_probs()
  p = np.exp(lp)
  n = 20000
  x = tgt.sample(jax.random.PRNGKey(13), n)
  tv = float(metrics.empirical_tv(x, lp, 2))
  idx = np.asarray(discrete_targets.state_index(x, 2))
  freq = np.bincount(idx, minlength=512) / n
  assert abs(tv - 0.5 * np.abs(freq - p).sum()) < 1e-6
  # i.i.d. floor: E TV ~ 1/2 sum sqrt(2 p (1 - p) / (pi n)) (normal approximation)
  floor = 0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (math.pi * n)))
  assert 0.5 * floor < tv < 1.5 * floor
  # uniform samples: TV to the exact uniform-vs-pi distance within MC error
  u = jax.random.bernoulli(jax.random.PRNGKey(14), 0.5, (n * 9,)).reshape(n, 9).astype(jnp.int32)
  tv_u = float(metrics.empirical_tv(u, lp, 2))
  exact_u = 0.5 * np.abs(1 / 512 - p).sum()
  assert abs(tv_u - exact_u) < 2 * 0.5 * np.sum(np.sqrt(2 / 512 / (math.pi * n))) + 0.01
  with pytest.raises(ValueError, match="log_probs"):
    metrics.empirical_tv(x, lp[:10], 2)


def test_shape_checks_name_the_argument():
  """chex-checked boundaries raise ValueError naming the argument and the shape it got."""
  a = jnp.arange(4.0)
  for fn in (metrics.w1_1d, metrics.w2_1d):
    with pytest.raises(ValueError, match=r"a and b must be 1-D; got \(4,\), \(4, 1\)"):
      fn(a, a[:, None])
  with pytest.raises(ValueError, match=r"log_w must have 1 dimension\(s\); got shape \(2, 2\)"):
    metrics.weight_stats(jnp.zeros((2, 2)))
