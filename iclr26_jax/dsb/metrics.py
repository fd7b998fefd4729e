"""Metrics of the discrete SB benchmark (the trivial baselines and the C2ST re-exported).

``shape_score`` / ``trend_score`` (``TREND_CONVENTIONS``), ``conditional_shape_trend``,
``sb_perplexity``, ``marginal_entropies``, ``trajectory_kl_forward`` / ``trajectory_kl_reverse``
(scaled by D N), ``mc_conditional_kl``, exact enumeration on tiny instances
(``exact_conditional_kl_tv``, ``exact_plan_from_transition_logits``) and, from ``dsb.baselines``
and ``dsb.c2st``, the independent / prior / feature-wise EOT baselines and ``c2st``.

References: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the
Era of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal
Transport", ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench.
What each metric measures: docs/methods/dsb.md ("The algorithm", "Reading the scores").
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb.benchmark import Benchmark
from iclr26_jax.dsb.reference import check_same_shape, check_states, log_matmul
from iclr26_jax.core import validate
from iclr26_jax.dsb.baselines import (  # noqa: F401 (re-exported)
  independent_baseline_sample,
  prior_baseline_sample,
  prior_baseline_log_prob,
  featurewise_eot_potential,
  featurewise_eot_log_conditionals,
  featurewise_eot_sample,
  featurewise_eot_log_prob,
)
from iclr26_jax.dsb.c2st import C2ST_ENCODINGS, C2STResult, c2st  # noqa: F401 (re-exported)

__all__ = [
  "marginal_histograms",
  "pair_histograms",
  "shape_score",
  "trend_score",
  "TREND_CONVENTIONS",
  "conditioning_points",
  "conditional_shape_trend",
  "sb_perplexity",
  "marginal_entropies",
  "mc_conditional_kl",
  "categorical_kl",
  "trajectory_kl_forward",
  "trajectory_kl_reverse",
  "enumerate_states",
  "exact_joint_log_probs",
  "exact_target_log_probs",
  "ExactConditionalMetrics",
  "exact_conditional_kl_tv",
  "independent_baseline_sample",
  "prior_baseline_sample",
  "prior_baseline_log_prob",
  "featurewise_eot_potential",
  "featurewise_eot_log_conditionals",
  "featurewise_eot_sample",
  "featurewise_eot_log_prob",
  "state_index",
  "exact_plan_from_transition_logits",
  "C2ST_ENCODINGS",
  "C2STResult",
  "c2st",
]

TREND_CONVENTIONS = ("off_diagonal", "with_diagonal")
"""Trend pair sets: i != j (catsbench 1.4, compared with the paper) or all (i, j) (its HEAD)."""

_PAIR_HIST_LIMIT = 1 << 28  # D^2 S^2 entries at most for the trend histograms
_HIST_CHUNK_ROWS = 1024


def _check_sample_pair(y: Any, y_hat: Any, num_categories: int) -> tuple[jax.Array, jax.Array]:
  y = check_states(y, "y", num_categories)
  y_hat = check_states(y_hat, "y_hat", num_categories, y.shape[-1])
  return y, y_hat


def marginal_histograms(y: jax.Array, num_categories: int) -> jax.Array:
  """Normalised per-coordinate histograms.

  Args:
    y: (B, D) int states in [0, S).
    num_categories: S.

  Returns:
    (D, S) float32 frequencies (rows sum to one).
  """
  y = check_states(y, "y", num_categories)
  if y.shape[0] == 0:
    raise ValueError("y must hold at least one sample")
  return _histogram(y, num_categories)


@functools.partial(jax.jit, static_argnums=(1,))
def _pair_histograms(y: jax.Array, num_categories: int) -> jax.Array:
  b, d = y.shape
  s = num_categories
  rows = min(b, _HIST_CHUNK_ROWS)
  num_chunks = -(-b // rows)
  pad = num_chunks * rows - b
  # Padded rows get category -1, whose one-hot encoding is all zeros.
  y_pad = jnp.concatenate([y, jnp.full((pad, d), -1, y.dtype)], axis=0)
  chunks = y_pad.reshape(num_chunks, rows, d)

  def body(acc, chunk):
    one_hot = jax.nn.one_hot(chunk, s, dtype=jnp.float32).reshape(rows, d * s)
    # Sums of 0/1 products: exact in float32 (also under bf16/tf32 matmul inputs).
    return acc + jnp.matmul(one_hot.T, one_hot, precision=jax.lax.Precision.HIGHEST), None

  acc, _ = jax.lax.scan(body, jnp.zeros((d * s, d * s), jnp.float32), chunks)
  return acc.reshape(d, s, d, s).transpose(0, 2, 1, 3) / b


def pair_histograms(y: jax.Array, num_categories: int) -> jax.Array:
  """Normalised histograms of every ordered coordinate pair (i, j), diagonal included.

  Computed as the Gram matrix of one-hot encodings, accumulated over chunks of the batch.

  Args:
    y: (B, D) int states in [0, S).
    num_categories: S.

  Returns:
    (D, D, S, S) float32 frequencies; entry [i, j, a, b] = P(y^i = a, y^j = b).
  """
  y = check_states(y, "y", num_categories)
  b, d = y.shape
  if b == 0:
    raise ValueError("y must hold at least one sample")
  if (d * num_categories) ** 2 > _PAIR_HIST_LIMIT:
    raise ValueError(
      f"y: D^2 S^2 = {(d * num_categories) ** 2} pair-histogram entries exceed "
      f"the limit {_PAIR_HIST_LIMIT}; trend is not defined for this size"
    )
  return _pair_histograms(y, num_categories)


def shape_score(y: jax.Array, y_hat: jax.Array, num_categories: int) -> jax.Array:
  """Shape = 1 - mean_d TV(histogram of y^d, histogram of y_hat^d). Higher is better.

  Args:
    y: (B, D) int reference samples.
    y_hat: (B', D) int samples to score (B' may differ from B).
    num_categories: S.

  Returns:
    scalar in [0, 1] (1 for identical histograms, 0 for disjoint supports).
  """
  y, y_hat = _check_sample_pair(y, y_hat, num_categories)
  if y.shape[0] == 0 or y_hat.shape[0] == 0:
    raise ValueError("y and y_hat must hold at least one sample each")
  return _shape_score(y, y_hat, num_categories)


def _histogram(y: jax.Array, num_categories: int) -> jax.Array:
  b, d = y.shape
  counts = jnp.zeros((d, num_categories), jnp.float32).at[jnp.arange(d)[None], y].add(1.0)
  return counts / b


@functools.partial(jax.jit, static_argnums=(2,))
def _shape_score(y: jax.Array, y_hat: jax.Array, num_categories: int) -> jax.Array:
  h = _histogram(y, num_categories)
  h_hat = _histogram(y_hat, num_categories)
  return 1.0 - jnp.mean(0.5 * jnp.abs(h - h_hat).sum(-1))


def _check_convention(convention: str, dim: int) -> bool:
  """True for the off-diagonal convention; ValueError for an unknown name or D < 2 off-diagonal."""
  if convention not in TREND_CONVENTIONS:
    raise ValueError(f"convention must be one of {TREND_CONVENTIONS}, got {convention!r}")
  off = convention == "off_diagonal"
  if off and dim < 2:
    raise ValueError(
      "the off-diagonal trend needs D >= 2 coordinates; use convention='with_diagonal'"
    )
  return off


def trend_score(
  y: jax.Array, y_hat: jax.Array, num_categories: int, convention: str = "off_diagonal"
) -> jax.Array:
  """Trend = 1 - mean over ordered coordinate pairs (i, j) of TV of S x S pair histograms.

  ``convention="off_diagonal"`` averages the D (D - 1) pairs i != j (catsbench 1.4, the
  paper's numbers); ``"with_diagonal"`` all D^2 pairs (catsbench's HEAD), where the diagonal
  pair (i, i) is the marginal of coordinate i, so
  D^2 (1 - T_with) = D (D - 1) (1 - T_off) + D (1 - shape).

  Args:
    y: (B, D) int reference samples.
    y_hat: (B', D) int samples to score.
    num_categories: S.
    convention: one of ``TREND_CONVENTIONS``.

  Returns:
    scalar in [0, 1].
  """
  y, y_hat = _check_sample_pair(y, y_hat, num_categories)
  off = _check_convention(convention, y.shape[1])
  h = pair_histograms(y, num_categories)
  h_hat = pair_histograms(y_hat, num_categories)
  return _trend_from_histograms(h, h_hat, off)


def _pair_tv_mean(h: jax.Array, h_hat: jax.Array, off_diagonal: bool) -> jax.Array:
  tv = 0.5 * jnp.abs(h - h_hat).sum((-2, -1))  # (D, D)
  if not off_diagonal:
    return jnp.mean(tv)
  d = tv.shape[0]
  return (jnp.sum(tv) - jnp.trace(tv)) / (d * (d - 1))


@functools.partial(jax.jit, static_argnums=(2,))
def _trend_from_histograms(h: jax.Array, h_hat: jax.Array, off_diagonal: bool) -> jax.Array:
  return 1.0 - _pair_tv_mean(h, h_hat, off_diagonal)


def conditioning_points(x0: jax.Array, batch_size: int = 128) -> jax.Array:
  """The first x_0 of every evaluation batch (the paper's conditioning points).

  Args:
    x0: (B, D) int evaluation sources.
    batch_size: evaluation batch size (128 in the paper).

  Returns:
    (ceil(B / batch_size), D) states.
  """
  x0 = jnp.asarray(x0)
  chex.assert_rank(
    x0,
    2,
    exception_type=ValueError,
    custom_message=f"x0 must have shape (B, D), got {tuple(x0.shape)}",
  )
  batch_size = validate.positive_int(batch_size, "batch_size", 1)
  return x0[::batch_size]


def conditional_shape_trend(
  rng: jax.Array,
  x0_points: jax.Array,
  true_sampler: Callable[[jax.Array, jax.Array], jax.Array],
  model_sampler: Callable[[jax.Array, jax.Array], jax.Array],
  num_categories: int,
  num_samples: int = 1000,
  with_trend: bool = True,
  trend_convention: str = "off_diagonal",
) -> dict[str, jax.Array]:
  """Conditional shape / trend: shape and trend between truth and model samples given each x_0.

  Each sampler is called once on all points repeated ``num_samples`` times.

  Args:
    rng: PRNG key (split between the two samplers).
    x0_points: (P, D) int conditioning points.
    true_sampler: (rng, x0 (P * n, D)) -> (P * n, D) samples of the true plan.
    model_sampler: same signature, the model's samples.
    num_categories: S.
    num_samples: n conditional samples per point (1000 in the paper).
    with_trend: also compute cond trend (needs (D S)^2 memory per point).
    trend_convention: one of ``TREND_CONVENTIONS`` (see ``trend_score``).

  Returns:
    {"cond_shape": scalar, "cond_trend": scalar (if with_trend)}, averaged over points.
  """
  x0_points = check_states(x0_points, "x0_points", num_categories)
  n = validate.positive_int(num_samples, "num_samples", 1)
  p, d = x0_points.shape
  if p == 0:
    raise ValueError("x0_points must hold at least one point")
  off = _check_convention(trend_convention, d) if with_trend else False
  xs = _repeat_rows(x0_points, n)
  k_true, k_model = jax.random.split(rng)
  y_true = jnp.asarray(true_sampler(k_true, xs))
  y_model = jnp.asarray(model_sampler(k_model, xs))
  for name, arr in (("true_sampler output", y_true), ("model_sampler output", y_model)):
    chex.assert_shape(
      arr,
      xs.shape,
      exception_type=ValueError,
      custom_message=(f"{name} must have shape {tuple(xs.shape)}, got {tuple(arr.shape)}"),
    )
  y_true = check_states(y_true, "true_sampler output", num_categories, d)
  y_model = check_states(y_model, "model_sampler output", num_categories, d)
  return _conditional_scores(y_true, y_model, num_categories, bool(with_trend), p, off)


@functools.partial(jax.jit, static_argnums=(1,))
def _repeat_rows(x: jax.Array, n: int) -> jax.Array:
  return jnp.repeat(x, n, axis=0)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _conditional_scores(
  y_true: jax.Array,
  y_model: jax.Array,
  num_categories: int,
  with_trend: bool,
  num_points: int,
  off_diagonal: bool,
) -> dict[str, jax.Array]:
  s = num_categories
  d = y_true.shape[-1]
  y_true = y_true.reshape(num_points, -1, d)
  y_model = y_model.reshape(num_points, -1, d)

  def per_point(args):
    yt, ym = args
    tv_1d = 0.5 * jnp.abs(_histogram(yt, s) - _histogram(ym, s)).sum(-1)
    out = {"cond_shape": 1.0 - jnp.mean(tv_1d)}
    if with_trend:
      out["cond_trend"] = 1.0 - _pair_tv_mean(
        _pair_histograms(yt, s), _pair_histograms(ym, s), off_diagonal
      )
    return out

  if with_trend and (d * s) ** 2 > _PAIR_HIST_LIMIT:
    raise ValueError(
      f"num_categories: D^2 S^2 = {(d * s) ** 2} pair-histogram entries exceed "
      f"the limit {_PAIR_HIST_LIMIT}; use with_trend=False"
    )
  scores = jax.lax.map(per_point, (y_true, y_model))
  return {k: jnp.mean(v) for k, v in scores.items()}


def sb_perplexity(benchmark: Benchmark, x0: jax.Array, y_hat: jax.Array) -> jax.Array:
  """SB perplexity exp(-(1/(B D)) sum_{b,d} log pi*^d(y_hat_b^d | x_0b)) (Eq. 8).

  Neither lower nor higher is better: what counts is closeness to the truth's own value (the
  same call on samples y ~ pi*(. | x_0)), whose log estimates the mean per-coordinate conditional
  entropy without bias. Too concentrated samples score below it, samples that ignore x_0 above
  it (docs/methods/dsb.md, "The algorithm"). For reversed (image) presets call it with the roles
  swapped (x0 = model outputs, y_hat = the conditioning inputs), as in the paper.

  Args:
    benchmark: the benchmark.
    x0: (B, D) int conditioning states.
    y_hat: (B, D) int samples to score.

  Returns:
    scalar perplexity (the truth's own value is exp(mean per-coordinate conditional entropy)).
  """
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim)
  y_hat = check_states(y_hat, "y_hat", benchmark.num_categories, benchmark.dim)
  check_same_shape(y_hat, "y_hat", x0, "x0")
  return _perplexity(benchmark.plan_marginal_logits(x0), y_hat)


@jax.jit
def _perplexity(log_marginals: jax.Array, y_hat: jax.Array) -> jax.Array:
  picked = jnp.take_along_axis(log_marginals, y_hat[..., None].astype(jnp.int32), axis=-1)
  return jnp.exp(-jnp.mean(picked))


def marginal_entropies(y: jax.Array, num_categories: int) -> jax.Array:
  """Entropies (nats) of the per-coordinate histograms of y (logged for y and y_hat).

  Args:
    y: (B, D) int samples.
    num_categories: S.

  Returns:
    (D,) entropies; log S for uniform histograms, 0 for constant coordinates.
  """
  return _entropies(marginal_histograms(y, num_categories))


@jax.jit
def _entropies(h: jax.Array) -> jax.Array:
  return -jnp.sum(jnp.where(h > 0, h * jnp.log(jnp.where(h > 0, h, 1.0)), 0.0), axis=-1)


def mc_conditional_kl(
  rng: jax.Array,
  benchmark: Benchmark,
  x0: jax.Array,
  model_log_prob: Callable[[jax.Array, jax.Array], jax.Array],
) -> jax.Array:
  """Unbiased Monte Carlo estimate of E_{x_0} KL(pi*(.|x_0) || pi_theta(.|x_0)).

  Draws y ~ pi*(. | x_0) and averages log pi*(y | x_0) - log pi_theta(y | x_0); both densities
  are exact (the truth by Eq. 7, the model e.g. a DLightSB potential).

  Args:
    rng: PRNG key.
    benchmark: the benchmark.
    x0: (B, D) int sources, typically fresh samples of p_0.
    model_log_prob: (x0 (B, D), y (B, D)) -> (B,) log pi_theta(y | x0).

  Returns:
    scalar estimate.
  """
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim)
  y = benchmark.sample_plan(rng, x0)
  model = jnp.asarray(model_log_prob(x0, y))
  chex.assert_shape(
    model,
    (x0.shape[0],),
    exception_type=ValueError,
    custom_message=(f"model_log_prob must return shape ({x0.shape[0]},), got {tuple(model.shape)}"),
  )
  return _mean_difference(benchmark.plan_log_prob(x0, y), model)


@jax.jit
def _mean_difference(a: jax.Array, b: jax.Array) -> jax.Array:
  return jnp.mean(a - b)


def categorical_kl(log_p: jax.Array, log_q: jax.Array) -> jax.Array:
  """KL(p || q) over the last axis for log-probabilities (normalised with log_softmax first).

  Terms with p = 0 contribute 0 (even where q = 0); q = 0 < p gives +inf.

  Args:
    log_p: (..., S) logits of p.
    log_q: (..., S) logits of q.

  Returns:
    (...) KL values.
  """
  log_p = jax.nn.log_softmax(jnp.asarray(log_p), axis=-1)
  log_q = jax.nn.log_softmax(jnp.asarray(log_q), axis=-1)
  chex.assert_equal_shape(
    [log_p, log_q],
    exception_type=ValueError,
    custom_message=(
      f"log_p and log_q must have the same shape, got {tuple(log_p.shape)} and {tuple(log_q.shape)}"
    ),
  )
  p = jnp.exp(log_p)
  safe_p = jnp.where(p > 0, log_p, 0.0)
  safe_q = jnp.where(p > 0, log_q, 0.0)
  return jnp.sum(jnp.where(p > 0, p * (safe_p - safe_q), 0.0), axis=-1)


TransitionLogitsFn = Callable[[jax.Array, jax.Array], jax.Array]


def _check_model_logits(out: jax.Array, x_t: jax.Array, s: int) -> jax.Array:
  want = x_t.shape + (s,)
  chex.assert_shape(
    out,
    want,
    exception_type=ValueError,
    custom_message=(f"model_transition_logits must return shape {want}, got {tuple(out.shape)}"),
  )
  return out


def _trajectory_kl(
  rng: jax.Array,
  benchmark: Benchmark,
  x0: jax.Array,
  model_transition_logits: Callable,
  forward: bool,
  model_params: Any = None,
  model_potential: Any = None,
) -> jax.Array:
  n = benchmark.num_steps
  if n < 1:
    raise ValueError(f"trajectory KL needs num_steps N >= 1 (it is scaled by D N), got {n}")
  if not callable(model_transition_logits):
    raise ValueError("model_transition_logits must be a callable (x_t, t) -> (B, D, S)")
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim).astype(jnp.int32)
  if model_potential is not None:
    if not isinstance(model_potential, bm.CPPotential):
      raise ValueError(
        f"model_potential must be a CPPotential, got {type(model_potential).__name__}"
      )
    bm.check_potential(model_potential, benchmark.reference)
  return _trajectory_kl_jit(
    rng,
    benchmark,
    x0,
    model_transition_logits,
    forward,
    model_params,
    model_params is not None,
    model_potential,
  )


@functools.partial(jax.jit, static_argnums=(3, 4, 6))
def _trajectory_kl_jit(
  rng: jax.Array,
  benchmark: Benchmark,
  x0: jax.Array,
  model_fn: Callable,
  forward: bool,
  model_params: Any,
  has_params: bool,
  model_potential: Any,
) -> jax.Array:
  if has_params:

    def model_transition_logits(x_t, t):
      return model_fn(model_params, x_t, t)
  else:
    model_transition_logits = model_fn
  s, n = benchmark.num_categories, benchmark.num_steps
  pot, ref, chunk = benchmark.potential, benchmark.reference, benchmark.chunk_elements
  cores = pot.log_cp_cores
  own_chain = model_potential is not None and not forward

  def model_tables(m):
    return bm.log_u_table(ref.log_q_bar[m], model_potential.log_cp_cores, chunk)

  def step(carry, inputs):
    x_t, u_cur, mu_cur = carry  # U_{N+1-t} of the truth (and of the model potential)
    key, t = inputs
    u_next = bm.log_u_table(ref.log_q_bar[n - t], cores, chunk)
    mu_next = model_tables(n - t) if own_chain else mu_cur
    true_logp = bm._transition_marginals_from_tables(
      pot.log_alpha, u_cur, u_next, ref.log_q_step, x_t, chunk
    )
    model_logp = jax.nn.log_softmax(
      _check_model_logits(jnp.asarray(model_transition_logits(x_t, t)), x_t, s), axis=-1
    )
    if forward:
      kl = categorical_kl(true_logp, model_logp)
      keys = jax.random.split(key, x_t.shape[0])
      x_next = bm._mixture_step_sample(
        keys, x_t, pot.log_alpha, u_cur, u_next, ref.log_q_step, chunk
      )
    elif own_chain:
      # A CP model's own chain is a mixture of products (Eq. 9 with its potential): the
      # rollout draws the component first, as the peer does, not per-coordinate marginals.
      kl = categorical_kl(model_logp, true_logp)
      keys = jax.random.split(key, x_t.shape[0])
      x_next = bm._mixture_step_sample(
        keys, x_t, model_potential.log_alpha, mu_cur, mu_next, ref.log_q_step, chunk
      )
    else:
      kl = categorical_kl(model_logp, true_logp)
      x_next = jax.random.categorical(key, model_logp, axis=-1).astype(jnp.int32)
    return (x_next, u_next, mu_next), jnp.mean(kl)

  keys = jax.random.split(rng, n + 1)
  u_first = bm.log_u_table(ref.log_q_bar[n + 1], cores, chunk)
  mu_first = model_tables(n + 1) if own_chain else jnp.zeros((), u_first.dtype)
  _, per_step = jax.lax.scan(
    step, (x0, u_first, mu_first), (keys, jnp.arange(n + 1, dtype=jnp.int32))
  )
  return jnp.mean(per_step) * benchmark.dim * n


def trajectory_kl_forward(
  rng: jax.Array,
  benchmark: Benchmark,
  x0: jax.Array,
  model_transition_logits: Callable,
  model_params: Any = None,
) -> jax.Array:
  """Forward trajectory KL along true SB rollouts (Eq. 9 chain from x_0).

  Value: mean_{t,b,d} KL(p*^d(.|x_t) || p_theta^d(.|x_t)) * D N, with p* from Eq. 11.

  Args:
    rng: PRNG key.
    benchmark: the benchmark.
    x0: (B, D) int test sources.
    model_transition_logits: traceable (x_t (B, D) int32, t int32 scalar in [0, N]) ->
      (B, D, S) logits of the model's per-coordinate transition x_t -> x_{t+1} (forward time;
      CSBM-type models map their time index t -> N + 1 - t themselves). With
      ``model_params`` it is called as (model_params, x_t, t) instead.
    model_params: optional pytree of model parameters, traced (a module-level callable with
      parameters compiles once per shape; a fresh closure recompiles on every call).

  Returns:
    scalar KL (≈ a sum over the N + 1 steps and D coordinates).
  """
  return _trajectory_kl(
    rng, benchmark, x0, model_transition_logits, forward=True, model_params=model_params
  )


def trajectory_kl_reverse(
  rng: jax.Array,
  benchmark: Benchmark,
  x0: jax.Array,
  model_transition_logits: Callable,
  model_params: Any = None,
  model_potential: Any = None,
) -> jax.Array:
  """Reverse trajectory KL along model rollouts: mean_{t,b,d} KL(p_theta^d(.|x_t) || p*^d(.|x_t))
  * D N.

  The rollout is the model's own chain: for a CP-potential model (``model_potential`` given)
  the mixture-of-products chain of Eq. 9 with the model's potential (component first, then the
  coordinates), as catsbench does; otherwise factorised draws from the per-coordinate logits
  (exact for CSBM-type models, whose transitions factorise).

  Args:
    rng: PRNG key.
    benchmark: the benchmark.
    x0: (B, D) int test sources.
    model_transition_logits: as in ``trajectory_kl_forward``.
    model_params: as in ``trajectory_kl_forward``.
    model_potential: the model's CPPotential (K may differ from the benchmark's) when the model
      is a CP potential under the benchmark's reference; None for factorised models.

  Returns:
    scalar KL.
  """
  return _trajectory_kl(
    rng,
    benchmark,
    x0,
    model_transition_logits,
    forward=False,
    model_params=model_params,
    model_potential=model_potential,
  )


# --------------------------------------------------------------------------------------------
# Exact enumeration on tiny instances.
# --------------------------------------------------------------------------------------------


def enumerate_states(dim: int, num_categories: int, max_states: int = 1 << 16) -> jax.Array:
  """All S^D states in lexicographic order (last coordinate fastest).

  Args:
    dim: D >= 1.
    num_categories: S >= 2.
    max_states: refuse larger enumerations.

  Returns:
    (S^D, D) int32 states.
  """
  d = validate.positive_int(dim, "dim", 1)
  s = validate.positive_int(num_categories, "num_categories", 2)
  if s**d > max_states:
    raise ValueError(f"dim/num_categories: S^D = {s**d} states exceed max_states={max_states}")
  grids = np.meshgrid(*([np.arange(s)] * d), indexing="ij")
  return jnp.asarray(np.stack([g.reshape(-1) for g in grids], axis=-1), jnp.int32)


def _enumerated_pairs(benchmark: Benchmark, max_pairs: int):
  s, d = benchmark.num_categories, benchmark.dim
  max_pairs = validate.positive_int(max_pairs, "max_pairs", 1)
  if s ** (2 * d) > max_pairs:
    raise ValueError(
      f"benchmark: S^(2D) = {s ** (2 * d)} pairs exceed max_pairs={max_pairs}; "
      "exact metrics need a tiny instance"
    )
  states = np.asarray(enumerate_states(d, s, max_states=max_pairs))
  m = states.shape[0]
  return (
    jnp.asarray(states),
    jnp.asarray(np.repeat(states, m, axis=0)),
    jnp.asarray(np.tile(states, (m, 1))),
  )


def exact_joint_log_probs(
  benchmark: Benchmark, max_pairs: int = 1 << 22
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Enumerates the plan: states, log p_0 and log pi*(y | x_0) for every pair.

  Args:
    benchmark: a tiny benchmark (S^(2D) <= max_pairs).
    max_pairs: refuse larger enumerations.

  Returns:
    states (M, D) with M = S^D, log_p0 (M,), log_cond (M, M) with entry [i, j] =
    log pi*(states[j] | states[i]).
  """
  states, x0_rep, y_rep = _enumerated_pairs(benchmark, max_pairs)
  m = states.shape[0]
  log_p0 = benchmark.source_log_prob(states)
  log_cond = benchmark.plan_log_prob(x0_rep, y_rep)
  return states, log_p0, jnp.reshape(log_cond, (m, m))


def exact_target_log_probs(
  benchmark: Benchmark, max_pairs: int = 1 << 22
) -> tuple[jax.Array, jax.Array]:
  """Exact p_1 on a tiny instance: log p_1(y) = logsumexp_{x_0}(log p_0(x_0) + log pi*(y | x_0)).

  Args:
    benchmark: a tiny benchmark.
    max_pairs: refuse larger enumerations.

  Returns:
    states (M, D) and log_p1 (M,).
  """
  states, log_p0, log_cond = exact_joint_log_probs(benchmark, max_pairs)
  return states, _mixture_log_marginal(log_p0, log_cond)


@jax.jit
def _mixture_log_marginal(log_p0: jax.Array, log_cond: jax.Array) -> jax.Array:
  return jax.nn.logsumexp(log_p0[:, None] + log_cond, axis=0)


class ExactConditionalMetrics(NamedTuple):
  """Exact conditional metrics: E_{p_0} KL(pi*(.|x_0) || pi_theta(.|x_0)) and E_{p_0} TV."""

  kl: jax.Array
  tv: jax.Array


def exact_conditional_kl_tv(
  benchmark: Benchmark,
  model_log_prob: Callable[[jax.Array, jax.Array], jax.Array],
  max_pairs: int = 1 << 22,
) -> ExactConditionalMetrics:
  """Exact E_{x_0 ~ p_0} KL(pi*(.|x_0) || pi_theta(.|x_0)) and E_{p_0} TV by enumeration.

  Args:
    benchmark: a tiny benchmark (S^(2D) <= max_pairs).
    model_log_prob: (x0 (P, D) int32, y (P, D) int32) -> (P,) log pi_theta(y | x0), called once
      on all P = S^(2D) pairs.
    max_pairs: refuse larger enumerations.

  Returns:
    ExactConditionalMetrics(kl, tv), scalars.
  """
  states, x0_rep, y_rep = _enumerated_pairs(benchmark, max_pairs)
  m = states.shape[0]
  log_p0 = benchmark.source_log_prob(states)
  log_true = benchmark.plan_log_prob(x0_rep, y_rep)
  model = jnp.asarray(model_log_prob(x0_rep, y_rep))
  chex.assert_shape(
    model,
    (m * m,),
    exception_type=ValueError,
    custom_message=(f"model_log_prob must return shape ({m * m},), got {tuple(model.shape)}"),
  )
  return ExactConditionalMetrics(*_exact_kl_tv(log_p0, log_true.reshape(m, m), model.reshape(m, m)))


@jax.jit
def _exact_kl_tv(
  log_p0: jax.Array, log_true: jax.Array, log_model: jax.Array
) -> tuple[jax.Array, jax.Array]:
  p_true = jnp.exp(log_true)
  p0 = jnp.exp(log_p0)
  kl_terms = jnp.where(p_true > 0, p_true * (log_true - jnp.where(p_true > 0, log_model, 0.0)), 0.0)
  kl = jnp.sum(jnp.where(p0 > 0, p0 * kl_terms.sum(-1), 0.0))
  tv = jnp.sum(p0 * 0.5 * jnp.abs(p_true - jnp.exp(log_model)).sum(-1))
  return kl, tv


# --------------------------------------------------------------------------------------------
# Exact plans of Markov models on tiny instances.
# --------------------------------------------------------------------------------------------


def state_index(x: jax.Array, num_categories: int) -> jax.Array:
  """Index of each state in ``enumerate_states`` order (last coordinate fastest).

  Args:
    x: (B, D) int states.
    num_categories: S.

  Returns:
    (B,) int32 indices sum_d x^d S^(D-1-d).
  """
  x = check_states(x, "x", num_categories)
  weights = jnp.asarray(num_categories ** np.arange(x.shape[-1] - 1, -1, -1), jnp.int32)
  return x.astype(jnp.int32) @ weights


def exact_plan_from_transition_logits(
  benchmark: Benchmark,
  model_transition_logits: Callable,
  model_params: Any = None,
  max_states: int = 1 << 11,
) -> jax.Array:
  """Exact end-point law of a model's Markov chain whose steps factorise over coordinates.

  The model's step t (t = 0..N) is prod_d softmax(logits(x_t, t))^d(x_{t+1}^d); on a tiny
  instance the (M, M) transition matrices over all M = S^D states are enumerated and composed in
  log space, giving log p_theta(x_{N+1} = y | x_0) for every pair. This is the exact plan of
  CSBM-type solvers (per-coordinate transitions), to be compared with pi* by
  ``exact_conditional_kl_tv``.

  Args:
    benchmark: a tiny benchmark (S^D <= max_states).
    model_transition_logits: (x_t (M, D) int32, t int32 scalar) -> (M, D, S) logits, or
      (model_params, x_t, t) -> logits when ``model_params`` is given.
    model_params: optional parameter pytree.
    max_states: refuse larger enumerations.

  Returns:
    (M, M) log conditionals, entry [i, j] = log p_theta(states[j] | states[i]) with ``states``
    from ``enumerate_states(D, S)``.
  """
  if not callable(model_transition_logits):
    raise ValueError("model_transition_logits must be callable")
  s, d, n = benchmark.num_categories, benchmark.dim, benchmark.num_steps
  states = enumerate_states(d, s, max_states=max_states)
  log_plan = None
  for t in range(n + 1):
    t_arr = jnp.asarray(t, jnp.int32)
    if model_params is None:
      logits = model_transition_logits(states, t_arr)
    else:
      logits = model_transition_logits(model_params, states, t_arr)
    logits = _check_model_logits(jnp.asarray(logits), states, s)
    step = _enumerated_step(jax.nn.log_softmax(logits, axis=-1), states)
    log_plan = step if log_plan is None else _log_matmul(log_plan, step)
  return log_plan


@jax.jit
def _enumerated_step(log_p: jax.Array, states: jax.Array) -> jax.Array:
  # log T[i, j] = sum_d log p[i, d, states[j, d]].
  d = states.shape[1]
  picked = log_p[:, jnp.arange(d)[None, :], states]  # (M, M, D)
  return picked.sum(-1)


_log_matmul = jax.jit(log_matmul)
