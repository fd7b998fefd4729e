"""``pdns.fit_sampler`` / ``pdns.fit_discrete_sampler``, the entry points for a density of one's own
(Guo, Choi, Zhu, Tao, Chen, "Proximal Diffusion Neural Sampler", ICLR 2026;
github.com/AlexandreGUO2001/PDNS), at their default settings, against exact answers.

Continuous: a 1-D three-mode Gaussian mixture with unequal weights (0.2, 0.5, 0.3), means
(-5, 0, 4), stds (0.6, 1.0, 0.5), multiplied by e^1.3, so log Z = 1.3 exactly. Checks:
|log Z^ - 1.3| < 0.1 (a sampler missing the 0.2 mode is off by -log 0.8 = 0.22, one missing the
0.3 mode by 0.36); every mode is sampled by the model's unweighted samples with at least half of
its weight; the self-normalised importance-weighted mode weights are within 0.03 of the exact ones
(the IS error at the measured ESS and 20,000 samples is < 0.01).

Discrete: a periodic Potts chain, 6 sites, 3 states, coupling J = 1 and a field 0.3 on state 0:
729 states, log Z and the law by enumeration (the oracle). Three aligned modes of unequal weight
(state 0's the heaviest). Checks: |log Z^ - log Z| < 0.1; each aligned configuration is sampled
by the model at >= half its exact probability; the importance-weighted law's TV to the exact one
is below 1.5 x the sampling floor of as many exact draws as its effective sample size (IS is
consistent, so only sampling noise is left); the model's own law is closer to the target than
the uniform reference is, by half.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax import pdns
from iclr26_jax.pdns import api

W = np.array([0.2, 0.5, 0.3])
MU = np.array([-5.0, 0.0, 4.0])
SD = np.array([0.6, 1.0, 0.5])
LOG_Z = 1.3


def _mixture_log_density(x):
  comp = jnp.log(W) - 0.5 * ((x[0] - MU) / SD) ** 2 - jnp.log(SD) - 0.5 * jnp.log(2 * jnp.pi)
  return jax.nn.logsumexp(comp) + LOG_Z


def _modes(x, weights=None):
  """Mode weights of 1-D samples x (n,) by the largest component responsibility."""
  resp = np.log(W) - 0.5 * ((x[:, None] - MU) / SD) ** 2 - np.log(SD)
  return np.bincount(resp.argmax(1), weights=weights, minlength=3) / (
    len(x) if weights is None else 1.0
  )


@pytest.mark.slow
def test_fit_sampler_three_mode_mixture_at_defaults():
  fitted = pdns.fit_sampler(_mixture_log_density, 1, key=jax.random.key(0))
  assert abs(fitted.log_z - LOG_Z) < 0.1, fitted.log_z
  assert 0.0 < fitted.ess <= 1.0
  x = np.asarray(fitted.sample(jax.random.key(1), 20000))
  assert x.shape == (20000, 1)
  sampled = _modes(x[:, 0])
  assert np.all(sampled >= 0.5 * W), sampled  # every mode sampled
  xw, log_w = fitted.sample_weighted(jax.random.key(2), 20000)
  p = np.asarray(jax.nn.softmax(log_w), np.float64)
  np.testing.assert_allclose(_modes(np.asarray(xw)[:, 0], p), W, atol=0.03)
  assert fitted.history[-1]["done"] and fitted.history[0]["stage"] == 1


POTTS_D, POTTS_Q, POTTS_J, POTTS_H = 6, 3, 1.0, 0.3


def _potts_log_prob(x):
  same = jnp.sum(x == jnp.roll(x, 1)).astype(jnp.float32)
  return POTTS_J * same + POTTS_H * jnp.sum(x == 0).astype(jnp.float32)


def _potts_exact():
  states = np.asarray(list(itertools.product(range(POTTS_Q), repeat=POTTS_D)), np.int32)
  logp = np.asarray(jax.vmap(_potts_log_prob)(jnp.asarray(states)), np.float64)
  log_z = float(np.logaddexp.reduce(logp))
  return states, np.exp(logp - log_z), log_z


def _index(x):
  return np.asarray(x) @ (POTTS_Q ** np.arange(POTTS_D)[::-1])


@pytest.mark.slow
def test_fit_discrete_sampler_potts_chain_at_defaults():
  states, p, log_z = _potts_exact()
  fitted = pdns.fit_discrete_sampler(_potts_log_prob, POTTS_D, POTTS_Q, key=jax.random.key(0))
  assert abs(fitted.log_z - log_z) < 0.1, (fitted.log_z, log_z)
  x = np.asarray(fitted.sample(jax.random.key(1), 20000))
  assert x.shape == (20000, POTTS_D) and x.dtype == np.int32
  assert x.min() >= 0 and x.max() < POTTS_Q
  emp = np.bincount(_index(x), minlength=POTTS_Q**POTTS_D) / len(x)
  assert np.array_equal(_index(states), np.arange(len(states)))
  for v in range(POTTS_Q):  # the three aligned modes
    i = int(_index(np.full((1, POTTS_D), v))[0])
    assert emp[i] >= 0.5 * p[i], (v, emp[i], p[i])
  xw, log_w = fitted.sample_weighted(jax.random.key(2), 20000)
  wts = np.asarray(jax.nn.softmax(log_w), np.float64)
  weighted = np.bincount(_index(xw), weights=wts, minlength=len(p))
  # Sampling floor: the expected TV of an empirical law of n_eff = n ESS exact draws,
  # 0.5 sum_i E|p^_i - p_i| ~ 0.5 sum_i sqrt(2 p_i (1 - p_i) / (pi n_eff)) (normal approximation).
  n_eff = len(wts) / (len(wts) * np.sum(wts**2))
  floor = 0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (np.pi * n_eff)))
  assert 0.5 * np.abs(weighted - p).sum() < 1.5 * floor, (0.5 * np.abs(weighted - p).sum(), floor)
  uniform_tv = 0.5 * np.abs(1.0 / len(p) - p).sum()
  assert 0.5 * np.abs(emp - p).sum() < 0.5 * uniform_tv  # resampled .sample(): near the floor
  # .sample() resamples a pool of 4 n weighted model samples: its law is the weighted pool's
  # (n_eff = 4 n ESS) seen through n draws, so its floor adds both variances.
  n_res = 1.0 / (1.0 / (4 * len(x) * fitted.ess) + 1.0 / len(x))
  floor_res = 0.5 * np.sum(np.sqrt(2 * p * (1 - p) / (np.pi * n_res)))
  tv_res = 0.5 * np.abs(emp - p).sum()
  assert tv_res < 1.5 * floor_res, (tv_res, floor_res)
  raw = np.asarray(fitted.sample(jax.random.key(1), 20000, resample=False))
  tv_raw = 0.5 * np.abs(np.bincount(_index(raw), minlength=len(p)) / len(raw) - p).sum()
  assert tv_res < tv_raw, (tv_res, tv_raw)  # the raw model is biased; the weights correct it


def test_unknown_option_is_named():
  with pytest.raises(ValueError, match=r"'num_stage'.*did you mean 'num_stages'"):
    pdns.fit_sampler(_mixture_log_density, 1, key=jax.random.key(0), num_stage=3)
  with pytest.raises(ValueError, match=r"'replicate'.*'replicates'"):
    pdns.fit_discrete_sampler(_potts_log_prob, 6, 3, key=jax.random.key(0), replicate=2)
  # a continuous-only option is unknown to the discrete sampler
  with pytest.raises(ValueError, match="'sigma_bar'"):
    pdns.fit_discrete_sampler(_potts_log_prob, 6, 3, key=jax.random.key(0), sigma_bar=2.0)


def test_bad_arguments_are_named():
  key = jax.random.key(0)
  with pytest.raises(ValueError, match=r"log_density must return a float scalar.*\(2,\)"):
    pdns.fit_sampler(lambda x: x, 2, key=key)  # returns (2,), not a scalar
  with pytest.raises(ValueError, match="log_density must map one point of shape"):
    pdns.fit_sampler(lambda x: x @ jnp.ones(3), 2, key=key)
  with pytest.raises(ValueError, match="dim must be a positive integer; got 0"):
    pdns.fit_sampler(_mixture_log_density, 0, key=key)
  with pytest.raises(ValueError, match="key must be a PRNG key"):
    pdns.fit_sampler(_mixture_log_density, 1, key=3)
  with pytest.raises(ValueError, match=r"batch_size \(300\) must divide buffer_size"):
    pdns.fit_sampler(_mixture_log_density, 1, key=key, batch_size=300)
  with pytest.raises(ValueError, match="epsilon"):
    pdns.fit_sampler(_mixture_log_density, 1, key=key, epsilon=10.0)  # >= log(2048)
  with pytest.raises(ValueError, match="num_states must be >= 2"):
    pdns.fit_discrete_sampler(_potts_log_prob, 6, 1, key=key)
  with pytest.raises(ValueError, match="log_prob must return a float scalar"):
    pdns.fit_discrete_sampler(lambda x: jnp.sum(x), 6, 3, key=key)  # int32


def test_defaults_are_the_claims_settings():
  """The continuous defaults are the two-mode mixture claim's config, the discrete ones the Ising
  config's sampler and stage settings (see ``api``'s module docstring)."""
  from experiments.configs.pdns import ising, two_mode_10d

  c = two_mode_10d.get_config()
  d = api.CONTINUOUS_DEFAULTS
  assert (d["sigma_bar"], d["alpha_max"], d["alpha_min"]) == (
    c.sampler.sigma_bar,
    c.sampler.alpha_max,
    c.sampler.alpha_min,
  )
  assert (d["num_steps"], d["hidden"], d["depth"]) == (
    c.sampler.sde_steps,
    c.sampler.hidden,
    c.sampler.depth,
  )
  assert (d["epsilon"], d["ema_decay"], d["batch_size"]) == (
    c.prox.epsilon,
    c.prox.ema_decay,
    c.batch_size,
  )
  i = ising.get_config()
  e = api.DISCRETE_DEFAULTS
  assert (e["formulation"], e["replicates"], e["antithetic"]) == (
    i.sampler.formulation,
    i.sampler.replicates,
    i.sampler.antithetic,
  )
  assert (e["weighting"], e["normalize"]) == (i.prox.weighting, i.prox.normalize)


TINY = dict(
  num_stages=1,
  refine_stages=0,
  epochs_per_stage=1,
  num_steps=8,
  hidden=8,
  depth=1,
  eval_samples=256,
)


@pytest.mark.parametrize("bad", ["nan_region", "inf_region"])
def test_non_finite_log_density_is_refused(bad):
  """NaN or +inf where the sampler reaches: a ValueError naming it, never a nan log Z."""

  def log_density(x):
    base = -0.5 * jnp.sum(x**2)
    return jnp.where(x[0] > 0.5, jnp.nan if bad == "nan_region" else jnp.inf, base)

  with pytest.raises((ValueError, FloatingPointError), match=r"NaN|\+inf|non-finite|not finite"):
    pdns.fit_sampler(log_density, 2, key=jax.random.key(0), **TINY)


def test_minus_inf_log_density_is_a_zero_density():
  """-inf (outside a half-plane) is allowed: weight 0 there, finite log Z over the rest."""
  log_density = lambda x: jnp.where(x[0] > -2.0, -0.5 * jnp.sum(x**2), -jnp.inf)
  fitted = pdns.fit_sampler(log_density, 2, key=jax.random.key(0), **TINY)
  assert np.isfinite(fitted.log_z) and 0.0 < fitted.ess <= 1.0
