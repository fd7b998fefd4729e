"""Pure-jnp reference of the lmKAN 2-D spline lookup: the oracle and the portable (`impl="xla"`) path.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA/PyTorch code github.com/schwallergroup/lmkan).
For P input pairs and Q outputs, with x of shape (B, P, 2) (batch-first) and a table of shape
(P, G+1, G+1, Q):

    y[b, q] = Σ_p  w00·T[p, c1, c2, q] + w01·T[p, c1, c2+1, q] + w10·T[p, c1+1, c2, q] + w11·T[p, c1+1, c2+1, q]

with (c1, δ1), (c2, δ2) the cells and unclamped local coordinates (see `grid.py`) of x[b, p, 0] and
x[b, p, 1], and w00 = (1−δ1)(1−δ2), w01 = (1−δ1)δ2, w10 = δ1(1−δ2), w11 = δ1δ2 — bilinear
interpolation between nodes and bilinear extrapolation outside the grid (weights may be negative or > 1;
they always sum to 1).

Three forms live here:
* `spline_lookup_gather` — gathers the 4 corners (B·P·Q per corner; chunked over pairs for large
  layers); plain autodiff works through it.
* `spline_lookup_dense` — builds the dense hat matrices (B, P, G+1) per coordinate (the tensor product
  is the interpolation matrix Φ_p) and contracts with the table; plain autodiff works through it.
* `spline_lookup_xla` — the gather forward with a `jax.custom_vjp` whose backward is the closed form
  below: table gradient by a segment-sum of g_q·w_uv into the 4 corners, input gradient
  ∂f/∂x1 = r_{c1}[(1−δ2)(T10 − T00) + δ2(T11 − T01)], ∂f/∂x2 = r_{c2}[(1−δ1)(T01 − T00) + δ1(T11 − T10)].
  Residuals are x and the table only; cells and weights are recomputed. Only reverse mode is defined
  (a `custom_vjp` has no forward-mode rule).

Dtypes: x and the table share one floating dtype — float32, float64, or a low-precision float
(bfloat16, float16). Low-precision operands are read as they are (the corner gathers move the table's
own dtype) but everything else — σ, cells, local coordinates, bilinear weights, the sum over pairs and
the backward's sums over the batch and outputs — runs in float32 (`accumulation_dtype`), and each result
is rounded once to its operand's dtype (y and dx to x's, dT to the table's), as a bf16 matmul with f32
accumulation does. float32 and float64 compute in their own dtype throughout.

This is the oracle of the Pallas kernels in this package (`kernel_portable.py`, `kernel_triton_gather.py`)
and the `impl="xla"` path of `ops.spline_lookup`; `iclr26_jax.lmkan.reference` re-exports it unchanged.
"""

from __future__ import annotations

import functools
import math
import numbers

import jax
import jax.numpy as jnp

from kernels_pallas.spline_lookup.grid import SigmaGrid

__all__ = [
  "FLOAT_DTYPES",
  "LOW_PRECISION_DTYPES",
  "accumulation_dtype",
  "check_lookup_args",
  "corner_weights",
  "spline_lookup_xla",
  "spline_lookup_gather",
  "spline_lookup_dense",
  "spline_lookup_vjp",
  "hat_matrix",
]

# Operand dtypes the lookup accepts; the low-precision ones compute in float32 (module docstring).
LOW_PRECISION_DTYPES = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
FLOAT_DTYPES = (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)) + LOW_PRECISION_DTYPES


def accumulation_dtype(dtype):
  """The dtype the lookup computes in for operands of `dtype`: float32 for bfloat16 / float16, else
  `dtype` itself (float32 or float64)."""
  dtype = jnp.dtype(dtype)
  return jnp.dtype(jnp.float32) if dtype in LOW_PRECISION_DTYPES else dtype


# Above this many elements per corner gather (B·P_chunk·Q), the gather paths loop over chunks of pairs.
_DEFAULT_CHUNK_ELEMENTS = 1 << 22


def check_lookup_args(x, table, grid):
  """Validates the arguments of the lookup and returns (B, P, Q).

  Args:
    x: (B, P, 2) float32, float64, bfloat16 or float16.
    table: (P, G+1, G+1, Q), same dtype as x.
    grid: SigmaGrid with G intervals.
  Raises:
    ValueError naming the argument, the shape or dtype received and the one required.
  """
  if not isinstance(grid, SigmaGrid):
    raise ValueError(f"grid must be a SigmaGrid, got {type(grid).__name__}.")
  if not hasattr(x, "shape") or not hasattr(table, "shape"):
    raise ValueError("x and table must be arrays.")
  if x.ndim != 3 or x.shape[-1] != 2:
    raise ValueError(f"x must have shape (B, P, 2), got {tuple(x.shape)}.")
  b, p, _ = x.shape
  g1 = grid.G + 1
  if table.ndim != 4 or table.shape[0] != p or table.shape[1] != g1 or table.shape[2] != g1:
    want = f"({p}, {g1}, {g1}, Q)"
    raise ValueError(
      f"table must have shape (P, G+1, G+1, Q) = {want} for x of shape "
      f"{tuple(x.shape)} and G = {grid.G}, got {tuple(table.shape)}."
    )
  for name, a in (("x", x), ("table", table)):
    if a.dtype not in FLOAT_DTYPES:
      raise ValueError(f"{name} must be float32, float64, bfloat16 or float16, got {a.dtype}.")
  if x.dtype != table.dtype:
    raise ValueError(
      f"x and table must have the same dtype, got x {x.dtype} and table {table.dtype}."
    )
  return b, p, table.shape[3]


def corner_weights(x, grid: SigmaGrid):
  """Cells, local coordinates and the four bilinear weights of every (sample, pair).

  Args:
    x: (B, P, 2) floating (bfloat16 / float16 are upcast to float32 first).
    grid: SigmaGrid.
  Returns:
    dict with c1, c2 (B, P) int32; d1, d2 (B, P) local coordinates (unclamped), in
    `accumulation_dtype(x.dtype)`;
    w (4, B, P) weights in corner order (00, 01, 10, 11); flat (B, P) int32 flat index
    c1·(G+1) + c2 of the 00 corner in a (G+1)²-long flattened table.
  """
  x = x.astype(accumulation_dtype(x.dtype))
  c1, d1 = grid.cell_and_delta(x[..., 0])
  c2, d2 = grid.cell_and_delta(x[..., 1])
  e1, e2 = 1.0 - d1, 1.0 - d2
  w = jnp.stack([e1 * e2, e1 * d2, d1 * e2, d1 * d2])
  flat = c1 * (grid.G + 1) + c2
  return dict(c1=c1, c2=c2, d1=d1, d2=d2, w=w, flat=flat)


def _corner_offsets(grid: SigmaGrid):
  g1 = grid.G + 1
  return (0, 1, g1, g1 + 1)  # 00, 01, 10, 11 in the flattened (G+1)² axis


def _gather_corners(table_flat, flat, grid):
  """table_flat (P, C, Q), flat (B, P) → four (B, P, Q) corner values."""
  p = table_flat.shape[0]
  pidx = jnp.arange(p)[None, :]
  return [table_flat[pidx, flat + o] for o in _corner_offsets(grid)]


def _pair_chunks(b, p, q, chunk_pairs):
  """Number of pairs per chunk (≥ 1) given the gather size budget."""
  if chunk_pairs is None:
    per_pair = max(1, b * q)
    chunk_pairs = max(1, _DEFAULT_CHUNK_ELEMENTS // per_pair)
  if (
    isinstance(chunk_pairs, bool)
    or not isinstance(chunk_pairs, numbers.Integral)
    or chunk_pairs < 1
  ):
    raise ValueError(f"chunk_pairs must be a positive int or None, got {chunk_pairs!r}.")
  return min(int(chunk_pairs), p)


def _split_pairs(x, table, chunk):
  """Pads P to a multiple of `chunk` (zero inputs, zero tables) and splits into (n, ...) chunks."""
  p = x.shape[1]
  n = math.ceil(p / chunk)
  pad = n * chunk - p
  if pad:
    x = jnp.pad(x, ((0, 0), (0, pad), (0, 0)))
    table = jnp.pad(table, ((0, pad), (0, 0), (0, 0), (0, 0)))
  xs = x.reshape(x.shape[0], n, chunk, 2).transpose(1, 0, 2, 3)  # (n, B, chunk, 2)
  ts = table.reshape((n, chunk) + table.shape[1:])  # (n, chunk, G+1, G+1, Q)
  return xs, ts, pad


def _forward_block(x, table, grid):
  """Gather forward on one block of pairs: x (B, p, 2), table (p, G+1, G+1, Q) → (B, Q) in
  `accumulation_dtype(x.dtype)` (corners gathered in the table's dtype, summed in that dtype)."""
  p, g1, _, q = table.shape
  acc = accumulation_dtype(x.dtype)
  cw = corner_weights(x, grid)
  corners = _gather_corners(table.reshape(p, g1 * g1, q), cw["flat"], grid)
  y = 0.0
  for k in range(4):
    y = y + jnp.einsum("bp,bpq->bq", cw["w"][k], corners[k].astype(acc))
  return y


def spline_lookup_gather(x, table, grid: SigmaGrid, *, chunk_pairs=None):
  """Gather-form lookup, differentiable by plain autodiff.

  Args:
    x: (B, P, 2) float32/float64/bfloat16/float16, batch-first pairs of consecutive inputs.
    table: (P, G+1, G+1, Q) same dtype; first grid axis ↔ first input of the pair.
    grid: SigmaGrid with G intervals.
    chunk_pairs: pairs per chunk of the corner gathers (None: chosen so one gather holds at most
      2²² elements). Chunks are summed in a `lax.scan`.
  Returns:
    y: (B, Q).
  """
  b, p, q = check_lookup_args(x, table, grid)
  chunk = _pair_chunks(b, p, q, chunk_pairs)
  if chunk >= p:
    return _forward_block(x, table, grid).astype(x.dtype)
  xs, ts, _ = _split_pairs(x, table, chunk)

  def body(acc, xt):
    return acc + _forward_block(xt[0], xt[1], grid), None

  y, _ = jax.lax.scan(body, jnp.zeros((b, q), accumulation_dtype(x.dtype)), (xs, ts))
  return y.astype(x.dtype)


def hat_matrix(v, grid: SigmaGrid):
  """Dense 1-D hat-function matrix of one coordinate, linear extrapolation included.

  H[..., k] = (1 − δ)·[k = c] + δ·[k = c + 1], so Σ_k H[..., k]·t_k = v for every v (linear functions are
  reproduced) and Σ_k H[..., k] = 1.

  Args:
    v: floating array of any shape S.
    grid: SigmaGrid.
  Returns:
    (*S, G+1) array of `accumulation_dtype(v.dtype)` (v's dtype unless bfloat16 / float16).
  """
  v = jnp.asarray(v)
  c, d = grid.cell_and_delta(v.astype(accumulation_dtype(v.dtype)))
  oh0 = jax.nn.one_hot(c, grid.G + 1, dtype=d.dtype)
  oh1 = jax.nn.one_hot(c + 1, grid.G + 1, dtype=d.dtype)
  return (1.0 - d)[..., None] * oh0 + d[..., None] * oh1


def spline_lookup_dense(x, table, grid: SigmaGrid):
  """Dense hat-matrix form: y[b, q] = Σ_{p,i,j} H1[b, p, i]·H2[b, p, j]·T[p, i, j, q].

  H1 ⊗ H2 is the per-pair interpolation matrix Φ_p (4 non-zeros per row). Costs O(B·P·(G+1)²·Q);
  a second, independent formulation for tests. Differentiable by plain autodiff.

  Args:
    x: (B, P, 2) floating (see the module docstring for the dtypes).
    table: (P, G+1, G+1, Q) same dtype.
    grid: SigmaGrid.
  Returns:
    y: (B, Q) in x's dtype.
  """
  check_lookup_args(x, table, grid)
  h1 = hat_matrix(x[..., 0], grid)
  h2 = hat_matrix(x[..., 1], grid)
  y = jnp.einsum("bpi,bpj,pijq->bq", h1, h2, table.astype(h1.dtype))
  return y.astype(x.dtype)


def _vjp_block(x, table, g, grid):
  """Closed-form VJP on one block of pairs. Returns dx (B, p, 2) in x's dtype and dT (p, G+1, G+1, Q)
  in the table's dtype, both summed in `accumulation_dtype` (g is already in it)."""
  b = x.shape[0]
  p, g1, _, q = table.shape
  c = g1 * g1
  acc = accumulation_dtype(x.dtype)
  cw = corner_weights(x, grid)
  table_flat = table.reshape(p, c, q)
  corners = [t.astype(acc) for t in _gather_corners(table_flat, cw["flat"], grid)]
  # Table gradient: segment-sum of g[b, q]·w_uv[b, p] into row p·C + flat + offset_uv.
  pidx = jnp.arange(p, dtype=jnp.int32)[None, :] * c
  seg = jnp.stack([pidx + cw["flat"] + o for o in _corner_offsets(grid)])  # (4, B, p)
  data = cw["w"][..., None] * g[None, :, None, :]  # (4, B, p, Q)
  dt = jax.ops.segment_sum(data.reshape(4 * b * p, q), seg.reshape(-1), num_segments=p * c)
  dt = dt.reshape(p, g1, g1, q).astype(table.dtype)
  # Input gradient, closed form: a_uv[b, p] = Σ_q g[b, q]·T_uv[b, p, q].
  a00, a01, a10, a11 = (jnp.einsum("bq,bpq->bp", g, t) for t in corners)
  r = grid.inv_width_array(acc)
  r1, r2 = r[cw["c1"]], r[cw["c2"]]
  d1, d2 = cw["d1"], cw["d2"]
  dx1 = r1 * ((1.0 - d2) * (a10 - a00) + d2 * (a11 - a01))
  dx2 = r2 * ((1.0 - d1) * (a01 - a00) + d1 * (a11 - a10))
  return jnp.stack([dx1, dx2], axis=-1).astype(x.dtype), dt


def spline_lookup_vjp(x, table, grid: SigmaGrid, g, *, chunk_pairs=None):
  """Closed-form vector-Jacobian product of the lookup.

  Args:
    x: (B, P, 2), table: (P, G+1, G+1, Q) of the same float dtype; grid: SigmaGrid.
    g: (B, Q) upstream cotangent ∂L/∂y.
    chunk_pairs: as in `spline_lookup_gather`.
  Returns:
    (dx, dT): dx (B, P, 2) = ∂L/∂x by the closed form, in x's dtype; dT (P, G+1, G+1, Q) = ∂L/∂T
    by segment-sum, in the table's dtype (both summed in `accumulation_dtype`).
  """
  b, p, q = check_lookup_args(x, table, grid)
  if g.shape != (b, q):
    raise ValueError(f"g must have shape (B, Q) = {(b, q)}, got {tuple(g.shape)}.")
  g = g.astype(accumulation_dtype(x.dtype))
  chunk = _pair_chunks(b, p, q, chunk_pairs)
  if chunk >= p:
    return _vjp_block(x, table, g, grid)
  xs, ts, pad = _split_pairs(x, table, chunk)
  dxs, dts = jax.lax.map(lambda xt: _vjp_block(xt[0], xt[1], g, grid), (xs, ts))
  n = xs.shape[0]
  dx = dxs.transpose(1, 0, 2, 3).reshape(b, n * chunk, 2)[:, :p]
  dt = dts.reshape((n * chunk,) + table.shape[1:])[:p]
  return dx, dt


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _lookup(x, table, grid, chunk_pairs):
  return spline_lookup_gather(x, table, grid, chunk_pairs=chunk_pairs)


def _lookup_fwd(x, table, grid, chunk_pairs):
  return spline_lookup_gather(x, table, grid, chunk_pairs=chunk_pairs), (x, table)


def _lookup_bwd(grid, chunk_pairs, res, g):
  x, table = res
  return spline_lookup_vjp(x, table, grid, g, chunk_pairs=chunk_pairs)


_lookup.defvjp(_lookup_fwd, _lookup_bwd)


def spline_lookup_xla(x, table, grid: SigmaGrid, *, chunk_pairs=None):
  """The reference lookup with the closed-form backward (`jax.custom_vjp`): the `impl="xla"` path.

  Args:
    x: (B, P, 2) float32/float64/bfloat16/float16, batch-first.
    table: (P, G+1, G+1, Q) same dtype.
    grid: SigmaGrid (static; passed through `nondiff_argnums`).
    chunk_pairs: pairs per gather chunk (None: automatic), see `spline_lookup_gather`.
  Returns:
    y: (B, Q) in x's dtype (low precision: computed in float32, rounded once). Gradients w.r.t. x
    and table by `spline_lookup_vjp` (reverse mode only).
  """
  b, p, q = check_lookup_args(x, table, grid)
  chunk = _pair_chunks(b, p, q, chunk_pairs)
  return _lookup(x, table, grid, chunk)
