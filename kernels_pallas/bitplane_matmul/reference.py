"""Pure-jnp references for the AnyBCQ bit-plane matmul: the test oracle and the XLA fallback.

AnyBCQ (Park et al., ICLR 2026; github.com/naver-aics/anybcq): with shared planes
B_b in {-1, +1}^{K x N} and per-precision scales,

    y = x @ W^(p),   W^(p)[k, n] = beta^(p)[k // g, n] + sum_{b < p} alpha^(p)_b[k // g, n] B_b[k, n]

Two independent forms (shapes and layout in ``format.py``):

* ``bitplane_matmul_reference``: dequantize W^(p) in f32, then one matmul at HIGHEST precision.
  A scalar precision goes through ``lax.switch`` over the stored precisions, so only the active
  precision's planes are read (and garbage in planes >= p cannot leak in); a per-row precision
  vector evaluates every stored precision and selects rows. Differentiable by JAX autodiff in x,
  alpha and beta.
* ``bitplane_matmul_partials``: the per-plane-partials identity the kernels use,

      y[m, n] = sum_G [ beta_G s_{m,G} + sum_{b < p(m)} alpha_{b,G} (2 u_{b,m,G,n} - s_{m,G}) ],
      s_{m,G} = sum_{k in G} x[m, k],   u_{b,m,G,n} = sum_{k in G} x[m, k] bit_b[k, n],

  materialising ``u`` (NB, M, K/g, N); meant for small test shapes.

Both take a logical K <= K_pad (x is zero-padded) and return ``x.shape[:-1] + (N,)``. Rows whose
precision is not a stored precision come out as NaN (a traced precision cannot raise).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from kernels_pallas.bitplane_matmul import format as fmt

_HI = jax.lax.Precision.HIGHEST


def precision_index(precision: jax.Array, precisions) -> tuple[jax.Array, jax.Array]:
  """``(index into precisions (clipped), valid)`` for an int precision array of any shape."""
  table = jnp.asarray(precisions, jnp.int32)
  idx = jnp.clip(jnp.searchsorted(table, precision), 0, len(precisions) - 1).astype(jnp.int32)
  return idx, table[idx] == precision


def nan_invalid(y: jax.Array, precision: jax.Array, precisions) -> jax.Array:
  """Sets rows of ``y`` (..., N) whose precision is not in ``precisions`` to NaN."""
  _, valid = precision_index(precision, precisions)
  valid = jnp.broadcast_to(valid, y.shape[:-1])[..., None]
  return jnp.where(valid, y, jnp.asarray(jnp.nan, y.dtype))


def _dequantize_static(planes, alpha, beta, qi: int, layout: fmt.Layout) -> jax.Array:
  q, off, g = layout.precisions[qi], layout.offsets[qi], layout.group_size
  signs = fmt.unpack_planes(planes[:q], dtype=jnp.float32)  # (q, K_pad, N)
  groups = layout.k_pad // g
  signs = signs.reshape(q, groups, g, layout.n)
  a = alpha[off : off + q].astype(jnp.float32)[:, :, None, :]  # (q, K/g, 1, N)
  w = jnp.zeros((groups, g, layout.n), jnp.float32)
  if beta is not None:
    w = w + beta[qi].astype(jnp.float32)[:, None, :]
  for b in range(q):
    w = w + a[b] * signs[b]
  return w.reshape(layout.k_pad, layout.n)


def dequantize(planes, alpha, beta, precision, *, precisions=None, group_size=None) -> jax.Array:
  """W^(p) as an f32 ``(K_pad, N)`` matrix.

  Args:
    planes: uint32 ``(NB, K_pad/32, N)``; alpha ``(S, K_pad/g, N)``; beta ``(|P|, K_pad/g, N)`` or
      None; precision: an int scalar (Python or traced) in ``precisions``.
  """
  x_spec = jax.ShapeDtypeStruct((planes.shape[1] * fmt.BITS,), jnp.float32)
  layout = fmt.check_operands(
    x_spec, planes, alpha, beta, precisions=precisions, group_size=group_size
  )
  if isinstance(precision, int) and not isinstance(precision, bool):
    if precision not in layout.precisions:
      raise ValueError(
        f"precision {precision} is out of range: the stored precisions are {layout.precisions}"
      )
  else:
    precision = fmt.check_precision(precision, layout.precisions, ())
  return _dequantize(planes, alpha, beta, precision, layout)


def _dequantize(planes, alpha, beta, precision, layout: fmt.Layout) -> jax.Array:
  if isinstance(precision, int):
    return _dequantize_static(planes, alpha, beta, layout.precisions.index(precision), layout)
  idx, _ = precision_index(jnp.asarray(precision, jnp.int32), layout.precisions)
  branches = [
    lambda pl_, a_, b_, qi=qi: _dequantize_static(pl_, a_, b_, qi, layout)
    for qi in range(len(layout.precisions))
  ]
  return jax.lax.switch(idx, branches, planes, alpha, beta)


def _flatten(x, k_pad):
  batch = x.shape[:-1]
  x2 = x.reshape(-1, x.shape[-1]).astype(jnp.float32)
  if x2.shape[1] != k_pad:
    x2 = jnp.pad(x2, ((0, 0), (0, k_pad - x2.shape[1])))
  return x2, batch


def bitplane_matmul_reference(
  x, planes, alpha, beta, precision, *, precisions=None, group_size=None, out_dtype=None
) -> jax.Array:
  """Dequantize-then-matmul (f32, HIGHEST): the oracle and the XLA path.

  Args:
    x: ``(..., K)`` activations; planes uint32 ``(NB, K_pad/32, N)``; alpha ``(S, K_pad/g, N)``;
      beta ``(|P|, K_pad/g, N)`` or None.
    precision: int scalar, or an int array of shape ``x.shape[:-1]`` (one precision per row).
    precisions, group_size: see ``format.check_operands`` (inferred when None).
    out_dtype: output dtype (default ``x.dtype``).
  Returns:
    ``x.shape[:-1] + (N,)``.
  """
  layout = fmt.check_operands(x, planes, alpha, beta, precisions=precisions, group_size=group_size)
  out_dtype = x.dtype if out_dtype is None else out_dtype
  prec = fmt.check_precision(precision, layout.precisions, x.shape[:-1])
  x2, batch = _flatten(x, layout.k_pad)
  if prec.ndim == 0:
    w = _dequantize(planes, alpha, beta, prec, layout)
    y = jnp.dot(x2, w, precision=_HI)
  else:
    prec_rows = prec.reshape(-1)
    y = jnp.zeros((x2.shape[0], layout.n), jnp.float32)
    for qi, q in enumerate(layout.precisions):
      yq = jnp.dot(x2, _dequantize_static(planes, alpha, beta, qi, layout), precision=_HI)
      y = jnp.where((prec_rows == q)[:, None], yq, y)
  y = nan_invalid(y, prec.reshape(-1) if prec.ndim else prec, layout.precisions)
  return y.reshape(*batch, layout.n).astype(out_dtype)


def bitplane_matmul_partials(
  x, planes, alpha, beta, precision, *, precisions=None, group_size=None, out_dtype=None
) -> jax.Array:
  """The per-plane-partials form (an independent oracle for the kernels; small shapes only).

  Same arguments and result as ``bitplane_matmul_reference``. Memory is O(NB * M * K/g * N).
  """
  layout = fmt.check_operands(x, planes, alpha, beta, precisions=precisions, group_size=group_size)
  out_dtype = x.dtype if out_dtype is None else out_dtype
  prec = fmt.check_precision(precision, layout.precisions, x.shape[:-1])
  x2, batch = _flatten(x, layout.k_pad)
  m, g, nb = x2.shape[0], layout.group_size, layout.num_planes
  groups = layout.k_pad // g
  prec_rows = jnp.broadcast_to(prec.reshape(-1), (m,))
  idx, _ = precision_index(prec_rows, layout.precisions)

  xg = x2.reshape(m, groups, g)
  s = jnp.sum(xg, axis=-1)  # (M, K/g)
  bits = fmt.unpack_planes(planes, signs=False, dtype=jnp.float32)  # (NB, K_pad, N)
  bits = bits.reshape(nb, groups, g, layout.n)
  u = jnp.einsum("mgk,bgkn->bmgn", xg, bits, precision=_HI)  # (NB, M, K/g, N)
  t = 2.0 * u - s[None, :, :, None]

  offsets = jnp.asarray(layout.offsets, jnp.int32)[idx]  # (M,)
  planes_idx = jnp.arange(nb, dtype=jnp.int32)
  rows = jnp.clip(offsets[:, None] + planes_idx[None, :], 0, alpha.shape[0] - 1)  # (M, NB)
  active = planes_idx[None, :] < prec_rows[:, None]  # (M, NB)
  coef = alpha.astype(jnp.float32)[rows]  # (M, NB, K/g, N)
  contrib = jnp.where(active[:, :, None, None], coef * jnp.transpose(t, (1, 0, 2, 3)), 0.0)
  y = jnp.sum(contrib, axis=(1, 2))
  if beta is not None:
    y = y + jnp.einsum("mg,mgn->mn", s, beta.astype(jnp.float32)[idx], precision=_HI)
  y = nan_invalid(y, prec_rows, layout.precisions)
  return y.reshape(*batch, layout.n).astype(out_dtype)


def bitplane_matmul_backward(x, planes, alpha, beta, precision, dy, *, layout: fmt.Layout):
  """Cotangents of ``y = x @ W^(p)`` with the planes fixed (pure jnp; the kernels' custom_vjp).

  Args:
    x: ``(M, K)`` activations (logical K); planes, alpha, beta as in the forward.
    precision: int32 scalar or ``(M,)`` per-row precisions.
    dy: ``(M, N)`` output cotangent.
    layout: ``format.check_operands`` of the forward call.
  Returns:
    ``(dx (M, K) in x.dtype, dalpha (S, K_pad/g, N) in alpha.dtype,
    dbeta (|P|, K_pad/g, N) in beta.dtype or None)``, with

        dx = dy @ W^(p)^T,
        dalpha[offset(p) + b, G, n] = sum_{k in G} B_b[k, n] (x^T dy)[k, n]   for b < p,
        dbeta[index(p), G, n]       = sum_{k in G} (x^T dy)[k, n],

    and zeros in the rows of the other precisions. A per-row precision vector sums each
    precision's contribution over its rows.
  """
  m, k = x.shape
  g, groups, n = layout.group_size, layout.k_pad // layout.group_size, layout.n
  s_rows, n_prec = alpha.shape[0], len(layout.precisions)
  xf = x.astype(jnp.float32)
  dyf = dy.astype(jnp.float32)
  prec = jnp.asarray(precision, jnp.int32)

  def grads_for(qi, x_rows, dy_rows):
    """(dx, dalpha, dbeta) contributions of precision P[qi] for the given (masked) rows."""
    q, off = layout.precisions[qi], layout.offsets[qi]
    w = _dequantize_static(planes, alpha, beta, qi, layout)[:k]  # (K, N)
    dx = jnp.dot(dy_rows, w.T, precision=_HI)
    gram = jnp.dot(x_rows.T, dy_rows, precision=_HI)  # (K, N)
    gram = jnp.pad(gram, ((0, layout.k_pad - k), (0, 0))).reshape(groups, g, n)
    signs = fmt.unpack_planes(planes[:q], dtype=jnp.float32).reshape(q, groups, g, n)
    da = jnp.zeros((s_rows, groups, n), jnp.float32)
    da = da.at[off : off + q].set(jnp.sum(signs * gram[None], axis=2))
    db = jnp.zeros((n_prec, groups, n), jnp.float32).at[qi].set(jnp.sum(gram, axis=1))
    return dx, da, db

  if prec.ndim == 0:
    idx, _ = precision_index(prec, layout.precisions)
    branches = [lambda xr, dr, qi=qi: grads_for(qi, xr, dr) for qi in range(n_prec)]
    dx, da, db = jax.lax.switch(idx, branches, xf, dyf)
  else:
    dx = jnp.zeros((m, k), jnp.float32)
    da = jnp.zeros((s_rows, groups, n), jnp.float32)
    db = jnp.zeros((n_prec, groups, n), jnp.float32)
    for qi, q in enumerate(layout.precisions):
      rows = (prec == q)[:, None]
      dxq, daq, dbq = grads_for(qi, jnp.where(rows, xf, 0.0), jnp.where(rows, dyf, 0.0))
      dx, da, db = dx + dxq, da + daq, db + dbq
  dbeta = None if beta is None else db.astype(beta.dtype)
  return dx.astype(x.dtype), da.astype(alpha.dtype), dbeta
