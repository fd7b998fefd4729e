"""Benchmark pairs with analytically known Schrödinger-bridge / entropic-OT solutions.

A rank-K CP Schrödinger potential (Eq. 4) under an independent-coordinate reference makes the plan
(Eq. 3), its normaliser, conditionals, Markov SB chain and transition marginals (Eq. 5–9, 11)
exact at O(D S K) per state, in the log domain and chunked (``chunk_elements``). The closed forms
take a ``CPPotential`` and a ``ReferenceProcess``, so the solvers reuse them with learned
parameters; ``Benchmark``, ``make_benchmark`` and ``make_preset`` (``PRESETS``) build instances
from a seed (not the released files). Eq. labels are this package's numbering, not the paper's.

References: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the
Era of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal
Transport", ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench
(MIT). The construction, with its equations: docs/methods/dsb.md ("The algorithm").
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from iclr26_jax.core import sharding as shd
from iclr26_jax.dsb import reference as ref_lib
from iclr26_jax.dsb.reference import ReferenceProcess, check_same_shape, check_states, check_time
from iclr26_jax.core import validate

__all__ = [
  "DEFAULT_CHUNK_ELEMENTS",
  "POTENTIAL_KINDS",
  "SOURCE_KINDS",
  "BASE_STEPS",
  "CPPotential",
  "Benchmark",
  "LSE_IMPLS",
  "MATMUL_MIN_COMPONENTS",
  "log_u_table",
  "log_u_rows",
  "log_mix_rows",
  "log_potential",
  "log_phi",
  "log_phi_per_row",
  "log_normalizer",
  "component_log_weights",
  "plan_log_prob",
  "plan_marginal_log_probs",
  "sample_plan",
  "transition_log_prob",
  "transition_marginal_log_probs",
  "transition_marginal_log_probs_per_row",
  "sample_sb_step",
  "sample_markov",
  "gaussian_bump_potential",
  "sample_centres",
  "uniform_random_potential",
  "quantise",
  "source_bin_log_probs",
  "SOURCE_RANGE",
  "build_benchmark",
  "make_benchmark",
  "HD_PRESETS",
  "IMAGE_PRESETS",
  "TINY_PRESETS",
  "PRESETS",
  "DEPRECATED_PRESET_NAMES",
  "resolve_preset",
  "make_preset",
]

DEFAULT_CHUNK_ELEMENTS = 1 << 24  # elements per chunk intermediate (64 MiB in float32)
POTENTIAL_KINDS = ("gaussian", "uniform")
SOURCE_KINDS = ("gaussian", "uniform", "categorical", "empirical")
BASE_STEPS = 128  # M = (N + 1) s base reference steps in every HD and image preset

SOURCE_RANGE = 7.0  # source quantiser edges over [-7, 7] (catsbench HEAD; the 1.4 package: 3)
_SOURCE_UNIFORM_HALF_WIDTH = 3.0  # uniform source input U[-3, 3]^D
_CENTRE_RANGE = 5.0  # centre quantiser edges over [-5, 5]; sphere radius 5
_CENTRE_SIGMA = 2.0  # centres must be pairwise farther than 2.5 * 2
_CENTRE_MAX_TRIES = 100


# --------------------------------------------------------------------------------------------
# The potential.
# --------------------------------------------------------------------------------------------


class CPPotential(struct.PyTreeNode):
  """Rank-K CP (mixture) Schrödinger potential v(y) = sum_k a_k prod_d r_k^d(y^d) (Eq. 4).

  Attributes:
    log_alpha: (K,) log a_k.
    log_cp_cores: (D, S, K) log r_k^d(s).
  """

  log_alpha: jax.Array
  log_cp_cores: jax.Array

  @property
  def dim(self) -> int:
    """D."""
    return self.log_cp_cores.shape[-3]

  @property
  def num_categories(self) -> int:
    """S."""
    return self.log_cp_cores.shape[-2]

  @property
  def num_potentials(self) -> int:
    """K."""
    return self.log_cp_cores.shape[-1]


def check_potential(potential: CPPotential, reference: ReferenceProcess) -> None:
  log_alpha, cores = potential.log_alpha, potential.log_cp_cores
  chex.assert_rank(
    cores,
    3,
    exception_type=ValueError,
    custom_message=(f"potential.log_cp_cores must have shape (D, S, K), got {tuple(cores.shape)}"),
  )
  chex.assert_shape(
    log_alpha,
    (cores.shape[2],),
    exception_type=ValueError,
    custom_message=(
      f"potential.log_alpha must have shape (K,) = ({cores.shape[2]},), got "
      f"{tuple(log_alpha.shape)}"
    ),
  )
  s = reference.num_categories
  chex.assert_axis_dimension(
    cores,
    1,
    s,
    exception_type=ValueError,
    custom_message=(
      f"potential.log_cp_cores has S={cores.shape[1]} categories but the reference has S={s}"
    ),
  )
  chex.assert_shape(
    reference.log_q_bar,
    (None, s, s),
    exception_type=ValueError,
    custom_message=(
      f"reference.log_q_bar must have shape (N + 2, S, S), got {tuple(reference.log_q_bar.shape)}"
    ),
  )


def _check_chunk(chunk_elements: Any) -> int:
  return validate.positive_int(chunk_elements, "chunk_elements", 1)


def _map_rows(fn, xs: tuple, per_row_elements: int, chunk_elements: int, split: bool = False):
  """Applies the per-row ``fn`` to each row of ``xs``, vmapped over chunks of rows.

  Chunks hold at most ``chunk_elements // per_row_elements`` rows (at least one), mapped
  sequentially with ``lax.map``, so peak memory is bounded independently of the batch size.
  The chunk body is rematerialised (``jax.checkpoint``): under differentiation the backward
  pass recomputes each chunk's intermediates instead of storing all of them, so the bound
  holds for training steps too.
  ``split=True`` (rows marked with ``shd.shard_rows``): the bound is per device, each holding
  ``batch / shd.rows_split(batch)`` rows; a chunked ``lax.map`` over split rows would reshard them.
  """
  batch = jax.tree.leaves(xs)[0].shape[0]
  rows = max(1, chunk_elements // max(1, per_row_elements))
  if rows * (shd.rows_split(batch) if split else 1) >= batch:
    return jax.vmap(fn)(xs)
  return jax.lax.map(jax.checkpoint(fn), xs, batch_size=rows)


LSE_IMPLS = ("auto", "matmul", "broadcast")
# ``auto`` picks the max-shifted matmul from this many components up and the broadcast form
# below: K < 16 are the truth potentials, whose cores exceed the matmul's range (``log_u_table``).
MATMUL_MIN_COMPONENTS = 16


def _resolve_lse_impl(impl: str, num_components: int) -> str:
  if impl not in LSE_IMPLS:
    raise ValueError(f"lse_impl must be one of {LSE_IMPLS}, got {impl!r}")
  if impl == "auto":
    return "matmul" if num_components >= MATMUL_MIN_COMPONENTS else "broadcast"
  return impl


def _lse_shift(x: jax.Array, axis: int) -> jax.Array:
  """Max over ``axis`` (kept), 0 where it is not finite; constant under differentiation (the
  max-shifted contraction does not depend on the shift, so its true derivative is zero)."""
  m = jax.lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
  return jnp.where(jnp.isfinite(m), m, jnp.zeros_like(m))


def _safe_log(p: jax.Array) -> jax.Array:
  """log p with log 0 = -inf and a zero (not NaN) gradient there."""
  pos = p > 0
  return jnp.where(pos, jnp.log(jnp.where(pos, p, jnp.ones_like(p))), -jnp.inf)


def _einsum_exp(spec: str, a: jax.Array, b: jax.Array) -> jax.Array:
  return jnp.einsum(spec, jnp.exp(a), jnp.exp(b), precision=jax.lax.Precision.HIGHEST)


def log_u_table(
  log_q_m: jax.Array,
  log_cp_cores: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """log U_m[d, x, k] = log u_k^d(x; m) = logsumexp_s(log Q̄_m[x, s] + log r_k^d(s)) (Eq. 5).

  Row x of Q̄_m is read explicitly (no symmetry assumed). Two implementations:

  * ``"broadcast"``: the (d, S, S, K) sum and a log-sum-exp over s, mapped over chunks of
    coordinates so that each chunk's intermediate has at most ``chunk_elements`` entries;
    D S^2 K exponentials.
  * ``"matmul"``: max-shifted matmul, log(exp(log Q̄ - m_x) @ exp(log r^d - m_k)) + m_x + m_k
    with m_x = max_s log Q̄[x, s] and m_k = max_s log r_k^d(s): S^2 + D S K exponentials and
    one (S, S) @ (S, D K) GEMM (its gradient is two GEMMs). Equal to the broadcast form to
    float rounding wherever log U[d, x, k] >= m_x + m_k - 80 (float32; -700 in float64), so
    that exp(. - m) does not underflow; entries further below become -inf (zero gradient),
    where the broadcast form stays finite. Learned potentials (cores in a few tens of nats) are
    far inside that range; the truth's gaussian bumps are not (log r down to -300 at S = 50,
    read through Q̄_0 = I), hence:
  * ``"auto"`` (default): ``"matmul"`` for K >= ``MATMUL_MIN_COMPONENTS`` (16; the learned
    potentials, K = 32 .. 1000), ``"broadcast"`` below (the truth potentials, K = 5 / 10, and
    the tiny tests' K = 8). The threshold comes from the range caveat, not from speed: the
    matmul form was never the slower (docs/development/dsb_notes.md).

  Args:
    log_q_m: (S, S) log Q̄_m; -inf entries allowed.
    log_cp_cores: (D, S, K) log r.
    chunk_elements: bound on the broadcast form's chunk intermediate size.
    lse_impl: "auto" | "matmul" | "broadcast".

  Returns:
    (D, S, K) table.
  """
  log_q_m = jnp.asarray(log_q_m)
  log_cp_cores = jnp.asarray(log_cp_cores)
  chex.assert_rank(
    log_cp_cores,
    3,
    exception_type=ValueError,
    custom_message=(f"log_cp_cores must have shape (D, S, K), got {tuple(log_cp_cores.shape)}"),
  )
  s, k = log_cp_cores.shape[1], log_cp_cores.shape[2]
  chex.assert_shape(
    log_q_m,
    (s, s),
    exception_type=ValueError,
    custom_message=(f"log_q_m must have shape (S, S) = ({s}, {s}), got {tuple(log_q_m.shape)}"),
  )
  chunk_elements = _check_chunk(chunk_elements)
  if _resolve_lse_impl(lse_impl, k) == "matmul":
    m_x = _lse_shift(log_q_m, 1)  # (S, 1)
    m_k = _lse_shift(log_cp_cores, 1)  # (D, 1, K)
    prod = _einsum_exp("xs,dsk->dxk", log_q_m - m_x, log_cp_cores - m_k)
    return _safe_log(prod) + m_x[None] + m_k

  def per_coordinate(cores_d):  # (S, K) -> (S, K)
    return jax.nn.logsumexp(log_q_m[:, :, None] + cores_d[None, :, :], axis=1)

  return _map_rows(per_coordinate, log_cp_cores, s * s * k, chunk_elements)


def log_u_rows(
  log_q_rows: jax.Array,
  log_cp_cores: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """Per-row u: out[b, d, k] = logsumexp_s(log_q_rows[b, d, s] + log r_k^d(s)).

  With log_q_rows[b, d] = log Q̄_{m_b}(x_b^d, .) this is log U_{m_b}[d, x_b^d, k] with a time
  m_b per row (no table per time: B D S K work instead of D S^2 K per distinct time). Same
  implementations and range caveat as ``log_u_table`` (the matmul form is a (B, S) @ (S, K)
  GEMM per coordinate, shifted by the row max over s and the core max over s).

  Args:
    log_q_rows: (B, D, S) log-rows; -inf entries allowed.
    log_cp_cores: (D, S, K) log r.
    chunk_elements: bound on the broadcast form's per-chunk (rows, D, S, K) intermediate.
    lse_impl: "auto" | "matmul" | "broadcast".

  Returns:
    (B, D, K).
  """
  d, s, k = log_cp_cores.shape
  chex.assert_shape(
    log_q_rows,
    (None, d, s),
    exception_type=ValueError,
    custom_message=f"log_q_rows must have shape (B, {d}, {s}), got {tuple(log_q_rows.shape)}",
  )
  if _resolve_lse_impl(lse_impl, k) == "matmul":
    m_b = _lse_shift(log_q_rows, 2)  # (B, D, 1)
    m_k = _lse_shift(log_cp_cores, 1)  # (D, 1, K)
    prod = _einsum_exp("bds,dsk->bdk", log_q_rows - m_b, log_cp_cores - m_k)
    return _safe_log(prod) + m_b + m_k[:, 0][None]

  def row(rows_b):  # (D, S) -> (D, K)
    return jax.nn.logsumexp(rows_b[:, :, None] + log_cp_cores, axis=1)

  return _map_rows(row, log_q_rows, d * s * k, _check_chunk(chunk_elements))


def log_mix_rows(
  log_cp_cores: jax.Array,
  log_w: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """out[b, d, e] = logsumexp_k(log r_k^d(e) + log_w[b, d, k]) (the mixture over components).

  Args:
    log_cp_cores: (D, S, K) log r.
    log_w: (B, D, K) per-row, per-coordinate log-weights; -inf allowed.
    chunk_elements: bound on the broadcast form's per-chunk (rows, D, S, K) intermediate.
    lse_impl: "auto" | "matmul" | "broadcast" (same range caveat as ``log_u_table``).

  Returns:
    (B, D, S).
  """
  d, s, k = log_cp_cores.shape
  if _resolve_lse_impl(lse_impl, k) == "matmul":
    m_e = _lse_shift(log_cp_cores, 2)  # (D, S, 1)
    m_b = _lse_shift(log_w, 2)  # (B, D, 1)
    prod = _einsum_exp("dek,bdk->bde", log_cp_cores - m_e, log_w - m_b)
    return _safe_log(prod) + m_e[:, :, 0][None] + m_b

  def row(w_b):  # (D, K) -> (D, S)
    return jax.nn.logsumexp(log_cp_cores + w_b[:, None, :], axis=-1)

  return _map_rows(row, log_w, d * s * k, _check_chunk(chunk_elements))


def _gather_own(log_u: jax.Array, x_row: jax.Array) -> jax.Array:
  """(D, S, K) table, (D,) state -> (D, K) rows log U[d, x^d, :]."""
  return log_u[jnp.arange(x_row.shape[0]), x_row]


def _log_phi_rows(
  log_alpha: jax.Array, log_u: jax.Array, x: jax.Array, chunk_elements: int
) -> jax.Array:
  """logsumexp_k(log a_k + sum_d log U[d, x^d, k]) for every row of x: (B, D) -> (B,)."""

  def row(x_row):
    return jax.nn.logsumexp(log_alpha + _gather_own(log_u, x_row).sum(0))

  d, k = log_u.shape[0], log_u.shape[2]
  return _map_rows(row, x, d * k, chunk_elements)


def log_potential(
  potential: CPPotential, y: jax.Array, chunk_elements: int = DEFAULT_CHUNK_ELEMENTS
) -> jax.Array:
  """log v(y) = logsumexp_k(log a_k + sum_d log r_k^d(y^d)) (Eq. 4).

  Args:
    potential: the CP potential.
    y: (B, D) int states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B,) log-potential.
  """
  y = check_states(y, "y", potential.num_categories, potential.dim)
  return _log_phi_rows(potential.log_alpha, potential.log_cp_cores, y, _check_chunk(chunk_elements))


def log_phi(
  potential: CPPotential,
  reference: ReferenceProcess,
  x: jax.Array,
  t: Any,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """log phi_t(x) = log sum_k a_k prod_d u_k^d(x^d; N+1-t) (phi_0 = c, phi_{N+1} = v; Eq. 9).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x: (B, D) int states at time t.
    t: int or traced int scalar in [0, N + 1].
    chunk_elements: bound on chunk intermediates.
    lse_impl: the table's contraction, "auto" | "matmul" | "broadcast" (``log_u_table``).

  Returns:
    (B,) log phi_t(x).
  """
  check_potential(potential, reference)
  x = check_states(x, "x", potential.num_categories, potential.dim)
  n = reference.num_steps
  t = check_time(t, "t", 0, n + 1)
  chunk_elements = _check_chunk(chunk_elements)
  table = log_u_table(
    reference.log_q_bar[n + 1 - t], potential.log_cp_cores, chunk_elements, lse_impl
  )
  return _log_phi_rows(potential.log_alpha, table, x, chunk_elements)


def _time_rows(log_q_bar: jax.Array, m: jax.Array, x: jax.Array) -> jax.Array:
  """(B, D, S) rows log Q̄_{m_b}(x_b^d, .) for per-row step counts m (B,) and states x (B, D)."""
  return log_q_bar[m[:, None], x]


def log_phi_per_row(
  potential: CPPotential,
  reference: ReferenceProcess,
  x: jax.Array,
  t: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """``log_phi`` with a time per row: out[b] = log phi_{t_b}(x_b).

  No table per time: the rows log Q̄_{N+1-t_b}(x_b^d, .) are gathered and contracted with the
  cores (``log_u_rows``, B D S K work; a (B, S) @ (S, K) GEMM per coordinate in the matmul form).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x: (B, D) int states, row b at time t[b].
    t: (B,) int times in [0, N + 1] (traced values are not range-checked).
    chunk_elements: bound on the broadcast form's chunk intermediates.
    lse_impl: "auto" | "matmul" | "broadcast" (``log_u_table``).

  Returns:
    (B,) log phi.
  """
  check_potential(potential, reference)
  x = check_states(x, "x", potential.num_categories, potential.dim)
  t = jnp.asarray(t, jnp.int32)
  chex.assert_shape(t, x.shape[:1], exception_type=ValueError, custom_message="t must be (B,)")
  rows = _time_rows(reference.log_q_bar, reference.num_steps + 1 - t, x)
  u = log_u_rows(rows, potential.log_cp_cores, chunk_elements, lse_impl)  # (B, D, K)
  return jax.nn.logsumexp(potential.log_alpha + u.sum(1), axis=-1)


def transition_marginal_log_probs_per_row(
  potential: CPPotential,
  reference: ReferenceProcess,
  x_t: jax.Array,
  t: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """``transition_marginal_log_probs`` (Eq. 11) with a time per row, without tables.

  p^d(j | x_t) ∝ Q_step(x_t^d, j) sum_e Q̄_{N-t}(j, e) v^d(e), v^d(e) = sum_k a_k L_k^d r_k^d(e)
  with L_k^d the leave-one-out product of u_k^{d'}(x_t^{d'}; N+1-t) (the same sum as Eq. 11,
  reordered: the component sum first, then one (S, S) reference contraction per row).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x_t: (B, D) int states, row b at time t[b].
    t: (B,) int times in [0, N] (traced values are not range-checked).
    chunk_elements: bound on the broadcast form's chunk intermediates.
    lse_impl: "auto" | "matmul" | "broadcast" (``log_u_table``).

  Returns:
    (B, D, S) normalised log-probabilities over x_{t+1}^d.
  """
  check_potential(potential, reference)
  x_t = check_states(x_t, "x_t", potential.num_categories, potential.dim)
  t = jnp.asarray(t, jnp.int32)
  chex.assert_shape(t, x_t.shape[:1], exception_type=ValueError, custom_message="t must be (B,)")
  n = reference.num_steps
  cores = potential.log_cp_cores
  own = log_u_rows(_time_rows(reference.log_q_bar, n + 1 - t, x_t), cores, chunk_elements, lse_impl)
  finite = jnp.isfinite(own)
  total = own.sum(1, keepdims=True)  # (B, 1, K)
  loo = jnp.where(finite, total - jnp.where(finite, own, 0.0), -jnp.inf)  # (B, D, K)
  v = log_mix_rows(cores, potential.log_alpha + loo, chunk_elements, lse_impl)  # (B, D, S_e)
  reach = reference.log_q_bar[n - t]  # (B, S_j, S_e)
  if _resolve_lse_impl(lse_impl, potential.num_potentials) == "matmul":
    m_j = _lse_shift(reach, 2)  # (B, S_j, 1)
    m_v = _lse_shift(v, 2)  # (B, D, 1)
    phi = _safe_log(_einsum_exp("bje,bde->bdj", reach - m_j, v - m_v)) + m_j[:, None, :, 0] + m_v
  else:
    phi = jax.nn.logsumexp(reach[:, None, :, :] + v[:, :, None, :], axis=-1)  # (B, D, S_j)
  return jax.nn.log_softmax(reference.log_q_step[x_t] + phi, axis=-1)


def log_normalizer(
  potential: CPPotential,
  reference: ReferenceProcess,
  x0: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """log c(x_0) = log sum_k a_k prod_d u_k^d(x_0^d; N+1) (Eq. 6).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x0: (B, D) int source states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B,) log-normaliser.
  """
  return log_phi(potential, reference, x0, 0, chunk_elements)


def component_log_weights(
  potential: CPPotential,
  reference: ReferenceProcess,
  x0: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """log w_k(x_0) of the plan's mixture (Eq. 7), normalised over k.

  Args:
    potential: the CP potential.
    reference: the reference process.
    x0: (B, D) int source states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B, K) log-weights.
  """
  check_potential(potential, reference)
  x0 = check_states(x0, "x0", potential.num_categories, potential.dim)
  chunk_elements = _check_chunk(chunk_elements)
  table = log_u_table(reference.log_kernel(), potential.log_cp_cores, chunk_elements)

  def row(x_row):
    return jax.nn.log_softmax(potential.log_alpha + _gather_own(table, x_row).sum(0))

  return _map_rows(row, x0, potential.dim * potential.num_potentials, chunk_elements)


def plan_log_prob(
  potential: CPPotential,
  reference: ReferenceProcess,
  x0: jax.Array,
  y: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """Exact log pi(y | x_0) = sum_d log Q̄_{N+1}(x_0^d, y^d) + log v(y) - log c(x_0).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x0: (B, D) int source states.
    y: (B, D) int target states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B,) conditional log-probabilities.
  """
  check_potential(potential, reference)
  x0 = check_states(x0, "x0", potential.num_categories, potential.dim)
  y = check_states(y, "y", potential.num_categories, potential.dim)
  check_same_shape(y, "y", x0, "x0")
  kernel = reference.log_kernel()
  log_q = kernel[x0, y].sum(-1)
  return (
    log_q
    + log_potential(potential, y, chunk_elements)
    - log_normalizer(potential, reference, x0, chunk_elements)
  )


def plan_marginal_log_probs(
  potential: CPPotential,
  reference: ReferenceProcess,
  x0: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """Per-coordinate plan marginals (Eq. 8).

  log pi^d(y^d | x_0) = log sum_k w_k(x_0) g_k^d(y^d | x_0^d).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x0: (B, D) int source states.
    chunk_elements: bound on chunk intermediates (O(D S K) per row).

  Returns:
    (B, D, S) normalised log-probabilities.
  """
  check_potential(potential, reference)
  x0 = check_states(x0, "x0", potential.num_categories, potential.dim)
  chunk_elements = _check_chunk(chunk_elements)
  kernel = reference.log_kernel()
  cores = potential.log_cp_cores
  table = log_u_table(kernel, cores, chunk_elements)

  def row(x_row):
    own = _gather_own(table, x_row)  # (D, K)
    log_w = jax.nn.log_softmax(potential.log_alpha + own.sum(0))  # (K,)
    mix = jax.nn.logsumexp(log_w + cores - own[:, None, :], axis=-1)  # (D, S)
    return jax.nn.log_softmax(kernel[x_row] + mix, axis=-1)

  d, s, k = cores.shape
  return _map_rows(row, x0, d * s * k, chunk_elements)


def _mixture_step_sample(
  keys: jax.Array,
  x: jax.Array,
  log_alpha: jax.Array,
  log_u_cur: jax.Array,
  log_u_next: jax.Array,
  log_q: jax.Array,
  chunk_elements: int,
) -> jax.Array:
  """Draws x' ~ sum_k w_k(x) prod_d Q(x^d, x'^d) U_next[d, x'^d, k] / U_cur[d, x^d, k].

  w_k(x) ∝ a_k prod_d U_cur[d, x^d, k]. Gumbel-max for the component, then every coordinate
  independently (the per-coordinate normaliser U_cur[d, x^d, k*] is a constant in x'^d); one
  Gumbel draw of size K + D S per row. With Q = Q̄_{N+1}, U_cur = U_{N+1}, U_next = log r this is
  the one-shot plan (Eq. 7); with Q = Q_step, U_cur = U_{N+1-t}, U_next = U_{N-t} it is the SB
  transition at time t (Eq. 9).
  """
  d, s, k = log_u_next.shape

  def row(args):
    key, x_row = args
    noise = jax.random.gumbel(key, (k + d * s,), log_u_next.dtype)
    own = _gather_own(log_u_cur, x_row)
    comp = jnp.argmax(log_alpha + own.sum(0) + noise[:k])
    logits = log_q[x_row] + log_u_next[:, :, comp]  # (D, S)
    return jnp.argmax(logits + noise[k:].reshape(d, s), axis=-1).astype(jnp.int32)

  return _map_rows(row, (keys, x), d * (s + k), chunk_elements)


def sample_plan(
  potential: CPPotential,
  reference: ReferenceProcess,
  rng: jax.Array,
  x0: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """One-shot plan sample y ~ pi(. | x_0) (Eq. 7).

  Component k* ~ w(x_0) by Gumbel-max, then y^d ~ g_{k*}^d(. | x_0^d) independently.

  Args:
    potential: the CP potential.
    reference: the reference process.
    rng: PRNG key.
    x0: (B, D) int source states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B, D) int32 target states.
  """
  check_potential(potential, reference)
  x0 = check_states(x0, "x0", potential.num_categories, potential.dim)
  chunk_elements = _check_chunk(chunk_elements)
  kernel = reference.log_kernel()
  table = log_u_table(kernel, potential.log_cp_cores, chunk_elements)
  keys = jax.random.split(rng, x0.shape[0])
  return _mixture_step_sample(
    keys, x0, potential.log_alpha, table, potential.log_cp_cores, kernel, chunk_elements
  )


def transition_log_prob(
  potential: CPPotential,
  reference: ReferenceProcess,
  x_t: jax.Array,
  x_next: jax.Array,
  t: Any,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """Joint SB transition log p(x_{t+1} | x_t) (Eq. 9).

  log p = sum_d log Q_step(x_t^d, x_{t+1}^d) + log phi_{t+1}(x_{t+1}) - log phi_t(x_t).

  Args:
    potential: the CP potential.
    reference: the reference process.
    x_t: (B, D) int states at time t.
    x_next: (B, D) int states at time t + 1.
    t: int or traced int scalar in [0, N].
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B,) log-probabilities.
  """
  check_potential(potential, reference)
  x_t = check_states(x_t, "x_t", potential.num_categories, potential.dim)
  x_next = check_states(x_next, "x_next", potential.num_categories, potential.dim)
  check_same_shape(x_next, "x_next", x_t, "x_t")
  t = check_time(t, "t", 0, reference.num_steps)
  log_q = reference.log_q_step[x_t, x_next].sum(-1)
  return (
    log_q
    + log_phi(potential, reference, x_next, t + 1, chunk_elements)
    - log_phi(potential, reference, x_t, t, chunk_elements)
  )


def transition_marginal_log_probs(
  potential: CPPotential,
  reference: ReferenceProcess,
  x_t: jax.Array,
  t: Any,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  lse_impl: str = "auto",
) -> jax.Array:
  """Per-coordinate marginals of the SB transition (Eq. 11).

  p^d(x_{t+1}^d = j | x_t) ∝ Q_step(x_t^d, j) sum_k a_k u_k^d(j; N-t) L_k^d(x_t), where
  L_k^d = prod_{d'≠d} u_k^{d'}(x_t^{d'}; N+1-t) is formed as (sum_d log u) - log u^d.

  Args:
    potential: the CP potential.
    reference: the reference process.
    x_t: (B, D) int states at time t.
    t: int or traced int scalar in [0, N].
    chunk_elements: bound on chunk intermediates (O(D S K) per row).
    lse_impl: the tables' contraction, "auto" | "matmul" | "broadcast" (``log_u_table``).

  Returns:
    (B, D, S) normalised log-probabilities over x_{t+1}^d.
  """
  check_potential(potential, reference)
  x_t = check_states(x_t, "x_t", potential.num_categories, potential.dim)
  n = reference.num_steps
  t = check_time(t, "t", 0, n)
  chunk_elements = _check_chunk(chunk_elements)
  cores = potential.log_cp_cores
  u_cur = log_u_table(reference.log_q_bar[n + 1 - t], cores, chunk_elements, lse_impl)
  u_next = log_u_table(reference.log_q_bar[n - t], cores, chunk_elements, lse_impl)
  return _transition_marginals_from_tables(
    potential.log_alpha, u_cur, u_next, reference.log_q_step, x_t, chunk_elements
  )


def _transition_marginals_from_tables(
  log_alpha: jax.Array,
  u_cur: jax.Array,
  u_next: jax.Array,
  log_q_step: jax.Array,
  x_t: jax.Array,
  chunk_elements: int,
) -> jax.Array:
  """Eq. 11 given the tables U_{N+1-t} (u_cur) and U_{N-t} (u_next), both (D, S, K)."""

  def row(x_row):
    own = _gather_own(u_cur, x_row)  # (D, K)
    finite = jnp.isfinite(own)
    total = own.sum(0)  # (K,)
    # Leave-one-out sum; where u^d = 0 the component cannot reach x_{t+1}^d anyway.
    loo = jnp.where(finite, total - jnp.where(finite, own, 0.0), -jnp.inf)
    mix = jax.nn.logsumexp(log_alpha + u_next + loo[:, None, :], axis=-1)
    return jax.nn.log_softmax(log_q_step[x_row] + mix, axis=-1)

  d, s, k = u_next.shape
  return _map_rows(row, x_t, d * s * k, chunk_elements)


def sample_sb_step(
  potential: CPPotential,
  reference: ReferenceProcess,
  rng: jax.Array,
  x_t: jax.Array,
  t: Any,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """One step of the Markov SB chain: x_{t+1} ~ p(. | x_t) (Eq. 9).

  Args:
    potential: the CP potential.
    reference: the reference process.
    rng: PRNG key.
    x_t: (B, D) int states at time t.
    t: int or traced int scalar in [0, N].
    chunk_elements: bound on chunk intermediates.

  Returns:
    (B, D) int32 states at time t + 1.
  """
  check_potential(potential, reference)
  x_t = check_states(x_t, "x_t", potential.num_categories, potential.dim)
  n = reference.num_steps
  t = check_time(t, "t", 0, n)
  chunk_elements = _check_chunk(chunk_elements)
  cores = potential.log_cp_cores
  u_cur = log_u_table(reference.log_q_bar[n + 1 - t], cores, chunk_elements)
  u_next = log_u_table(reference.log_q_bar[n - t], cores, chunk_elements)
  keys = jax.random.split(rng, x_t.shape[0])
  return _mixture_step_sample(
    keys, x_t, potential.log_alpha, u_cur, u_next, reference.log_q_step, chunk_elements
  )


def sample_markov(
  potential: CPPotential,
  reference: ReferenceProcess,
  rng: jax.Array,
  x0: jax.Array,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> jax.Array:
  """Rolls out the Markov SB chain x_0 -> x_{N+1} (Eq. 9), one ``lax.scan`` over t.

  Args:
    potential: the CP potential.
    reference: the reference process.
    rng: PRNG key.
    x0: (B, D) int source states.
    chunk_elements: bound on chunk intermediates.

  Returns:
    (N + 2, B, D) int32 trajectories, entry 0 = x0, entry N + 1 ~ pi(. | x0).
  """
  check_potential(potential, reference)
  x0 = check_states(x0, "x0", potential.num_categories, potential.dim).astype(jnp.int32)
  chunk_elements = _check_chunk(chunk_elements)
  n = reference.num_steps
  cores = potential.log_cp_cores
  u_first = log_u_table(reference.log_q_bar[n + 1], cores, chunk_elements)

  def step(carry, inputs):
    x_t, u_cur = carry
    key, t = inputs
    u_next = log_u_table(reference.log_q_bar[n - t], cores, chunk_elements)
    keys = jax.random.split(key, x_t.shape[0])
    x_next = _mixture_step_sample(
      keys, x_t, potential.log_alpha, u_cur, u_next, reference.log_q_step, chunk_elements
    )
    return (x_next, u_next), x_next

  keys = jax.random.split(rng, n + 1)
  _, rest = jax.lax.scan(step, (x0, u_first), (keys, jnp.arange(n + 1)))
  return jnp.concatenate([x0[None], rest], axis=0)


# --------------------------------------------------------------------------------------------
# Potential and source constructors.
# --------------------------------------------------------------------------------------------


def quantise(z: jax.Array, num_categories: int, half_range: float) -> jax.Array:
  """Quantises reals by S - 1 equal-width edges over [-half_range, half_range].

  Category c collects z in (e_{c-1}, e_c] (e_{-1} = -inf, e_{S-1} = +inf), i.e. the number of
  edges strictly below z (torch.bucketize semantics).

  Args:
    z: real array of any shape.
    num_categories: S >= 2.
    half_range: positive edge range.

  Returns:
    int32 array of z's shape with values in [0, S).
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  if not half_range > 0:
    raise ValueError(f"half_range must be positive, got {half_range}")
  z = jnp.asarray(z)
  edges = jnp.asarray(np.linspace(-half_range, half_range, s - 1), dtype=z.dtype)
  return jnp.searchsorted(edges, z, side="left").astype(jnp.int32)


def source_bin_log_probs(
  source: str, num_categories: int, source_range: float = SOURCE_RANGE
) -> np.ndarray:
  """Exact per-coordinate log-probabilities of the quantised ``gaussian`` / ``uniform`` sources.

  gaussian: z ~ N(0, 1) quantised by S - 1 edges over [-source_range, source_range];
  uniform: z ~ U[-3, 3] with the same quantiser. Computed in float64 with erfc (no
  cancellation in the tails).

  Args:
    source: "gaussian" or "uniform".
    num_categories: S >= 2.
    source_range: quantiser half range (7 here and at catsbench's HEAD; 3 in catsbench 1.4).

  Returns:
    (S,) float64 numpy array of log-probabilities (-inf for empty bins).
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  if not source_range > 0:
    raise ValueError(f"source_range must be positive, got {source_range}")
  edges = list(np.linspace(-source_range, source_range, s - 1))
  lo = [-math.inf] + edges
  hi = edges + [math.inf]
  out = []
  for a, b in zip(lo, hi):
    if source == "gaussian":
      r2 = math.sqrt(2.0)
      if b <= 0:
        p = 0.5 * (math.erfc(-b / r2) - math.erfc(-a / r2))
      elif a >= 0:
        p = 0.5 * (math.erfc(a / r2) - math.erfc(b / r2))
      else:
        p = 1.0 - 0.5 * math.erfc(-a / r2) - 0.5 * math.erfc(b / r2)
    elif source == "uniform":
      w = _SOURCE_UNIFORM_HALF_WIDTH
      p = max(0.0, min(b, w) - max(a, -w)) / (2 * w)
    else:
      raise ValueError(f"source must be 'gaussian' or 'uniform' here, got {source!r}")
    out.append(math.log(p) if p > 0 else -math.inf)
  return np.asarray(out, dtype=np.float64)


def _as_key(seed: Any) -> jax.Array:
  if isinstance(seed, bool):
    raise ValueError(f"seed must be an int or a PRNG key, got {seed!r}")
  if isinstance(seed, (int, np.integer)):
    return jax.random.key(int(seed))
  seed = jnp.asarray(seed) if not isinstance(seed, jax.Array) else seed
  if jnp.issubdtype(seed.dtype, jax.dtypes.prng_key) and seed.ndim == 0:
    return seed
  if seed.dtype == jnp.uint32 and seed.shape == (2,):
    return seed
  if jnp.issubdtype(seed.dtype, jnp.integer) and seed.ndim == 0:
    return jax.random.key(seed)
  raise ValueError(
    f"seed must be an int, an integer scalar or a PRNG key, got dtype "
    f"{seed.dtype} shape {tuple(seed.shape)}"
  )


def gaussian_bump_potential(
  rng: jax.Array,
  dim: int,
  num_categories: int,
  num_potentials: int,
  bump_sigma: float = 2.0,
  dtype: Any = jnp.float32,
) -> CPPotential:
  """Gaussian-bump CP potential on quantised sphere centres (``benchmark_type="gaussian"``).

  a_k = 1/K; K centres on the sphere of radius 5 in R^D (``sample_centres``), each centre
  coordinate quantised by S - 1 equal-width edges over [-5, 5] to a category mu_k^d, and
  log r_k^d(s) = log N(s; mu_k^d, bump_sigma^2) at integer s.

  Args:
    rng: PRNG key.
    dim: D >= 1.
    num_categories: S >= 2.
    num_potentials: K >= 1.
    bump_sigma: bump width in categories (2 for HD, 15 for images).
    dtype: floating dtype.

  Returns:
    CPPotential with log_alpha (K,) and log_cp_cores (D, S, K).
  """
  d = validate.positive_int(dim, "dim", 1)
  s = validate.positive_int(num_categories, "num_categories", 2)
  k = validate.positive_int(num_potentials, "num_potentials", 1)
  if not float(bump_sigma) > 0:
    raise ValueError(f"bump_sigma must be positive, got {bump_sigma}")
  return _gaussian_bump_potential(rng, d, s, k, float(bump_sigma), jnp.dtype(dtype))


def sample_centres(
  rng: jax.Array, num_potentials: int, dim: int, dtype: Any = jnp.float32
) -> tuple[jax.Array, jax.Array]:
  """Bump centres on the sphere of radius 5 by per-centre rejection, as catsbench does.

  Centre k is redrawn (at most 100 tries) until its distances to the centres accepted before
  it all exceed 2.5 * 2 = 5; when no try succeeds the last try is kept. Implemented with all
  K x 100 candidate draws made up front and a scan over k, so it vmaps over seeds.

  Args:
    rng: PRNG key.
    num_potentials: K >= 1.
    dim: D >= 1.
    dtype: floating dtype.

  Returns:
    (centres (K, D), accepted (K,) bool: whether centre k met the distance rule).
  """
  k = validate.positive_int(num_potentials, "num_potentials", 1)
  d = validate.positive_int(dim, "dim", 1)
  return _sample_centres(_as_key(rng), k, d, jnp.dtype(dtype))


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _sample_centres(rng, k, d, dtype):
  min_dist = 2.5 * _CENTRE_SIGMA
  z = jax.random.normal(rng, (k, _CENTRE_MAX_TRIES, d), dtype)
  cands = _CENTRE_RANGE * z / jnp.linalg.norm(z, axis=-1, keepdims=True)

  def place(centres, inputs):
    idx, cand = inputs  # cand: (tries, D) candidates of centre idx
    dist = jnp.linalg.norm(cand[:, None, :] - centres[None, :, :], axis=-1)  # (tries, K)
    earlier = jnp.arange(k) < idx
    ok = jnp.all(jnp.where(earlier[None, :], dist, jnp.inf) > min_dist, axis=1)
    pick = jnp.where(jnp.any(ok), jnp.argmax(ok), _CENTRE_MAX_TRIES - 1)
    return centres.at[idx].set(cand[pick]), jnp.any(ok)

  centres, accepted = jax.lax.scan(place, jnp.zeros((k, d), dtype), (jnp.arange(k), cands))
  return centres, accepted


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _gaussian_bump_potential(rng, d, s, k, bump_sigma, dtype) -> CPPotential:
  centres, _ = _sample_centres(rng, k, d, dtype)
  mu = quantise(centres, s, _CENTRE_RANGE).astype(dtype)  # (K, D)
  grid = jnp.arange(s, dtype=dtype)
  sigma = jnp.asarray(bump_sigma, dtype)
  log_r = -0.5 * ((grid[None, :, None] - mu.T[:, None, :]) / sigma) ** 2 - jnp.log(
    sigma * jnp.sqrt(2.0 * jnp.pi).astype(dtype)
  )  # (D, S, K)
  log_alpha = jnp.full((k,), -math.log(k), dtype)
  return CPPotential(log_alpha=log_alpha, log_cp_cores=log_r.astype(dtype))


def uniform_random_potential(
  rng: jax.Array, dim: int, num_categories: int, num_potentials: int, dtype: Any = jnp.float32
) -> CPPotential:
  """Random CP potential (``benchmark_type="uniform"``): a_k = 1/K, log r ~ U[0, 1).

  Args:
    rng: PRNG key.
    dim: D >= 1.
    num_categories: S >= 2.
    num_potentials: K >= 1.
    dtype: floating dtype.

  Returns:
    CPPotential with log_alpha (K,) and log_cp_cores (D, S, K).
  """
  d = validate.positive_int(dim, "dim", 1)
  s = validate.positive_int(num_categories, "num_categories", 2)
  k = validate.positive_int(num_potentials, "num_potentials", 1)
  log_r = jax.random.uniform(rng, (d, s, k), dtype)
  return CPPotential(log_alpha=jnp.full((k,), -math.log(k), dtype), log_cp_cores=log_r)


# --------------------------------------------------------------------------------------------
# The benchmark pytree.
# --------------------------------------------------------------------------------------------


class Benchmark(struct.PyTreeNode):
  """A benchmark pair (p_0, p_1) with its exact SB / EOT solution (a solver's problem).

  Attributes:
    potential: the true CP potential (log a (K,), log r (D, S, K)).
    reference: the reference process (log Q_step (S, S), log Q̄ (N + 2, S, S)).
    source_log_marginals: (D, S) per-coordinate log p_0^d. For product sources
      ("gaussian", "uniform", "categorical") p_0 is their product; for "empirical" these are the
      samples' per-coordinate histograms and p_0 is the empirical law of ``source_samples``.
    source_samples: (n, D) int32 samples of an empirical source, or None.
    source: "gaussian" | "uniform" (quantised continuous draws), "categorical" (product of
      ``source_log_marginals``) or "empirical" (static).
    potential_kind: "gaussian" (bumps), "uniform" (random) or "custom" (static).
    reverse: True for the image presets, where solvers map plan outputs back to sources
      (metadata for solvers and evaluators; the plan methods always run p_0 -> p_1) (static).
    chunk_elements: bound on chunk intermediates of the closed-form contractions (static).
    source_range: half range of the "gaussian" / "uniform" sources' quantiser (static).
  """

  potential: CPPotential
  reference: ReferenceProcess
  source_log_marginals: jax.Array
  source_samples: Any = None
  source: str = struct.field(pytree_node=False, default="categorical")
  potential_kind: str = struct.field(pytree_node=False, default="custom")
  reverse: bool = struct.field(pytree_node=False, default=False)
  chunk_elements: int = struct.field(pytree_node=False, default=DEFAULT_CHUNK_ELEMENTS)
  source_range: float = struct.field(pytree_node=False, default=SOURCE_RANGE)

  # ---- sizes -------------------------------------------------------------------------------

  @property
  def dim(self) -> int:
    """D."""
    return self.potential.dim

  @property
  def num_categories(self) -> int:
    """S."""
    return self.potential.num_categories

  @property
  def num_potentials(self) -> int:
    """K."""
    return self.potential.num_potentials

  @property
  def num_steps(self) -> int:
    """N (intermediate time points; the chain has N + 1 transitions)."""
    return self.reference.num_steps

  @property
  def num_skip_steps(self) -> int:
    """s (base reference steps per model step)."""
    return self.reference.num_skip_steps

  @property
  def log_alpha(self) -> jax.Array:
    """(K,) log a."""
    return self.potential.log_alpha

  @property
  def log_cp_cores(self) -> jax.Array:
    """(D, S, K) log r."""
    return self.potential.log_cp_cores

  def _states(self, x: Any, name: str) -> jax.Array:
    return check_states(x, name, self.num_categories, self.dim)

  # ---- source and target -----------------------------------------------------------------

  def sample_source(self, rng: jax.Array, n: int) -> jax.Array:
    """Draws n source states x_0 ~ p_0.

    Args:
      rng: PRNG key.
      n: number of samples, int >= 1.

    Returns:
      (n, D) int32 states.
    """
    n = validate.positive_int(n, "n", 1)
    return _jit_sample_source(self, rng, n)

  def source_log_prob(self, x0: jax.Array) -> jax.Array:
    """Exact log p_0(x_0) (from the quantisation, or the empirical law of the samples).

    Args:
      x0: (B, D) int states.

    Returns:
      (B,) log-probabilities.
    """
    return _jit_source_log_prob(self, self._states(x0, "x0"))

  def sample_plan(self, rng: jax.Array, x0: jax.Array) -> jax.Array:
    """One-shot y ~ pi*(. | x_0) (Eq. 7).

    Args:
      rng: PRNG key.
      x0: (B, D) int source states.

    Returns:
      (B, D) int32 target states.
    """
    return _closed_form(sample_plan, self, rng, self._states(x0, "x0"))

  def sample_solution(self, rng: jax.Array, x0: jax.Array) -> jax.Array:
    """x_1 ~ pi*(. | x_0), the analytic SB / EOT solution's conditional (``sample_plan``).

    The reference a solver's ``sample_fn(key, x0) -> x1`` is scored against by ``dsb.evaluate``.

    Args:
      rng: PRNG key.
      x0: (B, D) int source states in [0, S).

    Returns:
      (B, D) int32 target states.
    """
    return self.sample_plan(rng, x0)

  @classmethod
  def from_preset(cls, name: str, seed: Any = 0, **kwargs: Any) -> "Benchmark":
    """The named preset, generated deterministically from ``seed`` (``make_preset``).

    Args:
      name: a key of ``PRESETS`` (the paper's 12 HD instances under catsbench's names, the 2
        image presets, which need ``source_samples``, and the tiny enumerable ones); the old
        short names (``DEPRECATED_PRESET_NAMES``) still work with a FutureWarning.
      seed: int seed or PRNG key of the instance.
      **kwargs: ``make_preset`` keywords (``num_steps``, ``source_samples``, overrides).

    Returns:
      Benchmark.

    Examples:
      >>> import jax
      >>> from iclr26_jax import dsb
      >>> "hd_d2_s50_prior_gaussian_a0.02" in dsb.PRESETS
      True
      >>> bench = dsb.Benchmark.from_preset("tiny_d2_s6_uniform", seed=0)
      >>> x0 = bench.sample_source(jax.random.key(0), 5)
      >>> x0.shape, bench.sample_solution(jax.random.key(1), x0).shape
      ((5, 2), (5, 2))
    """
    bench = make_preset(name, seed, **kwargs)
    if not isinstance(bench, cls):
      raise ValueError(f"from_preset builds a Benchmark, not a {cls.__name__}")
    return bench

  def sample_pairs(self, rng: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """Draws n pairs (x_0, y) ~ pi*: x_0 ~ p_0, then y ~ pi*(. | x_0).

    Args:
      rng: PRNG key.
      n: int >= 1.

    Returns:
      x0 (n, D) and y (n, D), int32.
    """
    k_src, k_plan = jax.random.split(rng)
    x0 = self.sample_source(k_src, n)
    return x0, self.sample_plan(k_plan, x0)

  def sample_target(self, rng: jax.Array, n: int) -> jax.Array:
    """Draws n target states y ~ p_1 by pushing fresh source samples through the plan.

    Args:
      rng: PRNG key.
      n: int >= 1.

    Returns:
      (n, D) int32 states.
    """
    return self.sample_pairs(rng, n)[1]

  # ---- closed forms ----------------------------------------------------------------------

  def plan_log_prob(self, x0: jax.Array, y: jax.Array) -> jax.Array:
    """Exact log pi*(y | x_0) at any D.

    Args:
      x0: (B, D) int source states.
      y: (B, D) int target states.

    Returns:
      (B,) log-probabilities.
    """
    x0 = self._states(x0, "x0")
    y = self._states(y, "y")
    check_same_shape(y, "y", x0, "x0")
    return _closed_form(plan_log_prob, self, x0, y)

  def plan_marginal_logits(self, x0: jax.Array) -> jax.Array:
    """Per-coordinate plan marginals log pi*^d(. | x_0) (Eq. 8), normalised.

    Args:
      x0: (B, D) int source states.

    Returns:
      (B, D, S) log-probabilities.
    """
    return _closed_form(plan_marginal_log_probs, self, self._states(x0, "x0"))

  def log_normalizer(self, x0: jax.Array) -> jax.Array:
    """log c(x_0) (Eq. 6): (B, D) int -> (B,)."""
    return _closed_form(log_normalizer, self, self._states(x0, "x0"))

  def log_potential(self, y: jax.Array) -> jax.Array:
    """log v(y) (Eq. 4): (B, D) int -> (B,)."""
    return _jit_log_potential(self, self._states(y, "y"))

  def reference_log_kernel(self) -> jax.Array:
    """log Q̄_{N+1}, shape (S, S): log q(y^d | x_0^d), rows indexed by x_0^d."""
    return self.reference.log_kernel()

  def transition_logits(self, x_t: jax.Array, t: Any) -> jax.Array:
    """Per-coordinate SB transition marginals log p*^d(x_{t+1}^d | x_t) (Eq. 11).

    Args:
      x_t: (B, D) int states at time t.
      t: int or integer scalar in [0, N].

    Returns:
      (B, D, S) normalised log-probabilities.
    """
    t = check_time(t, "t", 0, self.num_steps)
    return _closed_form(
      transition_marginal_log_probs, self, self._states(x_t, "x_t"), jnp.asarray(t, jnp.int32)
    )

  def transition_log_prob(self, x_t: jax.Array, x_next: jax.Array, t: Any) -> jax.Array:
    """Joint SB transition log p*(x_{t+1} | x_t) (Eq. 9).

    Args:
      x_t: (B, D) int states at time t.
      x_next: (B, D) int states at time t + 1.
      t: int or integer scalar in [0, N].

    Returns:
      (B,) log-probabilities.
    """
    t = check_time(t, "t", 0, self.num_steps)
    x_t = self._states(x_t, "x_t")
    x_next = self._states(x_next, "x_next")
    check_same_shape(x_next, "x_next", x_t, "x_t")
    return _closed_form(transition_log_prob, self, x_t, x_next, jnp.asarray(t, jnp.int32))

  def sample_trajectory(self, rng: jax.Array, x0: jax.Array, method: str = "markov") -> jax.Array:
    """Samples SB trajectories x_0..x_{N+1} from x_0.

    Args:
      rng: PRNG key.
      x0: (B, D) int source states.
      method: "markov" rolls out the SB chain (Eq. 9); "bridge" draws y ~ pi*(. | x_0) and
        then a reference-bridge path pinned at (x_0, y) (Eq. 10). Both have the law of T*.

    Returns:
      (N + 2, B, D) int32 trajectories.
    """
    x0 = self._states(x0, "x0")
    if method == "markov":
      return _closed_form(sample_markov, self, rng, x0)
    if method == "bridge":
      return _jit_sample_bridge_traj(self, rng, x0)
    raise ValueError(f"method must be 'markov' or 'bridge', got {method!r}")

  def bridge_log_probs(self, x0: jax.Array, y: jax.Array, t: Any) -> jax.Array:
    """Reference-bridge marginal log q(x_t^d | x_0^d, y^d) (Eq. 10).

    Args:
      x0: (B, D) int start states.
      y: (B, D) int end states.
      t: int in [0, N + 1].

    Returns:
      (B, D, S) normalised log-probabilities.
    """
    return ref_lib.bridge_log_probs(self.reference, self._states(x0, "x0"), self._states(y, "y"), t)


# Jitted implementations of the Benchmark methods (the benchmark is a pytree argument; its static
# fields are part of the cache key).


@functools.partial(jax.jit, static_argnums=(2,))
def _jit_sample_source(bench: Benchmark, rng: jax.Array, n: int) -> jax.Array:
  d, s = bench.dim, bench.num_categories
  dtype = bench.source_log_marginals.dtype
  if bench.source == "gaussian":
    z = jax.random.normal(rng, (n, d), dtype)
    return quantise(z, s, bench.source_range)
  if bench.source == "uniform":
    w = _SOURCE_UNIFORM_HALF_WIDTH
    z = jax.random.uniform(rng, (n, d), dtype, minval=-w, maxval=w)
    return quantise(z, s, bench.source_range)
  if bench.source == "categorical":
    logits = jnp.broadcast_to(bench.source_log_marginals, (n, d, s))
    return jax.random.categorical(rng, logits, axis=-1).astype(jnp.int32)
  if bench.source == "empirical":
    idx = jax.random.randint(rng, (n,), 0, bench.source_samples.shape[0])
    return bench.source_samples[idx].astype(jnp.int32)
  raise ValueError(f"unknown source {bench.source!r}")


@jax.jit
def _jit_source_log_prob(bench: Benchmark, x0: jax.Array) -> jax.Array:
  if bench.source != "empirical":
    return bench.source_log_marginals[jnp.arange(bench.dim), x0].sum(-1)
  samples = bench.source_samples
  n = samples.shape[0]

  def row(x_row):
    return jnp.sum(jnp.all(samples == x_row[None, :], axis=-1))

  counts = _map_rows(row, x0, n * bench.dim, bench.chunk_elements)
  dtype = bench.source_log_marginals.dtype
  return jnp.log(counts.astype(dtype)) - jnp.log(jnp.asarray(n, dtype))


@functools.partial(jax.jit, static_argnums=(0,))
def _closed_form(fn, bench: Benchmark, *args):
  """``fn(potential, reference, *args, chunk_elements)`` for one of the module's closed forms
  (``sample_plan``, ``plan_log_prob``, ...), compiled once per (fn, benchmark structure)."""
  return fn(bench.potential, bench.reference, *args, bench.chunk_elements)


@jax.jit
def _jit_log_potential(bench, y):
  return log_potential(bench.potential, y, bench.chunk_elements)


def _jit_sample_bridge_traj(bench, rng, x0):
  # Two compiled pieces: the plan sampler is shared with Benchmark.sample_plan.
  k_plan, k_path = jax.random.split(rng)
  y = _closed_form(sample_plan, bench, k_plan, x0)
  return _jit_bridge_path(bench.reference, k_path, x0, y)


@jax.jit
def _jit_bridge_path(reference, rng, x0, y):
  return ref_lib.sample_bridge_path(reference, rng, x0, y)


# --------------------------------------------------------------------------------------------
# Constructors.
# --------------------------------------------------------------------------------------------


def build_benchmark(
  potential: CPPotential,
  reference: ReferenceProcess,
  source: str = "gaussian",
  *,
  source_log_marginals: Any = None,
  source_samples: Any = None,
  potential_kind: str = "custom",
  reverse: bool = False,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  source_range: float = SOURCE_RANGE,
) -> Benchmark:
  """Assembles a Benchmark from a potential, a reference and a source specification.

  Any positive potential gives a valid benchmark (the benchmark principle); this constructor
  serves the presets, custom (e.g. non-symmetric) references in tests, and loaded instances.

  Args:
    potential: CPPotential with log_alpha (K,) and log_cp_cores (D, S, K).
    reference: ReferenceProcess with S categories.
    source: "gaussian" | "uniform" (quantised N(0, I) over [-7, 7] / U[-3, 3]^D),
      "categorical" (product of ``source_log_marginals``) or "empirical" (``source_samples``).
    source_log_marginals: (S,) or (D, S) per-coordinate log-probabilities, required for
      "categorical" (normalised over S), ignored otherwise.
    source_samples: (n, D) int samples in [0, S), required for "empirical".
    potential_kind: label stored on the benchmark.
    reverse: image-preset flag (see Benchmark).
    chunk_elements: bound on chunk intermediates.
    source_range: quantiser half range of the "gaussian" / "uniform" sources.

  Returns:
    Benchmark.
  """
  if not isinstance(potential, CPPotential):
    raise ValueError(f"potential must be a CPPotential, got {type(potential).__name__}")
  if not isinstance(reference, ReferenceProcess):
    raise ValueError(f"reference must be a ReferenceProcess, got {type(reference).__name__}")
  check_potential(potential, reference)
  d, s = potential.dim, potential.num_categories
  dtype = potential.log_cp_cores.dtype
  chunk_elements = _check_chunk(chunk_elements)
  samples = None
  if source in ("gaussian", "uniform"):
    table = np.broadcast_to(source_bin_log_probs(source, s, float(source_range)), (d, s))
    marginals = jnp.asarray(table, dtype)
  elif source == "categorical":
    if source_log_marginals is None:
      raise ValueError("source_log_marginals is required for source='categorical'")
    marginals = jnp.asarray(source_log_marginals, dtype)
    if marginals.shape == (s,):
      marginals = jnp.broadcast_to(marginals, (d, s))
    chex.assert_shape(
      marginals,
      (d, s),
      exception_type=ValueError,
      custom_message=(
        f"source_log_marginals must have shape (S,) or (D, S) = ({d}, {s}), "
        f"got {tuple(marginals.shape)}"
      ),
    )
    if ref_lib._is_concrete(marginals):
      mass = np.exp(np.asarray(marginals, np.float64)).sum(-1)
      if not np.allclose(mass, 1.0, atol=1e-4):
        raise ValueError(
          "source_log_marginals must be normalised over S, got masses in "
          f"[{mass.min():.6g}, {mass.max():.6g}]"
        )
  elif source == "empirical":
    if source_samples is None:
      raise ValueError("source_samples (n, D) is required for source='empirical'")
    samples = check_states(source_samples, "source_samples", s, d).astype(jnp.int32)
    counts = jnp.zeros((d, s), dtype).at[jnp.arange(d)[None, :], samples].add(1.0)
    marginals = jnp.log(counts) - jnp.log(jnp.asarray(samples.shape[0], dtype))
  else:
    raise ValueError(f"source must be one of {SOURCE_KINDS}, got {source!r}")
  return Benchmark(
    potential=potential,
    reference=reference,
    source_log_marginals=marginals,
    source_samples=samples,
    source=source,
    potential_kind=potential_kind,
    reverse=bool(reverse),
    chunk_elements=chunk_elements,
    source_range=float(source_range),
  )


def make_benchmark(
  dim: int,
  num_categories: int,
  reference: str = "gaussian",
  alpha: float = 0.02,
  num_steps: int = 15,
  num_skip_steps: int = 8,
  num_potentials: int = 5,
  seed: Any = 0,
  source: str = "gaussian",
  *,
  potential: str = "gaussian",
  bump_sigma: float = 2.0,
  source_samples: Any = None,
  reverse: bool = False,
  dtype: Any = jnp.float32,
  chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
  source_range: float = SOURCE_RANGE,
) -> Benchmark:
  """Generates a CatSBench-style instance deterministically from a seed (the paper's recipe).

  The reference kernel is Q̄_{N+1} = Q_alpha^{(N+1) s}; the presets keep (N + 1) s = 128.
  ``seed`` may also be a PRNG key, so ``jax.vmap(lambda k: make_benchmark(..., seed=k))(keys)``
  builds a batch of instances in one call.

  Args:
    dim: D >= 1.
    num_categories: S >= 2.
    reference: "gaussian" or "uniform".
    alpha: reference noise parameter.
    num_steps: N >= 0 intermediate time points.
    num_skip_steps: s >= 1 base steps per model step.
    num_potentials: K >= 1 mixture components.
    seed: int seed or PRNG key.
    source: "gaussian" | "uniform" | "empirical" (the latter needs ``source_samples``).
    potential: "gaussian" (bumps on quantised sphere centres) or "uniform" (log r ~ U[0, 1)).
    bump_sigma: bump width in categories (gaussian potential).
    source_samples: (n, D) int samples for source="empirical".
    reverse: image-preset flag.
    dtype: floating dtype (float32 by default).
    chunk_elements: bound on chunk intermediates.
    source_range: quantiser half range of the "gaussian" / "uniform" sources (``SOURCE_RANGE``).

  Returns:
    Benchmark.
  """
  d = validate.positive_int(dim, "dim", 1)
  s = validate.positive_int(num_categories, "num_categories", 2)
  k = validate.positive_int(num_potentials, "num_potentials", 1)
  if source not in ("gaussian", "uniform", "empirical"):
    raise ValueError(f"source must be 'gaussian', 'uniform' or 'empirical', got {source!r}")
  key = _as_key(seed)
  ref = ref_lib.make_reference(reference, s, alpha, num_steps, num_skip_steps, dtype)
  if potential == "gaussian":
    pot = gaussian_bump_potential(key, d, s, k, bump_sigma, dtype)
  elif potential == "uniform":
    pot = uniform_random_potential(key, d, s, k, dtype)
  else:
    raise ValueError(f"potential must be one of {POTENTIAL_KINDS}, got {potential!r}")
  return build_benchmark(
    pot,
    ref,
    source,
    source_samples=source_samples,
    potential_kind=potential,
    reverse=reverse,
    chunk_elements=chunk_elements,
    source_range=source_range,
  )


# --------------------------------------------------------------------------------------------
# Presets.
# --------------------------------------------------------------------------------------------


def _hd_presets() -> dict[str, dict[str, Any]]:
  out = {}
  for d in (2, 16, 64):
    for ref, alphas in (("gaussian", (0.02, 0.05)), ("uniform", (0.005, 0.01))):
      for a in alphas:
        out[f"hd_d{d}_s50_prior_{ref}_a{a}"] = dict(
          dim=d,
          num_categories=50,
          reference=ref,
          alpha=a,
          num_steps=15,
          num_skip_steps=8,
          num_potentials=5,
          source="gaussian",
          potential="gaussian",
          bump_sigma=2.0,
          source_range=SOURCE_RANGE,
        )
  return out


HD_PRESETS: dict[str, dict[str, Any]] = _hd_presets()
"""The paper's 12 high-dimensional configurations (D in {2, 16, 64}, S = 50, M = 128, K = 5 bumps,
source N(0, I) quantised over [-7, 7]); the table: docs/methods/dsb.md ("The algorithm")."""

IMAGE_PRESETS: dict[str, dict[str, Any]] = {
  f"image_d3072_s256_prior_gaussian_a{a}": dict(
    dim=3072,
    num_categories=256,
    reference="gaussian",
    alpha=a,
    num_steps=15,
    num_skip_steps=8,
    num_potentials=10,
    source="empirical",
    potential="gaussian",
    bump_sigma=15.0,
    reverse=True,
  )
  for a in (0.01, 0.02)
}
"""The coloured-MNIST configurations: p_0 is supplied as an array of generator samples (pixels
0..255, flattened 3 x 32 x 32)."""

TINY_PRESETS: dict[str, dict[str, Any]] = {
  # D = 2, S = 6 (36 states, 1296 pairs): the benchmark table's and the claims' enumerable instance.
  "tiny_d2_s6_uniform": dict(
    dim=2,
    num_categories=6,
    reference="uniform",
    alpha=0.05,
    num_steps=3,
    num_skip_steps=2,
    num_potentials=3,
    source="gaussian",
    potential="uniform",
    bump_sigma=2.0,
    source_range=SOURCE_RANGE,
  ),
  # D = 2, S = 10 (10^4 pairs): the ``tiny`` variant of the experiment configs; the
  # independent coupling sits at an exact conditional KL of about 0.9.
  "tiny_d2_s10_uniform": dict(
    dim=2,
    num_categories=10,
    reference="uniform",
    alpha=0.05,
    num_steps=3,
    num_skip_steps=2,
    num_potentials=3,
    source="gaussian",
    potential="uniform",
    bump_sigma=2.0,
    source_range=SOURCE_RANGE,
  ),
}
"""Enumerable instances for exact KL / TV (uniform reference, lambda^8 ~ 0.55, random rank-3
potential; M = 8 base steps, not the HD presets' 128)."""

PRESETS: dict[str, dict[str, Any]] = {**HD_PRESETS, **IMAGE_PRESETS, **TINY_PRESETS}
"""Every preset: the 12 HD, the 2 image and the tiny enumerable ones (one table for the
experiment configs, the benchmark table and the claims)."""


def _short_name(name: str) -> str:
  spec = HD_PRESETS[name]
  return f"{spec['reference']}_d{spec['dim']}_a{format(spec['alpha'], 'g').replace('.', '')}"


DEPRECATED_PRESET_NAMES: dict[str, str] = {_short_name(n): n for n in HD_PRESETS}
"""The former short names of the HD presets (e.g. ``gaussian_d2_a002`` for
``hd_d2_s50_prior_gaussian_a0.02``): accepted with a FutureWarning, mapped to ``PRESETS`` names."""


def resolve_preset(name: str) -> str:
  """The ``PRESETS`` name of ``name``; a deprecated short name maps with a FutureWarning.

  Raises:
    ValueError: not a string, or an unknown name (the message lists ``PRESETS``).
  """
  if not isinstance(name, str):
    raise ValueError(f"preset must be a string, got {name!r}")
  if name in PRESETS:
    return name
  if name in DEPRECATED_PRESET_NAMES:
    new = DEPRECATED_PRESET_NAMES[name]
    warnings.warn(
      f"preset name {name!r} is deprecated; use {new!r} (one naming scheme: dsb.PRESETS)",
      FutureWarning,
      stacklevel=3,
    )
    return new
  raise ValueError(f"unknown preset {name!r}; choose from {sorted(PRESETS)}")


_PRESET_IDENTITY = ("dim", "num_categories", "reference", "alpha", "num_skip_steps")


def make_preset(
  name: str,
  seed: Any = 0,
  *,
  num_steps: int | None = None,
  source_samples: Any = None,
  **overrides: Any,
) -> Benchmark:
  """Builds a named preset (``hd_d{D}_s50_prior_{gaussian|uniform}_a{alpha}``, an image preset
  or a tiny enumerable one, ``TINY_PRESETS``).

  Args:
    name: a key of ``PRESETS`` (a deprecated short name maps with a FutureWarning).
    seed: int seed or PRNG key.
    num_steps: optional re-gridding N; s becomes 128 / (N + 1), which must be an integer (the
      static problem is unchanged, M = 128).
    source_samples: (n, 3072) int pixel samples, required by the image presets.
    **overrides: other ``make_benchmark`` keyword arguments (e.g. num_potentials, dtype,
      chunk_elements); the preset's dim, num_categories, reference, alpha and num_skip_steps
      cannot be overridden.

  Returns:
    Benchmark.
  """
  name = resolve_preset(name)
  bad = sorted(set(overrides) & set(_PRESET_IDENTITY))
  if bad:
    raise ValueError(f"overrides may not change the preset's {bad}; use num_steps to re-grid")
  kwargs = dict(PRESETS[name])
  if num_steps is not None:
    n = validate.positive_int(num_steps, "num_steps", 0)
    if name in TINY_PRESETS:
      raise ValueError(f"num_steps re-grids the M = {BASE_STEPS} presets, not {name!r}")
    if BASE_STEPS % (n + 1):
      raise ValueError(
        f"num_steps + 1 must divide {BASE_STEPS} (M stays {BASE_STEPS}), got num_steps={n}"
      )
    kwargs.update(num_steps=n, num_skip_steps=BASE_STEPS // (n + 1))
  if kwargs["source"] == "empirical":
    if source_samples is None:
      raise ValueError(
        f"preset {name!r} needs source_samples: an (n, {kwargs['dim']}) "
        "int array of generator samples with pixels in [0, 256)"
      )
    kwargs["source_samples"] = source_samples
  elif source_samples is not None:
    raise ValueError(f"source_samples is only used by the image presets, not {name!r}")
  kwargs.update(overrides)
  return make_benchmark(seed=seed, **kwargs)
