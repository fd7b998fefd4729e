"""Portable interpolation-matrix kernels of the lmKAN lookup: forward, table gradient, input gradient.

lmKAN (Pozdnyakov & Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR 2026; reference
CUDA code github.com/schwallergroup/lmkan). Every (output q, pair p) owns a bilinear spline on the
non-uniform sigma grid (see `grid.py`); y[q, b] = Σ_p Σ_c T[p, c, q]·S_p[c, b] where S_p (C_pad, bb) is the
sparse interpolation matrix of pair p: four non-zeros per batch column, at the flat corners
c1·(G+1) + c2 + {0, 1, G+1, G+2} with the bilinear weights (1−δ1)(1−δ2), (1−δ1)δ2, δ1(1−δ2), δ1δ2
(δ unclamped: linear extrapolation outside the grid, weights may leave [0, 1]).

Layouts (batch on lanes; `ops.py` pads and transposes):
  x      (P_pad, 2, B_pad)     pairs, batch last;
  table  (P_pad, C_pad, Q_pad) flat corner axis C = (G+1)² padded to C_pad (power of two ≥ 128);
  nodes  (G1_pad, 1)           t_0..t_G, zero padded (G1_pad = a multiple of 8 ≥ G+1);
  invw   (G1_pad, 1)           r_0..r_{G−1}, zero padded;
  y      (Q_pad, B_pad);  dy the same;  dT like the table;  dx like x.

One kernel body per pass serves Mosaic TPU and Triton: it uses only ref reads with scalar or `pl.ds`
indices, `iota` + compare to build one-hot and interpolation matrices (t_c and r_c are selected by a
one-hot sum over the G+1 nodes, exactly the host float64 values cast to f32), elementwise math,
`dot_general` on power-of-two tiles and `fori_loop`s — no gathers, scratch, scalar prefetch or value
slices. Only block sizes and `compiler_params` differ (one `pallas_call` per backend):

* every pass has a trailing reduction grid axis (pairs for the forward, batch for dT, outputs for dx)
  whose output block is revisited consecutively and accumulated in place (zeroed under
  `pl.when(k == 0)`); on TPU it is "arbitrary" and bounds the VMEM blocks, on Triton it has size 1
  (programs run concurrently there) and an in-kernel `fori_loop` walks the full extent in `pl.ds`
  windows instead;
* forward, grid (Q/bq, B/bb, P/bp): acc (bq, bb) += dot_general(T_p (C_pad, bq), S_p (C_pad, bb),
  contracting the corner axis of both) for p in the block; on TPU, when the output column fits VMEM,
  grid (B/bb, P/bp, Q/bq) instead with y (Q_pad, bb) resident and S_p built once per (pair, B-block)
  into VMEM scratch, reused by every Q tile (`_fwd_kernel_resident`; scratch is TPU-only);
* table gradient, grid (P, Q/bq, B/bbo): each program **owns** the tile dT[p, :, q-tile] (C_pad, bq) and
  accumulates dot_general(S_p (C_pad, bb), dy (bq, bb), contracting the batch lanes) over batch windows —
  no atomics, deterministic, bitwise repeatable; padded corner rows get exactly zero;
* input gradient, grid (P, B/bb, Q/bqo): H = T_p (C_pad, bq)·dy (bq, bb) summed over q windows, then
  dx1 = r_{c1}·Σ_c H ⊙ ∂S/∂δ1 and dx2 = r_{c2}·Σ_c H ⊙ ∂S/∂δ2 (sublane reductions) — the closed form
  of lmkan.md §3 written with the dense interpolation-matrix derivatives.

Cost: 2·B·P·C_pad·Q FLOPs per matmul pass, C_pad/4 times the sparse lookup (×32 at G = 8, ×256 at
G = 26), and on TPU each f32 dot is 3 bf16 MXU passes (bf16x3): 3·C_pad/4 times the gather's FLOPs
in MXU work (×96 at G = 8). Building S once per (pair, B-block) removes the repeated VPU work of
the matrix construction (about 40 vector ops per (corner, sample, pair), formerly once per Q tile),
not the dense matmul: the matrix form does **not** meet a "≤ 4× the gather's FLOPs" bound and
cannot at any C_pad ≥ 128. The GPU rows therefore use the gather form: the Mosaic GPU kernels
(`kernel_mgpu.py`, uniform row loads; the Triton pointer gathers of `kernel_triton_gather.py` and
these bodies with Triton parameters are explicit choices only, Pallas's Triton backend being
deprecated). On TPU the production rows stay here: the lane-gather
alternative (`kernel_tpu_gather.py`, `variant="gather"`) does 8 FLOPs per (sample, pair, output) but
12 cross-lane ops per 128-corner chunk, and at the third-party cross-lane rate its per-unit roofline
*estimate* is 6-8× this kernel's (`blocks.py`, `_roofline.spline_tpu_forward_estimates`; only a chip
can settle it). The table gradient stays here (owner-computes) on both.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as pltriton

from kernels_pallas import _dots

PLATFORMS = ("tpu", "gpu")
_HIGHEST = jax.lax.Precision.HIGHEST


DOT_MODES = ("bf16x3", "highest", "tf32x3", "tf32x3_emulated")


def dot_mode(platform: str, interpret: bool) -> str:
  """The dot algorithm of the kernels on ``platform``.

  * TPU: ``"bf16x3"`` (`_dots.bf16x3_dot`): each f32 operand split into a bf16 head and tail, three
    bf16 MXU passes (hi·hi + hi·lo + lo·hi) summed in f32 instead of ``Precision.HIGHEST``'s six.
    Mosaic does not lower ``DotAlgorithmPreset.BF16_BF16_F32_X3`` (nor ``Precision.HIGH``), so the
    split is written out; it is the same code in interpret mode, where bf16 products are exact in
    f32 as on the MXU, so the CPU tests see the device's rounding. Accuracy: at most ~3·2^-16 ≈
    4.6e-5 of |a|·|b| per product. Measured on the interpret-test inputs (B = 37, P = 3, |x| up to
    50; seeds 0-2, G = 8 and 26): max |kernel − reference| / (1 + max |reference|) = 7.7e-6 for y,
    4.9e-6 for dx, 1.4e-5 for dT (the f32 reference is within 2.4e-7 of float64 for y and dT), so
    `tests/kernels_pallas/test_spline_kernels.py` asserts 5e-5·(1 + max |ref|) for this mode (the
    per-product bound; 1e-5 for the TF32x3 modes). Far outside the grid the extrapolation weights
    grow like δ1·δ2 and cancel, so the error is relative to Σ_p Σ_corners |w|·|T| rather than |y|:
    at |x| ~ 10 (|δ| up to ~30) it reached 8e-4 of |y| (7.8e-6 of Σ|w||T|), which the affine test
    bounds by 3·2^-16·Σ|w||T| per entry. ``_dot(..., mode="highest")`` (six passes) remains for
    comparison.
  * GPU (Triton): ``"tf32x3"`` = ``DotAlgorithmPreset.TF32_TF32_F32_X3``: each f32 operand is split
    into a TF32 head and a TF32 tail and three tensor-core products (hi·hi + hi·lo + lo·hi) are
    summed in f32. ``HIGHEST`` compiled to FP32-core FMAs with no mma and spilled registers (sm_90a,
    measured with the triton wheel's ptxas). The dropped lo·lo term and the tails' rounding leave a
    relative error per product of about 2^-21 (vs 2^-24 for f32); the kernels' accuracy tests allow
    1e-5 relative to sum |T|·|S| (tests/kernels_pallas/test_spline_kernels.py).
  * GPU kernels in interpret mode (CPU, which has no TF32 dot): ``"tf32x3_emulated"`` does the same
    split with f32 bit masks and three f32 dots, so the interpret tests see the device's rounding.
  """
  if platform == "gpu":
    return "tf32x3_emulated" if interpret else "tf32x3"
  return "bf16x3"


def _dot(a, b, contract, acc_dtype, mode="bf16x3"):
  """dot_general contracting a's axis contract[0] with b's axis contract[1] (rank 2, no batch)."""
  if a.dtype == b.dtype == jnp.float32:
    if mode in ("tf32x3", "tf32x3_emulated"):
      return _dots.tf32x3_dot(a, b, contract, acc_dtype, emulate=mode == "tf32x3_emulated")
    if mode == "bf16x3":
      return _dots.bf16x3_dot(a, b, contract, acc_dtype)
  return jax.lax.dot_general(
    a,
    b,
    (((contract[0],), (contract[1],)), ((), ())),
    precision=_HIGHEST,
    preferred_element_type=acc_dtype,
  )


def cell_delta(xrow, nodes_col, invw_col, G: int):
  """Cell, local coordinate and inverse width of a row of inputs, inside a kernel.

  Args:
    xrow: (1, bb) inputs (one coordinate of one pair for bb samples).
    nodes_col, invw_col: (G1_pad, 1) node values t_k and inverse widths r_k (zero padded).
    G: intervals per axis (static).
  Returns:
    (c, δ, r_c): c (1, bb) int32 = clamp(⌊G·σ(x)⌋, 0, G−1) with σ the Laplace(0, 1) CDF computed as
    in `grid.laplace_cdf`; δ = (x − t_c)·r_c (1, bb), unclamped; r_c (1, bb).
  """
  e = jnp.exp(-jnp.abs(xrow))
  s = jnp.where(xrow <= 0, 0.5 * e, 1.0 - 0.5 * e)
  c = jnp.clip(jnp.floor(G * s).astype(jnp.int32), 0, G - 1)
  ids = jax.lax.broadcasted_iota(jnp.int32, (nodes_col.shape[0], xrow.shape[1]), 0)
  hit = ids == c
  zero = jnp.zeros((), xrow.dtype)
  t_c = jnp.sum(jnp.where(hit, nodes_col, zero), axis=0, keepdims=True)
  r_c = jnp.sum(jnp.where(hit, invw_col, zero), axis=0, keepdims=True)
  return c, (xrow - t_c) * r_c, r_c


def _pair_geometry(x1, x2, nodes_col, invw_col, G: int, c_pad: int):
  """Cells and weights of one pair for a batch window: the iota grid and the flat 00 corner."""
  c1, d1, r1 = cell_delta(x1, nodes_col, invw_col, G)
  c2, d2, r2 = cell_delta(x2, nodes_col, invw_col, G)
  flat = c1 * (G + 1) + c2  # (1, bb)
  ids = jax.lax.broadcasted_iota(jnp.int32, (c_pad, x1.shape[1]), 0) - flat  # (C_pad, bb)
  return ids, d1, d2, r1, r2


def _corner_matrix(ids, G: int, v00, v01, v10, v11):
  """(C_pad, bb) matrix with v_uv (1, bb) at the corner rows flat + {0, 1, G+1, G+2} of each column."""
  zero = jnp.zeros((), v00.dtype)
  m = jnp.where(ids == 0, v00, zero)
  m = m + jnp.where(ids == 1, v01, zero)
  m = m + jnp.where(ids == G + 1, v10, zero)
  return m + jnp.where(ids == G + 2, v11, zero)


def interpolation_matrix(x1, x2, nodes_col, invw_col, G: int, c_pad: int):
  """Sᵀ_p (C_pad, bb): the bilinear weights of one pair at its four flat corners, zero elsewhere.

  Args:
    x1, x2: (1, bb) the pair's two coordinates for bb samples.
    nodes_col, invw_col: (G1_pad, 1); G: intervals; c_pad: padded corner count.
  """
  ids, d1, d2, _, _ = _pair_geometry(x1, x2, nodes_col, invw_col, G, c_pad)
  e1, e2 = 1.0 - d1, 1.0 - d2
  return _corner_matrix(ids, G, e1 * e2, e1 * d2, d1 * e2, d1 * d2)


# ----------------------------------------------------------------------------------------------------
# Kernel bodies (shared by TPU and Triton).


def _fwd_kernel(x_ref, t_ref, n_ref, r_ref, o_ref, *, G, mode):
  """x (bp, 2, bb), table (bp, C_pad, bq), nodes/invw (G1_pad, 1) → y block (bq, bb), summed over p."""
  bp, c_pad, bq = t_ref.shape
  bb = x_ref.shape[2]
  nodes, invw = n_ref[...], r_ref[...]

  def pair(p, acc):
    x1 = x_ref[p, pl.ds(0, 1), :]
    x2 = x_ref[p, pl.ds(1, 1), :]
    s = interpolation_matrix(x1, x2, nodes, invw, G, c_pad)  # (C_pad, bb)
    return acc + _dot(t_ref[p], s, (0, 0), o_ref.dtype, mode)  # (bq, bb)

  acc = jax.lax.fori_loop(0, bp, pair, jnp.zeros((bq, bb), o_ref.dtype))

  @pl.when(pl.program_id(2) == 0)
  def _():
    o_ref[...] = jnp.zeros_like(o_ref)

  o_ref[...] += acc


def _fwd_kernel_resident(x_ref, t_ref, n_ref, r_ref, o_ref, *s_refs, G, mode):
  """TPU forward, grid (B/bb, P/bp, Q/bq): x (bp, 2, bb), table (bp, C_pad, bq) → the whole output
  column y (Q_pad, bb), resident in VMEM over the pair and output-tile axes.

  The interpolation matrices of the bp pairs are built once per (pair block, B-block), at the first
  output tile, into VMEM scratch — already split into bf16 heads and tails when the dots are bf16x3
  (`s_refs` = (S_hi, S_lo), each (bp, C_pad, bb) bf16; otherwise (S,) in x's dtype) — and reused by
  every output tile. Sums are taken in the same order as `_fwd_kernel` (per output tile: pairs of the
  block in order, added to the output), so both forms give bitwise equal results.
  """
  bp, c_pad, bq = t_ref.shape
  bb = x_ref.shape[2]
  pi, qi = pl.program_id(1), pl.program_id(2)
  split = len(s_refs) == 2

  @pl.when((pi == 0) & (qi == 0))
  def _zero():
    o_ref[...] = jnp.zeros_like(o_ref)

  @pl.when(qi == 0)
  def _build():
    nodes, invw = n_ref[...], r_ref[...]

    def pair(p, carry):
      s = interpolation_matrix(
        x_ref[p, pl.ds(0, 1), :], x_ref[p, pl.ds(1, 1), :], nodes, invw, G, c_pad
      )  # (C_pad, bb)
      if split:
        s_refs[0][p], s_refs[1][p] = _dots.split_bf16_2(s)
      else:
        s_refs[0][p] = s
      return carry

    jax.lax.fori_loop(0, bp, pair, 0)

  dims = (((0,), (0,)), ((), ()))

  def pair(p, acc):
    if split:  # _dots.bf16x3_dot with S pre-split (same terms, same order)
      t_hi, t_lo = _dots.split_bf16_2(t_ref[p])
      s_hi, s_lo = s_refs[0][p], s_refs[1][p]
      d = lambda u, v: jax.lax.dot_general(u, v, dims, preferred_element_type=o_ref.dtype)
      return acc + (d(t_lo, s_hi) + d(t_hi, s_lo) + d(t_hi, s_hi))
    return acc + _dot(t_ref[p], s_refs[0][p], (0, 0), o_ref.dtype, mode)  # (bq, bb)

  acc = jax.lax.fori_loop(0, bp, pair, jnp.zeros((bq, bb), o_ref.dtype))
  rows = pl.ds(pl.multiple_of(qi * bq, bq), bq)
  o_ref[rows, :] += acc


def _dt_kernel(x_ref, g_ref, n_ref, r_ref, o_ref, *, G, bb, mode):
  """x (2, bbo), dy (bq, bbo) → dT tile (C_pad, bq) owned by this program, accumulated over batch."""
  c_pad, bq = o_ref.shape
  n_inner = x_ref.shape[1] // bb
  nodes, invw = n_ref[...], r_ref[...]

  def window(i, acc):
    off = pl.multiple_of(i * bb, bb)
    x1 = x_ref[pl.ds(0, 1), pl.ds(off, bb)]
    x2 = x_ref[pl.ds(1, 1), pl.ds(off, bb)]
    s = interpolation_matrix(x1, x2, nodes, invw, G, c_pad)  # (C_pad, bb)
    return acc + _dot(s, g_ref[:, pl.ds(off, bb)], (1, 1), o_ref.dtype, mode)  # (C_pad, bq)

  acc = jax.lax.fori_loop(0, n_inner, window, jnp.zeros((c_pad, bq), o_ref.dtype))

  @pl.when(pl.program_id(2) == 0)
  def _():
    o_ref[...] = jnp.zeros_like(o_ref)

  o_ref[...] += acc


def _dx_kernel(x_ref, t_ref, g_ref, n_ref, r_ref, o_ref, *, G, bq, mode):
  """x (2, bb), table (C_pad, bqo), dy (bqo, bb) → dx block (2, bb), accumulated over output tiles."""
  c_pad = t_ref.shape[0]
  bb = x_ref.shape[1]
  n_inner = t_ref.shape[1] // bq
  nodes, invw = n_ref[...], r_ref[...]

  def window(i, h):
    off = pl.multiple_of(i * bq, bq)
    return h + _dot(t_ref[:, pl.ds(off, bq)], g_ref[pl.ds(off, bq), :], (1, 0), o_ref.dtype, mode)

  h = jax.lax.fori_loop(0, n_inner, window, jnp.zeros((c_pad, bb), o_ref.dtype))  # (C_pad, bb)
  x1 = x_ref[pl.ds(0, 1), :]
  x2 = x_ref[pl.ds(1, 1), :]
  ids, d1, d2, r1, r2 = _pair_geometry(x1, x2, nodes, invw, G, c_pad)
  e1, e2 = 1.0 - d1, 1.0 - d2
  # ∂S/∂δ1 and ∂S/∂δ2 at the corners (00, 01, 10, 11); ∂δ/∂x = r_c.
  ds1 = _corner_matrix(ids, G, -e2, -d2, e2, d2)
  ds2 = _corner_matrix(ids, G, -e1, e1, -d1, d1)
  dx1 = r1 * jnp.sum(h * ds1, axis=0, keepdims=True)
  dx2 = r2 * jnp.sum(h * ds2, axis=0, keepdims=True)

  @pl.when(pl.program_id(2) == 0)
  def _():
    o_ref[...] = jnp.zeros_like(o_ref)

  o_ref[pl.ds(0, 1), :] += dx1
  o_ref[pl.ds(1, 1), :] += dx2


# ----------------------------------------------------------------------------------------------------
# pallas_call wrappers, one per backend (compiler_params must match the platform).


def _compiler_params(
  platform: str, n_parallel: int, *, num_warps: int, num_stages: int, vmem_limit_bytes: int | None
):
  if platform == "tpu":
    return pltpu.CompilerParams(
      dimension_semantics=("parallel",) * n_parallel + ("arbitrary",),
      vmem_limit_bytes=vmem_limit_bytes,
    )
  if platform == "gpu":
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages)
  raise ValueError(f"platform must be one of {PLATFORMS}; got {platform!r}")


def _check_layouts(x, table, nodes, invw):
  p, two, b = x.shape
  if two != 2 or table.ndim != 3 or table.shape[0] != p:
    raise ValueError(
      f"kernel layouts: x must be (P, 2, B) and table (P, C_pad, Q); got x {x.shape}, "
      f"table {table.shape}"
    )
  if nodes.shape != invw.shape or nodes.ndim != 2 or nodes.shape[1] != 1:
    raise ValueError(f"nodes and invw must be (G1_pad, 1); got {nodes.shape}, {invw.shape}")


def _check_div(name, n, block):
  if block <= 0 or n % block:
    raise ValueError(f"{name} = {n} is not a multiple of its block {block} (pad first)")


def portable_forward(
  x,
  table,
  nodes,
  invw,
  *,
  G,
  platform,
  bq,
  bb,
  bp,
  num_warps=4,
  num_stages=2,
  vmem_limit_bytes=None,
  interpret=False,
):
  """y (Q_pad, B_pad) = Σ_p T_pᵀ·S_p on padded, batch-last operands.

  Args:
    x: (P_pad, 2, B_pad); table: (P_pad, C_pad, Q_pad); nodes, invw: (G1_pad, 1), same float dtype.
    G: intervals per axis; platform: "tpu" (Mosaic params) or "gpu" (Triton params).
    bq, bb: output and batch blocks; bp: pairs per reduction step (TPU; Triton uses bp = P_pad).
    vmem_limit_bytes: Mosaic scoped-VMEM limit (None: 16 MiB assumed for the choice below).
  Returns:
    y: (Q_pad, B_pad) in x's dtype.

  On TPU, when the double-buffered output column (Q_pad, bb) fits a quarter of the VMEM limit, the
  grid is (B/bb, P/bp, Q/bq) with that column resident and each pair's interpolation matrix built
  once per (pair, B-block) (`_fwd_kernel_resident`); otherwise (very wide layers) and on Triton the
  grid is (Q/bq, B/bb, P/bp) and the matrix is rebuilt for every output tile (`_fwd_kernel`). Both
  give bitwise equal results.
  """
  _check_layouts(x, table, nodes, invw)
  p, _, b = x.shape
  c_pad, q = table.shape[1:]
  for name, n, blk in (("Q_pad", q, bq), ("B_pad", b, bb), ("P_pad", p, bp)):
    _check_div(name, n, blk)
  g1 = nodes.shape[0]
  itemsize = x.dtype.itemsize
  mode = dot_mode(platform, interpret)
  budget = (vmem_limit_bytes or 16 * 2**20) // 4
  if platform == "tpu" and 2 * q * bb * itemsize <= budget:
    # Output column resident (double-buffered (Q_pad, bb) within a quarter of the VMEM limit):
    # interpolation matrices built once per (pair, B-block), not once per output tile.
    split = mode == "bf16x3" and x.dtype == jnp.float32
    scratch = (
      [pltpu.VMEM((bp, c_pad, bb), jnp.bfloat16)] * 2
      if split
      else [pltpu.VMEM((bp, c_pad, bb), x.dtype)]
    )
    cost = pl.CostEstimate(
      flops=int(2 * b * p * c_pad * q * (3 if split else 1) + 40 * b * p * c_pad),
      transcendentals=int(2 * b * p),
      bytes_accessed=int(itemsize * (x.size + table.size * (b // bb) + q * b)),
    )
    return pl.pallas_call(
      functools.partial(_fwd_kernel_resident, G=G, mode=mode),
      out_shape=jax.ShapeDtypeStruct((q, b), x.dtype),
      grid=(b // bb, p // bp, q // bq),
      in_specs=[
        pl.BlockSpec((bp, 2, bb), lambda j, k, i: (k, 0, j)),
        pl.BlockSpec((bp, c_pad, bq), lambda j, k, i: (k, 0, i)),
        pl.BlockSpec((g1, 1), lambda j, k, i: (0, 0)),
        pl.BlockSpec((g1, 1), lambda j, k, i: (0, 0)),
      ],
      out_specs=pl.BlockSpec((q, bb), lambda j, k, i: (0, j)),
      scratch_shapes=scratch,
      compiler_params=pltpu.CompilerParams(
        dimension_semantics=("parallel", "arbitrary", "arbitrary"),
        vmem_limit_bytes=vmem_limit_bytes,
      ),
      cost_estimate=cost,
      interpret=interpret,
      name="spline_lookup_fwd_tpu",
    )(x, table, nodes, invw)
  grid = (q // bq, b // bb, p // bp)
  cost = pl.CostEstimate(
    flops=int(2 * b * p * c_pad * q + 40 * b * p * c_pad * (q // bq)),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(itemsize * (x.size * (q // bq) + table.size * (b // bb) + q * b)),
  )
  return pl.pallas_call(
    functools.partial(_fwd_kernel, G=G, mode=mode),
    out_shape=jax.ShapeDtypeStruct((q, b), x.dtype),
    grid=grid,
    in_specs=[
      pl.BlockSpec((bp, 2, bb), lambda i, j, k: (k, 0, j)),
      pl.BlockSpec((bp, c_pad, bq), lambda i, j, k: (k, 0, i)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((bq, bb), lambda i, j, k: (i, j)),
    compiler_params=_compiler_params(
      platform, 2, num_warps=num_warps, num_stages=num_stages, vmem_limit_bytes=vmem_limit_bytes
    ),
    cost_estimate=cost,
    interpret=interpret,
    name=f"spline_lookup_fwd_{platform}",
  )(x, table, nodes, invw)


def portable_table_grad(
  x,
  dy,
  nodes,
  invw,
  *,
  G,
  c_pad,
  platform,
  bq,
  bbo,
  bb,
  num_warps=4,
  num_stages=2,
  vmem_limit_bytes=None,
  interpret=False,
):
  """dT (P_pad, C_pad, Q_pad) = Σ_b S_p·dyᵀ, owner-computes (no atomics, bitwise repeatable).

  Args:
    x: (P_pad, 2, B_pad); dy: (Q_pad, B_pad); nodes, invw: (G1_pad, 1).
    G: intervals; c_pad: padded corner count; platform: "tpu" or "gpu".
    bq: output tile owned by a program; bbo: batch block per reduction grid step (Triton: B_pad);
    bb: batch window of the in-kernel loop (divides bbo).
  Returns:
    dT: (P_pad, C_pad, Q_pad); rows ≥ (G+1)² are exactly zero.
  """
  p, _, b = x.shape
  q = dy.shape[0]
  if dy.shape != (q, b):
    raise ValueError(f"dy must be (Q_pad, B_pad) with B_pad = {b}; got {dy.shape}")
  for name, n, blk in (("Q_pad", q, bq), ("B_pad", b, bbo), ("bbo", bbo, bb)):
    _check_div(name, n, blk)
  g1 = nodes.shape[0]
  grid = (p, q // bq, b // bbo)
  itemsize = x.dtype.itemsize
  cost = pl.CostEstimate(
    flops=int(2 * b * p * c_pad * q + 20 * b * p * c_pad * (q // bq)),
    transcendentals=int(2 * b * p * (q // bq)),
    bytes_accessed=int(itemsize * (x.size * (q // bq) + dy.size * p + p * c_pad * q)),
  )
  return pl.pallas_call(
    functools.partial(_dt_kernel, G=G, bb=bb, mode=dot_mode(platform, interpret)),
    out_shape=jax.ShapeDtypeStruct((p, c_pad, q), x.dtype),
    grid=grid,
    in_specs=[
      pl.BlockSpec((None, 2, bbo), lambda i, j, k: (i, 0, k)),
      pl.BlockSpec((bq, bbo), lambda i, j, k: (j, k)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((None, c_pad, bq), lambda i, j, k: (i, 0, j)),
    compiler_params=_compiler_params(
      platform, 2, num_warps=num_warps, num_stages=num_stages, vmem_limit_bytes=vmem_limit_bytes
    ),
    cost_estimate=cost,
    interpret=interpret,
    name=f"spline_lookup_dtable_{platform}",
  )(x, dy, nodes, invw)


def portable_input_grad(
  x,
  table,
  dy,
  nodes,
  invw,
  *,
  G,
  platform,
  bb,
  bqo,
  bq,
  num_warps=4,
  num_stages=2,
  vmem_limit_bytes=None,
  interpret=False,
):
  """dx (P_pad, 2, B_pad) by the closed form, with H = T_p·dy computed by matmul.

  Args:
    x: (P_pad, 2, B_pad); table: (P_pad, C_pad, Q_pad); dy: (Q_pad, B_pad); nodes, invw: (G1_pad, 1).
    G: intervals; platform: "tpu" or "gpu".
    bb: batch block; bqo: output block per reduction grid step (Triton: Q_pad); bq: output window of the
    in-kernel loop (divides bqo).
  Returns:
    dx: (P_pad, 2, B_pad).
  """
  _check_layouts(x, table, nodes, invw)
  p, _, b = x.shape
  c_pad, q = table.shape[1:]
  if dy.shape != (q, b):
    raise ValueError(f"dy must be (Q_pad, B_pad) = {(q, b)}; got {dy.shape}")
  for name, n, blk in (("B_pad", b, bb), ("Q_pad", q, bqo), ("bqo", bqo, bq)):
    _check_div(name, n, blk)
  g1 = nodes.shape[0]
  grid = (p, b // bb, q // bqo)
  itemsize = x.dtype.itemsize
  cost = pl.CostEstimate(
    flops=int(2 * b * p * c_pad * q + 30 * b * p * c_pad * (q // bqo)),
    transcendentals=int(2 * b * p * (q // bqo)),
    bytes_accessed=int(itemsize * (x.size * (q // bqo) + table.size * (b // bb) + dy.size * p)),
  )
  return pl.pallas_call(
    functools.partial(_dx_kernel, G=G, bq=bq, mode=dot_mode(platform, interpret)),
    out_shape=jax.ShapeDtypeStruct((p, 2, b), x.dtype),
    grid=grid,
    in_specs=[
      pl.BlockSpec((None, 2, bb), lambda i, j, k: (i, 0, j)),
      pl.BlockSpec((None, c_pad, bqo), lambda i, j, k: (i, 0, k)),
      pl.BlockSpec((bqo, bb), lambda i, j, k: (k, j)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
      pl.BlockSpec((g1, 1), lambda i, j, k: (0, 0)),
    ],
    out_specs=pl.BlockSpec((None, 2, bb), lambda i, j, k: (i, 0, j)),
    compiler_params=_compiler_params(
      platform, 2, num_warps=num_warps, num_stages=num_stages, vmem_limit_bytes=vmem_limit_bytes
    ),
    cost_estimate=cost,
    interpret=interpret,
    name=f"spline_lookup_dx_{platform}",
  )(x, table, dy, nodes, invw)
