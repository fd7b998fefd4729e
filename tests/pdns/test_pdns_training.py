"""Slow known-answer training of the continuous PDNS sampler on a 2-D Gaussian target.

Brownian reference from the origin: Euler–Maruyama is exact for it, so the discretised tilted
chain has terminal law exactly pi and E[e^W] = Z for any control (no EM bias to calibrate).
"""

import math

import jax
import numpy as np
import pytest

from iclr26_jax.pdns import continuous, proximal, references, targets

MEAN, STD, LOG_Z = np.array([1.0, -0.5]), np.array([0.5, 0.8]), 1.3
# First honest run: path KL 0.044 (proximal) and 0.052 (eta = inf), both apparently at
# the 32-step floor of this control; the ceiling leaves slack for run-to-run noise and is still ~17x
# below the untrained sampler's 1.4.
KL_CEIL = 0.08


def _fit(eta_inf: bool):
  tgt = targets.gaussian(MEAN, STD**2, log_z=LOG_Z)
  ref = references.BMReference(dim=2, sigma_const=1.0)
  sampler = continuous.ContinuousSampler(ref, tgt.log_prob_unnorm, num_steps=32, hidden=32)
  cfg = proximal.ProxConfig(
    num_stages=6,
    epochs_per_stage=12,
    buffer_size=1024,
    batch_size=128,
    step_size="adaptive",
    epsilon=0.5,
    lambda_min=0.02,
    refine_stages=3,
    ema_decay=0.9,
    learning_rate=2e-3,
    eta_inf=eta_inf,
  )
  res = sampler.fit(cfg, jax.random.PRNGKey(0))
  x, w = sampler.sample(res.params, jax.random.PRNGKey(1), 8192)
  return res, np.asarray(x, np.float64), np.asarray(w, np.float64)


def _check(res, x, w):
  n = w.shape[0]
  stats = {k: float(v) for k, v in continuous.log_weight_stats(jax.numpy.asarray(w)).items()}
  # The untrained sampler (u = 0) has path KL = KL(N(0, I) || pi) ~ 1.4 here; training must bring
  # it below KL_CEIL, which bounds the terminal KL(q || pi) by data processing.
  assert stats["eval/path_kl"] < KL_CEIL, stats
  # log Z^: delta-method standard error sqrt((1/ESS - 1)/N), 5 of them, plus 0.01 for the
  # O(Var W / N) bias of the log of a ratio estimator.
  se = math.sqrt((1 / stats["eval/ess"] - 1) / n)
  assert abs(stats["eval/log_z"] - LOG_Z) < 5 * se + 0.01, stats
  # Unweighted samples: for Gaussians KL >= (dm)^2 / (2 s^2) and KL >= (rho - 1)^2 / 2 to leading
  # order (rho = std ratio), so |dm| <= s sqrt(2 KL) and |rho - 1| <= sqrt(2 KL) (q is close to
  # Gaussian here); plus 5 Monte Carlo standard errors (s / sqrt(N), s / sqrt(2N)).
  bound = math.sqrt(2 * KL_CEIL)
  np.testing.assert_array_less(np.abs(x.mean(0) - MEAN), STD * (bound + 5 / math.sqrt(n)))
  np.testing.assert_array_less(np.abs(x.std(0) / STD - 1), bound + 5 / math.sqrt(2 * n))
  return stats


@pytest.mark.slow
def test_proximal_training_and_eta_inf_baseline_reach_known_answers():
  res, x, w = _fit(eta_inf=False)
  stats = _check(res, x, w)
  lam = proximal.history_array(res.history, "stage/lambda")
  c = proximal.history_array(res.history, "stage/c")
  prox_stages = [h for h in res.history if not h["refine"]]
  assert len(prox_stages) >= 2 and np.all(c[: len(prox_stages)] < 1.0)  # tempered stages ran
  assert np.all(np.diff(lam) <= 0) and lam[-1] == 0.0  # schedule finished
  assert [h["refine"] for h in res.history][-3:] == [True] * 3
  # Each adaptive stage met the trust region (or was clamped and flagged).
  for h in prox_stages:
    assert h["prox/flag"] != proximal.FEASIBLE or abs(h["prox/kl_hat"] - 0.5) < 1e-3
  print(
    "proximal", stats, [(round(h["stage/c"], 3), round(h["stage/lambda"], 4)) for h in res.history]
  )
  # Non-proximal baseline: the same code with eta_inf=True (c = 1 from the first stage).
  res0, x0, w0 = _fit(eta_inf=True)
  assert all(h["stage/c"] == 1.0 and h["stage/lambda"] == 0.0 for h in res0.history)
  stats0 = _check(res0, x0, w0)
  print("eta_inf", stats0)
