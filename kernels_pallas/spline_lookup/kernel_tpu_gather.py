"""Mosaic TPU gather kernels of the lmKAN lookup: lane gathers of the four corners, no dense matmul.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA code github.com/schwallergroup/lmkan). The
interpolation-matrix form (`kernel_portable.py`) spends 2·C_pad MXU FLOPs per (sample, pair, output)
— C_pad/4 times the sparse lookup, and ×3 again for the bf16x3 passes (×96 at G = 8). Mosaic has no
pointer gather, but it lowers `jnp.take_along_axis` along the lane axis *within one vreg* to
`tpu.dynamic_gather` (a lane permute with per-lane indices; more than 128 source lanes along the
gather axis is "Not implemented: Multiple source vregs along gather dimension", measured with libtpu
0.0.42.1 on v5e and v6e). With the table laid out corners-on-lanes, one vreg holds T[p, q0:q0+8, c]
for 8 outputs and 128 corners, and a lane gather with the samples' flat corner indices returns
T[p, q, flat_b + off] for 8 outputs × 128 samples at once:

  y[q, b] += w00[b]·T[p, q, f_b] + w01[b]·T[p, q, f_b + 1] + w10[b]·T[p, q, f_b + G+1] + w11[b]·T[p, q, f_b + G+2]

four lane gathers, four multiplies and four adds per (8 outputs × 128 samples × pair): exactly the
gather form's 8 FLOPs per (sample, pair, output), in f32 on the VPU (no bf16 split: the products are
f32-exact as in the reference). When C_pad > 128 (G > 10) the corner axis spans C_pad/128 vregs: each
chunk is gathered with the low 7 bits of the index and a select keeps the chunk named by the high bits
(C_pad/128 gathers + selects per corner; the FLOPs stay 8 per (sample, pair, output)).

Layouts (`ops.py` pads and transposes the table; the wrappers below regroup x and y):
  x      (P_pad, 2, B_pad)     pairs, batch last (samples on lanes); the forward kernel reads it as
                               (P_pad, B_pad/128, 2, 128) so the 128-sample chunk is a leading index;
  table  (P_pad, Q_pad, C_pad) corners on lanes (`ops._to_kernel_layout` for the TPU gather rows);
  nodes  (G1_pad, 1), invw (G1_pad, 1)  as in `kernel_portable.cell_delta`;
  y      (B_pad, Q_pad), written by the kernel as (B_pad/128, Q_pad, 128) tiles; dy (Q_pad, B_pad).

Forward grid (B/bb, Q/bq, P/bp), pairs last ("arbitrary"): the output block (bb/128, bq, 128) stays in
VMEM over the pair blocks and is accumulated in place. Per pair and 128-sample chunk the cells, the four
weights and the four index rows are computed once (`kernel_portable.cell_delta`, the same f32
arithmetic as the portable kernels) and reused by every 32-row output tile of the block. The input
gradient (grid (P, B/bb, Q/bq), output blocks last) gathers the same corners and contracts them with dy.

Why a TPU gather kernel: the portable layout (tables `(P, C_pad, Q)`, an interpolation-matrix
forward, gathers on GPU only) costs C_pad/4 × 3 times the sparse lookup's FLOPs on the MXU, against
a target of at most 4×; so this kernel gathers on TPU too, on a corners-last table (transposed per
call by `ops.py`). It is `variant="gather"` (block sizes in `blocks.ALTERNATIVE_TABLE`), not the
production TPU row: with its cross-lane ops below counted per unit, at the third-party rate of one
every 8 cycles on 2 units, its roofline *estimate* is 6-8× the matrix form's (`blocks.py` has the
numbers; only a chip can settle it).

Compiled by libtpu for v5e (final LLO, `LIBTPU_INIT_ARGS=--xla_mosaic_dump_to=DIR`), each lane gather
is a vsetperm + vperm + vpermres on the cross-lane unit per (8, 128) vreg; per output vreg and pair the
forward issues 4 of those, 4 vmul and 4 vadd (`benchmarks/_roofline.spline_tpu_gather_vector_ops`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas.spline_lookup import kernel_portable as kp

LANES = 128  # one vreg's lanes: the widest source a Mosaic lane gather takes
SUBLANES = 8


def corner_offsets(G: int) -> tuple[int, int, int, int]:
  """Flat offsets of the corners 00, 01, 10, 11 from the 00 corner in the (G+1)² axis."""
  return (0, 1, G + 1, G + 2)


def _lane_gather(src, idx):
  """src (tq, 128), idx (tq, 128) int32 in [0, 128) → src[r, idx[r, l]] (a Mosaic lane gather).

  The indices are in range by construction (`& 127`), so no negative-index wrap is asked for:
  `jnp.take_along_axis` wraps by default even under "promise_in_bounds" (every jax this project
  allows; jax 0.10 did not), a compare, add and select per corner and output tile that libtpu
  neither folds nor hoists out of the tile loop (11 VALU ops per (sample, pair, output) in the v5e
  LLO instead of 8)."""
  return jnp.take_along_axis(
    src, idx, axis=1, mode="promise_in_bounds", wrap_negative_indices=False
  )


def _geometry(x1, x2, nodes, invw, G: int, tq: int):
  """Per-lane geometry of one pair for 128 samples (x1, x2: (1, 128)).

  Returns:
    (lo, hi, (δ1, δ2, r1, r2)): per corner (00, 01, 10, 11) the index within its 128-lane chunk and
    the chunk, each broadcast to (tq, 128); the local coordinates and inverse widths, (1, 128).
  """
  c1, d1, r1 = kp.cell_delta(x1, nodes, invw, G)
  c2, d2, r2 = kp.cell_delta(x2, nodes, invw, G)
  flat = c1 * (G + 1) + c2  # (1, 128), the 00 corner
  shape = (tq, LANES)
  lo = [jnp.broadcast_to((flat + off) & (LANES - 1), shape) for off in corner_offsets(G)]
  hi = [jnp.broadcast_to((flat + off) >> 7, shape) for off in corner_offsets(G)]
  return lo, hi, (d1, d2, r1, r2)


def _corners(load, lo, hi, n_chunks: int):
  """The four corner values (each (tq, 128)) by lane gathers, chunk by chunk of the corner axis.

  ``load(k)`` returns the (tq, 128) table tile of outputs × corners k·128..k·128+127.
  """
  out = [None] * 4
  for k in range(n_chunks):
    src = load(k)
    for u in range(4):
      g = _lane_gather(src, lo[u])
      out[u] = g if out[u] is None else jnp.where(hi[u] == k, g, out[u])
  return out


def _fwd_kernel(x_ref, t_ref, n_ref, r_ref, o_ref, *, G: int, tq: int):
  """x (bp, bb/128, 2, 128), table (bp, bq, C_pad) → y block (bb/128, bq, 128), accumulated over the
  pair grid axis (samples in 128-lane chunks on a leading axis: dynamic chunk index, no lane offsets)."""
  bp, bq, c_pad = t_ref.shape
  n_chunks = c_pad // LANES
  nodes, invw = n_ref[...], r_ref[...]

  @pl.when(pl.program_id(2) == 0)
  def _zero():
    o_ref[...] = jnp.zeros_like(o_ref)

  nb = x_ref.shape[1]

  def chunk(pj, carry):
    # lax.div / rem, not // and %: jnp's sign fix-up of // queries the chip while lowering.
    p, j = jax.lax.div(pj, nb), jax.lax.rem(pj, nb)
    lo, hi, (d1, d2, _, _) = _geometry(
      x_ref[p, j, pl.ds(0, 1), :], x_ref[p, j, pl.ds(1, 1), :], nodes, invw, G, tq
    )
    e1, e2 = 1.0 - d1, 1.0 - d2
    w = [jnp.broadcast_to(v, (tq, LANES)) for v in (e1 * e2, e1 * d2, d1 * e2, d1 * d2)]

    def tile(i, c):
      rows = pl.ds(pl.multiple_of(i * tq, tq), tq)
      vals = _corners(lambda k: t_ref[p, rows, pl.ds(k * LANES, LANES)], lo, hi, n_chunks)
      acc = o_ref[j, rows, :]
      for u in range(4):
        acc = acc + w[u] * vals[u]
      o_ref[j, rows, :] = acc
      return c

    jax.lax.fori_loop(0, bq // tq, tile, 0)
    return carry

  # One loop over (pair, 128-sample chunk): the geometry of each is computed once per grid step.
  jax.lax.fori_loop(0, bp * nb, chunk, 0)


def _dx_kernel(x_ref, t_ref, g_ref, n_ref, r_ref, o_ref, *, G: int, tq: int):
  """x (2, bb), table (bq, C_pad), dy (bq, bb) → dx block (2, bb), accumulated over output blocks.

  a_uv[b] = Σ_q dy[q, b]·T[q, flat_b + off_uv] by the same lane gathers as the forward, then the
  closed form of lmkan.md §3: dx1 = r_{c1}[(1−δ2)(a10 − a00) + δ2(a11 − a01)],
  dx2 = r_{c2}[(1−δ1)(a01 − a00) + δ1(a11 − a10)].
  """
  bq, c_pad = t_ref.shape
  bb = x_ref.shape[1]
  n_chunks = c_pad // LANES
  nodes, invw = n_ref[...], r_ref[...]

  @pl.when(pl.program_id(2) == 0)
  def _zero():
    o_ref[...] = jnp.zeros_like(o_ref)

  for j in range(bb // LANES):
    lanes = pl.ds(j * LANES, LANES)
    x1 = x_ref[pl.ds(0, 1), lanes]
    x2 = x_ref[pl.ds(1, 1), lanes]
    lo, hi, (d1, d2, r1, r2) = _geometry(x1, x2, nodes, invw, G, tq)
    shape = (tq, LANES)

    def tile(i, accs):
      rows = pl.ds(pl.multiple_of(i * tq, tq), tq)
      dy = g_ref[rows, lanes]
      out = _corners(lambda k: t_ref[rows, pl.ds(k * LANES, LANES)], lo, hi, n_chunks)
      return tuple(a + dy * v for a, v in zip(accs, out))

    zero = jnp.zeros(shape, o_ref.dtype)
    accs = jax.lax.fori_loop(0, bq // tq, tile, (zero,) * 4)
    a00, a01, a10, a11 = (jnp.sum(a, axis=0, keepdims=True) for a in accs)  # (1, 128)
    e1, e2 = 1.0 - d1, 1.0 - d2
    o_ref[pl.ds(0, 1), lanes] += r1 * (e2 * (a10 - a00) + d2 * (a11 - a01))
    o_ref[pl.ds(1, 1), lanes] += r2 * (e1 * (a01 - a00) + d1 * (a11 - a10))


def _tile_rows(bq: int) -> int:
  """Output rows per inner step: 32 (four vregs per operand) or the whole block when smaller."""
  return min(bq, 4 * SUBLANES)


def _params(vmem_limit_bytes):
  """Two parallel grid axes, then the reduction axis (its output block revisited in place)."""
  return pltpu.CompilerParams(
    dimension_semantics=("parallel", "parallel", "arbitrary"), vmem_limit_bytes=vmem_limit_bytes
  )


def _check(x, table, nodes, invw, bb, bq):
  p, two, b = x.shape
  if two != 2 or table.ndim != 3 or table.shape[0] != p or table.shape[2] % LANES:
    raise ValueError(
      "TPU gather layouts: x must be (P, 2, B) and table (P, Q_pad, C_pad) with C_pad a multiple "
      f"of {LANES}; got x {x.shape}, table {table.shape}"
    )
  if nodes.shape != invw.shape or nodes.ndim != 2 or nodes.shape[1] != 1:
    raise ValueError(f"nodes and invw must be (G1_pad, 1); got {nodes.shape}, {invw.shape}")
  q = table.shape[1]
  # The output block is walked in tiles of _tile_rows(bq) rows: bq must be a whole number of them.
  for name, n, blk, unit in (("B_pad", b, bb, LANES), ("Q_pad", q, bq, _tile_rows(bq))):
    if blk % unit or blk % SUBLANES or n % blk:
      raise ValueError(
        f"{name} = {n} must be a multiple of its block {blk}, and the block a multiple of "
        f"{max(unit, SUBLANES)}"
      )


def tpu_gather_forward(
  x, table, nodes, invw, *, G, bq, bb, bp, vmem_limit_bytes=None, interpret=False
):
  """y (B_pad, Q_pad) = the lookup by lane gathers, on padded operands.

  Args:
    x: (P_pad, 2, B_pad); table: (P_pad, Q_pad, C_pad) corners last; nodes, invw: (G1_pad, 1).
    G: intervals per axis; bq, bb, bp: output, batch and pair blocks (bb a multiple of 128, bq of 8).
    vmem_limit_bytes: Mosaic scoped-VMEM limit; interpret: run in interpret mode (CPU).
  Returns:
    y: (B_pad, Q_pad) in x's dtype (batch-first: the kernel writes (B_pad/128, Q_pad, 128) tiles and
    the transpose to (B, Q) is the one the caller needs anyway).
  """
  _check(x, table, nodes, invw, bb, bq)
  p, _, b = x.shape
  q, c_pad = table.shape[1:]
  if p % bp:
    raise ValueError(f"P_pad = {p} is not a multiple of its block {bp} (pad first)")
  g1 = nodes.shape[0]
  nb, itemsize = bb // LANES, x.dtype.itemsize
  xc = x.reshape(p, 2, b // LANES, LANES).transpose(0, 2, 1, 3)  # (P_pad, B_pad/128, 2, 128)
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(itemsize * (x.size * (q // bq) + table.size * (b // bb) + q * b)),
  )
  y = pl.pallas_call(
    functools.partial(_fwd_kernel, G=G, tq=_tile_rows(bq)),
    out_shape=jax.ShapeDtypeStruct((b // LANES, q, LANES), x.dtype),
    grid=(b // bb, q // bq, p // bp),
    in_specs=[
      pl.BlockSpec((bp, nb, 2, LANES), lambda j, i, k: (k, j, 0, 0)),
      pl.BlockSpec((bp, bq, c_pad), lambda j, i, k: (k, i, 0)),
      pl.BlockSpec((g1, 1), lambda j, i, k: (0, 0)),
      pl.BlockSpec((g1, 1), lambda j, i, k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((nb, bq, LANES), lambda j, i, k: (j, i, 0)),
    compiler_params=_params(vmem_limit_bytes),
    cost_estimate=cost,
    interpret=interpret,
    name="spline_lookup_fwd_gather_tpu",
  )(xc, table, nodes, invw)
  return y.transpose(0, 2, 1).reshape(b, q)


def tpu_gather_input_grad(
  x, table, dy, nodes, invw, *, G, bb, bq, vmem_limit_bytes=None, interpret=False
):
  """dx (P_pad, 2, B_pad) by the closed form with lane-gathered corners.

  Args:
    x: (P_pad, 2, B_pad); table: (P_pad, Q_pad, C_pad) corners last; dy: (Q_pad, B_pad);
    nodes, invw: (G1_pad, 1). G: intervals; bb: batch block; bq: output block per reduction step.
  Returns:
    dx: (P_pad, 2, B_pad).
  """
  _check(x, table, nodes, invw, bb, bq)
  p, _, b = x.shape
  q, c_pad = table.shape[1:]
  if dy.shape != (q, b):
    raise ValueError(f"dy must be (Q_pad, B_pad) = {(q, b)}; got {dy.shape}")
  g1 = nodes.shape[0]
  itemsize = x.dtype.itemsize
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(itemsize * (x.size * (q // bq) + table.size * (b // bb) + dy.size * p)),
  )
  return pl.pallas_call(
    functools.partial(_dx_kernel, G=G, tq=_tile_rows(bq)),
    out_shape=jax.ShapeDtypeStruct((p, 2, b), x.dtype),
    grid=(p, b // bb, q // bq),
    in_specs=[
      pl.BlockSpec((None, 2, bb), lambda i, j, k: (i, 0, j)),
      pl.BlockSpec((None, bq, c_pad), lambda i, j, k: (i, k, 0)),
      pl.BlockSpec((bq, bb), lambda i, j, k: (k, j)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((None, 2, bb), lambda i, j, k: (i, 0, j)),
    compiler_params=_params(vmem_limit_bytes),
    cost_estimate=cost,
    interpret=interpret,
    name="spline_lookup_dx_gather_tpu",
  )(x, table, dy, nodes, invw)
