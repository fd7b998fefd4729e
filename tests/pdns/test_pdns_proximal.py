"""Known-answer tests of the PDNS proximal machinery: stage targets, weights, adaptive step size.

Oracles: the closed form of the proximal step on a finite path space checked against a direct
numerical minimisation of Eq. 5 (float64 numpy), the small-c expansion KL^(c) ~ c^2 Var(W)/2,
and the trust-region equation itself.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.pdns import proximal


def _softmax(a):
  a = a - a.max()
  return np.exp(a) / np.exp(a).sum()


def test_proximal_closed_form_on_finite_path_space():
  """On K 'paths' with reference p_ref, previous model p_prev and reward r, the stage weights
  (Eq. 8b) times p_prev equal the minimiser of F(q) + (1/eta) KL(q || p_prev) found by mirror
  descent; iterating the ideal target (Eq. 8a) reproduces P_k ~ p_ref e^{(1 - lambda_k) r}."""
  rng = np.random.default_rng(0)
  k = 7
  p_ref = _softmax(rng.normal(size=k))
  p_prev = _softmax(rng.normal(size=k))
  r = rng.normal(size=k) * 2
  ell = np.log(p_ref) - np.log(p_prev)  # log dP^ref/dP_prev on each path
  eta = 0.7
  c = eta / (1 + eta)
  log_w, lam = proximal.stage_log_weights(jnp.asarray(ell), jnp.asarray(r), c, 1.0, "prox")
  q_closed = p_prev * np.asarray(proximal.normalize_weights(log_w, clamp_max=1e9)[0]) / k
  q_closed /= q_closed.sum()
  # Mirror descent on the simplex for F(q) + (1/eta) KL(q||p_prev),
  # F(q) = KL(q||p_ref) - E_q[r]; gradient log q - log p_ref - r + (log q - log p_prev)/eta.
  q = np.full(k, 1.0 / k)
  for _ in range(4000):
    g = np.log(q) - np.log(p_ref) - r + (np.log(q) - np.log(p_prev)) / eta
    q = _softmax(np.log(q) - 0.2 * g)
  np.testing.assert_allclose(q_closed, q, rtol=1e-4)
  assert float(lam) == pytest.approx(1 - c)
  # Ideal iterates with random c_k: each exact stage gives p_ref e^{(1 - lambda_k) r}.
  p = p_ref.copy()
  lam = 1.0
  for ck in rng.uniform(0.1, 0.9, size=4):
    lw, lam = proximal.stage_log_weights(
      jnp.asarray(np.log(p_ref) - np.log(p)), jnp.asarray(r), float(ck), lam, "ideal"
    )
    p = _softmax(np.log(p) + np.asarray(lw, np.float64))
    lam = float(lam)
    np.testing.assert_allclose(p, _softmax(np.log(p_ref) + (1 - lam) * r), rtol=1e-5)


def test_normalize_weights_filter_and_clamp():
  log_w = jnp.asarray([0.0, 0.0, jnp.nan, 10.0, -jnp.inf], jnp.float32)
  w, info = proximal.normalize_weights(log_w, clamp_max=3.0)
  p = np.exp([0.0, 0.0, 10.0]) / np.exp([0.0, 0.0, 10.0]).sum()
  np.testing.assert_allclose(np.asarray(w), [5 * p[0], 5 * p[1], 0.0, 3.0, 0.0], rtol=1e-5)
  assert float(info["weights/frac_filtered"]) == pytest.approx(0.4)  # NaN and -inf
  assert float(info["weights/frac_clamped"]) == pytest.approx(0.2)
  w, _ = proximal.normalize_weights(jnp.asarray(np.random.default_rng(1).normal(size=64)))
  assert float(jnp.mean(w)) == pytest.approx(1.0, rel=1e-5)  # mean one before clamping


def test_adaptive_step_solves_trust_region_equation():
  n, s = 20000, 2.0
  w = jnp.asarray(np.random.default_rng(2).normal(size=n) * s, jnp.float32)
  zero = jnp.zeros_like(w)
  for eps in (0.01, 0.05):
    c, kl, flag = proximal.solve_step_size(zero, w, eps)
    assert int(flag) == proximal.FEASIBLE
    # The solved c satisfies Eq. 10: KL^ of the new weights equals epsilon.
    new_kl = float(proximal.kl_hat(proximal.stage_log_weights(zero, w, c, 1.0, "prox")[0]))
    assert new_kl == pytest.approx(eps, rel=1e-3)
    assert float(kl) == pytest.approx(eps, rel=1e-3)
    # Gaussian W: KL^(c) = c^2 s^2 / 2 + O(sampling error), so c ~ sqrt(2 eps)/s; the relative
    # sampling error of the sample variance is sqrt(2/n) ~ 1%, so 5% suffices.
    assert float(c) == pytest.approx(math.sqrt(2 * eps) / s, rel=0.05)
  cs = jnp.linspace(0.01, 0.99, 30)
  kls = np.asarray(jax.vmap(lambda c: proximal.kl_hat(c * w))(cs))
  assert np.all(np.diff(kls) > 0)  # monotone in c
  # Constant weights: KL^ = 0 for all c, epsilon unreachable, c goes to the upper bracket.
  c, kl, flag = proximal.solve_step_size(zero, jnp.ones_like(w), 0.5)
  assert float(c) == pytest.approx(0.99) and int(flag) == proximal.EPS_ABOVE_BRACKET
  # The ideal target (Eq. 8a) solves the same equation with 1 - lambda_k = 1 - lam_prev (1 - c).
  ell = jnp.asarray(np.random.default_rng(3).normal(size=n) * 0.3, jnp.float32)
  c, kl, flag = proximal.solve_step_size(ell, w, 0.5, 0.6, stage_target="ideal")
  lw, lam = proximal.stage_log_weights(ell, w, c, 0.6, "ideal")
  assert int(flag) == proximal.FEASIBLE
  assert float(proximal.kl_hat(lw)) == pytest.approx(0.5, rel=1e-3)
  assert float(lam) == pytest.approx(0.6 * (1 - float(c)), rel=1e-6)


def test_epsilon_at_least_log_n_is_rejected():
  with pytest.raises(ValueError, match="epsilon"):
    proximal.check_epsilon(math.log(100), 100)
  with pytest.raises(ValueError, match="epsilon"):
    proximal.ProxConfig(buffer_size=128, batch_size=64, epsilon=5.0)  # log 128 = 4.85
  proximal.ProxConfig(buffer_size=128, batch_size=64, epsilon=4.0)
  proximal.ProxConfig(buffer_size=128, batch_size=64, epsilon=5.0, eta_inf=True)
  with pytest.raises(ValueError, match="batch_size"):
    proximal.ProxConfig(buffer_size=100, batch_size=64)
  with pytest.raises(ValueError, match="stage_target"):
    proximal.ProxConfig(stage_target="P_k")


def test_resample_indices_follow_weights():
  w = jnp.asarray([0.0, 1.0, 3.0])
  idx = np.asarray(proximal.resample_indices(jax.random.PRNGKey(0), w, 40000))
  freq = np.bincount(idx, minlength=3) / 40000
  # Multinomial standard error sqrt(p(1-p)/n) <= 0.0025; 5 of them.
  np.testing.assert_allclose(freq, [0.0, 0.25, 0.75], atol=0.0125)
