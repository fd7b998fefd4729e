"""Long-MCMC reference samples for the particle targets, which have no exact sampler: their
benchmark metrics (energy W2, inter-atomic distance histograms) compare against such samples.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.

``mala`` (C chains at once, step size adapted during burn-in, then frozen), ``parallel_tempering``
(replica exchange with the same moves), the diagnostics ``split_rhat`` / ``ess_bulk`` (Vehtari,
Gelman, Simpson, Carpenter, Bürkner, Bayesian Analysis 2021) and ``reference_samples`` (DW-4 /
LJ-13, cached as ``<cache_dir>/<target>_beta<beta>_<hash of settings>.npz``). The samplers and
their settings: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np
from scipy import special as sp_special

from iclr26_jax.pdns import particles

__all__ = [
  "mala",
  "parallel_tempering",
  "split_rhat",
  "ess_bulk",
  "rank_normalize",
  "diagnostics",
  "ReferenceSettings",
  "reference_samples",
  "DEFAULT_CACHE_DIR",
]

DEFAULT_CACHE_DIR = os.path.join("workdirs", "data", "pdns_reference")


# ------------------------------------------------------------------------------------------ MALA


def mala(
  log_prob: Callable,
  x0: jax.Array,
  key: jax.Array,
  *,
  num_burnin: int,
  num_samples: int,
  thin: int = 1,
  step_size: float = 0.01,
  target_accept: float = 0.574,
  adapt_gamma: float = 1.0,
  project: Callable | None = None,
  max_drift: float | None = None,
) -> dict:
  """Runs C MALA chains: burn-in with step-size adaptation, then ``num_samples`` kept draws.

  Proposal x' = x + h g + sqrt(2h) xi, g = grad log pi (projected; capped at norm D, MALTA, if
  ``max_drift``), accepted by the exact Metropolis-Hastings ratio. During burn-in each chain adapts
  log h += gamma / (k + 1)^0.6 (a_k - target_accept), a_k its acceptance probability; then h is
  frozen per chain, so the sampling phase is a fixed, pi-invariant kernel.

  Args:
    log_prob: log pi~ (unnormalised), (C, d) -> (C,).
    x0: (C, d) initial states (in the subspace of ``project`` if given).
    key: PRNG key.
    num_burnin: adapted steps (discarded).
    num_samples: draws kept per chain, every ``thin``-th step after burn-in.
    step_size: initial h (the same for every chain).
    target_accept: acceptance rate the adaptation aims at (0.574, Roberts & Rosenthal 1998).
    adapt_gamma: Robbins-Monro gain gamma.
    project: linear map (C, d) -> (C, d) onto the sampling subspace, or None.
    max_drift: drift-norm cap D (MALTA), or None for plain MALA.

  Returns:
    dict with ``samples`` (num_samples, C, d), ``log_prob`` (num_samples, C), ``step_size``
    (C,) frozen h, ``accept_rate`` (C,) mean acceptance probability of the sampling phase.
  """
  chex.assert_rank(
    x0,
    2,
    exception_type=ValueError,
    custom_message=f"x0 must have shape (C, d); got {tuple(x0.shape)}",
  )
  if num_burnin < 0 or num_samples < 1 or thin < 1:
    raise ValueError(
      f"need num_burnin >= 0, num_samples >= 1, thin >= 1; got {num_burnin}, {num_samples}, {thin}"
    )
  return _mala_jit(
    log_prob,
    project,
    x0,
    key,
    int(num_burnin),
    int(num_samples),
    int(thin),
    float(step_size),
    float(target_accept),
    float(adapt_gamma),
    float("inf") if max_drift is None else float(max_drift),
  )


def _mala_kernel(log_prob, project, max_drift):
  proj = project if project is not None else (lambda v: v)
  val_grad = jax.value_and_grad(lambda x: jnp.sum(log_prob(x)))

  def lp_grad(x):
    lp = log_prob(x)
    _, g = val_grad(x)
    g = proj(g)
    g = jnp.where(jnp.isfinite(g), g, 0.0)
    norm = jnp.sqrt(jnp.sum(g**2, -1, keepdims=True))
    return lp, g * jnp.minimum(1.0, max_drift / jnp.maximum(norm, 1e-30))

  def step(x, lp, g, h, key):
    """One MALA step per chain; h (C,). Returns (x, lp, g, accept_prob)."""
    k_noise, k_acc = jax.random.split(key)
    hc = h[:, None]
    xi = proj(jax.random.normal(k_noise, x.shape, x.dtype))
    y = x + hc * g + jnp.sqrt(2 * hc) * xi
    lp_y, g_y = lp_grad(y)
    fwd = -jnp.sum((y - x - hc * g) ** 2, -1) / (4 * h)
    bwd = -jnp.sum((x - y - hc * g_y) ** 2, -1) / (4 * h)
    log_a = lp_y - lp + bwd - fwd
    log_a = jnp.where(jnp.isfinite(log_a), log_a, -jnp.inf)
    acc = jnp.exp(jnp.minimum(log_a, 0.0))
    take = jnp.log(jax.random.uniform(k_acc, h.shape, x.dtype)) < log_a
    x = jnp.where(take[:, None], y, x)
    lp = jnp.where(take, lp_y, lp)
    g = jnp.where(take[:, None], g_y, g)
    return x, lp, g, acc

  return lp_grad, step


def _mala_impl(
  log_prob,
  project,
  x0,
  key,
  num_burnin,
  num_samples,
  thin,
  step_size,
  target_accept,
  adapt_gamma,
  max_drift,
):
  lp_grad, step = _mala_kernel(log_prob, project, max_drift)
  c = x0.shape[0]
  lp0, g0 = lp_grad(x0)
  log_h0 = jnp.full((c,), jnp.log(step_size), x0.dtype)
  k_burn, k_samp = jax.random.split(key)

  def burn(carry, inp):
    x, lp, g, log_h = carry
    k, i = inp
    x, lp, g, acc = step(x, lp, g, jnp.exp(log_h), k)
    gain = adapt_gamma / (i + 1.0) ** 0.6
    log_h = jnp.clip(log_h + gain * (acc - target_accept), -20.0, 5.0)
    return (x, lp, g, log_h), None

  (x, lp, g, log_h), _ = jax.lax.scan(
    burn,
    (x0, lp0, g0, log_h0),
    (
      jax.random.split(k_burn, max(num_burnin, 1))[:num_burnin],
      jnp.arange(num_burnin, dtype=x0.dtype),
    ),
  )
  h = jnp.exp(log_h)

  def inner(carry, k):
    x, lp, g, acc_sum = carry
    x, lp, g, acc = step(x, lp, g, h, k)
    return (x, lp, g, acc_sum + acc), None

  def outer(carry, k):
    carry, _ = jax.lax.scan(inner, carry, jax.random.split(k, thin))
    return carry, (carry[0], carry[1])

  (x, lp, g, acc_sum), (xs, lps) = jax.lax.scan(
    outer, (x, lp, g, jnp.zeros((c,), x0.dtype)), jax.random.split(k_samp, num_samples)
  )
  return {
    "samples": xs,
    "log_prob": lps,
    "step_size": h,
    "accept_rate": acc_sum / (num_samples * thin),
  }


_mala_jit = jax.jit(_mala_impl, static_argnums=(0, 1, 4, 5, 6))


def parallel_tempering(
  energy: Callable,
  x0: jax.Array,
  key: jax.Array,
  betas,
  *,
  num_burnin: int,
  num_samples: int,
  thin: int = 1,
  swap_every: int = 10,
  step_size: float = 0.01,
  target_accept: float = 0.574,
  adapt_gamma: float = 1.0,
  project: Callable | None = None,
  max_drift: float | None = None,
) -> dict:
  """Replica-exchange MALA: R replicas x C chains, replica r targeting exp(-beta_r E).

  Every replica runs the (adapted, then frozen) MALA kernel of ``mala`` with its own step size;
  every ``swap_every`` steps adjacent replicas (r, r + 1) exchange states with probability
  min(1, exp((beta_r - beta_{r+1}) (E_r - E_{r+1}))), alternately on the even and the odd pairs
  (deterministic even-odd scheme), independently per chain. Only replica 0 (beta_0, the target)
  is kept.

  Args:
    energy: E, (N, d) -> (N,).
    x0: (C, d) initial states (copied to every replica).
    betas: (R,) inverse temperatures, betas[0] the target's, decreasing.
    Others: as ``mala``.

  Returns:
    dict with ``samples`` (num_samples, C, d), ``energy`` (num_samples, C) of replica 0,
    ``step_size`` (R, C), ``accept_rate`` (C,) MALA acceptance of replica 0, ``swap_rate``
    (R - 1,) mean swap acceptance probability per adjacent pair (sampling phase).
  """
  betas = tuple(float(b) for b in np.atleast_1d(np.asarray(betas, np.float64)))
  if x0.ndim != 2 or len(betas) < 1 or min(betas) <= 0:
    raise ValueError(f"need x0 (C, d) and positive betas; got {tuple(x0.shape)}, {betas}")
  if num_burnin < 0 or num_samples < 1 or thin < 1 or swap_every < 1:
    raise ValueError("need num_burnin >= 0, num_samples, thin, swap_every >= 1")
  return _pt_jit(
    energy,
    project,
    betas,
    x0,
    key,
    int(num_burnin),
    int(num_samples),
    int(thin),
    int(swap_every),
    float(step_size),
    float(target_accept),
    float(adapt_gamma),
    float("inf") if max_drift is None else float(max_drift),
  )


def _pt_impl(
  energy,
  project,
  betas,
  x0,
  key,
  num_burnin,
  num_samples,
  thin,
  swap_every,
  step_size,
  target_accept,
  adapt_gamma,
  max_drift,
):
  r, (c, d) = len(betas), x0.shape
  beta_rows = jnp.repeat(jnp.asarray(betas, x0.dtype), c)  # (R C,)
  log_prob = lambda x: -beta_rows * energy(x)
  proj = None if project is None else project
  lp_grad, step = _mala_kernel(log_prob, proj, max_drift)
  x = jnp.tile(x0, (r, 1))  # (R C, d)
  lp, g = lp_grad(x)
  log_h = jnp.full((r * c,), jnp.log(step_size), x0.dtype)
  b = jnp.asarray(betas, x0.dtype)

  def swap(x, lp, key, parity):
    e = (-lp / beta_rows).reshape(r, c)
    xr = x.reshape(r, c, d)
    if r == 1:
      return x, lp, jnp.zeros((0,), x0.dtype)
    log_a = (b[:-1, None] - b[1:, None]) * (e[:-1] - e[1:])  # (R-1, C)
    acc = jnp.exp(jnp.minimum(jnp.where(jnp.isfinite(log_a), log_a, -jnp.inf), 0.0))
    active = (jnp.arange(r - 1) % 2 == parity)[:, None]
    u = jax.random.uniform(key, (r - 1, c), x0.dtype)
    do = active & (u < acc)  # (R-1, C)
    idx = jnp.arange(r)[:, None] * jnp.ones((1, c), jnp.int32)
    up = jnp.concatenate([do, jnp.zeros((1, c), bool)], 0)  # r swaps with r+1
    down = jnp.concatenate([jnp.zeros((1, c), bool), do], 0)  # r swaps with r-1
    idx = jnp.where(up, idx + 1, jnp.where(down, idx - 1, idx))
    xr = jnp.take_along_axis(xr, idx[:, :, None], 0)
    e = jnp.take_along_axis(e, idx, 0)
    rate = jnp.mean(jnp.where(active, acc, 0.0), 1)
    return xr.reshape(r * c, d), -beta_rows * e.reshape(-1), rate

  def advance(carry, k, i, adapt):
    x, lp, g, log_h = carry
    k_step, k_swap = jax.random.split(k)
    x, lp, g, acc = step(x, lp, g, jnp.exp(log_h), k_step)
    if adapt:
      log_h = jnp.clip(log_h + adapt_gamma / (i + 1.0) ** 0.6 * (acc - target_accept), -20.0, 5.0)
    do_swap = (i % swap_every) == swap_every - 1
    parity = (i // swap_every) % 2

    def swapped(args):
      x, lp, g = args
      x, lp, rate = swap(x, lp, k_swap, parity)
      _, g = lp_grad(x)
      return x, lp, g, rate

    def kept(args):
      x, lp, g = args
      return x, lp, g, jnp.zeros((r - 1,), x0.dtype)

    x, lp, g, rate = jax.lax.cond(do_swap, swapped, kept, (x, lp, g))
    return (x, lp, g, log_h), acc[:c], rate, do_swap

  def burn(carry, inp):
    carry, _, _, _ = advance(carry, inp[0], inp[1], True)
    return carry, None

  carry, _ = jax.lax.scan(
    burn,
    (x, lp, g, log_h),
    (
      jax.random.split(jax.random.fold_in(key, 0), max(num_burnin, 1))[:num_burnin],
      jnp.arange(num_burnin),
    ),
  )
  x, lp, g, log_h = carry

  def inner(carry, inp):
    state, acc_sum, rate_sum, n_swaps = carry
    state, acc, rate, did = advance(state, inp[0], inp[1], False)
    return (state, acc_sum + acc, rate_sum + rate, n_swaps + did), None

  def outer(carry, inp):
    k, j = inp
    carry, _ = jax.lax.scan(inner, carry, (jax.random.split(k, thin), j * thin + jnp.arange(thin)))
    state = carry[0]
    return carry, (state[0][:c], -state[1][:c] / betas[0])

  init = (
    (x, lp, g, log_h),
    jnp.zeros((c,), x0.dtype),
    jnp.zeros((r - 1,), x0.dtype),
    jnp.zeros((), jnp.int32),
  )
  (state, acc_sum, rate_sum, n_swaps), (xs, es) = jax.lax.scan(
    outer,
    init,
    (jax.random.split(jax.random.fold_in(key, 1), num_samples), jnp.arange(num_samples)),
  )
  return {
    "samples": xs,
    "energy": es,
    "step_size": jnp.exp(state[3]).reshape(r, c),
    "accept_rate": acc_sum / (num_samples * thin),
    "swap_rate": rate_sum / jnp.maximum(n_swaps, 1) * 2.0,
  }


_pt_jit = jax.jit(_pt_impl, static_argnums=(0, 1, 2, 5, 6, 7, 8))


# ----------------------------------------------------------------------------------- diagnostics


def _check_chains(x) -> np.ndarray:
  x = np.asarray(x, np.float64)
  if x.ndim != 2 or x.shape[1] < 4:
    raise ValueError(f"draws must have shape (chains, draws >= 4); got {tuple(x.shape)}")
  return x


def _split(x: np.ndarray) -> np.ndarray:
  """(M, N) -> (2M, floor(N/2)): each chain split into halves (the middle draw of odd N dropped)."""
  half = x.shape[1] // 2
  return np.concatenate([x[:, :half], x[:, -half:]], 0)


def rank_normalize(x) -> np.ndarray:
  """Pooled ranks r (average ties) mapped to Phi^{-1}((r - 3/8) / (S + 1/4)); shape kept."""
  x = _check_chains(x)
  s = x.size
  order = np.argsort(x, axis=None, kind="stable")
  ranks = np.empty(s, np.float64)
  ranks[order] = np.arange(1, s + 1)
  flat = x.reshape(-1)  # average ranks over ties
  _, inv, counts = np.unique(flat, return_inverse=True, return_counts=True)
  if np.any(counts > 1):
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / counts)[inv]
  return sp_special.ndtri((ranks - 0.375) / (s + 0.25)).reshape(x.shape)


def _rhat_plain(x: np.ndarray) -> float:
  """Classic R-hat of (M, N) chains: sqrt(((N-1)/N W + B/N) / W)."""
  m, n = x.shape
  w = np.mean(np.var(x, axis=1, ddof=1))
  b_over_n = np.var(np.mean(x, axis=1), ddof=1)
  return float(np.sqrt(((n - 1) / n * w + b_over_n) / w))


def split_rhat(x) -> float:
  """Rank-normalised split R-hat (Vehtari et al. 2021): max of the bulk R-hat (on rank-normalised
  split chains) and the tail R-hat (on the rank-normalised folded draws |x - median|).

  Args:
    x: (chains, draws) of one scalar quantity.
  Returns:
    R-hat, float (>= ~1; values above 1.01 signal non-convergence).
  """
  x = _split(_check_chains(x))
  bulk = _rhat_plain(rank_normalize(x))
  tail = _rhat_plain(rank_normalize(np.abs(x - np.median(x))))
  return max(bulk, tail)


def _ess_plain(x: np.ndarray) -> float:
  """ESS of (M, N) chains (BDA3 §11.5; Geyer initial monotone sequence)."""
  m, n = x.shape
  xc = x - x.mean(1, keepdims=True)
  nfft = 1 << int(np.ceil(np.log2(2 * n)))
  f = np.fft.rfft(xc, nfft, axis=1)
  acov = np.fft.irfft(f * np.conj(f), nfft, axis=1)[:, :n] / n  # biased, (M, N)
  mean_var = np.mean(acov[:, 0]) * n / (n - 1)  # W
  var_plus = mean_var * (n - 1) / n + (np.var(x.mean(1), ddof=1) if m > 1 else 0.0)
  if not var_plus > 0:
    return float("nan")  # constant draws
  rho = 1.0 - (mean_var - np.mean(acov, 0)) / var_plus  # (N,), rho[0] = 1
  rho[0] = 1.0
  # Geyer: sum pairs P_k = rho_{2k} + rho_{2k+1} while positive, made monotone non-increasing.
  n_pairs = n // 2
  pairs = rho[: 2 * n_pairs].reshape(n_pairs, 2).sum(1)
  pos = pairs > 0
  k = int(np.argmin(pos)) if not np.all(pos) else n_pairs
  pairs = np.minimum.accumulate(pairs[:k]) if k > 0 else pairs[:0]
  tau = -1.0 + 2.0 * np.sum(pairs)
  tau = max(tau, 1.0 / np.log10(m * n))
  return float(m * n / tau)


def ess_bulk(x) -> float:
  """Bulk effective sample size (Vehtari et al. 2021): ESS of the rank-normalised split chains.

  Args:
    x: (chains, draws) of one scalar quantity.
  Returns:
    ESS, float in (0, ~chains * draws].
  """
  return _ess_plain(rank_normalize(_split(_check_chains(x))))


def diagnostics(stats: dict) -> dict:
  """``{name: (chains, draws)}`` -> ``{name/rhat, name/ess_bulk}``."""
  out = {}
  for name, v in stats.items():
    out[f"{name}/rhat"] = split_rhat(v)
    out[f"{name}/ess_bulk"] = ess_bulk(v)
  return out


# ---------------------------------------------------------------------------- reference samples

REFERENCE_FIELDS = (
  "num_samples",
  "chains",
  "burnin",
  "thin",
  "step_size",
  "init_scale",
  "max_drift",
  "num_temps",
  "min_beta",
  "swap_every",
  "descent_steps",
  "seed",
)


def ReferenceSettings(
  num_samples: int = 10000,
  chains: int = 500,
  burnin: int = 5000,
  thin: int = 50,
  step_size: float = 1e-3,
  init_scale: float = 1.5,
  max_drift: float = 100.0,
  num_temps: int = 1,
  min_beta: float = 0.3,
  swap_every: int = 10,
  descent_steps: int = 0,
  seed: int = 0,
) -> dict:
  """The MCMC settings that key the cache (a plain dict; ``eval.reference`` in the configs).

  ``num_samples`` total draws kept = chains x (num_samples / chains) draws per chain, every
  ``thin``-th step after ``burnin`` adapted steps; chains start from a CoM-free Gaussian with
  standard deviation ``init_scale`` per coordinate; ``max_drift`` caps the MALA drift norm
  (``mala``; 0 = no cap). ``num_temps`` > 1 runs ``parallel_tempering`` with a geometric
  ladder beta * min_beta^(k / (num_temps - 1)), k < num_temps, swaps every ``swap_every`` steps;
  ``num_temps`` = 1 is plain MALA. ``descent_steps`` > 0 first relaxes the initial states by
  that many capped gradient-descent steps (displacement <= 0.01 per step; an initialisation
  only, it does not change the stationary law) so stiff Lennard-Jones chains start untangled.
  """
  s = dict(
    num_samples=int(num_samples),
    chains=int(chains),
    burnin=int(burnin),
    thin=int(thin),
    step_size=float(step_size),
    init_scale=float(init_scale),
    max_drift=float(max_drift),
    num_temps=int(num_temps),
    min_beta=float(min_beta),
    swap_every=int(swap_every),
    descent_steps=int(descent_steps),
    seed=int(seed),
  )
  if s["num_temps"] < 1 or not 0 < s["min_beta"] <= 1 or s["swap_every"] < 1:
    raise ValueError(f"need num_temps >= 1, 0 < min_beta <= 1, swap_every >= 1; got {s}")
  if s["chains"] < 2 or s["num_samples"] < 2 * s["chains"]:
    raise ValueError(f"need chains >= 2 and num_samples >= 2 x chains; got {s}")
  if s["num_samples"] % s["chains"]:
    raise ValueError(f"num_samples must be a multiple of chains; got {s}")
  return s


def _system(name: str) -> particles.ParticleSystem:
  if name == "dw4":
    return particles.dw4()
  if name == "lj13":
    return particles.lj13()
  raise ValueError(f"reference samples exist for 'dw4' and 'lj13'; got {name!r}")


@jax.jit
def _descend_step(system, x):
  g = system.remove_com(jax.grad(lambda z: jnp.sum(system._energy(z)))(x))
  g = jnp.where(jnp.isfinite(g), g, 0.0)
  norm = jnp.sqrt(jnp.sum(g**2, -1, keepdims=True))
  return x - 0.01 * g / jnp.maximum(norm, 1.0)


def _descend(system, x, steps: int):
  """``steps`` capped gradient-descent steps on E (an MCMC initialisation): (C, d) -> (C, d)."""
  return jax.lax.fori_loop(0, steps, lambda i, z: _descend_step(system, z), x)


def cache_path(name: str, settings: dict, cache_dir: str, beta: float = 1.0) -> str:
  key = json.dumps({"target": name, "beta": float(beta), **settings}, sort_keys=True)
  digest = hashlib.sha256(key.encode()).hexdigest()[:12]
  return os.path.join(cache_dir, f"{name}_beta{float(beta):g}_{digest}.npz")


def reference_samples(
  name: str,
  settings: dict,
  cache_dir: str = DEFAULT_CACHE_DIR,
  *,
  beta: float = 1.0,
  verbose: bool = True,
) -> dict:
  """MCMC reference samples of ``dw4`` / ``lj13`` at inverse temperature ``beta``, cached.

  Loads ``cache_path(...)`` if present; otherwise runs ``parallel_tempering`` (MALA moves;
  plain MALA when ``num_temps`` = 1) on log pi~ = -beta E on the
  zero-CoM subspace (printing a message: this can take minutes at the default settings), and
  writes the samples, settings and diagnostics there.

  Returns:
    dict with ``samples`` (num_samples, n s) float32 (draw-major, chains interleaved),
    ``energy`` (num_samples,), ``diag`` ({``energy/rhat``, ``energy/ess_bulk``,
    ``mean_dist/rhat``, ``mean_dist/ess_bulk``, ``accept_rate``, ``step_size_median``,
    ``swap_rate`` (per adjacent pair), ``seconds``}),
    ``path`` and ``cached`` (bool).
  """
  settings = ReferenceSettings(**settings)
  path = cache_path(name, settings, cache_dir, beta)
  if os.path.exists(path):
    with np.load(path) as z:
      diag = json.loads(str(z["diag"]))
      return {
        "samples": z["samples"],
        "energy": z["energy"],
        "diag": diag,
        "path": path,
        "cached": True,
      }
  system = _system(name)
  c = settings["chains"]
  draws = settings["num_samples"] // c
  nt = settings["num_temps"]
  if verbose:
    print(
      f"[pdns.mcmc] generating {name} reference samples (MALA, {nt} temperatures x {c} "
      f"chains x "
      f"{settings['burnin']} burn-in + {draws} x {settings['thin']} steps) -> {path}",
      file=sys.stderr,
      flush=True,
    )
  t0 = time.time()
  key = jax.random.PRNGKey(settings["seed"])
  k_init, k_run = jax.random.split(key)
  x0 = settings["init_scale"] * system.com_free_normal(k_init, c)
  if settings["descent_steps"] > 0:
    x0 = _descend(system, x0, settings["descent_steps"])
  betas = beta * settings["min_beta"] ** (np.arange(nt) / max(nt - 1, 1))
  out = parallel_tempering(
    system._energy,
    x0,
    k_run,
    betas,
    num_burnin=settings["burnin"],
    num_samples=draws,
    thin=settings["thin"],
    swap_every=settings["swap_every"],
    step_size=settings["step_size"],
    project=system.remove_com,
    max_drift=settings["max_drift"] if settings["max_drift"] > 0 else None,
  )
  xs = np.asarray(out["samples"], np.float32)  # (draws, C, d)
  energy = np.asarray(out["energy"], np.float64)  # (draws, C)
  mean_dist = np.asarray(system.pair_distances(jnp.asarray(xs)).mean(-1), np.float64)
  if draws >= 4:
    diag = diagnostics({"energy": energy.T, "mean_dist": mean_dist.T})
  else:  # too few draws per chain to split
    diag = {f"{k}/{d}": float("nan") for k in ("energy", "mean_dist") for d in ("rhat", "ess_bulk")}
  diag["accept_rate"] = float(np.mean(out["accept_rate"]))
  diag["step_size_median"] = float(np.median(out["step_size"][0]))
  diag["swap_rate"] = [float(v) for v in np.asarray(out["swap_rate"])]
  diag["seconds"] = time.time() - t0
  samples = xs.reshape(-1, system.dim)
  energy = energy.reshape(-1).astype(np.float32)
  if verbose:
    print(
      f"[pdns.mcmc] done in {diag['seconds']:.1f}s: R-hat(E) {diag['energy/rhat']:.3f}, "
      f"bulk ESS(E) {diag['energy/ess_bulk']:.0f} of {samples.shape[0]}, accept "
      f"{diag['accept_rate']:.2f}",
      file=sys.stderr,
      flush=True,
    )
  os.makedirs(cache_dir, exist_ok=True)
  tmp = path + f".tmp{os.getpid()}.npz"
  np.savez(
    tmp, samples=samples, energy=energy, diag=json.dumps(diag), settings=json.dumps(settings)
  )
  os.replace(tmp, path)
  return {"samples": samples, "energy": energy, "diag": diag, "path": path, "cached": False}
