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

# int alpha = 10.05 (>= 10): residual correlation e^{-5.03} < 0.01.
DECREASING = references.ou_reference(
  3, schedule="linear_decreasing", sigma_bar=1.5, alpha_min=0.1, alpha_max=20.0
)
INCREASING = references.ou_reference(
  3, schedule="linear_increasing", sigma_bar=1.5, alpha_min=0.1, alpha_max=20.0
)


def _ou_cond(ref, t, x0, x1):
  """Mean and variance of X_t | X_0, X_1 from the stationary OU covariance
  Cov(X_s, X_u) = sigma_bar^2 exp(-1/2 int_s^u alpha), s <= u (per coordinate)."""
  s2 = ref.sigma_bar**2

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
    ref = references.ou_reference(2)  # the released code's 10 -> 0.1
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
  np.testing.assert_allclose(
    np.asarray(draws.var(0)), want_var, atol=5 * want_var * math.sqrt(2 / (n - 1))
  )


def test_bm_bridge_sampling_monte_carlo():
  ref = references.BMReference(dim=2, sigma_const=0.8, source=(1.0, -1.0))
  n, t = 40000, 0.3
  x1 = jnp.tile(jnp.asarray([[2.0, 0.5]]), (n, 1))
  x0 = ref.sample_source(jax.random.PRNGKey(0), n)
  draws = ref.sample_bridge(jax.random.PRNGKey(1), t, x0, x1)
  # Brownian bridge oracle: mean (1 - t) a + t b, variance sigma^2 t (1 - t).
  want_mean = 0.7 * np.array([1.0, -1.0]) + 0.3 * np.array([2.0, 0.5])
  want_var = 0.64 * 0.3 * 0.7
  np.testing.assert_allclose(np.asarray(draws.mean(0)), want_mean, atol=5 * math.sqrt(want_var / n))
  np.testing.assert_allclose(
    np.asarray(draws.var(0)), want_var, atol=5 * want_var * math.sqrt(2 / (n - 1))
  )


def _ou_log_p1_given_t(ref, t, xt, x1):
  """log N(x1; a xt, sigma_bar^2 (1 - a^2) I), a = exp(-1/2 int_t^1 alpha), written from the OU
  transition law (independent of the library's closed form)."""
  a = jnp.exp(
    -0.5 * (ref.alpha_start * (1 - t) + 0.5 * (ref.alpha_end - ref.alpha_start) * (1 - t**2))
  )
  var = ref.sigma_bar**2 * (1 - a**2)
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
    np.testing.assert_allclose(
      float(ref.terminal_log_prob(t, xt[None], x1[None])[0]),
      float(_ou_log_p1_given_t(ref, t, xt, x1)),
      rtol=1e-5,
      atol=1e-5,
    )
  bm = references.BMReference(dim=3, sigma_const=0.7)
  xt, x1 = jnp.ones((1, 3)), jnp.asarray([[0.0, 1.0, 3.0]])
  want = jax.grad(lambda x: jnp.sum(jax.scipy.stats.norm.logpdf(x1[0], x, 0.7 * math.sqrt(0.6))))(
    xt[0]
  )
  np.testing.assert_allclose(
    np.asarray(bm.terminal_score(0.4, xt, x1)[0]), np.asarray(want), rtol=1e-5
  )


def test_reward_keeps_log_nu_constant():
  ref = references.OUReference(dim=2, sigma_bar=2.0, alpha_start=20.0, alpha_end=0.1)
  x = jnp.asarray([[0.3, -0.2]])
  want = float(jnp.sum(jax.scipy.stats.norm.logpdf(x, 0.0, 2.0)))
  assert float(ref.log_nu(x)[0]) == pytest.approx(want, rel=1e-5)
  dropped = references.OUReference(dim=2, sigma_bar=2.0, drop_log_nu_const=True)
  assert float(dropped.log_nu(x)[0]) == pytest.approx(want + math.log(2 * math.pi * 4.0), rel=1e-5)
  with pytest.raises(ValueError, match="x must have shape"):
    ref.log_nu(jnp.zeros((4, 3)))


# ------------------------------------------------------------------ centre-of-mass-free references
# Oracles: an orthonormal basis Q (d, (n - 1) s) of the zero-CoM subspace built here in float64
# (eigenvectors of the projector I - (1/n) 1 1^T (x) I_s with eigenvalue 1), Gaussian densities in
# the coordinates Q^T x, and dense Gaussian conditioning of the joint (X_0, X_t, X_1) with the
# singular covariance k(s, u) P (pseudo-inverse).

from iclr26_jax.pdns import continuous  # noqa: E402

N_P, S_D = 4, 2
D_P = N_P * S_D
COM_OU = references.ou_reference(
  D_P,
  schedule="linear_decreasing",
  sigma_bar=1.5,
  alpha_min=0.1,
  alpha_max=20.0,
  n_particles=N_P,
  spatial_dim=S_D,
)
COM_BM = references.BMReference(
  dim=D_P,
  sigma_const=0.8,
  n_particles=N_P,
  spatial_dim=S_D,
  source=(1.0, 0.5, -1.0, 0.5, 0.5, -2.0, -0.5, 1.0),
)
_PROJ = np.eye(D_P) - np.kron(np.ones((N_P, N_P)) / N_P, np.eye(S_D))
_EVAL, _EVEC = np.linalg.eigh(_PROJ)
BASIS = _EVEC[:, _EVAL > 0.5]  # (8, 6) orthonormal
_ROLL_COM = jax.jit(
  continuous.em_rollout, static_argnums=(0, 2, 4, 5), static_argnames=("return_path",)
)


def _affine_control(p, t, x):
  """u = a x + b + c sin(3 t): one control function (one compile per reference) for every test."""
  return p["a"] * x + p["b"] + p["c"] * jnp.sin(3 * t)


def _ctl(a=0.0, b=(0.0, 0.0), c=0.0):
  return {"a": jnp.float32(a), "b": jnp.asarray(list(b) * N_P, jnp.float32), "c": jnp.float32(c)}


def _roll_com(params, ref, seed):
  return _ROLL_COM(_affine_control, params, ref, jax.random.PRNGKey(seed), 32, 40, return_path=True)


def _com(x):
  x = np.asarray(x, np.float64)
  return x.reshape(*x.shape[:-1], N_P, S_D).mean(-2)


def _basis_log_normal(y, mean, var):
  """log N(Q^T y; Q^T mean, var I_{(n-1)s}) in float64."""
  diff = (np.asarray(y, np.float64) - np.asarray(mean, np.float64)) @ BASIS
  return -0.5 * np.sum(diff**2, -1) / var - 0.5 * BASIS.shape[1] * np.log(2 * np.pi * var)


def _cfree(rng, scale=1.5, n=None):
  shape = (D_P,) if n is None else (n, D_P)
  return (rng.normal(size=shape) * scale) @ _PROJ


def test_com_free_reference_validation_and_dof():
  assert COM_OU.com_free and COM_OU.dof == (N_P - 1) * S_D and BASIS.shape == (D_P, 6)
  assert not DECREASING.com_free and DECREASING.dof == 3
  with pytest.raises(ValueError, match="n_particles"):
    references.OUReference(dim=8, n_particles=4)
  with pytest.raises(ValueError, match="n_particles"):
    references.OUReference(dim=9, n_particles=4, spatial_dim=2)
  with pytest.raises(ValueError, match="centre of mass"):
    references.BMReference(dim=4, n_particles=2, spatial_dim=2, source=(1.0, 0.0, 0.0, 0.0))


@pytest.mark.parametrize("ref", [COM_OU, COM_BM], ids=["ou", "bm"])
def test_com_free_source_and_sde_states_have_zero_com(ref):
  x0 = ref.sample_source(jax.random.PRNGKey(0), 256)
  np.testing.assert_allclose(_com(x0), 0.0, atol=1e-6)
  # A control with a large CoM component and state dependence: projected in the rollout.
  out = _roll_com(_ctl(0.5, (3.0, -2.0), 1.0), ref, 1)
  assert out.path.shape == (41, 32, D_P)
  # float32 states of size O(5): round-off ~1e-6 per step.
  np.testing.assert_allclose(_com(out.path), 0.0, atol=2e-5)
  assert float(np.abs(np.asarray(out.path[-1])).max()) > 0.5  # the states did move


@pytest.mark.parametrize("ref", [COM_OU, COM_BM], ids=["ou", "bm"])
def test_com_free_log_nu_terminal_density_and_score_in_an_orthonormal_basis(ref):
  rng = np.random.default_rng(5)
  center = np.zeros(D_P) if ref is COM_OU else np.asarray(ref.source)
  sig = ref.sigma_bar if ref is COM_OU else ref.sigma_const
  x = center + _cfree(rng, n=5)
  got = np.asarray(ref.log_nu(jnp.asarray(x, jnp.float32)), np.float64)
  np.testing.assert_allclose(got, _basis_log_normal(x, center, sig**2), rtol=1e-5, atol=1e-4)
  for t in (0.2, 0.8):
    xt, x1 = _cfree(rng), _cfree(rng)
    if ref is COM_OU:
      a = math.exp(-0.5 * ref.int_alpha(t, 1.0))
      var = ref.sigma_bar**2 * (1 - a * a)
    else:
      a, var = 1.0, ref.sigma_const**2 * (1 - t)
    want = _basis_log_normal(x1, a * xt, var)
    got = float(
      ref.terminal_log_prob(
        t, jnp.asarray(xt[None], jnp.float32), jnp.asarray(x1[None], jnp.float32)
      )[0]
    )
    assert got == pytest.approx(want, rel=1e-5, abs=1e-4)
    # Score: gradient of the basis density, a Q Q^T (x1 - a xt) / var, lies in the subspace.
    want_score = a * (BASIS @ (BASIS.T @ (x1 - a * xt))) / var
    got_score = ref.terminal_score(
      t, jnp.asarray(xt[None], jnp.float32), jnp.asarray(x1[None], jnp.float32)
    )[0]
    np.testing.assert_allclose(np.asarray(got_score), want_score, rtol=1e-4, atol=1e-5)


def _dense_conditioning(k, t, x0, x1):
  """Mean and covariance of X_t | X_0, X_1 for Cov(X_s, X_u) = k(s, u) P, by the pseudo-inverse
  of the singular (2d, 2d) covariance of (X_0, X_1)."""
  obs = np.block([[k(0, 0) * _PROJ, k(0, 1) * _PROJ], [k(1, 0) * _PROJ, k(1, 1) * _PROJ]])
  cross = np.concatenate([k(t, 0) * _PROJ, k(t, 1) * _PROJ], 1)
  gain = cross @ np.linalg.pinv(obs, rcond=1e-10)
  mean = gain @ np.concatenate([x0, x1])
  return mean, k(t, t) * _PROJ - gain @ cross.T


@pytest.mark.parametrize("ref", [COM_OU, COM_BM], ids=["ou", "bm"])
def test_com_free_bridge_matches_dense_conditioning_and_stays_com_free(ref):
  rng = np.random.default_rng(7)
  if ref is COM_OU:
    s2 = ref.sigma_bar**2
    k = lambda a, b: s2 * math.exp(-0.5 * ref.int_alpha(min(a, b), max(a, b)))
    x0 = _cfree(rng)
    x0_c = np.zeros(D_P)  # the dense oracle works with centred coordinates
  else:
    s2 = ref.sigma_const**2
    k = lambda a, b: s2 * min(a, b)  # Brownian motion from the point source
    x0 = np.asarray(ref.source)
    x0_c = x0
  x1 = x0_c + _cfree(rng)
  t, n = 0.35, 20000
  want_mean, want_cov = _dense_conditioning(k, t, x0 - x0_c, x1 - x0_c)
  want_mean = want_mean + x0_c
  mean, var = ref.bridge_mean_var(t, jnp.asarray(x0, jnp.float32), jnp.asarray(x1, jnp.float32))
  np.testing.assert_allclose(np.asarray(mean), want_mean, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(float(var) * _PROJ, want_cov, atol=1e-5)
  draws = ref.sample_bridge(
    jax.random.PRNGKey(3),
    t,
    jnp.tile(jnp.asarray(x0, jnp.float32), (n, 1)),
    jnp.tile(jnp.asarray(x1, jnp.float32), (n, 1)),
  )
  np.testing.assert_allclose(_com(draws) - _com(x0_c), 0.0, atol=1e-5)
  draws = np.asarray(draws, np.float64)
  # Per coordinate Var = var * P_ii = var (1 - 1/n): 5 standard errors of the mean (8 coordinates:
  # a false failure has probability < 5e-6); the sample covariance within 5 se of var * P.
  sd = math.sqrt(float(var) * (1 - 1 / N_P))
  np.testing.assert_allclose(draws.mean(0), want_mean, atol=5 * sd / math.sqrt(n))
  cov = np.cov(draws.T)
  np.testing.assert_allclose(cov, float(var) * _PROJ, atol=5 * float(var) * math.sqrt(2 / (n - 1)))


@pytest.mark.parametrize("ref", [COM_OU, COM_BM], ids=["ou", "bm"])
def test_com_free_girsanov_log_ratio(ref):
  z = _roll_com(_ctl(), ref, 4)
  np.testing.assert_array_equal(np.asarray(z.log_ratio), 0.0)
  # A pure CoM control is projected away: same path, log-ratio exactly 0.
  c = _roll_com(_ctl(b=(2.0, -1.0)), ref, 4)
  np.testing.assert_array_equal(np.asarray(c.log_ratio), 0.0)
  np.testing.assert_allclose(np.asarray(c.path), np.asarray(z.path), atol=1e-5)
  # A general control: l equals the log-ratio of the two Gaussian chains on the subspace, written
  # in the basis coordinates (covariance sigma^2 dt I_{(n-1)s}).
  params = _ctl(0.7, (1.0, 0.0), 1.0)
  out = _roll_com(params, ref, 5)
  path = np.asarray(out.path, np.float64)
  dt = 1.0 / 40
  ts = np.arange(40) * dt
  x, x_next = path[:-1], path[1:]  # (40, 32, 8) each
  sig = np.asarray(ref.sigma(jnp.asarray(ts, jnp.float32)), np.float64)[:, None, None]
  b = np.asarray(
    ref.drift(
      jnp.asarray(np.broadcast_to(ts[:, None], (40, 32)), jnp.float32), jnp.asarray(x, jnp.float32)
    ),
    np.float64,
  )
  uk = (
    np.asarray(
      _affine_control(
        params, jnp.asarray(ts[:, None, None], jnp.float32), jnp.asarray(x, jnp.float32)
      ),
      np.float64,
    )
    @ _PROJ
  )
  var = (sig**2 * dt)[..., 0]
  want = np.sum(
    _basis_log_normal(x_next, x + b * dt, var)
    - _basis_log_normal(x_next, x + (b + sig * uk) * dt, var),
    0,
  )
  # float32 accumulation over 40 steps of terms of size O(1): 1e-3 absolute.
  np.testing.assert_allclose(np.asarray(out.log_ratio), want, rtol=1e-3, atol=2e-3)
