"""Known-answer tests of the continuous PDNS sampler: Girsanov log-ratio, exact controls, loss.

Oracles: Gaussian transition densities of the two Euler–Maruyama chains (float64), the discrete
variance recursion of linear Gaussian chains, the analytic optimal control of Gaussian targets
and the discrete reference's terminal law.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.pdns import continuous, references, targets

OU = references.OUReference(dim=2, sigma_bar=1.0, alpha_start=20.0, alpha_end=0.1)  # int = 10.05
STEPS = 100

# One compiled call per rollout (eager dispatch of the setup ops costs more than the scan).
_ROLL = jax.jit(
  continuous.em_rollout, static_argnums=(0, 2, 4, 5), static_argnames=("return_path",)
)


def _rollout(u, params, ref, key, n, steps, **kw):
  return _ROLL(u, params, ref, key, n, steps, **kw)


def _const(c):
  c = jnp.asarray(c, jnp.float32)
  return lambda params, t, x: jnp.broadcast_to(c, x.shape)


def test_zero_control_log_ratio_is_zero():
  out = _rollout(_const([0.0, 0.0]), None, OU, jax.random.PRNGKey(0), 64, STEPS)
  assert out.x.shape == (64, 2) and out.log_ratio.shape == (64,)
  np.testing.assert_array_equal(np.asarray(out.log_ratio), 0.0)


def test_log_ratio_is_the_pathwise_radon_nikodym_derivative():
  """l must equal sum_k log N(x_{k+1}; ref mean, sigma^2 dt) - log N(x_{k+1}; ctrl mean, sigma^2 dt)
  along every sampled path, for a state- and time-dependent control (fresh noise in l fails)."""

  def u(params, t, x):
    return (1.5 - 2.0 * t) * x + jnp.asarray([0.7, -0.4]) * jnp.cos(3.0 * t)

  out = _rollout(u, None, OU, jax.random.PRNGKey(1), 16, 40, return_path=True)
  path = np.asarray(out.path, np.float64)  # (41, 16, 2)
  dt = 1.0 / 40
  want = np.zeros(16)
  for k in range(40):
    t = k * dt
    x, xn = path[k], path[k + 1]
    alpha = OU.alpha_start + (OU.alpha_end - OU.alpha_start) * t
    sig = OU.sigma_bar * math.sqrt(alpha)
    uk = (1.5 - 2.0 * t) * x + np.array([0.7, -0.4]) * math.cos(3.0 * t)
    m_ref = x - 0.5 * alpha * x * dt
    m_ctl = m_ref + sig * uk * dt
    var = sig**2 * dt
    want += np.sum(-((xn - m_ref) ** 2) / (2 * var) + (xn - m_ctl) ** 2 / (2 * var), -1)
  # float32 rollout: per-step terms are O(1) with relative round-off ~1e-6 over 40 steps, but
  # the oracle subtracts two O(|z|^2 / var) quadratics recomputed from float32 states.
  np.testing.assert_allclose(np.asarray(out.log_ratio), want, rtol=1e-3, atol=2e-3)


def test_constant_control_girsanov_moments():
  """u = c on the Brownian reference: l = -c.W_1 - |c|^2/2 with W_1 ~ N(0, I) under P^theta, so
  E[l] = -|c|^2/2 (= -KL) and E[e^l] = 1; X_1 ~ N(c, I)."""
  ref = references.BMReference(dim=2, sigma_const=1.0)
  c = np.array([0.6, -0.8])  # |c|^2 = 1
  n = 20000
  out = _rollout(_const(c), None, ref, jax.random.PRNGKey(2), n, 20)
  ell = np.asarray(out.log_ratio, np.float64)
  # Var(l) = |c|^2 = 1; Var(e^l) = e^{|c|^2} - 1 = 1.718; 5 standard errors.
  assert abs(ell.mean() + 0.5) < 5 / math.sqrt(n)
  assert abs(np.exp(ell).mean() - 1.0) < 5 * math.sqrt(math.e - 1) / math.sqrt(n)
  np.testing.assert_allclose(np.asarray(out.x).mean(0), c, atol=5 / math.sqrt(n))


def test_linear_control_path_kl_matches_variance_recursion():
  """u = kappa x on the 1-D OU reference: the chain stays Gaussian with
  v_{k+1} = (1 + (-alpha/2 + sigma kappa) dt)^2 v_k + sigma^2 dt and
  E[l] = -KL(P^theta || P^ref) = -1/2 sum_k kappa^2 v_k dt exactly in discrete time."""
  ref = references.OUReference(dim=1, sigma_bar=1.0, alpha_start=12.0, alpha_end=8.0)
  kappa, n, steps = 0.8, 40000, 50
  out = _rollout(lambda p, t, x: kappa * x, None, ref, jax.random.PRNGKey(3), n, steps)
  dt, v, kl = 1.0 / steps, 1.0, 0.0
  for k in range(steps):
    alpha = 12.0 - 4.0 * k * dt
    sig = math.sqrt(alpha)
    kl += 0.5 * kappa**2 * v * dt
    v = (1 + (-0.5 * alpha + sig * kappa) * dt) ** 2 * v + sig**2 * dt
  ell = np.asarray(out.log_ratio, np.float64)
  se = ell.std() / math.sqrt(n)
  assert abs(ell.mean() + kl) < 5 * se, (ell.mean(), -kl, se)
  assert abs(np.asarray(out.x, np.float64).var() - v) < 5 * v * math.sqrt(2 / n)


def test_exact_control_gives_constant_weights_brownian():
  """Target N(m, I) under the Brownian reference from 0 (nu = N(0, I)): r(x) = m.x - |m|^2/2 +
  log Z is linear, the optimal control is the constant u* = m, and the EM chain (exact for
  Brownian motion) with u* has W = l + r = log Z on every path."""
  m = np.array([1.0, -0.5])
  tgt = targets.gaussian(m, [1.0, 1.0], log_z=0.7)
  ref = references.BMReference(dim=2, sigma_const=1.0)
  out = _rollout(_const(m), None, ref, jax.random.PRNGKey(4), 4096, 25)
  w = np.asarray(out.log_ratio + ref.reward(tgt.log_prob_unnorm, out.x), np.float64)
  # float32 round-off of O(5)-sized sums: 1e-4.
  np.testing.assert_allclose(w, 0.7, atol=1e-4)
  stats = continuous.log_weight_stats(jnp.asarray(w, jnp.float32))
  assert float(stats["eval/log_z"]) == pytest.approx(0.7, abs=1e-4)
  assert float(stats["eval/ess"]) == pytest.approx(1.0, abs=1e-5)


def _discrete_log_z(target, ref, steps):
  """log int nu_Delta pi~ / nu: the normaliser of the discretised OU problem, from the EM variance
  recursion of the reference chain and 1-D quadrature per coordinate (diagonal covariances)."""
  dt, v = 1.0 / steps, ref.sigma_bar**2
  for k in range(steps):
    alpha = ref.alpha_start + (ref.alpha_end - ref.alpha_start) * k * dt
    v = (1 - 0.5 * alpha * dt) ** 2 * v + ref.sigma_bar**2 * alpha * dt
  grid = np.linspace(-12, 12, 24001)
  h = grid[1] - grid[0]
  s2 = ref.sigma_bar**2
  total = 0.0
  for lw, mean, cov in zip(
    np.asarray(target.log_weights), np.asarray(target.means), np.asarray(target.covs)
  ):
    prod = 1.0
    for i in range(ref.dim):
      f = (
        np.exp(-(grid**2) / (2 * v))
        / math.sqrt(2 * math.pi * v)
        * np.exp(-((grid - mean[i]) ** 2) / (2 * cov[i, i]))
        / math.sqrt(2 * math.pi * cov[i, i])
        / (np.exp(-(grid**2) / (2 * s2)) / math.sqrt(2 * math.pi * s2))
      )
      prod *= f.sum() * h
    total += math.exp(lw) * prod
  return float(target.log_z) + math.log(total)


def test_gmm_optimal_control_oracle_on_ou():
  """The analytic u* of a 2-D two-mode mixture under the OU reference: E[e^W] equals the discrete
  normaliser (an identity for any control), the weights are nearly constant, and u* lowers the
  path KL by orders of magnitude relative to u = 0."""
  tgt = targets.GaussianMixture.create(
    [0.3, 0.7], [[-1.5, 0.0], [1.5, 0.5]], [[0.3, 0.5], [0.4, 0.2]], log_z=1.0
  )
  u_star = continuous.gmm_optimal_control(OU, tgt.log_weights, tgt.means, tgt.covs)
  n = 4096
  out = _rollout(u_star, None, OU, jax.random.PRNGKey(5), n, 200)
  w = out.log_ratio + OU.reward(tgt.log_prob_unnorm, out.x)
  stats = {k: float(v) for k, v in continuous.log_weight_stats(w).items()}
  zero = _rollout(_const([0.0, 0.0]), None, OU, jax.random.PRNGKey(5), n, 200)
  w0 = zero.log_ratio + OU.reward(tgt.log_prob_unnorm, zero.x)
  stats0 = {k: float(v) for k, v in continuous.log_weight_stats(w0).items()}
  want = _discrete_log_z(tgt, OU, 200)
  # Delta-method standard error of log Z^: sqrt((1/ESS - 1) / N); 5 of them.
  se = math.sqrt((1 / stats["eval/ess"] - 1) / n)
  assert abs(stats["eval/log_z"] - want) < 5 * se + 1e-4, (stats, want)
  # At 200 steps the EM bias of the oracle control leaves a small path KL.
  assert stats["eval/ess"] > 0.9 and stats["eval/path_kl"] < 0.05
  assert stats0["eval/path_kl"] > 20 * stats["eval/path_kl"]
  # The control also moves the samples onto the modes: mode-2 fraction near 0.7.
  frac = float(jnp.mean(out.x[:, 0] > 0))
  assert abs(frac - 0.7) < 0.05


def test_bridge_matching_loss_minimiser_is_target_mean():
  """Constant controls u = p on the Brownian reference with exact samples X_1 ~ N(m, I): the
  Eq. 9 minimiser over constants is E[sigma s_t] = E[(X_1 - X_t)/(1 - t)] = E[X_1 - X_0] = m, so
  the loss gradient vanishes at p = m (and is -(m)/d at p = 0, the 1/d from the mean over d)."""
  m = np.array([1.0, -2.0])
  ref = references.BMReference(dim=2, sigma_const=1.0)
  n = 40000
  x1 = jnp.asarray(m, jnp.float32) + jax.random.normal(jax.random.PRNGKey(6), (n * 2,)).reshape(
    n, 2
  )
  u = lambda p, t, x: jnp.broadcast_to(p, x.shape)
  grad = jax.grad(
    lambda p: continuous.bridge_matching_loss(p, u, ref, jax.random.PRNGKey(7), x1, jnp.ones((n,)))[
      0
    ]
  )
  # Per-sample target variance ~ 1 + E[t/(1-t)] ~ 7 on t in [0, 0.999]; se sqrt(7/n)/d, 5 se.
  tol = 5 * math.sqrt(7.0 / n) / 2
  np.testing.assert_allclose(np.asarray(grad(jnp.asarray(m, jnp.float32))), 0.0, atol=tol)
  np.testing.assert_allclose(np.asarray(grad(jnp.zeros(2))), -m / 2, atol=tol)
  with pytest.raises(ValueError, match="weights must have shape"):
    continuous.bridge_matching_loss(
      jnp.zeros(2), u, ref, jax.random.PRNGKey(0), x1[:4], jnp.ones((3,))
    )
  with pytest.raises(ValueError, match="t_max"):
    continuous.bridge_matching_loss(
      jnp.zeros(2), u, ref, jax.random.PRNGKey(0), x1[:4], jnp.ones((4,)), t_max=1.0
    )


def test_adjoint_parameterisation_scales_by_sigma():
  net = continuous.ControlNet(dim=2)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros(()), jnp.zeros((1, 2)))
  x = jnp.ones((3, 2))
  assert np.all(np.asarray(net.apply(params, 0.3, x)) == 0.0)  # zero output layer
  fake = lambda p, t, x: jnp.ones_like(x)
  u = continuous.make_control(fake, OU, "adjoint")
  np.testing.assert_allclose(np.asarray(u(None, 0.5, x)), float(OU.sigma(0.5)), rtol=1e-6)
  with pytest.raises(ValueError, match="param"):
    continuous.make_control(fake, OU, "score")
