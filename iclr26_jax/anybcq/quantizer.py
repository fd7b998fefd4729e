"""AnyBCQ quantizer: multi-precision binary-coded quantization with shared, progressively grown planes.

Gunho Park, Jeongin Bae, Beomseok Kwon, Byeongwook Kim, Se Jung Kwon, Dongsoo Lee (NAVER Cloud),
"AnyBCQ", ICLR 2026, arXiv 2510.10467; official PyTorch/CUDA code github.com/naver-aics/anybcq.
A group of g weights w is w_hat^(p) = beta^(p) + sum_{i <= p} alpha^(p)_i b_i, b_i in {-1, +1}^g.

Holds the group-level steps (``greedy_init``, ``ls_refit``, ``canonicalize``, ``code_search``,
``refine``, ``expand``: leading axes ``...``, group axis last), the entry points ``quantize`` /
``quantize_with_info`` / ``expand_precision``, the baselines ``rtn_quantize``,
``greedy_bcq_quantize`` and ``fixed_bcq_quantize``, and the weight containers. The algorithm, with
its equations and reference hyperparameters: docs/methods/anybcq.md ("The algorithm").
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from iclr26_jax.anybcq import memory
from kernels_pallas.bitplane_matmul import format as bp_format

__all__ = [
  "QuantizedWeight",
  "QuantizeInfo",
  "PackedWeight",
  "RTNWeight",
  "quantize",
  "quantize_with_info",
  "expand_precision",
  "rtn_quantize",
  "greedy_bcq_quantize",
  "fixed_bcq_quantize",
  "greedy_init",
  "ls_refit",
  "ridge_solve",
  "canonicalize",
  "code_table",
  "code_search",
  "refine",
  "expand",
  "group_errors",
  "dequantize_planes",
  "check_weight",
  "check_bits",
  "RIDGE",
  "FP16_MAX",
  "MAX_BASE_BITS",
]

RIDGE = 1e-6  # ridge = RIDGE * trace(A) / dim: keeps collinear-plane systems finite
FP16_MAX = 65504.0  # scales are stored in 16 bits: expansion clamps alpha to the fp16 range
MAX_BASE_BITS = 8  # exact code search enumerates 2^q levels (256 at most)
SMALL_SOLVE = 6  # systems up to this size use an unrolled Cholesky (fast batched solves)


# ---------------------------------------------------------------------------------------------
# Validation.


def check_weight(w, group_size: int, name: str = "w") -> np.ndarray:
  """Validates a weight matrix ``(N, K)`` for group size g; returns it as a float32 NumPy array.

  Raises:
    ValueError: not a 2-D real array, empty, K not a multiple of g, or non-finite entries.
  """
  if isinstance(w, jax.core.Tracer):
    raise ValueError(
      f"{name}: the quantizer validates its input on the host; pass a concrete "
      "array, not a traced value (the cores it calls are jitted)"
    )
  arr = np.asarray(w)
  chex.assert_rank(
    arr,
    2,
    exception_type=ValueError,
    custom_message=(
      f"{name} must be a 2-D (N, K) = (out, in) weight matrix; got shape {arr.shape}"
    ),
  )
  if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
    raise ValueError(f"{name} must be a real array; got dtype {arr.dtype}")
  n, k = arr.shape
  if n == 0 or k == 0:
    raise ValueError(f"{name} must be non-empty; got shape {arr.shape}")
  g = check_group_size(group_size)
  if k % g:
    raise ValueError(
      f"{name}: input dim K = {k} is not a multiple of group_size g = {g} (K % g = {k % g})"
    )
  arr = arr.astype(np.float32)
  finite = np.isfinite(arr)
  if not finite.all():
    bad = np.argwhere(~finite)[0]
    raise ValueError(
      f"{name} has {int((~finite).sum())} non-finite (NaN/Inf) entries, e.g. at "
      f"(row {bad[0]}, col {bad[1]}) = {arr[bad[0], bad[1]]}"
    )
  if np.abs(arr).max() > FP16_MAX:
    raise ValueError(
      f"{name}: |w| max {np.abs(arr).max():.3g} exceeds the fp16 range "
      f"{FP16_MAX} of the 16-bit scales"
    )
  return arr


def check_group_size(group_size) -> int:
  """``group_size`` as an int >= 1, else a ValueError naming it (shared by ``anybcq.tree``)."""
  if (
    isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1
  ):
    raise ValueError(f"group_size must be a positive int; got {group_size!r}")
  return int(group_size)


def check_bits(bits) -> tuple[int, ...]:
  """Validates the stored precisions: a strictly increasing sequence of positive ints (or one int)."""
  if isinstance(bits, (int, np.integer)) and not isinstance(bits, bool):
    bits = (bits,)
  try:
    out = tuple(int(b) for b in bits)
    ok = all(float(b) == int(b) and not isinstance(b, bool) for b in bits)
  except (TypeError, ValueError) as e:
    raise ValueError(f"bits must be an int or a sequence of ints; got {bits!r}") from e
  if not ok or not out or any(b < 1 for b in out) or any(a >= b for a, b in zip(out, out[1:])):
    raise ValueError(
      f"bits must be strictly increasing positive ints (base precision first); got {bits!r}"
    )
  if out[0] > MAX_BASE_BITS:
    raise ValueError(
      f"base precision {out[0]} > {MAX_BASE_BITS}: the exact code search enumerates 2^q levels"
    )
  return out


def _check_rounds(rounds) -> int:
  if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 0:
    raise ValueError(f"rounds must be a non-negative int; got {rounds!r}")
  return int(rounds)


# ---------------------------------------------------------------------------------------------
# Group-level building blocks (arbitrary leading axes "...", group axis g last).


def _sign(x):
  """sign with sign(0) = +1, so codes stay in {-1, +1}."""
  return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def greedy_init(w, q: int, asymmetric: bool):
  """Greedy BCQ initialisation (Xu et al., 2018; AnyBCQ section 2).

  r_0 = w - beta_0 (beta_0 = mean(w) if asymmetric else 0); for i = 1..q: b_i = sign(r_{i-1}),
  alpha_i = mean|r_{i-1}|, r_i = r_{i-1} - alpha_i b_i.

  Args:
    w: ``(..., g)`` group weights.
    q: number of planes (static).
    asymmetric: fit the offset beta_0 = mean(w).
  Returns:
    ``(B (..., g, q) of ±1, alpha (..., q), beta (...))`` in w's dtype.
  """
  beta = jnp.mean(w, axis=-1) if asymmetric else jnp.zeros(w.shape[:-1], w.dtype)
  r = w - beta[..., None]
  planes, scales = [], []
  for _ in range(q):
    b = _sign(r)
    a = jnp.mean(jnp.abs(r), axis=-1)
    r = r - a[..., None] * b
    planes.append(b)
    scales.append(a)
  return jnp.stack(planes, axis=-1), jnp.stack(scales, axis=-1), beta


def ridge_solve(a, rhs, ridge: float = RIDGE):
  """Solves the symmetric PSD systems ``a x = rhs`` with a trace-scaled ridge and one refinement step.

  The ridge lambda = ridge * trace(a) / d makes collinear designs (repeated planes, a plane equal to the
  constant column, constant weights) give finite solutions. One step of iterative refinement against
  the un-ridged ``a`` removes the ridge's bias (to O(ridge^2)) on well-conditioned systems and adds
  nothing along exact null directions (where the right-hand side has no component).

  Args:
    a: ``(..., d, d)`` symmetric PSD; rhs: ``(..., d)``.
  Returns:
    ``(..., d)``.
  """
  d = a.shape[-1]
  tr = jnp.trace(a, axis1=-2, axis2=-1)
  lam = ridge * tr / d + jnp.finfo(a.dtype).tiny
  ar = a + lam[..., None, None] * jnp.eye(d, dtype=a.dtype)
  if d <= SMALL_SOLVE:
    solve = functools.partial(_unrolled_cholesky_solve, _unrolled_cholesky(ar, lam))
  else:
    solve = lambda r: jnp.linalg.solve(ar, r[..., None])[..., 0]
  x = solve(rhs)
  resid = rhs - jnp.einsum("...ij,...j->...i", a, x)
  return x + solve(resid)


def _unrolled_cholesky(a, lam):
  """Lower Cholesky factor of small SPD systems as a list of rows of (...) arrays.

  Unrolled over d (static, <= SMALL_SOLVE) so a batch of tiny systems becomes elementwise work: it
  compiles and runs much faster than batched LU on CPU. Pivots are floored at lam / 2 (the ridge
  guarantees eigenvalues >= lam in exact arithmetic), so rounding can never produce a NaN.
  """
  d = a.shape[-1]
  low = [[None] * d for _ in range(d)]
  for j in range(d):
    s = a[..., j, j] - sum((low[j][m] ** 2 for m in range(j)), jnp.zeros_like(lam))
    low[j][j] = jnp.sqrt(jnp.maximum(s, 0.5 * lam))
    for i in range(j + 1, d):
      s = a[..., i, j] - sum((low[i][m] * low[j][m] for m in range(j)), jnp.zeros_like(lam))
      low[i][j] = s / low[j][j]
  return low


def _unrolled_cholesky_solve(low, rhs):
  d = len(low)
  y = []
  for i in range(d):
    s = rhs[..., i] - sum((low[i][m] * y[m] for m in range(i)), jnp.zeros_like(rhs[..., 0]))
    y.append(s / low[i][i])
  x = [None] * d
  for i in reversed(range(d)):
    s = y[i] - sum((low[m][i] * x[m] for m in range(i + 1, d)), jnp.zeros_like(rhs[..., 0]))
    x[i] = s / low[i][i]
  return jnp.stack(x, axis=-1)


def ls_refit(w, B, *, beta=None, fit_beta: bool = False):
  """Exact least-squares scales for fixed codes, per group.

  * ``fit_beta=True``: joint fit of theta = [alpha; beta] with design [B, 1] (asymmetric BCQ).
  * ``beta`` given: alpha fitted to ``w - beta`` with beta fixed (the expansion step).
  * neither: symmetric BCQ, alpha = (B^T B)^-1 B^T w.

  Args:
    w: ``(..., g)``; B: ``(..., g, q)`` of ±1; beta: ``(...)`` or None.
  Returns:
    ``(alpha (..., q), beta (...))`` (beta is zeros for symmetric, the input for fixed).
  """
  if fit_beta and beta is not None:
    raise ValueError("ls_refit: pass either beta (fixed offset) or fit_beta=True, not both")
  if fit_beta:
    design = jnp.concatenate([B, jnp.ones(B.shape[:-1] + (1,), B.dtype)], axis=-1)
    target = w
  else:
    design = B
    beta = jnp.zeros(w.shape[:-1], w.dtype) if beta is None else beta
    target = w - beta[..., None]
  a = jnp.einsum("...gi,...gj->...ij", design, design)
  rhs = jnp.einsum("...gi,...g->...i", design, target)
  theta = ridge_solve(a, rhs)
  if fit_beta:
    return theta[..., :-1], theta[..., -1]
  return theta, beta


def canonicalize(alpha):
  """|alpha| sorted descending along the last axis (the level set beta + sum ±alpha_i is unchanged)."""
  return -jnp.sort(-jnp.abs(alpha), axis=-1)


def code_table(q: int, dtype=jnp.float32):
  """All 2^q codes as a ``(2^q, q)`` ±1 table; row c has +1 at plane i where bit i of c is 0.

  Row 0 is all +1, so ties (broken towards the lowest row) prefer +1, matching sign(0) = +1.
  """
  c = np.arange(2**q)[:, None]
  bits = (c >> np.arange(q)[None, :]) & 1
  return jnp.asarray(1 - 2 * bits, dtype)


def code_search(w, alpha, beta):
  """Exact nearest-level code search (BS step) for fixed scales.

  Every weight gets the nearest of the 2^q levels L_c = beta + sum_i c_i alpha_i (an argmin over all
  levels; ties go to the lowest code index, see ``code_table``). This is the exact minimiser of the
  group error over B for fixed alpha and beta.

  Args:
    w: ``(..., g)``; alpha: ``(..., q)``; beta: ``(...)``.
  Returns:
    B ``(..., g, q)`` of ±1 in w's dtype.
  """
  q = alpha.shape[-1]
  table = code_table(q, w.dtype)  # (2^q, q)
  levels = beta[..., None] + jnp.einsum("...i,ci->...c", alpha, table)
  dist = jnp.square(w[..., :, None] - levels[..., None, :])  # (..., g, 2^q)
  idx = jnp.argmin(dist, axis=-1)
  return table[idx]


def group_errors(w, B, alpha, beta):
  """Squared error per group: ``sum_g (w - beta - B alpha)^2`` -> ``(...)``."""
  w_hat = beta[..., None] + jnp.einsum("...gi,...i->...g", B, alpha)
  return jnp.sum(jnp.square(w - w_hat), axis=-1)


def refine(w, B, alpha, beta, rounds: int, asymmetric: bool):
  """T rounds of alternating refinement: LS refit -> canonicalise -> exact code search.

  Args:
    w: ``(..., g)``; B: ``(..., g, q)``; alpha: ``(..., q)``; beta: ``(...)`` (ignored and kept at
      zero when symmetric).
    rounds: T (static).
    asymmetric: fit beta jointly with alpha.
  Returns:
    ``(B, alpha, beta, errors)`` with errors ``(T, ...)`` the per-group squared error after each
    round's code search. The stored alpha is the one the final codes were searched with.
  """

  def body(carry, _):
    b, _, _ = carry
    a, be = ls_refit(w, b, fit_beta=asymmetric)
    a = canonicalize(a)
    b = code_search(w, a, be)
    return (b, a, be), group_errors(w, b, a, be)

  (B, alpha, beta), errs = jax.lax.scan(body, (B, alpha, beta), None, length=rounds)
  return B, alpha, beta, errs


def expand(w, B, alpha, beta, rounds: int):
  """Progressive precision expansion p -> p+1 (the released code's ``add_onebit_linear_v2``).

  alpha^(p+1) starts as [alpha^(p), 0]; each round sets the new plane to the sign of the residual of
  the *old* planes, R = w - beta - sum_{i <= p} alpha_i b_i, then refits all p+1 scales by LS with beta
  fixed and clamps them to the fp16 range. Old planes, alpha^(p) and beta are inputs only.
  ``max(rounds, 1)`` rounds run (one round creates the plane).

  Args:
    w: ``(..., g)``; B: ``(..., g, p)`` frozen planes; alpha: ``(..., p)`` = alpha^(p); beta: ``(...)``.
    rounds: T (static).
  Returns:
    ``(b_new (..., g), alpha^(p+1) (..., p+1), errors (max(T,1) + 1, ...))``; errors[0] is the error
    of (B, alpha^(p), beta), the others follow each round.
  """
  p = B.shape[-1]
  wb = w - beta[..., None]
  old = wb - jnp.einsum("...gi,...i->...g", B, alpha)
  err0 = jnp.sum(jnp.square(old), axis=-1)
  a0 = jnp.concatenate([alpha, jnp.zeros(alpha.shape[:-1] + (1,), alpha.dtype)], axis=-1)

  # The old planes' Gram block and right-hand side are constant over the rounds; only the new
  # plane's column changes, so each round's normal equations cost p + 1 dot products.
  g = w.shape[-1]
  gram_old = jnp.einsum("...gi,...gj->...ij", B, B)
  rhs_old = jnp.einsum("...gi,...g->...i", B, wb)

  def body(carry, _):
    a, _ = carry
    resid = wb - jnp.einsum("...gi,...i->...g", B, a[..., :p])
    b = _sign(resid)
    cross = jnp.einsum("...gi,...g->...i", B, b)  # (..., p)
    top = jnp.concatenate([gram_old, cross[..., :, None]], axis=-1)
    bottom = jnp.concatenate([cross, jnp.full(cross.shape[:-1] + (1,), g, cross.dtype)], axis=-1)
    gram = jnp.concatenate([top, bottom[..., None, :]], axis=-2)
    rhs = jnp.concatenate([rhs_old, jnp.sum(b * wb, axis=-1, keepdims=True)], axis=-1)
    a = jnp.clip(ridge_solve(gram, rhs), -FP16_MAX, FP16_MAX)
    r_new = wb - jnp.einsum("...gi,...i->...g", B, a[..., :p]) - a[..., p:] * b
    return (a, b), jnp.sum(jnp.square(r_new), axis=-1)

  (alpha_new, b_new), errs = jax.lax.scan(body, (a0, _sign(old)), None, length=max(rounds, 1))
  return b_new, alpha_new, jnp.concatenate([err0[None], errs], axis=0)


# ---------------------------------------------------------------------------------------------
# Jitted cores on grouped weights wg (N, G, g).


@functools.partial(jax.jit, static_argnames=("q", "rounds", "asymmetric"))
def _base_core(wg, q, rounds, asymmetric):
  B, alpha, beta = greedy_init(wg, q, asymmetric)
  err0 = group_errors(wg, B, alpha, beta)
  B, alpha, beta, errs = refine(wg, B, alpha, beta, rounds, asymmetric)
  return B, alpha, beta, jnp.concatenate([err0[None], errs], axis=0)


@functools.partial(jax.jit, static_argnames=("rounds",))
def _expand_core(wg, B, alpha, beta, rounds):
  b_new, alpha_new, errs = expand(wg, B, alpha, beta, rounds)
  return b_new, alpha_new, errs, jnp.sum(alpha_new[..., -1] < 0)


@functools.partial(jax.jit, static_argnames=("q", "asymmetric", "refit"))
def _greedy_core(wg, q, asymmetric, refit):
  B, alpha, beta = greedy_init(wg, q, asymmetric)
  if refit:
    alpha, beta = ls_refit(wg, B, fit_beta=asymmetric)
  return B, alpha, beta


@functools.partial(jax.jit, static_argnames=("group_size",))
def dequantize_planes(signs, alpha, beta, group_size: int):
  """``W_hat = beta + sum_i alpha_i B_i`` from planes in the (N, K) convention.

  Args:
    signs: ``(p, N, K)`` of ±1 (any real/int dtype); alpha: ``(N, K/g, p)``; beta: ``(N, K/g)`` or
      None; group_size: g (static).
  Returns:
    f32 ``(N, K)``. Differentiable in alpha and beta (used by calibration).
  """
  p, n, k = signs.shape
  s = signs.astype(jnp.float32).reshape(p, n, k // group_size, group_size)
  w = jnp.einsum("pngk,ngp->ngk", s, alpha.astype(jnp.float32))
  if beta is not None:
    w = w + beta.astype(jnp.float32)[..., None]
  return w.reshape(n, k)


def _to_signs(B):
  """(N, G, g, q) float ±1 -> int8 (q, N, K)."""
  n, gr, g, q = B.shape
  return jnp.transpose(B, (3, 0, 1, 2)).reshape(q, n, gr * g).astype(jnp.int8)


def _from_signs(signs, group_size):
  """int8 (q, N, K) -> f32 (N, G, g, q)."""
  q, n, k = signs.shape
  return jnp.transpose(
    signs.astype(jnp.float32).reshape(q, n, k // group_size, group_size), (1, 2, 3, 0)
  )


# ---------------------------------------------------------------------------------------------
# Containers.


class PackedWeight(NamedTuple):
  """A quantized weight in the kernel storage format (``kernels_pallas.bitplane_matmul``).

  The kernel computes y = x @ W_hat with W_hat (K, N), i.e. the transpose of the (N, K) weight.
  """

  planes: jax.Array  # uint32 (NB, K_pad/32, N)
  alpha: jax.Array  # f32 (S, K_pad/g, N), S = sum(precisions); row offset(p) + b
  beta: jax.Array | None  # f32 (|P|, K_pad/g, N) or None (symmetric)
  precisions: tuple[int, ...]
  group_size: int
  in_features: int  # logical K (x.shape[-1])


class QuantizedWeight(struct.PyTreeNode):
  """A multi-precision AnyBCQ weight (Park et al., ICLR 2026): shared planes + per-precision scales.

  Fields (N = out features, K = in features, G = K / g, NB = max(bits)):
    signs: int8 ``(NB, N, K)`` of ±1, plane-major; precision p uses planes 0..p-1.
    alphas: tuple over ``bits`` of f32 ``(N, G, p)`` (alpha^(p), plane order).
    betas: tuple over ``bits`` of f32 ``(N, G)`` (beta^(p)), or None for symmetric BCQ.
    bits: the stored precisions P (static), ascending; bits[0] is the base precision.
    group_size: g (static).
  """

  signs: jax.Array
  alphas: tuple
  betas: tuple | None
  bits: tuple = struct.field(pytree_node=False)
  group_size: int = struct.field(pytree_node=False)

  @property
  def shape(self) -> tuple[int, int]:
    """The weight shape ``(N, K)``."""
    return tuple(self.signs.shape[1:])

  @property
  def num_groups(self) -> int:
    return self.signs.shape[2] // self.group_size

  @property
  def asymmetric(self) -> bool:
    return self.betas is not None

  def _index(self, precision) -> int:
    if isinstance(precision, bool) or not isinstance(precision, (int, np.integer)):
      raise ValueError(
        f"precision must be a Python int, one of the stored bits {self.bits}; got {precision!r}"
      )
    if int(precision) not in self.bits:
      raise ValueError(
        f"precision {int(precision)} is out of range: the stored precisions are {self.bits}"
      )
    return self.bits.index(int(precision))

  def alpha(self, precision: int) -> jax.Array:
    """alpha^(p): ``(N, G, p)``."""
    return self.alphas[self._index(precision)]

  def beta(self, precision: int) -> jax.Array | None:
    """beta^(p): ``(N, G)``, or None for symmetric BCQ."""
    i = self._index(precision)
    return None if self.betas is None else self.betas[i]

  def planes(self, precision: int) -> jax.Array:
    """The ±1 planes precision p uses: int8 ``(p, N, K)``."""
    self._index(precision)
    return self.signs[: int(precision)]

  def dequantize(self, precision: int) -> jax.Array:
    """``W_hat^(p) = beta^(p) + sum_{i<p} alpha^(p)_i B_i``: f32 ``(N, K)``."""
    p = precision
    return dequantize_planes(self.planes(p), self.alpha(p), self.beta(p), self.group_size)

  def with_scales(self, precision: int, alpha, beta=None) -> "QuantizedWeight":
    """A copy with alpha^(p) (and beta^(p), if asymmetric) replaced; shapes are checked."""
    i = self._index(precision)
    alpha = jnp.asarray(alpha, jnp.float32)
    chex.assert_shape(
      alpha,
      self.alphas[i].shape,
      exception_type=ValueError,
      custom_message=(
        f"alpha^({precision}) must have shape {self.alphas[i].shape}; got {alpha.shape}"
      ),
    )
    alphas = self.alphas[:i] + (alpha,) + self.alphas[i + 1 :]
    betas = self.betas
    if betas is not None and beta is not None:
      beta = jnp.asarray(beta, jnp.float32)
      chex.assert_shape(
        beta,
        betas[i].shape,
        exception_type=ValueError,
        custom_message=(f"beta^({precision}) must have shape {betas[i].shape}; got {beta.shape}"),
      )
      betas = betas[:i] + (beta,) + betas[i + 1 :]
    elif betas is None and beta is not None:
      raise ValueError("with_scales: this weight is symmetric (no beta); pass beta=None")
    return self.replace(alphas=alphas, betas=betas)

  def nbytes(
    self, precision: int | None = None, *, padded: bool = False, scale_bytes: int = 2
  ) -> int:
    """Storage accounting (the paper's Table 1 arithmetic), see ``memory.linear_nbytes``.

    ``precision=None``: bytes stored (all planes, every precision's scales). ``precision=p``: bytes a
    precision-p matmul reads (p planes, alpha^(p), beta^(p)). ``padded``: K rounded up to the 256-input
    pack tile (the stored layout) instead of the logical K. Scales count ``scale_bytes`` each (16-bit).
    """
    n, k = self.shape
    rep = memory.linear_nbytes(
      n,
      k,
      self.bits,
      self.group_size,
      asymmetric=self.asymmetric,
      scale_bytes=scale_bytes,
      padded=padded,
    )
    if precision is None:
      return rep.total_bytes
    self._index(precision)
    return rep.per_precision[int(precision)]

  def to_packed(self) -> PackedWeight:
    """Converts to the kernel's packed format (planes transposed to the kernel's (K, N) convention).

    Returns:
      ``PackedWeight(planes uint32 (NB, K_pad/32, N), alpha f32 (S, K_pad/g, N), beta f32
      (|P|, K_pad/g, N) | None, precisions, group_size, in_features)`` with K_pad = round_up(K, 256)
      and zero scales in the padded groups.
    Raises:
      ValueError: K is not a multiple of 32, or g does not divide K_pad.
    """
    n, k = self.shape
    g = self.group_size
    if k % bp_format.BITS:
      raise ValueError(f"to_packed: K = {k} must be a multiple of 32 for the packed format")
    k_pad = -(-k // bp_format.TILE) * bp_format.TILE
    if k_pad % g:
      raise ValueError(
        f"to_packed: group_size g = {g} must divide K_pad = {k_pad} (K = {k} "
        "rounded up to the 256-input pack tile)"
      )
    planes = bp_format.pack_planes(jnp.transpose(self.signs, (0, 2, 1)))
    gp = k_pad // g
    pad = ((0, 0), (0, gp - self.num_groups), (0, 0))
    alpha = jnp.concatenate([jnp.transpose(a, (2, 1, 0)) for a in self.alphas], axis=0)
    alpha = jnp.pad(alpha.astype(jnp.float32), pad)
    beta = None
    if self.betas is not None:
      beta = jnp.pad(jnp.stack([jnp.transpose(b) for b in self.betas]).astype(jnp.float32), pad)
    return PackedWeight(planes, alpha, beta, tuple(self.bits), g, k)

  @classmethod
  def from_packed(cls, packed: PackedWeight) -> "QuantizedWeight":
    """Inverse of ``to_packed``: exact for planes, alphas and betas (f32)."""
    planes, alpha, beta, precisions, g, k = packed
    precisions = check_bits(precisions)
    bp_format.check_planes(planes)
    chex.assert_axis_dimension(
      alpha,
      0,
      sum(precisions),
      exception_type=ValueError,
      custom_message=(
        f"from_packed: alpha has {alpha.shape[0]} rows; "
        f"precisions {precisions} need {sum(precisions)}"
      ),
    )
    if k % g:
      raise ValueError(f"from_packed: in_features K = {k} is not a multiple of g = {g}")
    signs = jnp.transpose(bp_format.unpack_planes(planes, k=k), (0, 2, 1)).astype(jnp.int8)
    gr = k // g
    alphas, off = [], 0
    for p in precisions:
      alphas.append(jnp.transpose(alpha[off : off + p, :gr], (2, 1, 0)).astype(jnp.float32))
      off += p
    betas = None
    if beta is not None:
      betas = tuple(jnp.transpose(beta[i, :gr]).astype(jnp.float32) for i in range(len(precisions)))
    return cls(signs=signs, alphas=tuple(alphas), betas=betas, bits=precisions, group_size=g)


class QuantizeInfo(NamedTuple):
  """Diagnostics of ``quantize_with_info`` (per-group squared errors, G = K / g).

  Attributes:
    base_errors: ``(T + 1, N, G)``: greedy (row 0), then after each refinement round.
    expand_errors: one ``(max(T,1) + 1, N, G)`` per expansion p -> p+1 (row 0 = error at p).
    negative_alpha: per expansion, the number of groups whose new scale alpha_{p+1} ended
      negative (the case in which the sign step is no longer the exact minimiser; reported, not
      hidden).
  """

  base_errors: jax.Array
  expand_errors: tuple
  negative_alpha: tuple


class RTNWeight(struct.PyTreeNode):
  """Round-to-nearest uniform baseline: per-group asymmetric min-max grid.

  codes: uint8 ``(N, K)`` in [0, 2^b - 1]; scale, zero: f32 ``(N, G)``; w_hat = zero + code * scale.
  """

  codes: jax.Array
  scale: jax.Array
  zero: jax.Array
  bits: int = struct.field(pytree_node=False)
  group_size: int = struct.field(pytree_node=False)

  def dequantize(self, bits: int) -> jax.Array:
    """f32 ``(N, K)``; ``bits`` must be the width this weight was quantized at."""
    if bits != self.bits:
      raise ValueError(f"precision {bits} is out of range: this RTN weight stores {self.bits} bits")
    n, k = self.codes.shape
    g = self.group_size
    c = self.codes.astype(jnp.float32).reshape(n, k // g, g)
    return (self.zero[..., None] + c * self.scale[..., None]).reshape(n, k)


# ---------------------------------------------------------------------------------------------
# Public entry points.


def _group(w: np.ndarray, g: int):
  n, k = w.shape
  return jnp.asarray(w).reshape(n, k // g, g)


def quantize_with_info(
  w,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
):
  """``quantize`` plus per-group error histories (``QuantizeInfo``)."""
  g = check_group_size(group_size)
  w = check_weight(w, g)
  bits = check_bits(bits)
  rounds = _check_rounds(rounds)
  wg = _group(w, g)
  B, alpha, beta, base_errs = _base_core(wg, q=bits[0], rounds=rounds, asymmetric=bool(asymmetric))
  alphas, betas = [alpha], [beta]
  expand_errs, negatives = [], []
  for p_prev, p in zip(bits, bits[1:]):
    for _ in range(p - p_prev):  # a gap in bits (e.g. 2, 4) expands through the missing widths
      b_new, alpha, errs, neg = _expand_core(wg, B, alpha, beta, rounds=rounds)
      B = jnp.concatenate([B, b_new[..., None]], axis=-1)
      expand_errs.append(errs)
      negatives.append(neg)
    alphas.append(alpha)
    betas.append(beta)
  qw = QuantizedWeight(
    signs=_to_signs(B),
    alphas=tuple(alphas),
    betas=tuple(betas) if asymmetric else None,
    bits=bits,
    group_size=g,
  )
  info = QuantizeInfo(base_errs, tuple(expand_errs), tuple(int(n) for n in negatives))
  return qw, info


def quantize(
  w,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
) -> QuantizedWeight:
  """AnyBCQ multi-precision quantization of one weight matrix (Park et al., ICLR 2026).

  Args:
    w: ``(N, K)`` (out, in) real weights; K % group_size == 0; all entries finite.
    bits: ascending stored precisions; bits[0] is the base (greedy + T alternating rounds), each next
      one a progressive expansion with all earlier planes frozen. A gap (e.g. (2, 4)) expands through
      the intermediate widths and stores scales only for the listed ones.
    group_size: g, the group length along K.
    rounds: T, refinement rounds for the base and for every expansion (>= 0; an expansion runs at
      least one round).
    asymmetric: fit a per-(row, group) offset beta (LUT-GEMM-style asymmetric BCQ: the paper's
      setting and the default of every AnyBCQ function here); False: symmetric, beta = 0.
  Returns:
    ``QuantizedWeight`` with ``NB = bits[-1]`` shared planes and one scale set per precision.
  Raises:
    ValueError: w not 2-D, K not a multiple of g, NaN/Inf weights, bad bits / rounds / group_size.
  """
  return quantize_with_info(w, bits, group_size, rounds, asymmetric)[0]


def expand_precision(qw: QuantizedWeight, w, rounds: int = 20) -> QuantizedWeight:
  """Adds precision ``max(qw.bits) + 1`` to ``qw`` from its top scales (e.g. calibrated alpha^(p)).

  Args:
    qw: a ``QuantizedWeight`` for ``w``; its top precision's alpha and beta start the expansion.
    w: the full-precision ``(N, K)`` weight.
    rounds: T (>= 0; at least one round runs).
  Returns:
    a new ``QuantizedWeight`` with one more plane and bits ``qw.bits + (p + 1,)``; the existing planes
    and every stored scale set are carried over unchanged (bitwise).
  """
  if not isinstance(qw, QuantizedWeight):
    raise ValueError(f"expand_precision: qw must be a QuantizedWeight; got {type(qw).__name__}")
  g = qw.group_size
  w = check_weight(w, g)
  chex.assert_shape(
    w,
    qw.shape,
    exception_type=ValueError,
    custom_message=f"expand_precision: w has shape {w.shape} but qw is {qw.shape}",
  )
  rounds = _check_rounds(rounds)
  p = qw.bits[-1]
  wg = _group(w, g)
  beta = qw.betas[-1] if qw.betas is not None else jnp.zeros(wg.shape[:2], jnp.float32)
  B = _from_signs(qw.signs, g)
  b_new, alpha, _, _ = _expand_core(wg, B, qw.alphas[-1], beta, rounds=rounds)
  signs = jnp.concatenate([qw.signs, _to_signs(b_new[..., None])], axis=0)
  betas = None if qw.betas is None else qw.betas + (qw.betas[-1],)
  return QuantizedWeight(
    signs=signs, alphas=qw.alphas + (alpha,), betas=betas, bits=qw.bits + (p + 1,), group_size=g
  )


def fixed_bcq_quantize(
  w, bits: int, group_size: int = 128, rounds: int = 20, asymmetric: bool = True
) -> QuantizedWeight:
  """Fixed-precision alternating BCQ baseline: the base procedure (greedy + T rounds) at one width.

  One independent model per width (no shared planes). Args as ``quantize``; ``bits`` is one int.
  Returns a ``QuantizedWeight`` with ``bits == (bits,)``.
  """
  b = _single_bits(bits)
  return quantize(w, (b,), group_size, rounds, asymmetric)


def greedy_bcq_quantize(
  w, bits: int, group_size: int = 128, asymmetric: bool = True, refit: bool = False
) -> QuantizedWeight:
  """Greedy BCQ baseline (``refit=True``: greedy + one exact LS scale refit, no alternation).

  Args as ``quantize``; ``bits`` is one int. Returns a ``QuantizedWeight`` with ``bits == (bits,)``.
  """
  b = _single_bits(bits)
  g = check_group_size(group_size)
  w = check_weight(w, g)
  B, alpha, beta = _greedy_core(_group(w, g), q=b, asymmetric=bool(asymmetric), refit=bool(refit))
  return QuantizedWeight(
    signs=_to_signs(B),
    alphas=(alpha,),
    betas=(beta,) if asymmetric else None,
    bits=(b,),
    group_size=g,
  )


def _single_bits(bits) -> int:
  if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
    raise ValueError(f"bits must be one int for a fixed-precision baseline; got {bits!r}")
  return check_bits((int(bits),))[0]


@jax.jit
def _rtn_core(wg, bits):
  lo = jnp.min(wg, axis=-1)
  hi = jnp.max(wg, axis=-1)
  levels = (2**bits - 1).astype(wg.dtype)  # bits is traced: one compile serves every width
  scale = (hi - lo) / levels
  safe = jnp.where(scale > 0, scale, 1.0)  # constant group: every code 0, w_hat = lo exactly
  codes = jnp.clip(jnp.round((wg - lo[..., None]) / safe[..., None]), 0, levels)
  return codes.astype(jnp.uint8), scale, lo


def rtn_quantize(w, bits: int, group_size: int = 128) -> RTNWeight:
  """Round-to-nearest baseline: per-group asymmetric min-max uniform quantization.

  Args:
    w: ``(N, K)``; bits: one int in [1, 8]; group_size: g (K % g == 0).
  Returns:
    ``RTNWeight`` whose ``dequantize(bits)`` is ``(N, K)``.
  """
  b = _single_bits(bits)
  g = check_group_size(group_size)
  w = check_weight(w, g)
  n, k = w.shape
  codes, scale, lo = _rtn_core(_group(w, g), jnp.asarray(b, jnp.int32))
  return RTNWeight(codes=codes.reshape(n, k), scale=scale, zero=lo, bits=b, group_size=g)
