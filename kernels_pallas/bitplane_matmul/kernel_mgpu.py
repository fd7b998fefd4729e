"""GPU (Pallas Mosaic GPU, Hopper and newer) lookup-table decode GEMV for the AnyBCQ bit-plane matmul.

AnyBCQ (Park et al., ICLR 2026; github.com/naver-aics/anybcq) serves batch-1 decode with a
LUT-GEMM-style kernel: for each chunk of 8 inputs a 256-entry table holds every signed sum
``T[mu] = sum_i x_i (2 bit_i(mu) - 1)``, and one table lookup indexed by a byte of a packed plane
word replaces 8 multiply-adds. This module is that design on the project's packing
(``format.pack_planes``, unchanged): a byte of word ``r`` of pack tile ``t`` is already a chunk,

    bits 8q .. 8q + 7 of word r  <->  inputs 256 t + 64 q + 8 i + r   (i = 0 .. 7),

so chunk ``(t, q, r)`` gets its own table, and a chunk lies in group ``(64 q) // g`` of its tile.

Launch (``plgpu.kernel``): grid ``(Np / BN, split_k)``, one warpgroup (128 threads) per block;
thread ``tid`` owns the ``cpt`` adjacent output columns ``j BN + cpt·tid + c`` (BN = 128 cpt) and
reads their plane words with one ``cpt``-wide vector load. Block ``(j, s)`` covers the K slice of
``tiles`` pack tiles starting at tile ``s · tiles``; the f32 partial outputs ``(split_k, Mp, Np)``
are summed by the caller (no atomics), as in the Triton kernel.

Per row m (a run-time loop; each row has its own precision, so mixed-precision batches need no
special variant):

1. **Table build** into shared memory (``plgpu.SMEM`` scratch, ``(32 · tiles, 256)`` f32, 32 KiB
   per tile): warp w builds chunks w, w + 4, ...; lane l owns entries ``mu = 32 h + l`` (h < 8):
   ``L = sum_{i<5} (+-x_i)`` with the lane's fixed signs, ``H_h = +-x_5 +-x_6 +-x_7`` (uniform
   in the warp) and ``T[32 h + l] = L + H_h``: 8 conflict-free 32-bit stores per lane and chunk.
2. **Lookups** (the hot loop, ``p_m`` planes, a run-time trip count): per plane word
   ``part[q] += T[chunk(t, q, r)][(w >> 8q) & 255]`` for its 4 bytes (shift, AND, shared-memory
   load at a constant offset, add), then per group ``acc += alpha[offset(p_m) + b, G] · part_G``.
   The shared-memory load indexed by a run-time byte is written with ``plgpu.inline_mgpu``: Pallas
   refuses an SMEM ref indexed by an array (``int_indexer_shape non-empty``), and Mosaic GPU has no
   gather. The whole per-thread body is one ``inline_mgpu`` region (raw MLIR: LLVM loads and
   stores with explicit alignment, ``scf.for`` loops), so what the compiler sees is exactly the
   index math of ``emulate`` below.
3. ``acc += s_{m,G} · beta[index(p_m), G]`` (group sums of x, computed by the caller), stored.

Rows with ``p_m = 0`` (padding, invalid precisions) do no lookups. ``inline_mgpu`` has no discharge
rule, so this kernel cannot run in interpret mode: ``emulate`` (NumPy, the same table layout,
byte extraction, accumulation order and split-K partials) is its CPU oracle, and the compile tier
(``benchmarks/_targets.mgpu_compile``) compiles it for sm_90a without a chip.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from kernels_pallas import _backend
from kernels_pallas.bitplane_matmul import format as fmt

THREADS = 128  # one warpgroup per block
CHUNKS_PER_TILE = fmt.TILE // 8  # 32 chunks of 8 inputs per 256-input pack tile
ENTRIES = 256  # table entries per chunk
COLS_PER_THREAD = (1, 2, 4)


def chunk_id(t: int, q: int, r: int) -> int:
  """Table row of chunk (tile t of the block's slice, byte q, word r): ``32 t + 8 q + r``."""
  return CHUNKS_PER_TILE * t + 8 * q + r


def chunk_inputs(q: int, r: int) -> tuple[int, ...]:
  """The 8 inputs of chunk (q, r) within its pack tile, bit i of the byte first: 64 q + 8 i + r."""
  return tuple(64 * q + 8 * i + r for i in range(8))


def block_n(cols_per_thread: int) -> int:
  return THREADS * cols_per_thread


def check_lut_operands(kp: int, np_: int, g: int, cols_per_thread: int, tiles: int) -> int:
  """Checks blocks and returns split_k (the number of K slices)."""
  if cols_per_thread not in COLS_PER_THREAD:
    raise ValueError(f"cols_per_thread must be one of {COLS_PER_THREAD}; got {cols_per_thread}")
  if g not in fmt.GROUP_SIZES:
    raise ValueError(f"group size {g} is not one of {fmt.GROUP_SIZES}")
  if kp % (fmt.TILE * tiles):
    raise ValueError(f"K_pad = {kp} is not a multiple of {tiles} pack tiles of {fmt.TILE}")
  if np_ % block_n(cols_per_thread):
    raise ValueError(f"N_pad = {np_} is not a multiple of BN = {block_n(cols_per_thread)}")
  return kp // (fmt.TILE * tiles)


# ----------------------------------------------------------------------------------------------
# The NumPy emulation (CPU oracle): the kernel's table build, byte extraction and sums, in f32.


def emulate(xf, planes, alpha, beta, meta, xsum, *, group_size, cols_per_thread=4, tiles=1):
  """What the kernel computes, in NumPy float32, with its exact index math and summation order.

  Args:
    xf: f32 ``(Mp, Kp)``; planes uint32 ``(NB, Kp/32, Np)``; alpha ``(S, Kp/g, Np)``; beta
      ``(|P|, Kp/g, Np)`` or None; meta int32 ``(Mp, 4)`` rows ``[p_m, offset(p_m), index(p_m), 0]``;
      xsum f32 ``(Mp, Kp/g)`` group sums of x (the caller's).
  Returns:
    f32 ``(split_k, Mp, Np)`` partial outputs (sum over axis 0 for y).
  """
  xf = np.asarray(xf, np.float32)
  planes = np.asarray(planes, np.uint32)
  alpha = np.asarray(alpha, np.float32)
  beta = None if beta is None else np.asarray(beta, np.float32)
  meta = np.asarray(meta, np.int32)
  xsum = np.asarray(xsum, np.float32)
  mp, kp = xf.shape
  np_ = planes.shape[2]
  g = group_size
  split = check_lut_operands(kp, np_, g, cols_per_thread, tiles)
  gpt = fmt.TILE // g  # groups per tile
  qpg = 4 // gpt  # bytes (q values) per group
  out = np.zeros((split, mp, np_), np.float32)
  lane = np.arange(32)
  lo_sign = np.where((lane[:, None] >> np.arange(5)) & 1, 1.0, -1.0).astype(np.float32)  # (32, 5)
  for s in range(split):
    t0 = s * tiles
    for m in range(mp):
      p_m, off, idx = int(meta[m, 0]), int(meta[m, 1]), int(meta[m, 2])
      table = np.zeros((CHUNKS_PER_TILE * tiles, ENTRIES), np.float32)
      for t in range(tiles):
        for q in range(4):
          for r in range(8):
            xi = xf[m, (t0 + t) * fmt.TILE + np.asarray(chunk_inputs(q, r))]  # (8,)
            lsum = lo_sign[:, 0] * xi[0]
            for i in range(1, 5):
              lsum = np.float32(lo_sign[:, i] * xi[i] + lsum)  # FFMA chain, per lane
            a, b = np.float32(xi[5] + xi[6]), np.float32(xi[6] - xi[5])
            h = [-a, -b, b, a]
            hh = [np.float32(v - xi[7]) for v in h] + [np.float32(v + xi[7]) for v in h]
            for hi in range(8):
              table[chunk_id(t, q, r), 32 * hi + lane] = lsum + hh[hi]
      acc = np.zeros((np_,), np.float32)
      for b in range(p_m):
        for t in range(tiles):
          parts = np.zeros((gpt, np_), np.float32)
          for r in range(8):
            w = planes[b, (t0 + t) * fmt.WORDS_PER_TILE + r]  # (Np,)
            for q in range(4):
              byte = (w >> np.uint32(8 * q)) & np.uint32(255)
              parts[q // qpg] += table[chunk_id(t, q, r), byte]
          for gl in range(gpt):
            gi = (t0 + t) * gpt + gl
            acc = np.float32(alpha[off + b, gi] * parts[gl] + acc)
      if beta is not None:
        for t in range(tiles):
          for gl in range(gpt):
            gi = (t0 + t) * gpt + gl
            acc = np.float32(xsum[m, gi] * beta[idx, gi] + acc)
      out[s, m] = acc
  return out


# ----------------------------------------------------------------------------------------------
# The kernel.


def _scalar(arr):
  """The i32 value held by a splat FragmentedArray of shape ()."""
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import vector

  v = np.asarray(arr.registers).reshape(-1)[0]
  if isinstance(v.type, ir.VectorType):
    v = vector.extract(v, dynamic_position=[], static_position=[0])
  return v


def _mgpu_body(
  ctx, j_arr, s_arr, x, planes, alpha, beta, xsum, meta, out, table, *, g, cpt, tiles, has_beta
):
  """The per-thread body as raw MLIR (inside ``plgpu.inline_mgpu``): see the module docstring.
  ``j_arr`` / ``s_arr`` are the block's grid indices (column block, K slice) as splat arrays."""
  del ctx
  from jax._src.lib.mlir import ir
  from jax._src.lib.mlir.dialects import arith, gpu, llvm, scf
  from jax._src.lib.mlir.dialects import math as mmath
  from jax.experimental.mosaic.gpu import utils as mu

  i32 = ir.IntegerType.get_signless(32)
  f32 = ir.F32Type.get()
  gptr = llvm.PointerType.get(1)  # global
  c = lambda v: mu.c(v, i32)
  fc = lambda v: mu.c(float(v), f32)
  none = llvm.GEPNoWrapFlags.none
  fma = mmath.fma

  def global_ptr(ref):
    return llvm.addrspacecast(gptr, mu.memref_ptr(ref))

  def gep(ptr, index, elem):
    return llvm.getelementptr(ptr.type, ptr, [index], [mu.DYNAMIC32], elem, none)

  def gep_const(ptr, offset, elem):
    return llvm.getelementptr(ptr.type, ptr, [], [offset], elem, none)

  def load(ptr, ty, align, invariant=False):
    return llvm.load(ty, ptr, alignment=align, invariant=invariant or None)

  def elem_type(ref):
    return ir.MemRefType(ref.type).element_type

  xt_elem = elem_type(x)
  a_elem = elem_type(alpha)
  b_elem = elem_type(beta) if has_beta else None
  mp, kp = ir.MemRefType(x.type).shape
  _, kw, np_ = ir.MemRefType(planes.type).shape
  _, groups, _ = ir.MemRefType(alpha.type).shape
  gpt = fmt.TILE // g
  qpg = 4 // gpt
  bn = block_n(cpt)

  x_p, pl_p, a_p, s_p, meta_p, o_p = map(global_ptr, (x, planes, alpha, xsum, meta, out))
  b_p = global_ptr(beta) if has_beta else None
  t_p = mu.memref_ptr(table)  # shared (address space 3)
  t_base = llvm.ptrtoint(i32, t_p)  # its 32-bit shared-window address

  def lookup(word, q, offset):
    """``T[offset / 1024][(word >> 8q) & 255]``: byte extract, address, shared load (3 PTX).

    Inline PTX because LLVM keeps shared pointers 64 bits wide (a ``mul.wide`` + ``add.s64`` per
    lookup); ``bfe`` + ``mad.lo`` + ``ld.shared [r + offset]`` is the 32-bit form."""
    asm = (
      "{ .reg .u32 t; "
      f"bfe.u32 t, $1, {8 * q}, 8; "
      "mad.lo.u32 t, t, 4, $2; "
      f"ld.shared.f32 $0, [t+{offset}]; }}"
    )
    return llvm.inline_asm(f32, [word, t_base], asm, "=f,r,r", asm_dialect=0)

  tid = arith.index_cast(i32, gpu.thread_id(gpu.Dimension.x))
  lane = arith.andi(tid, c(31))
  warp = arith.shrui(tid, c(5))
  j, split = _scalar(j_arr), _scalar(s_arr)
  col0 = arith.addi(arith.muli(j, c(bn)), arith.muli(tid, c(cpt)))  # first owned column
  k_tile0 = arith.muli(split, c(tiles))  # first pack tile of the slice
  g0 = arith.muli(k_tile0, c(gpt))  # first group of the slice

  # The lane's fixed signs for inputs 0..4 of every chunk (bit i of the lane index).
  signs = []
  for i in range(5):
    bit = arith.andi(arith.shrui(lane, c(i)), c(1))
    signs.append(arith.select(arith.cmpi(arith.CmpIPredicate.ne, bit, c(0)), fc(1.0), fc(-1.0)))

  vec = lambda elem: ir.VectorType.get([cpt], elem) if cpt > 1 else elem
  extract = lambda v, i: llvm.extractelement(v, c(i)) if cpt > 1 else v

  def load_cols(base_ptr, row_offset, elem):
    """The thread's cpt columns of one row (a vector load, widened to f32)."""
    ptr = gep(base_ptr, arith.addi(row_offset, col0), elem)
    v = load(ptr, vec(elem), cpt * mu.bitwidth(elem) // 8, invariant=True)
    vals = [extract(v, i) for i in range(cpt)]
    if elem not in (f32, i32):
      vals = [arith.extf(f32, e) for e in vals]
    return vals

  def row_body(m, _):
    meta_row = gep(meta_p, arith.muli(m, c(4)), i32)
    p_m = load(meta_row, i32, 4)
    off = load(gep_const(meta_row, 1, i32), i32, 4)
    idx = load(gep_const(meta_row, 2, i32), i32, 4)

    mu.warpgroup_barrier()  # the previous row's lookups are done before the table is rebuilt
    # 1. Table build: warp w builds chunks w, w + 4, ... of the slice.
    x_row = gep(x_p, arith.addi(arith.muli(m, c(kp)), arith.muli(k_tile0, c(fmt.TILE))), xt_elem)
    for cid in range(CHUNKS_PER_TILE * tiles // 4):
      # chunk_id(t, q, r) = 4 cid + warp; its inputs 256 t + 64 q + 8 i + r.
      chunk = arith.addi(c(4 * cid), warp)
      t = arith.shrui(chunk, c(5))
      q = arith.andi(arith.shrui(chunk, c(3)), c(3))
      r = arith.andi(chunk, c(7))
      first = arith.addi(arith.addi(arith.muli(t, c(fmt.TILE)), arith.muli(q, c(64))), r)
      xs = []
      for i in range(8):
        xv = load(gep(x_row, arith.addi(first, c(8 * i)), xt_elem), xt_elem, 4, invariant=True)
        xs.append(xv if xt_elem == f32 else arith.extf(f32, xv))
      lsum = arith.mulf(signs[0], xs[0])
      for i in range(1, 5):
        lsum = fma(signs[i], xs[i], lsum)
      a = arith.addf(xs[5], xs[6])
      bb = arith.subf(xs[6], xs[5])
      h4 = [arith.negf(a), arith.negf(bb), bb, a]
      hh = [arith.subf(v, xs[7]) for v in h4] + [arith.addf(v, xs[7]) for v in h4]
      row_ptr = gep(t_p, arith.addi(arith.muli(chunk, c(ENTRIES)), lane), f32)
      for hi in range(8):
        llvm.store(arith.addf(lsum, hh[hi]), gep_const(row_ptr, 32 * hi, f32), alignment=4)
    mu.warpgroup_barrier()

    # 2. Lookups over the p_m active planes (run-time trip count).
    zeros = [fc(0.0)] * cpt

    def plane_body(b, acc):
      acc = list(acc)
      a_row = arith.addi(off, b)
      for t in range(tiles):
        parts = [[None] * cpt for _ in range(gpt)]
        for r in range(8):
          kw_idx = arith.addi(arith.muli(arith.addi(k_tile0, c(t)), c(fmt.WORDS_PER_TILE)), c(r))
          word_row = arith.muli(arith.addi(arith.muli(b, c(kw)), kw_idx), c(np_))
          words = load_cols(pl_p, word_row, i32)
          for q in range(4):
            offset = chunk_id(t, q, r) * ENTRIES * 4  # bytes: the chunk's table row
            for ci in range(cpt):
              val = lookup(words[ci], q, offset)
              part = parts[q // qpg][ci]
              parts[q // qpg][ci] = val if part is None else arith.addf(part, val)
        for gl in range(gpt):
          gi = arith.addi(g0, c(t * gpt + gl))
          arow = arith.muli(arith.addi(arith.muli(a_row, c(groups)), gi), c(np_))
          coefs = load_cols(a_p, arow, a_elem)
          acc = [fma(coefs[ci], parts[gl][ci], acc[ci]) for ci in range(cpt)]
      return acc

    acc = _fori(p_m, zeros, plane_body)

    # 3. The offset term: acc += s_{m,G} · beta[index(p_m), G].
    if has_beta:
      for t in range(tiles):
        for gl in range(gpt):
          gi = arith.addi(g0, c(t * gpt + gl))
          s_g = load(gep(s_p, arith.addi(arith.muli(m, c(groups)), gi), f32), f32, 4)
          brow = arith.muli(arith.addi(arith.muli(idx, c(groups)), gi), c(np_))
          coefs = load_cols(b_p, brow, b_elem)
          acc = [fma(s_g, coefs[ci], acc[ci]) for ci in range(cpt)]

    o_row = arith.muli(arith.addi(arith.muli(split, c(mp)), m), c(np_))
    optr = gep(o_p, arith.addi(o_row, col0), f32)
    if cpt > 1:
      v = llvm.mlir_undef(vec(f32))
      for ci in range(cpt):
        v = llvm.insertelement(v, acc[ci], c(ci))
      llvm.store(v, optr, alignment=4 * cpt)
    else:
      llvm.store(acc[0], optr, alignment=4)
    return []

  def _fori(bound, carry, body):
    for_op = scf.ForOp(c(0), bound, c(1), carry)
    with ir.InsertionPoint(for_op.body):
      new = body(for_op.induction_variable, for_op.inner_iter_args)
      scf.YieldOp(new)
    return list(for_op.results)

  _fori(c(mp), [], row_body)


def bitplane_matmul_lut(
  xf, planes, alpha, beta, meta, xsum, *, group_size, cols_per_thread=4, tiles=1
):
  """Runs the Mosaic GPU LUT kernel on padded operands (see the module docstring).

  Args:
    xf: f32 ``(Mp, Kp)`` activations (widened once by the caller; Kp % (256 · tiles) == 0).
    planes: uint32 ``(NB, Kp/32, Np)``, ``Np % (128 · cols_per_thread) == 0``.
    alpha: ``(S, Kp/g, Np)`` scales (f32, bf16 or f16; widened per load).
    beta: ``(|P|, Kp/g, Np)`` or None (the offset term is compiled out).
    meta: int32 ``(Mp, 4)``, row m = ``[p_m, offset(p_m), index(p_m), 0]`` (``p_m = 0``: no planes).
    xsum: f32 ``(Mp, Kp/g)`` group sums of x (read only when beta is given).
    group_size: g in {64, 128, 256}; cols_per_thread: 1, 2 or 4; tiles: pack tiles per K slice.
  Returns:
    f32 ``(split_k, Mp, Np)`` partial outputs; ``y = sum(axis=0)``.
  """
  from jax.experimental import pallas as pl  # noqa: F401  (the Pallas package: imported lazily)
  from jax.experimental.pallas import mosaic_gpu as plgpu

  mp, kp = xf.shape
  np_ = planes.shape[2]
  split_k = check_lut_operands(kp, np_, group_size, cols_per_thread, tiles)
  if xf.dtype != jnp.float32 or planes.dtype != jnp.uint32 or meta.shape != (mp, 4):
    raise ValueError(
      f"LUT kernel operands: x must be f32 (got {xf.dtype}), planes uint32 (got {planes.dtype}), "
      f"meta (Mp, 4) int32 (got {meta.shape})"
    )
  has_beta = beta is not None
  if not has_beta:  # a placeholder the body never reads
    beta = jnp.zeros((1, 1, 1), jnp.float32)
  body = functools.partial(
    _mgpu_body, g=group_size, cpt=cols_per_thread, tiles=tiles, has_beta=has_beta
  )

  splat = plgpu.Layout.WG_SPLAT(shape=())
  # The six operands are read-only, the output and the table scratch are written: a kernel that
  # declares a write to an input ref passed as an array is refused (jax 0.12; 0.11 has no flag).
  ref_types = (_backend.mgpu_read_only_ref(),) * 6 + (plgpu.RefType(),) * 2

  def kernel(x_ref, planes_ref, alpha_ref, beta_ref, xsum_ref, meta_ref, out_ref, table_ref):
    j, s = jax.lax.axis_index("n"), jax.lax.axis_index("k")
    plgpu.inline_mgpu(arg_types=(splat, splat) + ref_types)(body)(
      j, s, x_ref, planes_ref, alpha_ref, beta_ref, xsum_ref, meta_ref, out_ref, table_ref
    )

  call = plgpu.kernel(
    kernel,
    out_type=jax.ShapeDtypeStruct((split_k, mp, np_), jnp.float32),
    grid=(np_ // block_n(cols_per_thread), split_k),
    grid_names=("n", "k"),
    scratch_types=[plgpu.SMEM((CHUNKS_PER_TILE * tiles, ENTRIES), jnp.float32)],
    kernel_name="bitplane_matmul_lut_mgpu",
  )
  return call(xf, planes, alpha, beta, xsum, meta)
