"""The discrete PDNS sampler: masked-diffusion CTMC with random-order unmasking, the path
log-ratio of token choices, and the proximal weighted denoising cross-entropy (WDCE).

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS (``discrete/``, which
descends from MDNS).

Tokens are 0..q-1 and the mask symbol is q; a state is (D,) int32. A denoiser is
``log_probs_fn(params, z (B, D)) -> (B, D, q)``, per site the log-softmax over the q real tokens.
The reference unmasks in a uniformly random order with uniform tokens: nu = Unif, r = log pi~ +
D log q. Holds ``ctmc_rollout`` / ``path_log_ratio`` (Eq. 4), ``exact_model_log_marginal``,
``wdce_loss`` and ``DiscreteSampler``. The algorithm, with its equations and reference
hyperparameters: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.core import sharding as shd
from iclr26_jax.nn import mlp
from iclr26_jax.pdns.proximal import StageSampler

__all__ = [
  "FORMULATIONS",
  "DenoiserNet",
  "DiscreteRollout",
  "ctmc_rollout",
  "path_log_ratio",
  "discrete_reward",
  "exact_model_log_marginal",
  "masked_nll",
  "wdce_loss",
  "DiscreteSampler",
  "enumerate_paths",
]

FORMULATIONS = ("lambda", "m")
MAX_PARTIAL_STATES = 2 * 10**5


def _check_qd(q: int, dim: int) -> None:
  if int(q) < 2:
    raise ValueError(f"q must be >= 2; got {q}")
  if int(dim) < 1:
    raise ValueError(f"dim must be >= 1; got {dim}")


def _check_wdce(formulation: str, replicates: int, antithetic: bool) -> None:
  if formulation not in FORMULATIONS:
    raise ValueError(f"formulation must be one of {FORMULATIONS}; got {formulation!r}")
  if int(replicates) < 1:
    raise ValueError(f"replicates must be >= 1; got {replicates}")
  if antithetic and replicates % 2:
    raise ValueError(f"antithetic masks need an even number of replicates; got {replicates}")


class DenoiserNet(nn.Module):
  """MLP denoiser on one-hot partially masked states with a zero-initialised output layer.

  z (B, D) in {0..q} -> one-hot (B, D (q+1)) -> ``depth`` SiLU layers -> (B, D, q) logits ->
  log-softmax over q. Zero output layer: uniform tokens, so P^theta_0 = P^ref.

  Attributes:
    dim: D.
    q: number of token values (the mask symbol is q).
    hidden: width of the hidden layers.
    depth: number of hidden layers.
  """

  dim: int
  q: int
  hidden: int = 128
  depth: int = 2

  @nn.compact
  def __call__(self, z: jax.Array) -> jax.Array:
    """z: (B, D) int -> (B, D, q) log-probabilities."""
    chex.assert_shape(
      z,
      (None, self.dim),
      exception_type=ValueError,
      custom_message=(f"z must have shape (B, {self.dim}); got {tuple(z.shape)}"),
    )
    h = jax.nn.one_hot(z, self.q + 1, dtype=jnp.float32).reshape(z.shape[0], -1)
    logits = mlp(
      h,
      (self.hidden,) * self.depth,
      self.dim * self.q,
      activation=nn.silu,
      out_kernel_init=nn.initializers.zeros,
      out_bias_init=nn.initializers.zeros,
    )
    return jax.nn.log_softmax(logits.reshape(-1, self.dim, self.q), -1)


class DiscreteRollout(NamedTuple):
  """Output of ``ctmc_rollout``.

  Attributes:
    x: (N, D) int32 terminal states.
    log_ratio: (N,) l = log dP^ref/dP^theta of each path (Eq. 4).
    order: (N, D) int32, order[i, j] = the site unmasked at event j of path i.
  """

  x: jax.Array
  log_ratio: jax.Array
  order: jax.Array


def _unmask_scan(
  log_probs_fn: Callable,
  params: Any,
  order: jax.Array,
  q: int,
  keys: jax.Array | None,
  tokens: jax.Array | None,
):
  """Shared scan over unmasking events: samples tokens (keys given) or forces ``tokens``."""
  n, dim = order.shape
  sites = jnp.arange(dim)[None, :]
  log_q = math.log(q)

  def step(carry, inp):
    z, ell = carry
    j, key_j = inp
    site = order[:, j]
    lp = log_probs_fn(params, z)  # (n, D, q)
    # Row-wise gathers (take_along_axis) and a select, not lp[arange(n), site] / .at[].set: the
    # same values, but the partitioner keeps them on each device's rows (no per-event collective).
    lp_site = jnp.take_along_axis(lp, site[:, None, None], axis=1)[:, 0]  # (n, q)
    if tokens is None:
      g = jax.random.gumbel(key_j, (n * q,), lp_site.dtype).reshape(n, q)
      tok = jnp.argmax(lp_site + g, -1).astype(jnp.int32)
    else:
      tok = jnp.take_along_axis(tokens, site[:, None], axis=1)[:, 0]
    z = jnp.where(sites == site[:, None], tok[:, None], z)
    ell = ell - log_q - jnp.take_along_axis(lp_site, tok[:, None], -1)[:, 0]
    return (z, ell), None

  # Paths are independent: under the trainer's ``rows_mesh`` they are split over ``data``.
  z0, ell0 = shd.shard_rows((jnp.full((n, dim), q, jnp.int32), jnp.zeros((n,), jnp.float32)))
  js = jnp.arange(dim)
  if keys is None:
    keys = jnp.zeros((dim, 2), jnp.uint32)
  (z, ell), _ = jax.lax.scan(step, (z0, ell0), (js, keys))
  return z, ell


def ctmc_rollout(
  log_probs_fn: Callable, params: Any, key: jax.Array, n: int, dim: int, q: int
) -> DiscreteRollout:
  """Random-order unmasking of n paths with the token-choice log-ratio.

  Draws a uniform random permutation of the D sites per path; at event j evaluates the denoiser
  on the current state, samples the token of site order[:, j] (Gumbel-max) and adds
  -log q - log s(z)_{d, token} to l. D network evaluations per path.

  Args:
    log_probs_fn: ``(params, z (n, D)) -> (n, D, q)`` log-probabilities.
    params: denoiser parameters (the frozen EMA parameters for a stage buffer).
    key: PRNG key.
    n: number of paths N.
    dim: D.
    q: number of token values.

  Returns:
    ``DiscreteRollout(x (n, D) int32, log_ratio (n,), order (n, D) int32)``.
  """
  _check_qd(q, dim)
  if int(n) < 1:
    raise ValueError(f"n must be >= 1; got {n}")
  k_ord, k_tok = jax.random.split(key)
  u = jax.random.uniform(k_ord, (n * dim,)).reshape(n, dim)  # flat draw (compile time)
  order = shd.shard_rows(jnp.argsort(u, axis=-1).astype(jnp.int32))
  keys = jax.random.split(k_tok, dim)
  x, ell = _unmask_scan(log_probs_fn, params, order, q, keys, None)
  return DiscreteRollout(x=x, log_ratio=ell, order=order)


def path_log_ratio(
  log_probs_fn: Callable, params: Any, x: jax.Array, order: jax.Array, q: int
) -> jax.Array:
  """l = log dP^ref/dP^theta of the paths that unmask ``x`` in ``order`` (Eq. 4).

  The model's probability of the path (order, x) is (1/D!) exp(-l - D log q).

  Args:
    log_probs_fn: the denoiser, ``(params, z (n, D)) -> (n, D, q)``.
    params: its parameters.
    x: (n, D) int terminal states in {0..q-1}.
    order: (n, D) int, each row a permutation of 0..D-1.
    q: number of token values.

  Returns:
    (n,) float32.
  """
  message = (
    f"x and order must both have shape (n, D); got {tuple(x.shape)} and {tuple(order.shape)}"
  )
  chex.assert_rank(x, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x, order], exception_type=ValueError, custom_message=message)
  _check_qd(q, x.shape[1])
  return _unmask_scan(log_probs_fn, params, order.astype(jnp.int32), q, None, x.astype(jnp.int32))[
    1
  ]


def discrete_reward(log_prob_unnorm: Callable, x: jax.Array, q: int) -> jax.Array:
  """r(x) = log pi~(x) + D log q (= log pi~ - log nu, nu uniform): (n, D) -> (n,)."""
  return log_prob_unnorm(x) + x.shape[-1] * math.log(q)


def exact_model_log_marginal(log_probs_fn: Callable, params: Any, dim: int, q: int) -> np.ndarray:
  """The model's terminal law marginalised over all unmasking orders, by enumeration.

  Forward recursion over partially masked states z in {0..q}^D: P(all masked) = 1 and, from a
  state with k unmasked sites, each masked site d is chosen with probability 1/(D - k) and gets
  token v with probability s(z)_{d, v}. One network call on all (q+1)^D states.

  Args:
    log_probs_fn: the denoiser, ``(params, z (B, D)) -> (B, D, q)``.
    params: its parameters.
    dim: D.
    q: number of token values.

  Returns:
    (q^D,) float64 log p(x) in lexicographic order (``discrete_targets.all_states``).
  """
  _check_qd(q, dim)
  num = (q + 1) ** dim
  if num > MAX_PARTIAL_STATES:
    raise ValueError(
      f"(q+1)^D = {q + 1}^{dim} = {num} partial states exceed "
      f"{MAX_PARTIAL_STATES}: too large to enumerate"
    )
  grids = np.meshgrid(*[np.arange(q + 1)] * dim, indexing="ij")
  z = np.stack([g.reshape(-1) for g in grids], -1).astype(np.int32)  # (num, D)
  probs = np.exp(np.asarray(log_probs_fn(params, jnp.asarray(z)), np.float64))  # (num, D, q)
  powers = (q + 1) ** np.arange(dim - 1, -1, -1)
  masked = z == q
  k = dim - masked.sum(-1)  # unmasked count
  mass = np.zeros(num)
  mass[np.sum(np.full(dim, q) * powers)] = 1.0
  for level in range(dim):
    src = np.nonzero(k == level)[0]
    for d in range(dim):
      s = src[masked[src, d]]
      for v in range(q):
        dst = s + (v - q) * powers[d]
        np.add.at(mass, dst, mass[s] / (dim - level) * probs[s, d, v])
  full = k == dim
  # Lexicographic order over {0..q-1}^D: the full states in base-(q+1) order are already sorted.
  p = mass[full]
  with np.errstate(divide="ignore"):
    return np.log(p)


def masked_nll(
  log_probs_fn: Callable, params: Any, x: jax.Array, mask: jax.Array, q: int
) -> jax.Array:
  """Sum over masked sites of -log s(x with mask)_{d, x_d}.

  Args:
    log_probs_fn: the denoiser.
    params: its parameters.
    x: (B, D) int clean states in {0..q-1}.
    mask: (B, D) bool, True where the site is masked.
    q: number of token values.

  Returns:
    (B,) float32.
  """
  message = f"x and mask must both have shape (B, D); got {tuple(x.shape)} and {tuple(mask.shape)}"
  chex.assert_rank(x, 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape([x, mask], exception_type=ValueError, custom_message=message)
  z = jnp.where(mask, q, x).astype(jnp.int32)
  lp = log_probs_fn(params, z)  # (B, D, q)
  nll = -jnp.take_along_axis(lp, x.astype(jnp.int32)[..., None], -1)[..., 0]
  return jnp.sum(jnp.where(mask, nll, 0.0), -1)


def _draw_masks(
  key: jax.Array, b: int, dim: int, replicates: int, formulation: str, antithetic: bool
):
  """Masks (B, R, D) bool and per-replicate scale (B, R) with E[scale * sum_masked] matching
  sum_m (1/m) E_{|S|=m}[.] / D in both forms; antithetic halves each keep the marginal law."""
  half = replicates // 2 if antithetic else replicates
  k_a, k_u = jax.random.split(key)
  u = jax.random.uniform(k_u, (b * half * dim,)).reshape(b, half, dim)
  if formulation == "lambda":
    lam = 1.0 - jax.random.uniform(k_a, (b * half,)).reshape(b, half)  # (0, 1]
    mask = u < lam[..., None]
    scale = 1.0 / (dim * lam)
    if antithetic:
      lam2 = 1.0 - lam  # [0, 1)
      mask = jnp.concatenate([mask, ~mask], 1)
      # lam2 = 0 only when lam = 1, whose complement u >= 1 is empty: the term is 0 (no 0/0).
      scale = jnp.concatenate([scale, 1.0 / (dim * jnp.maximum(lam2, 1e-30))], 1)
    return mask, scale
  m = jax.random.randint(k_a, (b * half,), 1, dim + 1).reshape(b, half)  # {1..D}
  rank = jnp.argsort(jnp.argsort(u, -1), -1)  # random ranks
  mask = rank < m[..., None]
  scale = 1.0 / m.astype(jnp.float32)  # (D/m) / D
  if antithetic:
    mask2 = rank >= (m - 1)[..., None]  # size D + 1 - m
    mask = jnp.concatenate([mask, mask2], 1)
    scale = jnp.concatenate([scale, 1.0 / (dim + 1 - m).astype(jnp.float32)], 1)
  return mask, scale


def wdce_loss(
  params: Any,
  log_probs_fn: Callable,
  key: jax.Array,
  x: jax.Array,
  weights: jax.Array,
  *,
  q: int,
  formulation: str = "lambda",
  replicates: int = 8,
  antithetic: bool = False,
) -> tuple[jax.Array, dict]:
  """Proximal weighted masked denoising cross-entropy on one minibatch.

  loss = mean_b w_b mean_r scale_{b,r} sum_{d masked} -log s(x~_{b,r})_{d, x_{b,d}}, with
  lambda-form scale 1/(D lambda) (each site masked w.p. lambda ~ U(0, 1]) or m-form scale 1/m
  (exactly m ~ Unif{1..D} sites masked; the reference's weight D/m divided by D). Weights are
  not differentiated.

  Args:
    params: denoiser parameters.
    log_probs_fn: ``(params, z (B R, D)) -> (B R, D, q)``.
    key: PRNG key.
    x: (B, D) int clean samples (from the frozen stage model's buffer).
    weights: (B,) self-normalised (or unit, after resampling) weights.
    q: number of token values.
    formulation: "lambda" or "m".
    replicates: R masks per sample (even when ``antithetic``).
    antithetic: pair each mask with its (near-)complement: (1 - lambda, the complement) in the
      lambda-form, all but the first m - 1 sites of the same permutation in the m-form.

  Returns:
    ``(loss, info)`` with ``loss/wdce`` and ``loss/frac_masked``.
  """
  _check_wdce(formulation, replicates, antithetic)
  chex.assert_rank(
    x,
    2,
    exception_type=ValueError,
    custom_message=f"x must have shape (B, D); got {tuple(x.shape)}",
  )
  b, dim = x.shape
  chex.assert_shape(
    weights,
    (b,),
    exception_type=ValueError,
    custom_message=(f"weights must have shape ({b},); got {tuple(weights.shape)}"),
  )
  mask, scale = _draw_masks(key, b, dim, replicates, formulation, antithetic)
  xr = jnp.broadcast_to(x[:, None], mask.shape).reshape(-1, dim)
  nll = masked_nll(log_probs_fn, params, xr, mask.reshape(-1, dim), q).reshape(b, replicates)
  per = jnp.mean(scale * nll, -1)
  val = jnp.mean(jax.lax.stop_gradient(weights) * per)
  return val, {"loss/wdce": val, "loss/frac_masked": jnp.mean(mask.astype(jnp.float32))}


class DiscreteSampler(StageSampler):
  """The discrete PDNS sampler: denoiser, random-order unmasking and WDCE as ``StageProblem``
  hooks for ``proximal.run_stages`` (same shape as ``continuous.ContinuousSampler``).

  The discrete reference trains with minibatch self-normalised weights
  (``ProxConfig(weighting="weight", normalize="minibatch")``); resampling works too.

  Args:
    log_prob_unnorm: log pi~, (n, D) int -> (n,).
    dim: D.
    q: number of token values.
    formulation: "lambda" or "m" (``wdce_loss``).
    replicates: R masks per buffer sample.
    antithetic: antithetic mask pairs.
    hidden, depth: ``DenoiserNet`` size.
  """

  def __init__(
    self,
    log_prob_unnorm: Callable,
    dim: int,
    q: int,
    *,
    formulation: str = "lambda",
    replicates: int = 8,
    antithetic: bool = False,
    hidden: int = 128,
    depth: int = 2,
  ):
    _check_qd(q, dim)
    _check_wdce(formulation, replicates, antithetic)
    self.log_prob_unnorm = log_prob_unnorm
    self.dim, self.q = int(dim), int(q)
    self.formulation, self.replicates, self.antithetic = formulation, int(replicates), antithetic
    self.net = DenoiserNet(dim=self.dim, q=self.q, hidden=hidden, depth=depth)
    self.log_probs = self.net.apply

  def init_params(self, key: jax.Array):
    """Denoiser parameters with a zero output layer (uniform tokens, P^theta = P^ref)."""
    return self.net.init(key, jnp.full((1, self.dim), self.q, jnp.int32))

  def rollout(self, params, key: jax.Array, n: int):
    """(x (n, D) int32, l (n,), r (n,)) from one random-order unmasking rollout."""
    out = ctmc_rollout(self.log_probs, params, key, n, self.dim, self.q)
    return out.x, out.log_ratio, discrete_reward(self.log_prob_unnorm, out.x, self.q)

  def loss(self, params, key: jax.Array, x: jax.Array, w: jax.Array):
    """WDCE on a minibatch x (B, D) with weights w (B,)."""
    return wdce_loss(
      params,
      self.log_probs,
      key,
      x,
      w,
      q=self.q,
      formulation=self.formulation,
      replicates=self.replicates,
      antithetic=self.antithetic,
    )

  def exact_log_marginal(self, params) -> np.ndarray:
    """The model's exact terminal log-law (q^D,) by enumeration (tiny D only)."""
    return exact_model_log_marginal(self.log_probs, params, self.dim, self.q)


def enumerate_paths(dim: int, q: int) -> tuple[np.ndarray, np.ndarray]:
  """All D! q^D (order, terminal state) pairs: orders (P, D) int32, states (P, D) int32."""
  _check_qd(q, dim)
  perms = np.asarray(list(itertools.permutations(range(dim))), np.int32)
  grids = np.meshgrid(*[np.arange(q)] * dim, indexing="ij")
  xs = np.stack([g.reshape(-1) for g in grids], -1).astype(np.int32)
  orders = np.repeat(perms, xs.shape[0], 0)
  states = np.tile(xs, (perms.shape[0], 1))
  return orders, states
