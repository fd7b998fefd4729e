"""Mosaic GPU kernels of the lmKAN lookup (Hopper and newer): forward, table gradient, input gradient.

lmKAN (Pozdnyakov & Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR 2026; reference
CUDA code github.com/schwallergroup/lmkan). Every (output q, pair p) owns a bilinear spline on the sigma
grid (`grid.py`):

    y[b, q] = Σ_p Σ_uv w_uv(b, p) · T[p, f(b, p) + o_uv, q],    f = c1·(G+1) + c2,
    o_uv ∈ {0, 1, G+1, G+2},  w = ((1−δ1)(1−δ2), (1−δ1)δ2, δ1(1−δ2), δ1δ2)  (δ unclamped).

Formulation: the sparse (gather) lookup, with the gather moved onto the thread axis. Pallas on Mosaic
GPU has no gather and no indexed atomics, and no `dot_general` outside `plgpu.wgmma` (SMEM operands,
TF32 for f32: the interpolation-matrix matmul of `kernel_portable.py` would need the TF32x3 split on
top of C_pad/4 times the gather's FLOPs). What it does have is warpgroup-wide code in which a value of
shape () is uniform over the 128 threads, a ref row indexed by such a scalar is one vector load, and
shared-memory scratch (`plgpu.SMEM`). So each block is one warpgroup whose threads own *output columns*
(a (bq,) row of Q, `bq/128` adjacent columns per thread): the cell of a (sample, pair) is the same for
all of them, and the four corners are four row loads T[p, f + o_uv, q-tile] — the gather is a
uniform row index, never a per-thread one. The 4 FLOP-pairs per (sample, pair, output) are the sparse
lookup's count, independent of G (the matrix form costs C_pad/4 times as much). No `inline_mgpu` body
computes anything: the only escape hatch used is a warpgroup barrier (`_barrier`).

Cells and weights are computed once per block, vectorised: a 128-item array of (pair, sample) or
(coordinate, sample) items, one per thread, into shared memory; the hot loops then read them back as
uniform scalars (one shared-memory broadcast load each). t_c and r_c are picked by a one-hot select
over the G nodes (Mosaic GPU has no per-thread gather from a table either): exactly the host float64
values cast to f32, as in the reference. σ, the cell ⌊G·σ(x)⌋ (a truncating f32 → i32 conversion:
Mosaic GPU lowers no `floor`, and G·σ ≥ 0) and δ use the reference's f32 operations.

Layouts (batch last for the inputs, as the other GPU kernels; `ops.py` pads):
  x      (P_pad, 2, B_pad)      P_pad a multiple of the forward's pair chunk `pc`;
  table  (P_pad, C_pad, Q_pad)  flat corner axis (G+1)² padded to C_pad, Q_pad a multiple of 128;
  nodes, invw (G1_pad,)         t_0..t_G and r_0..r_{G−1}, zero padded;
  y, dy  (B_pad, Q_pad)         batch-first: a sample's outputs are one row;
  dT like the table; dx like x.

* forward, grid (B/bb, Q/bq): per chunk of `pc` pairs the (pc, bb) cells and weights (pc·bb = 128) go
  to shared memory; then per pair, for each of the bb samples (unrolled: 4·bb independent row loads
  in flight per thread) acc_s += Σ_uv w_uv·T[p, f + o_uv, q-tile]. The bb accumulators stay in
  registers over all pairs; one row store per sample.
* table gradient, grid (P, Q/bq, C_pad/bc), owner-computes: each block owns dT[p, rows, q-tile]
  (bc corner rows × bq columns), accumulated in shared memory, every thread only ever touching its
  own columns (no atomics, no races, deterministic); it walks the whole batch in 64-sample chunks
  (cells of the (2, 64) coordinates staged as above), adding w_uv·dy[b, q-tile] into row f + o_uv.
  When the corner axis is split (bc < C_pad), a corner outside the block's rows goes to one extra
  dummy row that is never written out. Rows ≥ (G+1)² are written as zeros.
* input gradient, grid (P, B/64), owner-computes: per sample the threads' partial sums over their
  output columns of a_uv = Σ_q dy[b, q]·T[p, f + o_uv, q], combined into
  r_{c1}[(1−δ2)(a10 − a00) + δ2(a11 − a01)] and r_{c2}[(1−δ1)(a01 − a00) + δ1(a11 − a10)]
  (the closed form of the reference), are stored as a column of a (128 threads, 2·64 + 1) shared
  buffer; summing its 128 rows then leaves thread t with the finished dx of (coordinate, sample)
  item t — one shared store per partial instead of a cross-warp reduction per sample. The row length
  2·64 + 1 makes the column stores conflict-free.

All sums are f32 (the same operations as the reference, in another order): interpret-mode results
match `reference.spline_lookup_xla` to ~1e-7 of the largest value. Barriers: the kernels run with
`unsafe_no_auto_barriers` (Pallas would otherwise put two warpgroup barriers around every store,
i.e. around every read-modify-write of the dT accumulator); the only cross-thread traffic is the
staged shared memory, fenced by explicit warpgroup barriers (`_barrier`, an `inline_mgpu` with no
operands; GPU interpret mode runs a warpgroup as one program and skips it).

Mosaic GPU kernels are written with `plgpu.kernel` (jax 0.12 registers no Mosaic GPU lowering for
`pl.pallas_call`) and run in interpret mode with `plgpu.InterpretGPUParams` (the GPU interpreter:
shared memory simulated, uninitialised memory NaN). Compiled for sm_90a without a GPU by the compile
tier (`benchmarks/_targets.mgpu_compile`, tests/kernels_pallas/test_compile_targets.py).
Mosaic GPU in jax 0.12 targets Ampere, Hopper and Blackwell; these kernels use no Hopper-only
instruction (no TMA, no wgmma), but are compiled and dispatched only for compute capability ≥ 9.0
(`ops.resolve_path`).

Compiled for sm_90a through the public op (B = 512, P = 8, Q = 512, the production blocks), ptxas
reports no spills at any grid size: forward 126 registers (its 16 unrolled samples), dT 32 / 48 /
72 / 96 and dx 40 / 40 / 64 / 92 at G = 8 / 14 / 26 / 40 (the one-hot node select grows with G).

Cost per call: forward 8·B·P·Q FLOPs (as the sparse lookup), the table read once per 16-sample block
row (through L1/L2); dT the same FLOPs plus a shared-memory read-modify-write per corner; dx the
same. Not timed on a GPU yet.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import mosaic_gpu as plgpu

from kernels_pallas import _backend

THREADS = 128  # one warpgroup per block
SAMPLE_CHUNK = 64  # samples whose two coordinates (2 × 64 = 128 items) are staged at once (dT, dx)


def _strided(shape, vec: int | None = None):
  """The warpgroup-strided layout Mosaic GPU gives a contiguous load of `shape` (f32: 2 per thread)."""
  n = 1
  for d in shape:
    n *= d
  return plgpu.Layout.WG_STRIDED(tuple(shape), vec_size=vec or min(2, n // THREADS))


def _zeros(shape):
  """f32 zeros in the layout of a loaded row (a loop carry must keep one layout)."""
  return plgpu.layout_cast(jnp.zeros(shape, jnp.float32), _strided(shape))


def _barrier():
  """`bar.sync` over the warpgroup: orders the shared-memory staging between its threads."""
  from jax.experimental.mosaic.gpu import utils as mgpu_utils

  plgpu.inline_mgpu()(lambda ctx: mgpu_utils.warpgroup_barrier())()


def _corners(G: int):
  return (0, 1, G + 1, G + 2)


def _weights(d1, d2):
  e1, e2 = 1.0 - d1, 1.0 - d2
  return (e1 * e2, e1 * d2, d1 * e2, d1 * d2)


def cells(x, n_ref, r_ref, G: int):
  """Cell, unclamped local coordinate and inverse width of an array of inputs (any shape).

  c = clamp(⌊G·σ(x)⌋, 0, G−1) with σ the Laplace(0, 1) CDF as in `grid.laplace_cdf`; t_c, r_c by a
  one-hot select over the G nodes a cell can start at (scalar loads of `n_ref` / `r_ref`).
  """
  e = jnp.exp(-jnp.abs(x))
  s = jnp.where(x <= 0, 0.5 * e, 1.0 - 0.5 * e)
  c = jnp.clip((G * s).astype(jnp.int32), 0, G - 1)  # G·s ≥ 0: truncation is the floor
  t_c = jnp.zeros_like(x)
  r_c = jnp.zeros_like(x)
  for k in range(G):
    hit = c == k
    t_c = jnp.where(hit, n_ref[k], t_c)
    r_c = jnp.where(hit, r_ref[k], r_c)
  return c, (x - t_c) * r_c, r_c


# ----------------------------------------------------------------------------------------------------
# Kernel bodies.


def _fwd_body(x_ref, t_ref, n_ref, r_ref, o_ref, f_ref, w_ref, *, G, bb, bq, pc):
  n_chunks = x_ref.shape[0] // pc
  i, j = jax.lax.axis_index("b"), jax.lax.axis_index("q")
  b0 = i * bb
  cols = pl.ds(pl.multiple_of(j * bq, bq), bq)
  offs = _corners(G)

  def chunk(k, acc):
    p0 = k * pc
    c1, d1, _ = cells(x_ref[pl.ds(p0, pc), 0, pl.ds(b0, bb)], n_ref, r_ref, G)  # (pc, bb)
    c2, d2, _ = cells(x_ref[pl.ds(p0, pc), 1, pl.ds(b0, bb)], n_ref, r_ref, G)
    f_ref[...] = c1 * (G + 1) + c2
    for u, w in enumerate(_weights(d1, d2)):
      w_ref[u] = w
    _barrier()

    def pair(pi, acc):
      p = p0 + pi
      out = []
      for s in range(bb):
        f = f_ref[pi, s]
        a = acc[s]
        for u, off in enumerate(offs):
          a = a + w_ref[u, pi, s] * t_ref[p, f + off, cols]
        out.append(a)
      return tuple(out)

    acc = jax.lax.fori_loop(0, pc, pair, acc)
    _barrier()  # every thread is done with this chunk's cells before the next overwrites them
    return acc

  acc = jax.lax.fori_loop(0, n_chunks, chunk, (_zeros((bq,)),) * bb)
  for s in range(bb):
    o_ref[b0 + s, cols] = acc[s]


def _stage_coordinates(x_ref, p, b0, n_ref, r_ref, G, c_ref, d_ref, rc_ref=None):
  """Cells of the (2, 64) coordinates x[p, :, b0:b0+64] (one item per thread) into shared memory."""
  c, d, r = cells(x_ref[p, :, pl.ds(b0, SAMPLE_CHUNK)], n_ref, r_ref, G)
  c_ref[...] = c
  d_ref[...] = d
  if rc_ref is not None:
    rc_ref[...] = r
  _barrier()


def _dt_body(x_ref, g_ref, n_ref, r_ref, o_ref, c_ref, d_ref, acc_ref, *, G, bq, bc, chunked):
  n_chunks = x_ref.shape[2] // SAMPLE_CHUNK
  p, j, k = jax.lax.axis_index("p"), jax.lax.axis_index("q"), jax.lax.axis_index("c")
  cols = pl.ds(pl.multiple_of(j * bq, bq), bq)
  r0 = k * bc
  rows = acc_ref.shape[0]
  offs = _corners(G)

  def zero(r, carry):
    acc_ref[r, :] = _zeros((bq,))
    return carry

  jax.lax.fori_loop(0, rows, zero, 0)

  def chunk(m, carry):
    b0 = m * SAMPLE_CHUNK
    _stage_coordinates(x_ref, p, b0, n_ref, r_ref, G, c_ref, d_ref)

    def sample(s, carry):
      f = c_ref[0, s] * (G + 1) + c_ref[1, s]
      g = g_ref[b0 + s, cols]
      for off, w in zip(offs, _weights(d_ref[0, s], d_ref[1, s])):
        row = f + off
        if chunked:  # corners outside this block's rows land in the dummy row `bc`
          row = row - r0
          row = jnp.where((row >= 0) & (row < bc), row, bc)
        acc_ref[row, :] = acc_ref[row, :] + w * g
      return carry

    jax.lax.fori_loop(0, SAMPLE_CHUNK, sample, 0)
    _barrier()
    return carry

  if chunked:  # a block whose rows all lie past the (G+1)² corners only writes zeros

    @pl.when(r0 < (G + 1) ** 2)
    def _():
      jax.lax.fori_loop(0, n_chunks, chunk, 0)

  else:
    jax.lax.fori_loop(0, n_chunks, chunk, 0)

  n_out = min(rows, bc)

  def out(r, carry):
    o_ref[p, r0 + r, cols] = acc_ref[r, :]
    return carry

  jax.lax.fori_loop(0, n_out, out, 0)

  def out_zero(r, carry):
    o_ref[p, r0 + r, cols] = _zeros((bq,))
    return carry

  if n_out < bc:  # unchunked: the rows past (G+1)² (rounded to 8) are padding
    jax.lax.fori_loop(n_out, bc, out_zero, 0)


def _dx_body(x_ref, t_ref, g_ref, n_ref, r_ref, o_ref, c_ref, d_ref, rc_ref, red_ref, *, G):
  sb = SAMPLE_CHUNK
  n_q = t_ref.shape[2] // THREADS
  p, i = jax.lax.axis_index("p"), jax.lax.axis_index("b")
  b0 = i * sb
  offs = _corners(G)
  _stage_coordinates(x_ref, p, b0, n_ref, r_ref, G, c_ref, d_ref, rc_ref)

  def sample(s, carry):
    f = c_ref[0, s] * (G + 1) + c_ref[1, s]

    def window(w, a):
      cols = pl.ds(pl.multiple_of(w * THREADS, THREADS), THREADS)
      g = g_ref[b0 + s, cols]
      return tuple(a_k + g * t_ref[p, f + off, cols] for a_k, off in zip(a, offs))

    zero = _zeros((THREADS,))
    a00, a01, a10, a11 = jax.lax.fori_loop(0, n_q, window, (zero,) * 4)
    d1, d2 = d_ref[0, s], d_ref[1, s]
    v1 = rc_ref[0, s] * ((1.0 - d2) * (a10 - a00) + d2 * (a11 - a01))
    v2 = rc_ref[1, s] * ((1.0 - d1) * (a01 - a00) + d1 * (a11 - a10))
    # Columns s and 64 + s, written as (128, 1) blocks (a unit-stride minor dimension).
    red_ref[:, pl.ds(s, 1)] = v1.reshape(THREADS, 1)
    red_ref[:, pl.ds(sb + s, 1)] = v2.reshape(THREADS, 1)
    return carry

  jax.lax.fori_loop(0, sb, sample, 0)
  _barrier()

  def rowsum(t, acc):
    return acc + red_ref[t, pl.ds(0, 2 * sb)]

  total = jax.lax.fori_loop(0, THREADS, rowsum, _zeros((2 * sb,)))  # item t = (coordinate, sample)
  o_ref[p, :, pl.ds(b0, sb)] = total.reshape(2, sb)


# ----------------------------------------------------------------------------------------------------
# Wrappers.


def _interpret_params(interpret: bool):
  # GPU interpret mode runs a warpgroup as one program: the barriers (`inline_mgpu` with no
  # operands or results) have nothing to order and are skipped.
  return plgpu.InterpretGPUParams(inline_mgpu="ignore") if interpret else None


_PARAMS = plgpu.CompilerParams(unsafe_no_auto_barriers=True)


def _check(name, cond, msg):
  if not cond:
    raise ValueError(f"{name}: {msg}")


def _pairs(name, x, n_pairs):
  p = x.shape[0] if n_pairs is None else n_pairs
  _check(name, 1 <= p <= x.shape[0], f"n_pairs = {n_pairs} for x of {x.shape[0]} pairs")
  return p


def _check_common(name, x, nodes, invw, G):
  _check(name, x.ndim == 3 and x.shape[1] == 2, f"x must be (P_pad, 2, B_pad); got {x.shape}")
  _check(
    name,
    nodes.ndim == 1 and nodes.shape == invw.shape and nodes.shape[0] >= G + 1,
    f"nodes / invw must be (G1_pad,) with G1_pad >= G+1 = {G + 1}; got {nodes.shape}, {invw.shape}",
  )
  _check(name, x.dtype == jnp.float32, f"the Mosaic GPU kernels are float32; got {x.dtype}")


def mgpu_forward(x, table, nodes, invw, *, G, bb, bq, pc, interpret=False):
  """y (B_pad, Q_pad) = the lookup, by uniform row loads (see the module docstring).

  Args:
    x: (P_pad, 2, B_pad) f32; table: (P_pad, C_pad, Q_pad) f32; nodes, invw: (G1_pad,) f32.
    G: intervals; bb: samples per block (unrolled; divides B_pad); bq: output columns per block (a
      multiple of 128 dividing Q_pad); pc: pairs per staged chunk (pc·bb a multiple of 128;
      divides P_pad).
  Returns:
    y: (B_pad, Q_pad) f32.
  """
  _check_common("mgpu_forward", x, nodes, invw, G)
  p, _, b = x.shape
  c_pad, q = table.shape[1:]
  _check("mgpu_forward", table.shape[0] == p, f"table {table.shape} does not match x {x.shape}")
  _check("mgpu_forward", c_pad >= (G + 1) ** 2, f"C_pad = {c_pad} < (G+1)² = {(G + 1) ** 2}")
  _check(
    "mgpu_forward",
    b % bb == 0 and q % bq == 0 and bq % THREADS == 0 and p % pc == 0 and (pc * bb) % THREADS == 0,
    f"blocks (bb, bq, pc) = {(bb, bq, pc)} for B_pad = {b}, Q_pad = {q}, P_pad = {p}",
  )
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q + 60 * b * p * (q // bq)),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(4 * (4 * b * p * q // bb + x.size * (q // bq) + b * q)),
  )
  return plgpu.kernel(
    functools.partial(_fwd_body, G=G, bb=bb, bq=bq, pc=pc),
    out_type=jax.ShapeDtypeStruct((b, q), jnp.float32),
    grid=(b // bb, q // bq),
    grid_names=("b", "q"),
    scratch_types=[plgpu.SMEM((pc, bb), jnp.int32), plgpu.SMEM((4, pc, bb), jnp.float32)],
    compiler_params=_PARAMS,
    **_backend.mgpu_kernel_kwargs(cost_estimate=cost),
    kernel_name="spline_lookup_fwd_mgpu",
    interpret=_interpret_params(interpret),
  )(x, table, nodes, invw)


def table_grad_rows(G: int, c_pad: int, bc: int) -> int:
  """Shared-memory accumulator rows of the dT kernel: bc + 1 (a dummy row) when the corner axis is
  split over blocks, else (G+1)² rounded up to 8."""
  if bc < c_pad:
    return bc + 1
  return min(bc, -(-((G + 1) ** 2) // 8) * 8)


def mgpu_table_grad(x, dy, nodes, invw, *, G, c_pad, bq, bc, n_pairs=None, interpret=False):
  """dT (P_pad, C_pad, Q_pad) = Σ_b w_uv·dy[b] at the corners, owner-computes (no atomics).

  Args:
    x: (P_pad, 2, B_pad) f32 (B_pad a multiple of 64); dy: (B_pad, Q_pad) f32; nodes, invw: (G1_pad,).
    G: intervals; c_pad: padded corner count; bq: columns per block (multiple of 128 dividing Q_pad);
    bc: corner rows per block (divides c_pad); n_pairs: the pairs to compute (≤ P_pad; default all).
  Returns:
    dT: (n_pairs, C_pad, Q_pad) f32; rows ≥ (G+1)² are exactly zero.
  """
  _check_common("mgpu_table_grad", x, nodes, invw, G)
  _, _, b = x.shape
  p = _pairs("mgpu_table_grad", x, n_pairs)
  q = dy.shape[1]
  _check("mgpu_table_grad", dy.shape == (b, q), f"dy must be (B_pad, Q_pad); got {dy.shape}")
  _check(
    "mgpu_table_grad",
    b % SAMPLE_CHUNK == 0 and q % bq == 0 and bq % THREADS == 0 and c_pad % bc == 0,
    f"blocks (bq, bc) = {(bq, bc)} for B_pad = {b} (a multiple of {SAMPLE_CHUNK}), "
    f"Q_pad = {q}, C_pad = {c_pad}",
  )
  _check("mgpu_table_grad", c_pad >= (G + 1) ** 2, f"C_pad = {c_pad} < (G+1)² = {(G + 1) ** 2}")
  chunked = bc < c_pad
  rows = table_grad_rows(G, c_pad, bc)
  n_blocks = p * (q // bq) * (c_pad // bc)
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q * (c_pad // bc) + 40 * b * n_blocks),
    transcendentals=int(2 * b * n_blocks),
    bytes_accessed=int(4 * (dy.size * p * (c_pad // bc) + x.size * (q // bq) + p * c_pad * q)),
  )
  return plgpu.kernel(
    functools.partial(_dt_body, G=G, bq=bq, bc=bc, chunked=chunked),
    out_type=jax.ShapeDtypeStruct((p, c_pad, q), jnp.float32),
    grid=(p, q // bq, c_pad // bc),
    grid_names=("p", "q", "c"),
    scratch_types=[
      plgpu.SMEM((2, SAMPLE_CHUNK), jnp.int32),
      plgpu.SMEM((2, SAMPLE_CHUNK), jnp.float32),
      plgpu.SMEM((rows, bq), jnp.float32),
    ],
    compiler_params=_PARAMS,
    **_backend.mgpu_kernel_kwargs(cost_estimate=cost),
    kernel_name="spline_lookup_dtable_mgpu",
    interpret=_interpret_params(interpret),
  )(x, dy, nodes, invw)


def mgpu_input_grad(x, table, dy, nodes, invw, *, G, n_pairs=None, interpret=False):
  """dx (P_pad, 2, B_pad) by the closed form, owner-computes (a block owns 64 samples of one pair).

  Args:
    x: (P_pad, 2, B_pad) f32 (B_pad a multiple of 64); table: (P_pad, C_pad, Q_pad) f32 (Q_pad a
      multiple of 128); dy: (B_pad, Q_pad) f32; nodes, invw: (G1_pad,); n_pairs: the pairs to
      compute (≤ P_pad; default all).
  Returns:
    dx: (n_pairs, 2, B_pad) f32.
  """
  _check_common("mgpu_input_grad", x, nodes, invw, G)
  _, _, b = x.shape
  p = _pairs("mgpu_input_grad", x, n_pairs)
  c_pad, q = table.shape[1:]
  _check(
    "mgpu_input_grad",
    table.shape[0] == x.shape[0]
    and dy.shape == (b, q)
    and b % SAMPLE_CHUNK == 0
    and q % THREADS == 0,
    f"x {x.shape}, table {table.shape}, dy {dy.shape}: B_pad a multiple of {SAMPLE_CHUNK}, "
    f"Q_pad of {THREADS}",
  )
  cost = pl.CostEstimate(
    flops=int(8 * b * p * q + 60 * b * p),
    transcendentals=int(2 * b * p),
    bytes_accessed=int(4 * (4 * b * p * q + dy.size * p + 2 * x.size)),
  )
  sb = SAMPLE_CHUNK
  return plgpu.kernel(
    functools.partial(_dx_body, G=G),
    out_type=jax.ShapeDtypeStruct((p, 2, b), jnp.float32),
    grid=(p, b // sb),
    grid_names=("p", "b"),
    scratch_types=[
      plgpu.SMEM((2, sb), jnp.int32),
      plgpu.SMEM((2, sb), jnp.float32),
      plgpu.SMEM((2, sb), jnp.float32),
      plgpu.SMEM((THREADS, 2 * sb + 1), jnp.float32),
    ],
    compiler_params=_PARAMS,
    **_backend.mgpu_kernel_kwargs(cost_estimate=cost),
    kernel_name="spline_lookup_dx_mgpu",
    interpret=_interpret_params(interpret),
  )(x, table, dy, nodes, invw)
