"""Trivial baselines of the discrete SB benchmark: independent, prior and feature-wise EOT.

``independent_baseline_sample`` (y ~ p_1, ignoring x_0), ``prior_baseline_sample`` /
``prior_baseline_log_prob`` (y ~ q(. | x_0)) and feature-wise EOT (the 1-D entropic OT plan of each
coordinate by ott-jax's Sinkhorn, coordinates independent; ``featurewise_eot_potential`` is its
rank-1 CP potential). A solver that does not beat them has not learned the coupling. Also
exported by ``iclr26_jax.dsb.metrics``.

References: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the
Era of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal
Transport", ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp

from iclr26_jax.core import validate
from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb.benchmark import Benchmark
from iclr26_jax.dsb.reference import check_same_shape, check_states

__all__ = [
  "independent_baseline_sample",
  "prior_baseline_sample",
  "prior_baseline_log_prob",
  "featurewise_eot_potential",
  "featurewise_eot_log_conditionals",
  "featurewise_eot_sample",
  "featurewise_eot_log_prob",
]


def independent_baseline_sample(benchmark: Benchmark, rng: jax.Array, x0: jax.Array) -> jax.Array:
  """Independent coupling: y ~ p_1 ignoring x_0 (fresh sources pushed through the plan).

  Args:
    benchmark: the benchmark.
    rng: PRNG key.
    x0: (B, D) int sources (only the batch size is used).

  Returns:
    (B, D) int32 samples.
  """
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim)
  return benchmark.sample_target(rng, x0.shape[0])


def prior_baseline_sample(benchmark: Benchmark, rng: jax.Array, x0: jax.Array) -> jax.Array:
  """Prior coupling: y^d ~ Q̄_{N+1}(x_0^d, .) independently per coordinate.

  Args:
    benchmark: the benchmark.
    rng: PRNG key.
    x0: (B, D) int sources.

  Returns:
    (B, D) int32 samples.
  """
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim)
  return _prior_sample(benchmark.reference_log_kernel(), rng, x0)


@jax.jit
def _prior_sample(log_kernel: jax.Array, rng: jax.Array, x0: jax.Array) -> jax.Array:
  return jax.random.categorical(rng, log_kernel[x0], axis=-1).astype(jnp.int32)


def prior_baseline_log_prob(benchmark: Benchmark, x0: jax.Array, y: jax.Array) -> jax.Array:
  """log q(y | x_0) = sum_d log Q̄_{N+1}(x_0^d, y^d).

  Args:
    benchmark: the benchmark.
    x0: (B, D) int sources.
    y: (B, D) int targets.

  Returns:
    (B,) log-probabilities.
  """
  x0 = check_states(x0, "x0", benchmark.num_categories, benchmark.dim)
  y = check_states(y, "y", benchmark.num_categories, benchmark.dim)
  check_same_shape(y, "y", x0, "x0")
  return _pair_table_sum(benchmark.reference_log_kernel(), x0, y)


@jax.jit
def _pair_table_sum(log_kernel: jax.Array, x0: jax.Array, y: jax.Array) -> jax.Array:
  return log_kernel[x0, y].sum(-1)


@functools.partial(jax.jit, static_argnames=("threshold", "max_iterations"))
def _featurewise_sinkhorn(
  log_kernel: jax.Array, log_a: jax.Array, log_b: jax.Array, threshold: float, max_iterations: int
) -> jax.Array:
  from ott.geometry import geometry
  from ott.problems.linear import linear_problem
  from ott.solvers.linear import sinkhorn

  cost = -log_kernel
  solver = sinkhorn.Sinkhorn(threshold=threshold, max_iterations=max_iterations)

  def one(la, lb):
    geom = geometry.Geometry(cost_matrix=cost, epsilon=1.0)
    out = solver(linear_problem.LinearProblem(geom, a=jnp.exp(la), b=jnp.exp(lb)))
    # Plan = exp(f + g - C) with eps = 1; its rows normalised give the conditional, which
    # needs only g.
    return out.g

  return jax.vmap(one)(log_a, log_b)


@jax.jit
def _conditionals_from_g(log_kernel: jax.Array, g: jax.Array) -> jax.Array:
  return jax.nn.log_softmax(g[:, None, :] + log_kernel[None], axis=-1)


@jax.jit
def _log_mean_rows(logp: jax.Array) -> jax.Array:
  return jax.nn.logsumexp(logp, axis=0) - jnp.log(jnp.asarray(logp.shape[0], logp.dtype))


def _featurewise_g(
  benchmark: Benchmark,
  rng: jax.Array | None,
  num_marginal_samples: int,
  target_log_marginals: jax.Array | None,
  threshold: float,
  max_iterations: int,
) -> jax.Array:
  """(D, S) target-side Sinkhorn potentials g^d of the 1-D EOT problems (eps = 1)."""
  d, s = benchmark.dim, benchmark.num_categories
  if target_log_marginals is None:
    if rng is None:
      raise ValueError("rng is required when target_log_marginals is not given")
    n = validate.positive_int(num_marginal_samples, "num_marginal_samples", 1)
    x0 = benchmark.sample_source(rng, n)
    logp = benchmark.plan_marginal_logits(x0)  # (n, D, S)
    target_log_marginals = _log_mean_rows(logp)
  target_log_marginals = jnp.asarray(target_log_marginals, benchmark.source_log_marginals.dtype)
  chex.assert_shape(
    target_log_marginals,
    (d, s),
    exception_type=ValueError,
    custom_message=(
      f"target_log_marginals must have shape (D, S) = ({d}, {s}), got "
      f"{tuple(target_log_marginals.shape)}"
    ),
  )
  if not threshold > 0:
    raise ValueError(f"threshold must be positive, got {threshold}")
  max_iterations = validate.positive_int(max_iterations, "max_iterations", 1)
  return _featurewise_sinkhorn(
    benchmark.reference_log_kernel(),
    benchmark.source_log_marginals,
    target_log_marginals,
    float(threshold),
    max_iterations,
  )


def featurewise_eot_potential(
  benchmark: Benchmark,
  rng: jax.Array | None = None,
  num_marginal_samples: int = 20_000,
  target_log_marginals: jax.Array | None = None,
  threshold: float = 1e-6,
  max_iterations: int = 10_000,
) -> bm.CPPotential:
  """The feature-wise EOT baseline as a rank-1 CP Schrödinger potential.

  The product of the 1-D EOT plans, prod_d Q̄_{N+1}(x_0^d, y^d) e^{g^d(y^d)} / Z^d(x_0^d), is the
  SB-form plan (Eq. 3) of the product potential v(y) = prod_d e^{g^d(y^d)}: a CPPotential with
  K = 1, log a = 0 and log r^d = g^d. Every closed form of ``benchmark`` (one-shot and Markov
  sampling, plan log-density, per-step transition logits of the coordinate-wise 1-D bridges)
  then applies. Arguments as in ``featurewise_eot_log_conditionals``.

  Returns:
    CPPotential with log_alpha (1,) and log_cp_cores (D, S, 1).
  """
  g = _featurewise_g(
    benchmark, rng, num_marginal_samples, target_log_marginals, threshold, max_iterations
  )
  g = g - jnp.max(g, axis=-1, keepdims=True)  # per-coordinate constants cancel in the plan
  return bm.CPPotential(log_alpha=jnp.zeros((1,), g.dtype), log_cp_cores=g[:, :, None])


def featurewise_eot_log_conditionals(
  benchmark: Benchmark,
  rng: jax.Array | None = None,
  num_marginal_samples: int = 20_000,
  target_log_marginals: jax.Array | None = None,
  threshold: float = 1e-6,
  max_iterations: int = 10_000,
) -> jax.Array:
  """Feature-wise EOT baseline: the exact 1-D EOT plan of each coordinate (ott-jax Sinkhorn).

  Coordinate d solves min KL(P ‖ p_0^d ⊗ Q̄_{N+1}) over couplings of (p_0^d, p_1^d), i.e. cost
  -log Q̄_{N+1} with unit regularisation. p_0^d is the benchmark's exact source marginal; p_1^d
  is ``target_log_marginals`` if given, else the Rao-Blackwellised estimate
  mean_{x_0 ~ p_0} pi*^d(. | x_0) over ``num_marginal_samples`` fresh sources (Eq. 8).

  Args:
    benchmark: the benchmark.
    rng: PRNG key (needed unless target_log_marginals is given).
    num_marginal_samples: sources for the p_1^d estimate.
    target_log_marginals: optional exact (D, S) log p_1^d.
    threshold: Sinkhorn marginal-error tolerance.
    max_iterations: Sinkhorn iteration cap.

  Returns:
    (D, S, S) log conditionals log P^d(y^d | x_0^d) (rows indexed by x_0^d).
  """
  g = _featurewise_g(
    benchmark, rng, num_marginal_samples, target_log_marginals, threshold, max_iterations
  )
  return _conditionals_from_g(benchmark.reference_log_kernel(), g)


def _check_log_conditionals(
  log_conditionals: jax.Array, x0: jax.Array
) -> tuple[jax.Array, jax.Array]:
  log_conditionals = jnp.asarray(log_conditionals)
  if log_conditionals.ndim != 3 or log_conditionals.shape[1] != log_conditionals.shape[2]:
    raise ValueError(
      f"log_conditionals must have shape (D, S, S), got {tuple(log_conditionals.shape)}"
    )
  d, s, _ = log_conditionals.shape
  x0 = check_states(x0, "x0", s, d)
  return log_conditionals, x0


def featurewise_eot_sample(log_conditionals: jax.Array, rng: jax.Array, x0: jax.Array) -> jax.Array:
  """Samples y^d ~ P^d(. | x_0^d) independently per coordinate.

  Args:
    log_conditionals: (D, S, S) from ``featurewise_eot_log_conditionals``.
    rng: PRNG key.
    x0: (B, D) int sources.

  Returns:
    (B, D) int32 samples.
  """
  log_conditionals, x0 = _check_log_conditionals(log_conditionals, x0)
  return _featurewise_sample(log_conditionals, rng, x0)


@jax.jit
def _featurewise_sample(log_conditionals: jax.Array, rng: jax.Array, x0: jax.Array) -> jax.Array:
  logits = log_conditionals[jnp.arange(x0.shape[-1])[None, :], x0]  # (B, D, S)
  return jax.random.categorical(rng, logits, axis=-1).astype(jnp.int32)


def featurewise_eot_log_prob(log_conditionals: jax.Array, x0: jax.Array, y: jax.Array) -> jax.Array:
  """log prod_d P^d(y^d | x_0^d) of the feature-wise EOT baseline.

  Args:
    log_conditionals: (D, S, S).
    x0: (B, D) int sources.
    y: (B, D) int targets.

  Returns:
    (B,) log-probabilities.
  """
  log_conditionals, x0 = _check_log_conditionals(log_conditionals, x0)
  d, s, _ = log_conditionals.shape
  y = check_states(y, "y", s, d)
  check_same_shape(y, "y", x0, "x0")
  return _featurewise_log_prob(log_conditionals, x0, y)


@jax.jit
def _featurewise_log_prob(log_conditionals: jax.Array, x0: jax.Array, y: jax.Array) -> jax.Array:
  return log_conditionals[jnp.arange(x0.shape[-1])[None, :], x0, y].sum(-1)
