"""The entry points ``minpv.fit_log_ratio`` and ``minpv.estimate_mi`` against closed forms.

Oracles: KL between two Gaussians, ½[tr(S0⁻¹S1) + Δμᵀ S0⁻¹ Δμ − d + log det S0 / det S1], and
the MI of a correlated Gaussian pair, −½ Σ log(1 − ρ²). Tolerances: the fast tests run a few
hundred to 1500 steps (measured errors at these sizes are stated at each test); the slow tests
run the defaults, whose contract (docs/methods/minpv.md) is 5 % up to d = 8 and 10 % beyond.
"""

import os
import signal
import threading
import time

import jax
import numpy as np
import pytest

from iclr26_jax import minpv
from iclr26_jax.minpv import api


def _gauss_kl(m1, s1, m0, s0):
  s0i = np.linalg.inv(s0)
  dm = m0 - m1
  return 0.5 * (
    np.trace(s0i @ s1) + dm @ s0i @ dm - len(m1) + np.log(np.linalg.det(s0) / np.linalg.det(s1))
  )


def _pair(d, seed):
  rng = np.random.default_rng(seed)
  m1 = rng.normal(0, 0.5, d)
  a = rng.normal(size=(d, d)) / np.sqrt(d)
  m0 = rng.normal(0, 0.5, d) + 1.0
  b = rng.normal(size=(d, d)) / np.sqrt(d)
  return rng, m1, a @ a.T + 0.5 * np.eye(d), m0, 2.0 * (b @ b.T + 0.5 * np.eye(d))


def test_gaussian_kl_small():
  # d = 3, 1000 steps of batch 1024 (the defaults are 2000 of 4096; a sixth of the compute, ~7 s
  # on a quiet core): both sides non-standard; tolerance 15 % (measured: 1.2 %, pointwise RMSE
  # 0.21 of the true log ratio's spread).
  rng, m1, s1, m0, s0 = _pair(3, 0)
  truth = _gauss_kl(m1, s1, m0, s0)
  x_p = rng.multivariate_normal(m1, s1, 4000)
  x_q = rng.multivariate_normal(m0, s0, 4000)
  r = minpv.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(0), steps=1000, batch_size=1024)
  held_out = rng.multivariate_normal(m1, s1, 4000)
  assert r(held_out).shape == (4000,)
  est = r.kl(held_out)
  assert abs(est - truth) / truth < 0.15, (est, truth)
  # pointwise: the analytic log-ratio on held-out points, errors must not cancel in the mean
  lp = lambda x, m, s: (
    -0.5 * np.einsum("ni,ij,nj->n", x - m, np.linalg.inv(s), x - m)
    - 0.5 * (np.linalg.slogdet(s)[1])
  )
  true_lr = lp(held_out, m1, s1) - lp(held_out, m0, s0)
  rmse = np.sqrt(np.mean((np.asarray(r(held_out)) - true_lr) ** 2))
  assert rmse < 0.5 * np.std(true_lr), (rmse, np.std(true_lr))


def test_calibration_undoes_an_affine_error_and_keeps_the_exact_ratio():
  # N(1, 1) against N(0, 1): the exact log ratio is x − ½ and the fixed point of the calibration
  # (unequal sample sizes exercise the prior offset log(n_p / n_q)).
  rng = np.random.default_rng(5)
  x_p, x_q = rng.normal(1.0, 1.0, 20000), rng.normal(0.0, 1.0, 30000)
  exact = lambda x: x - 0.5
  a, b = minpv.calibrate_log_ratio(exact(x_p), exact(x_q))
  assert abs(a - 1.0) < 0.05 and abs(b) < 0.05, (a, b)
  # 0.4 r − 0.2 is mapped back to r: a = 2.5, b = 0.5.
  a, b = minpv.calibrate_log_ratio(0.4 * exact(x_p) - 0.2, 0.4 * exact(x_q) - 0.2)
  assert abs(a - 2.5) < 0.1 and abs(b - 0.5) < 0.1, (a, b)
  # separable samples: the ridge keeps (a, b) finite
  a, b = minpv.calibrate_log_ratio(np.full(100, 5.0), np.full(100, -5.0))
  assert np.isfinite(a) and np.isfinite(b)
  with pytest.raises(ValueError, match="finite"):
    minpv.calibrate_log_ratio(np.array([np.nan, 1.0]), np.zeros(3))


def test_calibrated_ratio_is_the_affine_map_of_the_integral():
  rng = np.random.default_rng(6)
  x_p, x_q = rng.normal(1.0, 1.0, (500, 2)), rng.normal(0.0, 1.0, (500, 2))
  opts = dict(key=jax.random.PRNGKey(0), steps=30, batch_size=64)
  raw = minpv.fit_log_ratio(x_p, x_q, calibrate=False, **opts)
  assert (raw.scale, raw.shift) == (1.0, 0.0)
  np.testing.assert_array_equal(raw(x_p[:7]), raw.integral(x_p[:7]))
  cal = minpv.fit_log_ratio(x_p, x_q, **opts)
  a, b = minpv.calibrate_log_ratio(raw.integral(x_p), raw.integral(x_q))
  np.testing.assert_allclose((cal.scale, cal.shift), (a, b), rtol=1e-6)
  np.testing.assert_allclose(cal(x_p[:7]), a * raw.integral(x_p[:7]) + b, rtol=1e-5, atol=1e-6)


def test_bad_input_names_argument():
  x = np.zeros((10, 2))
  with pytest.raises(ValueError, match="x_q"):
    minpv.fit_log_ratio(x, np.zeros((10, 3)), key=jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="x_p"):
    minpv.fit_log_ratio(np.zeros(10), x, key=jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="finite"):
    minpv.fit_log_ratio(np.full((10, 2), np.nan), x, key=jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="path"):
    minpv.fit_log_ratio(x, x, key=jax.random.PRNGKey(0), path="wiggly")
  with pytest.raises(ValueError, match="same number of rows"):
    minpv.estimate_mi(x, np.zeros((9, 1)), key=jax.random.PRNGKey(0))


@pytest.mark.slow
@pytest.mark.split_params  # two ~90 s fits: one xdist unit each, so the two workers share them
@pytest.mark.parametrize("seed", [0, 1])
def test_defaults_within_five_percent(seed):
  # The entry points' contract: at their defaults (calibrated), KL of a d = 6 Gaussian pair and
  # the MI of a d = 4 + 4 correlated Gaussian pair within 5 % (measured: KL −1.8 % / −3.0 %,
  # MI +2.1 % / −0.4 % for seeds 0 / 1; uncalibrated, KL −3.4 % / −3.3 %).
  rng, m1, s1, m0, s0 = _pair(6, 10 + seed)
  truth = _gauss_kl(m1, s1, m0, s0)
  x_p = rng.multivariate_normal(m1, s1, 10000)
  r = minpv.fit_log_ratio(x_p, rng.multivariate_normal(m0, s0, 10000), key=jax.random.PRNGKey(seed))
  est = r.kl(rng.multivariate_normal(m1, s1, 5000))
  assert abs(est - truth) / truth < 0.05, (est, truth)
  rho = 0.6
  x = rng.normal(size=(10000, 4)) * 3.0 - 1.0
  y = rho * (x + 1.0) / 3.0 + np.sqrt(1 - rho**2) * rng.normal(size=(10000, 4))
  mi_true = -0.5 * 4 * np.log(1 - rho**2)
  mi = minpv.estimate_mi(x, y, key=jax.random.PRNGKey(seed))
  assert abs(mi - mi_true) / mi_true < 0.05, (mi, mi_true)


@pytest.mark.slow
@pytest.mark.split_params
@pytest.mark.parametrize("d, seed, kl", [(4, 0, 0.416), (8, 1, 0.488)])
def test_defaults_small_kl_within_five_percent_when_the_sample_allows(d, seed, kl):
  # A small KL between Gaussians with full covariances, with 40,000 samples of each side: there a
  # logistic regression on quadratic terms (the Gaussian log ratio's own family) is within about
  # 1 % of the closed form on the same samples; at 10,000 its spread over samples is 3 % on a
  # 0.4-nat pair in d = 4, so 5 % is not the fit's to keep (docs/methods/minpv.md). Measured at
  # the defaults: d = 4 −1.3 % (seed 1: −0.1 %), d = 8 −1.3 % (seed 0: −0.8 %).
  rng = np.random.default_rng(40 + d)

  def rotated_cov(lo, hi):
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return q @ np.diag(rng.uniform(lo, hi, d)) @ q.T

  m1, s1 = rng.normal(0, 0.3, d), rotated_cov(0.4, 1.8)
  m0, s0 = np.zeros(d), rotated_cov(0.6, 1.4)
  truth = _gauss_kl(m1, s1, m0, s0)
  assert abs(truth - kl) < 1e-3
  rng = np.random.default_rng(seed)
  x_p, x_q = rng.multivariate_normal(m1, s1, 40000), rng.multivariate_normal(m0, s0, 40000)
  fresh = rng.multivariate_normal(m1, s1, 40000)
  r = minpv.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(seed))
  est = r.kl(fresh)
  assert abs(est - truth) / truth < 0.05, (est, truth)


def test_mi_is_blind_to_monotone_maps_of_each_coordinate():
  # estimate_mi's default marginals (rank -> normal quantile per coordinate) see only the ranks:
  # x -> sinh(2x) + 3 and y -> y^3 (strictly increasing per coordinate, MI unchanged) must give
  # the very same estimate, bit for bit; the affine whitening alone ("whiten") does not.
  rng = np.random.default_rng(3)
  x = rng.normal(size=(600, 2))
  y = 0.8 * x + 0.6 * rng.normal(size=(600, 2))
  opts = dict(key=jax.random.PRNGKey(0), steps=30, batch_size=64)
  a = minpv.estimate_mi(x, y, **opts)
  b = minpv.estimate_mi(np.sinh(2 * x) + 3, y**3, **opts)
  assert a == b, (a, b)
  c = minpv.estimate_mi(np.sinh(2 * x) + 3, y**3, marginals="whiten", **opts)
  assert c != a
  with pytest.raises(ValueError, match="marginals"):
    minpv.estimate_mi(x, y, marginals="ranks", **opts)


@pytest.mark.slow
def test_defaults_large_kl_d10():
  # The d = 10 pair of experiments/minpv_large_kl.py (seed 0, KL 7.108 nats): −7.8 % at the
  # defaults (uncalibrated −8.0 %); beyond d = 8 and a few nats the contract is 10 %.
  rng, m1, s1, m0, s0 = _pair(10, 0)
  truth = _gauss_kl(m1, s1, m0, s0)
  x_p = rng.multivariate_normal(m1, s1, 10000)
  x_q = rng.multivariate_normal(m0, s0, 10000)
  r = minpv.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(0))
  est = r.kl(rng.multivariate_normal(m1, s1, 4000))
  assert abs(est - truth) / truth < 0.10, (est, truth)


@pytest.mark.parametrize("bad", ["constant_column", "constant", "flat", "n_le_d"])
def test_degenerate_samples_are_refused(bad):
  """p without a density (zero variance in some direction) has KL(p‖q) = ∞: refused, not fitted."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(500, 3))
  if bad == "constant_column":
    x[:, 1] = 2.0
  elif bad == "constant":
    x[:] = 1.0
  elif bad == "flat":
    x[:, 2] = x[:, 0] - 3.0 * x[:, 1]  # on a plane
  else:
    x = x[:3]
  with pytest.raises(ValueError, match=r"x_p( is degenerate|: need more samples)"):
    api.fit_log_ratio(x, rng.normal(size=(500, 3)), key=jax.random.PRNGKey(0), steps=1)
  with pytest.raises(ValueError, match=r"x_q( is degenerate|: need more samples)"):
    api.fit_log_ratio(rng.normal(size=(500, 3)), x, key=jax.random.PRNGKey(0), steps=1)


def test_ctrl_c_stops_a_long_fit_promptly():
  """steps=20000 (minutes): SIGINT lands between 100-step chunks, not at the end."""
  rng = np.random.default_rng(0)
  x_p, x_q = rng.normal(1.0, 1.0, (1000, 2)), rng.normal(size=(1000, 2))
  sent = []

  def interrupt():
    sent.append(time.time())
    os.kill(os.getpid(), signal.SIGINT)

  timer = threading.Timer(20.0, interrupt)  # well after the compile (a loaded CI host), in the loop
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      api.fit_log_ratio(x_p, x_q, key=jax.random.PRNGKey(0), steps=20000, batch_size=512)
  finally:
    timer.cancel()
  assert sent and time.time() - sent[0] < 10.0  # one chunk (~1 s unloaded), with slack for load


def test_option_typos_name_the_closest_option():
  x = np.random.default_rng(0).normal(size=(100, 2))
  with pytest.raises(ValueError, match=r"unknown option 'stpes'; did you mean 'steps'\?"):
    api.fit_log_ratio(x, x + 1.0, key=jax.random.PRNGKey(0), stpes=10)
  with pytest.raises(ValueError, match=r"unknown option 'batchsize'; did you mean 'batch_size'\?"):
    api.estimate_mi(x[:, :1], x[:, 1:], key=jax.random.PRNGKey(0), batchsize=10)


def test_estimate_kl_holds_out_and_reports_the_sampling_error():
  # N(1, I) against N(0, I) in d = 2: KL = |mu|^2 / 2 = 1, and the true log ratio mu.x - 1 has
  # variance |mu|^2 = 2 under p, so the held-out mean of 400 points has a standard error of
  # sqrt(2 / 400) = 0.071 (the fitted ratio's spread is close to the true one's).
  rng = np.random.default_rng(0)
  x_p, x_q = rng.normal(1.0, 1.0, (2000, 2)), rng.normal(size=(2000, 2))
  est = minpv.estimate_kl(x_p, x_q, key=jax.random.PRNGKey(0), steps=300, holdout=0.2)
  assert abs(est.kl - 1.0) < 0.25, est
  assert 0.5 * np.sqrt(2 / 400) < est.stderr < 1.5 * np.sqrt(2 / 400), est
  assert abs(est.kl_fit - est.ratio.kl()) < 1e-6 and est.ratio.x_p.shape == (1600, 2)
  assert str(est).startswith(f"KL = {est.kl:.4g} ± ")
  with pytest.raises(ValueError, match="holdout must be a fraction"):
    minpv.estimate_kl(x_p, x_q, key=jax.random.PRNGKey(0), holdout=1.0)
  with pytest.raises(ValueError, match="unknown option 'setps'; did you mean 'steps'"):
    minpv.estimate_kl(x_p, x_q, key=jax.random.PRNGKey(0), setps=3)
