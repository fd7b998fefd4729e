"""Known-answer tests of the PDNS targets: log Z against independent
quadrature / closed forms, exact samples against analytic moments, particle-energy symmetries and
hand values, lattice enumeration against brute-force Python loops.

PDNS: Guo, Choi, Zhu, Tao, Chen, ICLR 2026; reference code github.com/AlexandreGUO2001/PDNS.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from iclr26_jax.pdns import discrete_targets, particles, targets

N = 20000


def _mc_tol(samples, k=5.0):
  """k standard errors of the mean of each column."""
  return k * np.std(samples, 0) / math.sqrt(samples.shape[0])


# ------------------------------------------------------------------------------ Gaussian mixtures


def _np_mixture_logpdf(x, weights, means, std):
  comps = [
    math.log(w) + stats.multivariate_normal(m, std**2 * np.eye(len(m))).logpdf(x)
    for w, m in zip(weights, means)
  ]
  return special.logsumexp(np.stack(comps, -1), -1)


def test_gmm40_convention_density_and_samples():
  g = targets.gmm40(seed=3)
  means = np.asarray(g.means, np.float64)
  assert g.dim == 50 and means.shape == (40, 50)
  assert np.all(np.abs(means) <= 40) and means.min() < -35 and means.max() > 35
  np.testing.assert_allclose(np.asarray(g.covs), np.broadcast_to(np.eye(50), (40, 50, 50)))
  np.testing.assert_allclose(np.asarray(targets.gmm40(seed=3).means), means)  # seeded
  x = np.asarray(g.sample(jax.random.PRNGKey(0), 4000), np.float64)
  # density vs scipy (normalised: log Z = 0), at samples and at shifted points
  pts = np.concatenate([x[:20], x[:20] + 1.5])
  ref = _np_mixture_logpdf(pts, np.full(40, 1 / 40), means, 1.0)
  np.testing.assert_allclose(
    np.asarray(g.log_prob_unnorm(jnp.asarray(pts, jnp.float32))), ref, rtol=1e-5, atol=2e-3
  )
  # samples: every draw lies within a few std of its nearest mean; mode weights ~ 1/40
  a = np.asarray(g.assign(jnp.asarray(x, jnp.float32)))
  d2 = np.sum((x - means[a]) ** 2, -1)
  assert np.all(d2 < stats.chi2(50).ppf(1 - 1e-6))
  brute = np.argmin(((x[:, None] - means[None]) ** 2).sum(-1), 1)
  np.testing.assert_array_equal(a, brute)
  freq = np.bincount(a, minlength=40) / x.shape[0]
  assert np.all(np.abs(freq - 1 / 40) < 5 * math.sqrt((1 / 40) * (39 / 40) / x.shape[0]))
  np.testing.assert_allclose(x.mean(0), np.asarray(g.mean()), atol=5 * 24 / math.sqrt(4000))


def test_unequal_two_mode_10d_log_z_weights_and_moments():
  g = targets.two_mode_10d((0.3, 0.7), separation=8.0, log_z=2.0)
  means = np.asarray(g.means, np.float64)
  assert g.dim == 10
  np.testing.assert_allclose(np.linalg.norm(means[0] - means[1]), 8.0, rtol=1e-6)
  x = np.asarray(g.sample(jax.random.PRNGKey(1), N), np.float64)
  ref = 2.0 + _np_mixture_logpdf(x[:50], (0.3, 0.7), means, 1.0)
  np.testing.assert_allclose(
    np.asarray(g.log_prob_unnorm(jnp.asarray(x[:50], jnp.float32))), ref, rtol=1e-5, atol=1e-4
  )
  w = np.bincount(np.asarray(g.assign(jnp.asarray(x, jnp.float32))), minlength=2) / N
  np.testing.assert_allclose(np.asarray(g.mode_weights(jnp.asarray(x, jnp.float32))), w, atol=1e-7)
  assert abs(w[0] - 0.3) < 5 * math.sqrt(0.21 / N)
  np.testing.assert_allclose(np.asarray(g.mode_weights_exact()), [0.3, 0.7], rtol=1e-6)
  assert np.all(np.abs(x.mean(0) - np.asarray(g.mean())) < _mc_tol(x))
  a = np.asarray(g.assign(jnp.asarray(x, jnp.float32)))
  for k in range(2):  # within a mode: N(m_k, I)
    xk = x[a == k] - means[k]
    assert np.all(np.abs(xk.mean(0)) < _mc_tol(xk))
    assert np.all(np.abs(xk.var(0) - 1) < 5 * math.sqrt(2 / xk.shape[0]))
  # log Z by independent importance sampling from a broad Gaussian (log Z = 2 exactly)
  prop = stats.multivariate_normal(np.asarray(g.mean()), 25 * np.eye(10))
  y = prop.rvs(size=N, random_state=0)
  lw = np.asarray(g.log_prob_unnorm(jnp.asarray(y, jnp.float32)), np.float64) - prop.logpdf(y)
  wts = np.exp(lw - lw.max())
  se = np.std(wts) / np.mean(wts) / math.sqrt(N)
  assert abs(lw.max() + math.log(wts.mean()) - 2.0) < 5 * se + 1e-3
  with pytest.raises(ValueError, match="weights"):
    targets.well_separated_mixture(np.ones(11), dim=10)


def test_mixture_of_students_density_and_samples():
  t = targets.mos50(seed=0, log_z=0.4)
  means = np.asarray(t.means, np.float64)
  assert t.dim == 50 and means.shape == (10, 50) and np.all(np.abs(means) <= 10)
  x = np.asarray(t.sample(jax.random.PRNGKey(2), 5000), np.float64)
  pts = x[:10]
  comps = np.stack([stats.t(2.0).logpdf(pts - m).sum(-1) for m in means], -1)
  ref = 0.4 + special.logsumexp(comps, -1) - math.log(10)
  np.testing.assert_allclose(
    np.asarray(t.log_prob_unnorm(jnp.asarray(pts, jnp.float32))), ref, rtol=1e-5, atol=1e-3
  )
  a = np.asarray(t.assign(jnp.asarray(x, jnp.float32)))
  # residuals from the nearest mean: median |t| of a Student-t(2) is its 0.75 quantile
  resid = np.abs(x - means[a]).reshape(-1)
  assert abs(np.median(resid) - stats.t(2.0).ppf(0.75)) < 0.02
  freq = np.bincount(a, minlength=10) / x.shape[0]
  assert np.all(np.abs(freq - 0.1) < 5 * math.sqrt(0.09 / x.shape[0]))


# ----------------------------------------------------------------------------------------- Funnel


def test_funnel_log_z_by_quadrature_and_exact_samples():
  f = targets.Funnel.create(dim=10, sigma=3.0, log_z=0.9)
  k = f.dim - 1
  # 2-D quadrature over (x1, rho) with x_{2:d} = e^{x1/2} rho u (u a unit vector): the density is
  # radial in x_{2:d}, so int = int dx1 int drho S_{k-1} rho^{k-1} e^{k x1/2} pi~(x1, e^{x1/2} rho)
  x1 = np.linspace(-30, 30, 601)
  rho = np.linspace(0, 12, 481)
  g1, gr = np.meshgrid(x1, rho, indexing="ij")
  pts = np.zeros(g1.shape + (f.dim,))
  pts[..., 0] = g1
  pts[..., 1] = np.exp(g1 / 2) * gr
  lp = np.asarray(
    f.log_prob_unnorm(jnp.asarray(pts.reshape(-1, f.dim), jnp.float32)), np.float64
  ).reshape(g1.shape)
  log_sphere = math.log(2) + (k / 2) * math.log(math.pi) - special.gammaln(k / 2)
  integrand = np.exp(lp + (k - 1) * np.log(np.maximum(gr, 1e-300)) + k * g1 / 2 + log_sphere)
  z = integrate.trapezoid(integrate.trapezoid(integrand, rho, axis=1), x1)
  assert abs(math.log(z) - 0.9) < 1e-3
  x = np.asarray(f.sample(jax.random.PRNGKey(3), N), np.float64)
  assert abs(x[:, 0].mean()) < 5 * 3 / math.sqrt(N)
  assert abs(x[:, 0].var() / 9 - 1) < 5 * math.sqrt(2 / N)
  zz = x[:, 1:] * np.exp(-x[:, :1] / 2)  # should be i.i.d. N(0, 1)
  assert np.all(np.abs(zz.mean(0)) < 5 / math.sqrt(N))
  assert np.all(np.abs(zz.var(0) - 1) < 5 * math.sqrt(2 / N))
  assert abs(np.corrcoef(np.abs(zz[:, 0]), x[:, 0])[0, 1]) < 5 / math.sqrt(N)


# -------------------------------------------------------------------------------------- Many-well


@pytest.mark.parametrize("dim,m,delta", [(5, 5, 4.0), (4, 2, 3.0)])
def test_many_well_log_z_by_quad_energy_and_samples(dim, m, delta):
  mw = targets.ManyWell.create(dim, m, delta)
  z_w, _ = integrate.quad(
    lambda t: math.exp(-((t * t - delta) ** 2)), -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12
  )
  log_z = m * math.log(z_w) + 0.5 * (dim - m) * math.log(2 * math.pi)
  assert abs(float(mw.log_z) - log_z) < 1e-5
  x = np.asarray(mw.sample(jax.random.PRNGKey(4), N), np.float64)
  e_ref = np.sum((x[:, :m] ** 2 - delta) ** 2, -1) + 0.5 * np.sum(x[:, m:] ** 2, -1)
  np.testing.assert_allclose(
    np.asarray(mw.energy(jnp.asarray(x, jnp.float32))), e_ref, rtol=1e-5, atol=1e-4
  )
  second, _ = integrate.quad(lambda t: t * t * math.exp(-((t * t - delta) ** 2)), -np.inf, np.inf)
  assert np.all(np.abs(x.mean(0)) < _mc_tol(x))
  var_ref = np.array([second / z_w] * m + [1.0] * (dim - m))
  assert np.all(np.abs((x**2).mean(0) - var_ref) < _mc_tol(x**2))
  # one-dimensional law of a well coordinate: KS against the quadrature CDF
  cdf = np.vectorize(
    lambda s: integrate.quad(lambda t: math.exp(-((t * t - delta) ** 2)), -np.inf, s)[0] / z_w
  )
  grid_pts = np.sort(x[:2000, 0])
  assert np.max(np.abs(cdf(grid_pts) - np.arange(1, 2001) / 2000)) < 1.63 / math.sqrt(2000) * 1.5
  a = np.asarray(mw.assign(jnp.asarray(x, jnp.float32)))
  np.testing.assert_array_equal(a, (x[:, :m] > 0).astype(int) @ (2 ** np.arange(m)))
  freq = np.bincount(a, minlength=2**m) / N
  np.testing.assert_allclose(
    np.asarray(mw.mode_weights(jnp.asarray(x, jnp.float32))), freq, atol=1e-7
  )
  p = float(mw.mode_weights_exact()[0])
  assert p == 2.0**-m
  assert np.all(np.abs(freq - p) < 5 * math.sqrt(p * (1 - p) / N))


# -------------------------------------------------------------------------------------- particles


def _rotation(rng, s):
  q, r = np.linalg.qr(rng.standard_normal((s, s)))
  return q * np.sign(np.diag(r))


def _lattice_config(rng, n, s, spacing):
  pts = np.array(list(itertools.product(range(3), repeat=s)), np.float64)[:n] * spacing
  return (pts + 0.05 * rng.standard_normal(pts.shape)).reshape(-1)


@pytest.mark.parametrize("name", ["dw4", "lj13"])
def test_particle_energy_symmetries_and_python_loop(name):
  tgt = particles.dw4() if name == "dw4" else particles.lj13()
  n, s = tgt.n_particles, tgt.spatial_dim
  rng = np.random.default_rng(0)
  base = np.stack([_lattice_config(rng, n, s, 3.5 if name == "dw4" else 1.1) for _ in range(6)])
  e = np.asarray(tgt.energy(jnp.asarray(base, jnp.float32)), np.float64)
  # independent python loop over pairs
  ref = []
  for cfg in base:
    p = cfg.reshape(n, s)
    tot = 0.0
    for i in range(n):
      for j in range(i + 1, n):
        r = np.linalg.norm(p[i] - p[j])
        if name == "dw4":
          tot += -4 * (r - 4) ** 2 + 0.9 * (r - 4) ** 4
        else:
          tot += r**-12 - 2 * r**-6
    if name == "lj13":
      tot += 0.5 * np.sum((p - p.mean(0)) ** 2)
    ref.append(tot)
  np.testing.assert_allclose(e, ref, rtol=2e-5, atol=2e-4)
  rot = _rotation(rng, s)
  shift = rng.standard_normal(s) * 3
  perm = rng.permutation(n)
  moved = (base.reshape(-1, n, s)[:, perm] @ rot.T + shift).reshape(base.shape)
  np.testing.assert_allclose(
    np.asarray(tgt.energy(jnp.asarray(moved, jnp.float32))), e, rtol=2e-5, atol=2e-4
  )
  np.testing.assert_allclose(
    np.asarray(tgt.log_prob_unnorm(jnp.asarray(base, jnp.float32))), -e, rtol=1e-6
  )


def test_particle_energy_hand_values():
  dw2 = particles.ParticleSystem(kind="dw", n_particles=2, spatial_dim=2)
  # r = 5, r - r0 = 1: a*1 + b*1 + c*1 = 0 - 4 + 0.9
  assert abs(float(dw2.energy(jnp.array([[0.0, 0.0, 3.0, 4.0]]))[0]) - (-3.1)) < 1e-5
  lj2 = particles.ParticleSystem(kind="lj", n_particles=2, spatial_dim=3)
  # r = r_m = 1: LJ = -eps = -1; harmonic 1/2 (0.5^2 + 0.5^2) = 0.25
  assert abs(float(lj2.energy(jnp.array([[0.0, 0, 0, 1.0, 0, 0]]))[0]) - (-0.75)) < 1e-6
  # r = 2^(1/6): LJ = 1/4 - 2/2 ... (r_m / r)^6 = 1/2: 1/4 - 1 = -3/4; harmonic = r^2 / 4
  r = 2 ** (1 / 6)
  e = float(lj2.energy(jnp.array([[0.0, 0, 0, 0, r, 0]]))[0])
  assert abs(e - (-0.75 + r * r / 4)) < 1e-6
  with pytest.raises(ValueError, match="kind"):
    particles.ParticleSystem(kind="morse", n_particles=2, spatial_dim=3)
  with pytest.raises(ValueError, match="n \\* s"):
    particles.dw4().energy(jnp.zeros((3, 7)))


def test_com_free_noise_and_density():
  n, s = 13, 3
  z = np.asarray(particles.com_free_normal(jax.random.PRNGKey(5), 4000, n, s), np.float64)
  np.testing.assert_allclose(z.reshape(-1, n, s).mean(1), 0.0, atol=1e-6)
  sq = np.sum(z**2, -1)
  dof = (n - 1) * s
  assert abs(sq.mean() - dof) < 5 * math.sqrt(2 * dof / 4000)
  # density against an orthonormal basis of the zero-CoM subspace
  c = np.eye(n) - 1.0 / n
  basis = np.linalg.svd(np.kron(c, np.eye(s)))[0][:, :dof]  # (n s, dof)
  coords = z[:5] @ basis
  ref = stats.multivariate_normal(np.zeros(dof), 1.7**2 * np.eye(dof)).logpdf(coords)
  got = particles.com_free_normal_log_prob(jnp.asarray(z[:5], jnp.float32), n, s, sigma=1.7)
  np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5)
  x = jnp.asarray(np.random.default_rng(1).standard_normal((3, n * s)), jnp.float32)
  np.testing.assert_allclose(
    np.asarray(particles.remove_com(x, n, s)).reshape(3, n, s).mean(1), 0.0, atol=1e-6
  )


# --------------------------------------------------------------------------------------- lattices


def _brute_ising(size, beta, j, h):
  """Python loop over all states: log Z, P(M < 0), E|M|/D, E s_0 s_k."""
  dim = size * size
  logws, mags, corr0 = [], [], []
  for bits in itertools.product([0, 1], repeat=dim):
    s = [2 * b - 1 for b in bits]
    e = 0.0
    for r in range(size):
      for c in range(size):
        i = r * size + c
        e -= j * s[i] * (s[r * size + (c + 1) % size] + s[((r + 1) % size) * size + c])
        e -= h * s[i]
    logws.append(-beta * e)
    mags.append(sum(s))
    corr0.append([s[0] * sk for sk in s])
  lw = np.array(logws)
  log_z = special.logsumexp(lw)
  p = np.exp(lw - log_z)
  mags = np.array(mags)
  return {
    "log_z": log_z,
    "p_neg": p[mags < 0].sum(),
    "p_pos": p[mags > 0].sum(),
    "abs_mag": np.sum(p * np.abs(mags)) / dim,
    "corr0": p @ np.array(corr0),
    "mag_dist": np.bincount((mags + dim) // 2, weights=p, minlength=dim + 1),
  }


@pytest.mark.parametrize(
  "size,beta,j,h", [(2, 0.7, 1.0, 0.0), (3, 0.5, 1.0, 0.15), (3, 0.4, -0.8, 0.3)]
)
def test_ising_streamed_enumeration_and_transfer_matrix_vs_python_loop(size, beta, j, h):
  ref = _brute_ising(size, beta, j, h)
  st = discrete_targets.lattice_exact_stats(size, beta, j=j, h=h, chunk=16)
  tm = discrete_targets.ising_transfer_matrix(size, beta, j=j, h=h)
  for out in (st, tm):
    assert abs(out["log_z"] - ref["log_z"]) < 2e-5 * max(1.0, abs(ref["log_z"]))
    for key in ("p_neg", "p_pos", "abs_mag"):
      assert abs(out[key] - ref[key]) < 2e-5, key
    np.testing.assert_allclose(out["mag_dist"], ref["mag_dist"], atol=2e-6)
  np.testing.assert_allclose(st["corr"][0], ref["corr0"], atol=2e-5)
  np.testing.assert_allclose(np.diag(st["corr"]), 1.0, atol=1e-5)


def test_ising_4x4_stream_vs_table_and_transfer():
  beta = 0.4407
  st = discrete_targets.lattice_exact_stats(4, beta)
  tgt = discrete_targets.ising(4, beta)
  tm = discrete_targets.ising_transfer_matrix(4, beta)
  assert abs(st["log_z"] - float(tgt.log_z)) < 1e-4
  assert abs(tm["log_z"] - float(tgt.log_z)) < 1e-4
  p = np.exp(tgt.log_probs())
  s = 2.0 * tgt.states() - 1.0
  np.testing.assert_allclose(st["corr"], (s * p[:, None]).T @ s, atol=1e-5)
  mags = s.sum(-1)
  assert abs(st["p_neg"] - p[mags < 0].sum()) < 1e-5
  assert abs(tm["p_neg"] - p[mags < 0].sum()) < 1e-6
  assert abs(tm["abs_mag"] - np.sum(p * np.abs(mags)) / 16) < 1e-6
  # h = 0: the law of M is symmetric
  np.testing.assert_allclose(tm["mag_dist"], tm["mag_dist"][::-1], atol=1e-12)
  with pytest.raises(ValueError, match="exceeds"):
    discrete_targets.lattice_exact_stats(6, 0.4)
  with pytest.raises(ValueError, match="model"):
    discrete_targets.lattice_exact_stats(2, 0.4, model="xy")


def test_potts_streamed_enumeration_vs_python_loop():
  size, q, beta = 2, 3, 0.9
  st = discrete_targets.lattice_exact_stats(size, beta, model="potts", q=q, chunk=9)
  dim = size * size
  lw, eq01, order = [], [], []
  for x in itertools.product(range(q), repeat=dim):
    e = 0.0
    for r in range(size):
      for c in range(size):
        i = r * size + c
        e -= (x[i] == x[r * size + (c + 1) % size]) + (x[i] == x[((r + 1) % size) * size + c])
    lw.append(-beta * e)
    eq01.append(float(x[0] == x[1]))
    order.append((q * max(np.bincount(x, minlength=q)) / dim - 1) / (q - 1))
  lw = np.array(lw)
  log_z = special.logsumexp(lw)
  p = np.exp(lw - log_z)
  assert abs(st["log_z"] - log_z) < 2e-5
  assert abs(float(discrete_targets.potts(size, q, beta).log_z) - log_z) < 2e-5
  assert abs(st["corr"][0, 1] - p @ np.array(eq01)) < 2e-6
  assert abs(st["order"] - p @ np.array(order)) < 2e-6
  np.testing.assert_allclose(np.diag(st["corr"]), 1.0, atol=1e-6)
