"""Known-answer checks of the memoryless SDE and of lean adjoint matching against an analytic
Gaussian behaviour policy (QAM, Li & Levine, ICLR 2026,
github.com/ColinQiyangLi/qam).

Setting and the affine v_θ family: see ``experiments/qam_known_answers.py`` (shared with the
reproduce claim ``qam/analytic_tilt``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.qam import adjoint, flows
from experiments import qam_known_answers as ka
from experiments.qam_known_answers import (
  KAPPA,
  LAM0,
  LIN_HALF,
  LIN_ONE,
  M,
  PROBS,
  QUAD,
  S0,
  D,
  STATES,
  flat_normal,
  v_beta,
)


def test_gaussian_tilt_adjoint_matching_recovers_closed_form():
  """Adjoint matching on the Gaussian tilt: (i) the ODE samples of v_θ have the mean and
  covariance of π*, (ii) v_θ is π*'s closed-form velocity, (iii) at λ = 0 v_θ stays v_β, (iv) with
  a linear critic the mean shifts linearly in λ, by λ·s_0²·w.

  Tolerances. Monte Carlo: M = 20000 samples, σ ≤ 0.3, so the mean's standard error is
  ≤ 0.0021 and 4 SE = 0.0085; the std's relative SE is 1/√(2M) = 0.005. Slack: the Euler bias of
  the *base* sampler at the same N, measured first on the exact v_β with the same x_0 (mean bias
  ≈ 1e-3; it under-disperses, std ≈ 0.285 instead of 0.30 at N = 40). The fine-tuned sampler
  carries the same discretisation, so its std is compared through the ratio std/std* against the
  base ratio std_β/s_0. Measured errors at N = 40: means ≤ 2.5e-3, std ratios within 5e-3.
  A wrong adjoint or λ sign moves the mean the wrong way by ~0.1–0.2; a missing σ weighting or a
  non-memoryless schedule biases the tilt (mean and κ*) well beyond these bounds.
  """
  stats, base, vel = jax.device_get(ka.tilt_experiment())
  (mean_t, std_t), (mean_b, std_b) = stats, base
  s_col = np.asarray(STATES)[:, None]
  mu = np.concatenate([0.5 * s_col, -0.5 * s_col], -1)
  base_mean_bias = np.abs(mean_b - mu).max()
  base_ratio = std_b / S0
  assert base_mean_bias < 5e-3 and np.all(np.abs(base_ratio - 1) < 0.1), (mean_b, std_b)
  tol_mean = 4 * S0 / np.sqrt(M) + base_mean_bias
  tol_ratio = 4 / np.sqrt(2 * M)
  for i in range(4):
    prob = jax.tree_util.tree_map(lambda x: np.asarray(x)[i], PROBS)
    m_star, kap = ka.tilted(prob, jnp.asarray(s_col))
    # (i) mean and covariance of the ODE samples of v_θ against π*.
    np.testing.assert_allclose(mean_t[i], m_star, rtol=0, atol=tol_mean, err_msg=f"problem {i}")
    np.testing.assert_allclose(
      std_t[i] / np.sqrt(kap), base_ratio, rtol=0, atol=tol_ratio, err_msg=f"problem {i}"
    )
  # The quadratic tilt is a real change: mean moved by ≫ tol and the spread shrank (κ* < s_0²).
  assert np.linalg.norm(mean_t[QUAD] - mu, axis=-1).min() > 10 * tol_mean
  assert np.all(std_t[QUAD] < 0.8 * std_b)

  # (ii) v_θ against the closed-form velocity of π* at points visited by the fine-tuned rollouts,
  # at interior grid times (the discrete fixed point differs from the continuous field by O(h)
  # near t = 0 and t = 1, where the sampler's errors cancel; measured interior error ≤ 22%).
  for i in (QUAD, LIN_ONE):
    err, signal = vel[i, :, 0], vel[i, :, 1]
    assert np.all(err < 0.3 * signal), (i, vel[i])
  # (iii) λ = 0: the regression target is v_β̄ itself, so v_θ ≈ v_β (measured ≤ 3e-3).
  assert np.all(vel[LAM0, :, 2] < 0.01), vel[LAM0]

  # (iv) linear critic: the shift of the mean along w is linear in λ, of size λ·s_0²·w.
  shift_half = mean_t[LIN_HALF] - mean_b
  shift_one = mean_t[LIN_ONE] - mean_b
  w = np.asarray([1.0, -0.5])
  for sh, lam in ((shift_half, 0.5), (shift_one, 1.0)):
    cos = sh @ w / (np.linalg.norm(sh, axis=-1) * np.linalg.norm(w))
    assert np.all(cos > 0.99), cos
    np.testing.assert_allclose(
      np.linalg.norm(sh, axis=-1), lam * KAPPA * np.linalg.norm(w), rtol=0.1
    )
  ratio = np.linalg.norm(shift_one, axis=-1) / np.linalg.norm(shift_half, axis=-1)
  np.testing.assert_allclose(ratio, 2.0, rtol=0.1)


@jax.jit
def _memory_experiment():
  n, s = 100, 0.5
  o = jnp.full((M, 1), s)
  x0 = flat_normal(jax.random.PRNGKey(0), (M, D))
  eps = flat_normal(jax.random.PRNGKey(1), (n - 1, M, D))
  h = 1.0 / n

  def general_sde(scale):
    # Same-marginal SDE family dX = [(1 + σ²t/(2(1−t)))v − σ²X/(2(1−t))]dt + σ dB, with σ_t a
    # multiple of the memoryless schedule (scale 1 is memoryless), on the reference time grid.
    def step(x, inp):
      k, e = inp
      ts = k * h + h
      sig2 = scale**2 * 2 * (1 - ts + h) / ts
      drift = (1 + sig2 * ts / (2 * (1 - ts + h))) * v_beta(
        o, x, jnp.full((M,), k * h)
      ) - sig2 * x / (2 * (1 - ts + h))
      return x + h * drift + jnp.sqrt(h * sig2) * e, None

    x, _ = jax.lax.scan(step, x0, (jnp.arange(n - 1), eps))
    return x + h * v_beta(o, x, jnp.full((M,), (n - 1) * h))

  def corr(x):  # per-dimension correlation of X_0 and X_N
    return jnp.mean((x0 - x0.mean(0)) * (x - x.mean(0)), 0) / (x0.std(0) * x.std(0))

  x_mem = adjoint.rollout(v_beta, v_beta, o, x0, eps, n)[-1]
  x_ode = flows.euler_ode(v_beta, o, x0, n)
  x_half = general_sde(0.5)
  return (
    jnp.mean(x_mem, 0),
    jnp.std(x_mem, 0),
    jnp.corrcoef(x_mem.T)[0, 1],
    corr(x_mem),
    corr(x_ode),
    corr(x_half),
  )


def test_memoryless_rollout_forgets_x0_and_keeps_behaviour_marginal():
  """The memoryless SDE: with the exact Gaussian v_β and N = 100, the library's memoryless rollout
  (rollout with v_θ := v_β) ends in π_β = N(μ(0.5), s_0² I) and X_N is uncorrelated with X_0;
  the ODE (a deterministic map, corr ≈ 1) and a non-memoryless σ_t (half the memoryless one,
  measured corr ≈ 0.18) keep the memory.

  Tolerances: mean 4 SE = 4·0.3/√M = 0.0085; std 5% (4 SE = 2% plus the O(h) Euler bias, measured
  +2% at N = 100); correlations 4/√M = 0.028 (null standard error 1/√M)."""
  mean, std, cross, c_mem, c_ode, c_half = jax.device_get(_memory_experiment())
  np.testing.assert_allclose(mean, [0.25, -0.25], atol=4 * S0 / np.sqrt(M))
  np.testing.assert_allclose(std, S0, rtol=0.05)
  zero_tol = 4 / np.sqrt(M)
  assert abs(cross) < zero_tol, cross  # isotropic covariance
  assert np.all(np.abs(c_mem) < zero_tol), c_mem
  assert np.all(c_ode > 0.99), c_ode
  assert np.all(c_half > 5 * zero_tol), c_half
