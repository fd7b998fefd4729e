"""Reference processes on {0..S-1}^D for the discrete Schrödinger-bridge benchmark.

Coordinates evolve independently under one row-stochastic S x S matrix Q, ``uniform`` (Eq. 1) or
D3PM's discretised ``gaussian`` (Eq. 2); a model step applies Q_step = Q^s and Q̄_t = Q_step^t,
t = 0..N+1. All are log-matrices with rows and columns addressed explicitly (no symmetry assumed).
Holds ``ReferenceProcess``, ``make_reference``, ``reference_from_log_matrix``, the log-domain
matrix algebra and the reference bridge (Eq. 10).

References: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the
Era of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal
Transport", ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench.
The reference families, with their equations: docs/methods/dsb.md ("The algorithm").
"""

from __future__ import annotations

import functools
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from iclr26_jax.core import validate

__all__ = [
  "REFERENCE_KINDS",
  "ReferenceProcess",
  "uniform_one_step_log_matrix",
  "gaussian_one_step_log_matrix",
  "one_step_log_matrix",
  "log_matmul",
  "log_matrix_power",
  "uniform_log_matrix_power",
  "cumulative_log_matrices",
  "uniform_cumulative_log_matrices",
  "make_reference",
  "reference_from_log_matrix",
  "prior_log_probs",
  "bridge_log_probs",
  "bridge_step_log_probs",
  "sample_bridge",
  "sample_bridge_path",
]

REFERENCE_KINDS = ("uniform", "gaussian")


# --------------------------------------------------------------------------------------------
# Input checks shared by the dsb package.
# --------------------------------------------------------------------------------------------


def _check_log_square(log_q: jax.Array, name: str) -> None:
  if log_q.ndim != 2 or log_q.shape[0] != log_q.shape[1]:
    raise ValueError(f"{name} must have shape (S, S), got {tuple(log_q.shape)}")
  chex.assert_type(
    log_q,
    float,
    exception_type=ValueError,
    custom_message=f"{name} must be floating point, got dtype {log_q.dtype}",
  )


def _is_concrete(x: Any) -> bool:
  return not isinstance(x, jax.core.Tracer)


def check_states(
  x: Any, name: str, num_categories: int, dim: int | None = None, batched: bool = True
) -> jax.Array:
  """Validates an integer state array and returns it as a jax array.

  Args:
    x: states, shape (B, D) when ``batched`` else (D,), integer dtype, values in [0, S).
    name: argument name used in error messages.
    num_categories: S.
    dim: D, or None to accept any last dimension.
    batched: whether a leading batch axis is expected.

  Returns:
    ``x`` as a jax array (unchanged dtype).

  Raises:
    ValueError: wrong rank, last dimension, dtype, or (for concrete arrays) values outside
      [0, S).
  """
  x = jnp.asarray(x)
  want_ndim = 2 if batched else 1
  shape_txt = "(B, D)" if batched else "(D,)"
  chex.assert_rank(
    x,
    want_ndim,
    exception_type=ValueError,
    custom_message=f"{name} must have shape {shape_txt}, got {tuple(x.shape)}",
  )
  if dim is not None:
    chex.assert_axis_dimension(
      x,
      -1,
      dim,
      exception_type=ValueError,
      custom_message=(f"{name} must have last dimension D={dim}, got shape {tuple(x.shape)}"),
    )
  chex.assert_type(
    x,
    int,
    exception_type=ValueError,
    custom_message=f"{name} must hold integer category indices, got dtype {x.dtype}",
  )
  if _is_concrete(x) and x.size:
    host = np.asarray(x)  # host-side check: no device computation (and no compilation)
    lo, hi = int(host.min()), int(host.max())
    if lo < 0 or hi >= num_categories:
      raise ValueError(
        f"{name} must hold categories in [0, {num_categories}), got values in [{lo}, {hi}]"
      )
  return x


def check_same_shape(x: jax.Array, name: str, like: jax.Array, like_name: str) -> None:
  """Raises ValueError unless ``x`` (called ``name``) has the shape of ``like``."""
  message = f"{name} must have the shape of {like_name} {tuple(like.shape)}, got {tuple(x.shape)}"
  chex.assert_shape(x, like.shape, exception_type=ValueError, custom_message=message)


def check_time(t: Any, name: str, low: int, high: int) -> Any:
  """Checks a time index: an int (or concrete integer scalar) must lie in [low, high].

  Traced integer scalars are accepted unchecked (their value is unknown at trace time).
  """
  if isinstance(t, bool):
    raise ValueError(f"{name} must be an integer time index, got {t!r}")
  if isinstance(t, (int, np.integer)):
    if not low <= int(t) <= high:
      raise ValueError(f"{name} must lie in [{low}, {high}], got {int(t)}")
    return int(t)
  t = jnp.asarray(t)
  message = f"{name} must be an integer scalar, got shape {tuple(t.shape)} dtype {t.dtype}"
  chex.assert_rank(t, 0, exception_type=ValueError, custom_message=message)
  chex.assert_type(t, int, exception_type=ValueError, custom_message=message)
  if _is_concrete(t) and not low <= int(t) <= high:
    raise ValueError(f"{name} must lie in [{low}, {high}], got {int(t)}")
  return t


# --------------------------------------------------------------------------------------------
# One-step matrices.
# --------------------------------------------------------------------------------------------


def _check_uniform_alpha(num_categories: int, alpha: float) -> float:
  alpha = float(alpha)
  upper = (num_categories - 1) / num_categories
  if not 0.0 < alpha < upper:
    raise ValueError(
      f"alpha must lie in (0, (S-1)/S) = (0, {upper:.6g}) for the uniform reference "
      f"(so that lam = 1 - alpha S/(S-1) > 0), got {alpha}"
    )
  return alpha


def uniform_one_step_log_matrix(
  num_categories: int, alpha: float, dtype: Any = jnp.float32
) -> jax.Array:
  """log Q for the uniform reference: Q(i, i) = 1 - alpha, Q(i, j) = alpha / (S - 1).

  Args:
    num_categories: S >= 2.
    alpha: total off-diagonal mass per row, 0 < alpha < (S - 1)/S.
    dtype: floating dtype of the result.

  Returns:
    (S, S) log one-step matrix (rows = current state, columns = next state).
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  alpha = _check_uniform_alpha(s, alpha)
  out = np.full((s, s), math.log(alpha / (s - 1)), np.float64)
  np.fill_diagonal(out, math.log1p(-alpha))
  return jnp.asarray(out, dtype)


def gaussian_one_step_log_matrix(
  num_categories: int, alpha: float, dtype: Any = jnp.float32
) -> jax.Array:
  """log Q for the D3PM discretised-Gaussian reference (Eq. 2).

  Q(i, j) = exp(-4 (i - j)^2 / (alpha (S - 1))^2) / Z for i != j with
  Z = sum_{k=-(S-1)}^{S-1} exp(-4 k^2 / (alpha (S - 1))^2) (the reference code's extra k = S term
  is deliberately not copied), and Q(i, i) = 1 - sum_{j != i} Q(i, j). Computed in float64 on the
  host (it depends only on the static S and alpha) and cast to ``dtype``.

  Args:
    num_categories: S >= 2.
    alpha: bandwidth, > 0.
    dtype: floating dtype of the result.

  Returns:
    (S, S) log one-step matrix.
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  alpha = float(alpha)
  if not alpha > 0.0 or not math.isfinite(alpha):
    raise ValueError(f"alpha must be a positive finite float, got {alpha}")
  scale = 4.0 / (alpha * (s - 1)) ** 2
  ks = np.arange(-(s - 1), s, dtype=np.float64)
  log_z = np.logaddexp.reduce(-scale * ks**2)
  idx = np.arange(s, dtype=np.float64)
  log_q = -scale * (idx[:, None] - idx[None, :]) ** 2 - log_z
  np.fill_diagonal(log_q, -np.inf)
  off_mass = np.exp(log_q).sum(axis=1)
  np.fill_diagonal(log_q, np.log1p(-off_mass))
  return jnp.asarray(log_q, dtype=dtype)


def one_step_log_matrix(
  kind: str, num_categories: int, alpha: float, dtype: Any = jnp.float32
) -> jax.Array:
  """Dispatches to the ``uniform`` or ``gaussian`` one-step log-matrix, shape (S, S)."""
  if kind == "uniform":
    return uniform_one_step_log_matrix(num_categories, alpha, dtype)
  if kind == "gaussian":
    return gaussian_one_step_log_matrix(num_categories, alpha, dtype)
  raise ValueError(f"reference must be one of {REFERENCE_KINDS}, got {kind!r}")


# --------------------------------------------------------------------------------------------
# Log-domain matrix algebra.
# --------------------------------------------------------------------------------------------


def log_matmul(log_a: jax.Array, log_b: jax.Array) -> jax.Array:
  """log(exp(A) @ exp(B)) by a log-sum-exp contraction; -inf entries are allowed.

  Args:
    log_a: (n, k) log-matrix.
    log_b: (k, m) log-matrix.

  Returns:
    (n, m) log-matrix, entry (i, j) = logsumexp_s(log_a[i, s] + log_b[s, j]).
  """
  log_a = jnp.asarray(log_a)
  log_b = jnp.asarray(log_b)
  if log_a.ndim != 2 or log_b.ndim != 2 or log_a.shape[1] != log_b.shape[0]:
    raise ValueError(
      f"log_a (n, k) and log_b (k, m) must be compatible matrices, got "
      f"{tuple(log_a.shape)} and {tuple(log_b.shape)}"
    )
  return jax.nn.logsumexp(log_a[:, :, None] + log_b[None, :, :], axis=1)


def _log_identity(num_categories: int, dtype: Any) -> jax.Array:
  eye = jnp.eye(num_categories, dtype=bool)
  return jnp.where(eye, jnp.zeros((), dtype), jnp.full((), -jnp.inf, dtype))


def log_matrix_power(log_q: jax.Array, n: int) -> jax.Array:
  """log(Q^n) by square-and-multiply with log-sum-exp products.

  Args:
    log_q: (S, S) log-matrix.
    n: exponent, int >= 0 (n = 0 gives log I, -inf off the diagonal).

  Returns:
    (S, S) log-matrix.
  """
  log_q = jnp.asarray(log_q)
  _check_log_square(log_q, "log_q")
  n = validate.positive_int(n, "n", 0)
  return _log_matrix_power(log_q, jnp.asarray(n, jnp.int32))


@jax.jit
def _log_matrix_power(log_q: jax.Array, n: jax.Array) -> jax.Array:
  # Square-and-multiply with a traced exponent (one compilation per shape). log_matmul with
  # log I on either side is exact (logsumexp of one finite term and -infs).
  def body(state):
    result, base, m = state
    result = jnp.where(m & 1, log_matmul(result, base), result)
    return result, log_matmul(base, base), m >> 1

  init = (_log_identity(log_q.shape[0], log_q.dtype), log_q, n)
  return jax.lax.while_loop(lambda state: state[2] > 0, body, init)[0]


def uniform_log_matrix_power(
  num_categories: int, alpha: float, n: int, dtype: Any = jnp.float32
) -> jax.Array:
  """Closed form log Q^n for the uniform reference (Eq. 1).

  Q^n = lam^n I + (1 - lam^n)/S 11^T with lam = 1 - alpha S/(S - 1): off-diagonal entries
  (1 - lam^n)/S and diagonal entries lam^n + (1 - lam^n)/S. Computed stably as
  1 - lam^n = -expm1(n log lam) in float64 on the host.

  Args:
    num_categories: S >= 2.
    alpha: 0 < alpha < (S - 1)/S.
    n: int >= 0.
    dtype: floating dtype of the result.

  Returns:
    (S, S) log-matrix.
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  alpha = _check_uniform_alpha(s, alpha)
  n = validate.positive_int(n, "n", 0)
  return jnp.asarray(_uniform_log_power_np(s, alpha, n), dtype)


def _uniform_log_power_np(s: int, alpha: float, n: int) -> np.ndarray:
  """Host float64 closed form of log Q^n (validated arguments)."""
  log_lam = math.log1p(-alpha * s / (s - 1))
  one_minus = -math.expm1(n * log_lam)  # 1 - lam^n in [0, 1)
  off = math.log(one_minus / s) if one_minus > 0 else -math.inf
  diag = math.log(math.exp(n * log_lam) + one_minus / s)
  out = np.full((s, s), off, np.float64)
  np.fill_diagonal(out, diag)
  return out


def cumulative_log_matrices(log_q_step: jax.Array, num_steps: int) -> jax.Array:
  """Stack of log Q̄_t = log Q_step^t for t = 0..N+1 by repeated log-matmul.

  Args:
    log_q_step: (S, S) log one-model-step matrix.
    num_steps: N >= 0 (number of intermediate time points).

  Returns:
    (N + 2, S, S) stack; entry 0 is log I (-inf off the diagonal), entry N+1 the whole kernel.
  """
  log_q_step = jnp.asarray(log_q_step)
  _check_log_square(log_q_step, "log_q_step")
  n = validate.positive_int(num_steps, "num_steps", 0)
  return _cumulative_log_matrices(log_q_step, n)


@functools.partial(jax.jit, static_argnums=(1,))
def _cumulative_log_matrices(log_q_step: jax.Array, n: int) -> jax.Array:
  def step(prev, _):
    nxt = log_matmul(prev, log_q_step)
    return nxt, nxt

  eye = _log_identity(log_q_step.shape[0], log_q_step.dtype)
  _, rest = jax.lax.scan(step, eye, None, length=n + 1)
  return jnp.concatenate([eye[None], rest], axis=0)


def uniform_cumulative_log_matrices(
  num_categories: int, alpha: float, num_steps: int, num_skip_steps: int, dtype: Any = jnp.float32
) -> jax.Array:
  """Closed-form stack log Q̄_t = log Q^{t s} (t = 0..N+1) for the uniform reference.

  Args:
    num_categories: S >= 2.
    alpha: 0 < alpha < (S - 1)/S.
    num_steps: N >= 0.
    num_skip_steps: s >= 1.
    dtype: floating dtype.

  Returns:
    (N + 2, S, S) stack.
  """
  n = validate.positive_int(num_steps, "num_steps", 0)
  skip = validate.positive_int(num_skip_steps, "num_skip_steps", 1)
  s = validate.positive_int(num_categories, "num_categories", 2)
  alpha = _check_uniform_alpha(s, alpha)
  return jnp.asarray(
    np.stack([_uniform_log_power_np(s, alpha, t * skip) for t in range(n + 2)]), dtype
  )


# --------------------------------------------------------------------------------------------
# The reference process pytree.
# --------------------------------------------------------------------------------------------


class ReferenceProcess(struct.PyTreeNode):
  """Reference process q: independent coordinates, one model step = ``num_skip_steps`` base steps.

  Attributes:
    log_q_step: (S, S) log Q_step = log Q^s (rows: current state).
    log_q_bar: (N + 2, S, S) log Q̄_t = log Q_step^t, t = 0..N+1.
    kind: "uniform", "gaussian" or "custom" (static).
    alpha: the family's alpha (static; None for custom matrices, so that equal instances hash
      and compare equal as jit cache keys).
    num_skip_steps: s (static).
  """

  log_q_step: jax.Array
  log_q_bar: jax.Array
  kind: str = struct.field(pytree_node=False, default="custom")
  alpha: float | None = struct.field(pytree_node=False, default=None)
  num_skip_steps: int = struct.field(pytree_node=False, default=1)

  @property
  def num_categories(self) -> int:
    """S."""
    return self.log_q_step.shape[-1]

  @property
  def num_steps(self) -> int:
    """N, the number of intermediate time points (N + 1 transitions)."""
    return self.log_q_bar.shape[-3] - 2

  @property
  def num_base_steps(self) -> int:
    """M = (N + 1) s base steps of Q in the whole kernel."""
    return (self.num_steps + 1) * self.num_skip_steps

  def log_kernel(self) -> jax.Array:
    """log Q̄_{N+1}, shape (S, S): log q(y^d | x_0^d)."""
    return self.log_q_bar[..., -1, :, :]


def make_reference(
  kind: str,
  num_categories: int,
  alpha: float,
  num_steps: int,
  num_skip_steps: int,
  dtype: Any = jnp.float32,
) -> ReferenceProcess:
  """Builds a ``uniform`` (closed form, Eq. 1) or ``gaussian`` (log-matmul powers) reference.

  Args:
    kind: "uniform" or "gaussian".
    num_categories: S >= 2.
    alpha: family parameter (see the one-step constructors).
    num_steps: N >= 0 intermediate time points.
    num_skip_steps: s >= 1 base steps per model step.
    dtype: floating dtype of the log-matrices.

  Returns:
    ReferenceProcess with log_q_step (S, S) and log_q_bar (N + 2, S, S).
  """
  n = validate.positive_int(num_steps, "num_steps", 0)
  skip = validate.positive_int(num_skip_steps, "num_skip_steps", 1)
  if kind == "uniform":
    log_q_bar = uniform_cumulative_log_matrices(num_categories, alpha, n, skip, dtype)
    log_q_step = uniform_log_matrix_power(num_categories, alpha, skip, dtype)
  elif kind == "gaussian":
    log_q_one = gaussian_one_step_log_matrix(num_categories, alpha, dtype)
    log_q_step = log_matrix_power(log_q_one, skip)
    log_q_bar = cumulative_log_matrices(log_q_step, n)
  else:
    raise ValueError(f"reference must be one of {REFERENCE_KINDS}, got {kind!r}")
  return ReferenceProcess(
    log_q_step=log_q_step, log_q_bar=log_q_bar, kind=kind, alpha=float(alpha), num_skip_steps=skip
  )


def reference_from_log_matrix(
  log_q_one_step: jax.Array, num_steps: int, num_skip_steps: int = 1
) -> ReferenceProcess:
  """Builds a reference from an arbitrary (possibly non-symmetric) row-stochastic log-matrix.

  Args:
    log_q_one_step: (S, S) log one-base-step matrix; rows must sum to one in probability.
    num_steps: N >= 0.
    num_skip_steps: s >= 1.

  Returns:
    ReferenceProcess of kind "custom".
  """
  log_q_one_step = jnp.asarray(log_q_one_step)
  _check_log_square(log_q_one_step, "log_q_one_step")
  if _is_concrete(log_q_one_step):
    row_mass = np.exp(np.asarray(log_q_one_step, np.float64)).sum(axis=1)
    tol = 1e-4 if log_q_one_step.dtype == jnp.float32 else 1e-10
    if not np.allclose(row_mass, 1.0, atol=tol):
      raise ValueError(
        "log_q_one_step must be row-stochastic (rows sum to 1), got row "
        f"sums in [{row_mass.min():.6g}, {row_mass.max():.6g}]"
      )
  skip = validate.positive_int(num_skip_steps, "num_skip_steps", 1)
  log_q_step = log_matrix_power(log_q_one_step, skip)
  log_q_bar = cumulative_log_matrices(log_q_step, num_steps)
  return ReferenceProcess(
    log_q_step=log_q_step, log_q_bar=log_q_bar, kind="custom", num_skip_steps=skip
  )


# --------------------------------------------------------------------------------------------
# Reference conditionals and bridges.
# --------------------------------------------------------------------------------------------


def _rows(log_q: jax.Array, x: jax.Array) -> jax.Array:
  """log_q[x] : (..., S) rows of the current states."""
  return jnp.take(log_q, x, axis=0)


def _cols(log_q: jax.Array, y: jax.Array) -> jax.Array:
  """Columns of log_q at y: out[..., s] = log_q[s, y[...]]."""
  return jnp.take(log_q.T, y, axis=0)


def prior_log_probs(reference: ReferenceProcess, x0: jax.Array) -> jax.Array:
  """Per-coordinate log q(y^d | x_0^d) = log Q̄_{N+1}(x_0^d, .).

  Args:
    reference: the reference process.
    x0: (B, D) int states.

  Returns:
    (B, D, S) normalised log-probabilities.
  """
  x0 = check_states(x0, "x0", reference.num_categories)
  return _rows(reference.log_kernel(), x0)


def bridge_log_probs(reference: ReferenceProcess, x0: jax.Array, y: jax.Array, t: Any) -> jax.Array:
  """Marginal of the reference bridge at time t (Eq. 10).

  q(x_t^d | x_0^d, y^d) ∝ Q̄_t(x_0^d, x_t^d) Q̄_{N+1-t}(x_t^d, y^d).

  Args:
    reference: the reference process.
    x0: (B, D) int start states.
    y: (B, D) int end states (time N + 1).
    t: int or traced int scalar in [0, N + 1].

  Returns:
    (B, D, S) normalised log-probabilities over x_t^d.
  """
  s = reference.num_categories
  x0 = check_states(x0, "x0", s)
  y = check_states(y, "y", s, x0.shape[-1])
  check_same_shape(y, "y", x0, "x0")
  n = reference.num_steps
  t = check_time(t, "t", 0, n + 1)
  logits = _rows(reference.log_q_bar[t], x0) + _cols(reference.log_q_bar[n + 1 - t], y)
  return jax.nn.log_softmax(logits, axis=-1)


def bridge_step_log_probs(
  reference: ReferenceProcess, x_t: jax.Array, y: jax.Array, t: Any
) -> jax.Array:
  """One step of the reference bridge.

  q(x_{t+1}^d | x_t^d, y^d) ∝ Q_step(x_t^d, .) Q̄_{N-t}(., y^d).

  Args:
    reference: the reference process.
    x_t: (B, D) int states at time t.
    y: (B, D) int end states.
    t: int or traced int scalar in [0, N].

  Returns:
    (B, D, S) normalised log-probabilities over x_{t+1}^d.
  """
  s = reference.num_categories
  x_t = check_states(x_t, "x_t", s)
  y = check_states(y, "y", s, x_t.shape[-1])
  check_same_shape(y, "y", x_t, "x_t")
  n = reference.num_steps
  t = check_time(t, "t", 0, n)
  logits = _rows(reference.log_q_step, x_t) + _cols(reference.log_q_bar[n - t], y)
  return jax.nn.log_softmax(logits, axis=-1)


def sample_bridge(
  reference: ReferenceProcess, rng: jax.Array, x0: jax.Array, y: jax.Array, t: Any
) -> jax.Array:
  """Draws x_t from the reference bridge marginal (Eq. 10), independently per coordinate.

  Args:
    reference: the reference process.
    rng: PRNG key.
    x0: (B, D) int start states.
    y: (B, D) int end states.
    t: int or traced int scalar in [0, N + 1].

  Returns:
    (B, D) int32 states at time t.
  """
  logits = bridge_log_probs(reference, x0, y, t)
  return jax.random.categorical(rng, logits, axis=-1).astype(jnp.int32)


def sample_bridge_path(
  reference: ReferenceProcess, rng: jax.Array, x0: jax.Array, y: jax.Array
) -> jax.Array:
  """Whole reference-bridge paths x_0..x_{N+1} pinned at x_0 and y, one ``lax.scan`` over t.

  Sequentially x_{t+1}^d ~ Q_step(x_t^d, .) Q̄_{N-t}(., y^d); the last step hits y exactly
  (log Q̄_0 is -inf off the diagonal).

  Args:
    reference: the reference process.
    rng: PRNG key.
    x0: (B, D) int start states.
    y: (B, D) int end states.

  Returns:
    (N + 2, B, D) int32 path with path[0] = x0 and path[N + 1] = y.
  """
  s = reference.num_categories
  x0 = check_states(x0, "x0", s).astype(jnp.int32)
  y = check_states(y, "y", s, x0.shape[-1]).astype(jnp.int32)
  check_same_shape(y, "y", x0, "x0")
  n = reference.num_steps
  keys = jax.random.split(rng, n + 1)

  def step(x_t, inputs):
    key, t = inputs
    logits = _rows(reference.log_q_step, x_t) + _cols(reference.log_q_bar[n - t], y)
    x_next = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
    return x_next, x_next

  _, rest = jax.lax.scan(step, x0, (keys, jnp.arange(n + 1)))
  return jnp.concatenate([x0[None], rest], axis=0)
