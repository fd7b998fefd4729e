"""TPU (Mosaic) kernels for the AnyBCQ bit-plane matmul ``y = x @ W^(p)``.

AnyBCQ (Park et al., ICLR 2026; github.com/naver-aics/anybcq) serves one stack of shared binary
planes at several precisions. The official CUDA kernel is a batch-1 LUT-GEMM-style GEMV; here the
planes are unpacked with shifts and masks and fed to the MXU, for any M.

Grid ``(M/bm, N/bn, K/bk)`` with dimension semantics ("parallel", "parallel", "arbitrary"); the K
reduction is last so revisits of an output block are consecutive. A scalar-prefetched int32
metadata vector ``[p, offset(p), precision index, 0]`` gives the active plane count. The **plane
loop runs inside the kernel** (``fori_loop(0, p)``): planes (and, for one precision, the alpha
rows ``offset(p) + b``) stay in HBM (``memory_space=ANY``) and each step DMAs the ``(bk/32, bn)``
word block of plane b into one of two VMEM slots while plane b-1 is unpacked from the other
(double-buffered; plane 0 of the next K block is started after the current block's last plane,
so only the first K block of an output block waits on an exposed copy). So **planes >= p are
never fetched**, and no grid step is spent on an inactive plane (a fourth grid axis over NB
would run ``NB - p`` empty steps per block and re-enter the pipeline once per plane). That is why
the planes are a loop inside the kernel and not a grid axis.

Variants (all accumulate in a VMEM f32 scratch ``(bm, bn)``, zeroed at ``k = 0`` and written out
at the last ``k``):

* ``partials`` (small M): x arrives in the pack tiles' *pair order* (``format.pair_order``, applied
  by ``ops.py``), so each plane block unpacks **two weights per 32-bit op**: ``(w << 14 − j) &
  0x40004000`` bitcast to bf16 puts 2.0 / 0.0 for bits j and j + 16 of every word into one lane
  (``format.pair_words``; exact in bf16, no compare, select or int -> float per weight). Per
  256-input tile the g-input groups of x are lane masks stacked along rows, so one MXU dot gives
  every group's ``u2 = x_G @ (2 bits_G)`` (f32 accumulation; f32 x as 3 exact bf16 passes,
  ``_dots.exact_bits_dot``), and ``acc += (u2 - s_G) * alpha_G`` with ``s_G`` the group row sum;
  at ``b == 0`` ``acc += s_G * beta_G``. With one real row (``m_real == 1``, decode) the K block's
  groups are the rows of a single LHS built once per K block, the scales multiply the dense
  ``(bk/g, bn)`` alpha block and the beta term is added once per K block. Compiled for v5e (final
  LLO, ``benchmarks/tpu_llo.py``) the decode plane loop issues 1.26 vector-ALU ops per
  (weight, plane) with bf16 x (1.47 with f32 x), against 7.1 for a per-weight shift, AND,
  compare, select and narrowing. (The blocks do not unpack into natural K order: the stored format
  is unchanged, x is permuted instead, once per call.)
* ``dequant`` (large M): ``W_tile (bk, bn) = beta + sum_b alpha_b * (2 bits_b - 1)`` accumulates
  in a VMEM scratch over the in-kernel plane loop; one MXU matmul ``x (bm, bk) @ W_tile`` after
  it. W is cast to the activation dtype (bf16 activations: W rounded by ~2^-8, not bit-faithful).
* ``mixed`` (partials with a per-row precision vector ``prec (M, 1)``): the alpha/beta blocks cover
  every stored precision (BlockSpec-pipelined; only the planes are DMA'd by hand); the per-row
  coefficient ``c[m] = sum_q [prec[m] = q and b < q] * alpha^(q)_b`` is built with one select per
  precision, and the partials ``t = 2 u - s`` are shared by all rows. The prefetched plane count is ``max(prec)``.

Inputs are already padded by ``ops.py``: x ``(Mp, Kp)``, planes uint32 ``(NB, Kp/32, Np)``, alpha
``(S, Kp/g, Np)`` and beta ``(|P|, Kp/g, Np)`` (viewed as ``(S, Kp/bk, bk/g, Np)`` by a free
reshape so a block's last two dims are ``(bk/g, bn)`` = full dim x lane multiple).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas import _dots
from kernels_pallas.bitplane_matmul import format as fmt

_F32 = jnp.float32


def _dot(a, b, precision):
  return jax.lax.dot_general(
    a, b, (((1,), (0,)), ((), ())), precision=precision, preferred_element_type=_F32
  )


def f16_bits_to_f32(h):
  """Exact float16 -> float32 from the raw half bits (uint16 or uint32 holding 0..0xFFFF).

  Mosaic rejects float16 vector loads on every TPU generation ("Invalid vector type for load"), so
  ``ops.py`` hands float16 scales to the kernel bitcast to uint16 (free: same width) and they are
  widened here with 32-bit integer ops and selects: normal numbers by rebiasing the exponent field
  (+112 = 127 - 15) and shifting the mantissa, subnormals as ``m * 2^-24`` (one int -> float per
  *scale*, not per weight), inf/NaN by forcing the f32 exponent to all ones. Signed zeros keep
  their sign. Shapes are preserved.
  """
  h = h.astype(jnp.uint32)
  sign = (h & jnp.uint32(0x8000)) << 16
  e = (h >> 10) & jnp.uint32(0x1F)
  m = h & jnp.uint32(0x3FF)
  normal = sign | ((e + jnp.uint32(112)) << 23) | (m << 13)
  special = sign | jnp.uint32(0x7F800000) | (m << 13)
  bits = jnp.where(e == jnp.uint32(0x1F), special, normal)
  val = jax.lax.bitcast_convert_type(bits, _F32)
  sub = m.astype(jnp.int32).astype(_F32) * _F32(2.0**-24)
  sub = jnp.where(sign != jnp.uint32(0), -sub, sub)
  return jnp.where(e == jnp.uint32(0), sub, val)


def _scale(v):
  """A loaded scale block as f32 (uint16 = float16 bits, see ``f16_bits_to_f32``)."""
  if v.dtype == jnp.uint16:
    return f16_bits_to_f32(v)
  return v.astype(_F32)


def _signed(words, j0, nbits, a):
  """alpha * (2 bit - 1) for a group, ``(8 nbits, bn)`` f32: a select between +a and -a."""
  bits = fmt.unpack_words(words, j0, nbits)
  return jnp.where(bits != 0, a, -a)


def _kernel(
  meta_ref, *refs, variant, mixed, has_beta, g, bk, bn, precisions, dot_precision, single_row
):
  it = iter(refs)
  prec_ref = next(it) if mixed else None
  x_ref, planes_hbm, alpha_ref = next(it), next(it), next(it)
  beta_ref = next(it) if has_beta else None
  o_ref, acc_ref, pbuf, psem = next(it), next(it), next(it), next(it)
  abuf, asem = (None, None) if mixed else (next(it), next(it))
  w_ref = next(it) if variant == "dequant" else None

  j, k = pl.program_id(1), pl.program_id(2)
  last_k = pl.num_programs(2) - 1
  p = meta_ref[0]
  xdtype = x_ref.dtype
  offsets = fmt.plane_offsets(precisions)
  kw = bk // 32

  def dmas(b, slot, kk=k):
    """Copies of plane b's (bk/32, bn) words of K block kk (and, single precision, its alpha rows)
    into VMEM slot `slot`."""
    cols = pl.ds(pl.multiple_of(j * bn, bn), bn)
    cps = [
      pltpu.make_async_copy(
        planes_hbm.at[b, pl.ds(pl.multiple_of(kk * kw, kw), kw), cols], pbuf.at[slot], psem.at[slot]
      )
    ]
    if not mixed:
      cps.append(
        pltpu.make_async_copy(
          alpha_ref.at[meta_ref[1] + b, kk, :, cols], abuf.at[slot], asem.at[slot]
        )
      )
    return cps

  def plane_loop(body):
    """for b in range(p): body(b, words_ref, alpha_block_ref) — plane b+1's DMA overlaps plane b,
    and plane 0 of the next K block is fetched (into slot 0, free by then) after the last plane, so
    only the first K block of each output block waits for its plane-0 copy."""

    @pl.when(k == 0)
    def _first():
      for c in dmas(0, 0):
        c.start()

    def step(b, carry):
      slot = b % 2

      @pl.when(b + 1 < p)
      def _prefetch():
        for c in dmas(b + 1, 1 - slot):
          c.start()

      for c in dmas(b, slot):
        c.wait()
      body(b, pbuf.at[slot], None if mixed else abuf.at[slot])
      return carry

    jax.lax.fori_loop(0, p, step, 0)

    @pl.when(k < last_k)
    def _next_block():
      for c in dmas(0, 0, k + 1):
        c.start()

  @pl.when(k == 0)
  def _init():
    acc_ref[...] = jnp.zeros(acc_ref.shape, _F32)

  if variant == "dequant":
    for gi in range(bk // g):
      rows = slice(gi * g, (gi + 1) * g)
      if has_beta:
        w_ref[rows, :] = jnp.broadcast_to(_scale(beta_ref[gi : gi + 1, :]), (g, w_ref.shape[1]))
      else:
        w_ref[rows, :] = jnp.zeros((g, w_ref.shape[1]), _F32)

    def accumulate_w(b, words_ref, a_ref):
      del b
      for t in range(bk // fmt.TILE):
        words = words_ref[8 * t : 8 * t + 8, :]
        for gt in range(fmt.TILE // g):
          gi = t * (fmt.TILE // g) + gt
          rows = slice(gi * g, (gi + 1) * g)
          w_ref[rows, :] += _signed(words, gt * g // 8, g // 8, _scale(a_ref[gi : gi + 1, :]))

    plane_loop(accumulate_w)
    acc_ref[...] += _dot(x_ref[...], w_ref[...].astype(xdtype), dot_precision)

  else:
    prec = prec_ref[...] if mixed else None  # (bm, 1) int32

    def coef(b, a_ref, gi):
      """The (1 or bm, bn) f32 scale of plane b for group gi."""
      if not mixed:
        return _scale(a_ref[gi : gi + 1, :])
      c = None
      for q, off in zip(precisions, offsets):
        row = off + jnp.minimum(b, q - 1)
        a = _scale(alpha_ref[row, gi : gi + 1, :])  # (1, bn)
        term = jnp.where((prec == q) & (b < q), a, 0.0)  # (bm, bn)
        c = term if c is None else c + term
      return c

    def beta_coef(gi):
      if not mixed:
        return _scale(beta_ref[gi : gi + 1, :])
      c = None
      for qi, q in enumerate(precisions):
        term = jnp.where(prec == q, _scale(beta_ref[qi, gi : gi + 1, :]), 0.0)
        c = term if c is None else c + term
      return c

    # x arrives in pair order (`fmt.pair_order`, applied by ops.py): every weight is unpacked to
    # 2.0 / 0.0 two per 32-bit op (`fmt.pair_words`), and the g-input groups of x are lane masks.
    bdt = jnp.bfloat16 if xdtype == _F32 else xdtype
    per_tile, gpb = fmt.TILE // g, bk // g

    def dot2(xs, bits2):  # x · (2 bits); f32 x as 3 exact bf16 passes (_dots.exact_bits_dot)
      return _dots.exact_bits_dot(xs, bits2) if xdtype == _F32 else _dot(xs, bits2, None)

    def unpack_block(words_ref):
      tiles = [
        fmt.pair_words(words_ref[8 * t : 8 * t + 8, :], lambda w: pltpu.bitcast(w, bdt))
        for t in range(bk // fmt.TILE)
      ]
      return jnp.concatenate(tiles, axis=0) if len(tiles) > 1 else tiles[0]  # (bk, bn)

    if single_row:
      # One real row (decode): the block's gpb groups become the rows of one LHS, row G = x
      # masked to group G (built once per K block, outside the plane loop), so one dot yields
      # every group's partial sum and the scales apply as the dense (gpb, bn) alpha block.
      q = jax.lax.broadcasted_iota(jnp.int32, (1, bk), 1)
      group = (q >> 8) * per_tile + fmt.pair_group(q & (fmt.TILE - 1), g)  # (1, bk)
      x0 = x_ref[0:1, :]
      rows = [jnp.where(group == gl, x0, jnp.zeros_like(x0)) for gl in range(gpb)]
      pad = -gpb % 16  # bf16 rows come in packs of 16
      rows += [jnp.zeros_like(x0)] * pad
      x_stack = jnp.concatenate(rows, axis=0)  # (gpb + pad, bk)
      s_stack = jnp.sum(x_stack[:gpb].astype(_F32), axis=1, keepdims=True)  # (gpb, 1)
      if has_beta:  # the offset term once per K block, not once per plane
        acc_ref[0:1, :] += jnp.sum(s_stack * _scale(beta_ref[...]), axis=0, keepdims=True)

      def partials(b, words_ref, a_ref):
        del b
        u2 = dot2(x_stack, unpack_block(words_ref))[:gpb]  # (gpb, bn): 2u per group
        term = (u2 - s_stack) * _scale(a_ref[...])  # (2u − s)·alpha, per group
        acc_ref[0:1, :] += jnp.sum(term, axis=0, keepdims=True)

    else:
      lane = jax.lax.broadcasted_iota(jnp.int32, (x_ref.shape[0], fmt.TILE), 1)
      in_group = [fmt.pair_group(lane, g) == gl for gl in range(per_tile)]

      def partials(b, words_ref, a_ref):
        acc = acc_ref[...]
        alpha_blk = None if mixed else _scale(a_ref[...])  # (gpb, bn), widened once per plane
        bits2 = unpack_block(words_ref)  # (bk, bn)
        for t in range(bk // fmt.TILE):
          xt = x_ref[:, t * fmt.TILE : (t + 1) * fmt.TILE]  # (bm, 256)
          xs = [jnp.where(m, xt, jnp.zeros_like(xt)) for m in in_group] if per_tile > 1 else [xt]
          # The tile's groups stacked along rows: one dot for all of them.
          xg = jnp.concatenate(xs, axis=0) if per_tile > 1 else xt  # (per_tile · bm, 256)
          u2 = dot2(xg, bits2[t * fmt.TILE : (t + 1) * fmt.TILE])
          bm_ = xt.shape[0]
          for gl, xgl in enumerate(xs):
            gi = t * per_tile + gl
            s = jnp.sum(xgl.astype(_F32), axis=1, keepdims=True)  # (bm, 1)
            a = coef(b, a_ref, gi) if mixed else alpha_blk[gi : gi + 1]
            acc = acc + (u2[gl * bm_ : (gl + 1) * bm_] - s) * a  # (2u − s)·alpha
            if has_beta:
              acc = acc + jnp.where(b == 0, s * beta_coef(gi), 0.0)
        acc_ref[...] = acc

    plane_loop(partials)

  @pl.when(k == last_k)
  def _write():
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def bitplane_matmul_tpu(
  x,
  planes,
  alpha,
  beta,
  meta,
  prec=None,
  *,
  precisions,
  group_size,
  variant,
  bm,
  bn,
  bk,
  out_dtype,
  vmem_limit_bytes=None,
  interpret=False,
  m_real=None,
):
  """Runs the Mosaic kernel on padded operands.

  Args:
    x: ``(Mp, Kp)`` activations (f32 or bf16), ``Mp % bm == 0``, ``Kp % bk == 0``; for the
      partials and mixed variants in pair order (``format.pair_order(x)``).
    planes: uint32 ``(NB, Kp/32, Np)``, ``Np % bn == 0``.
    alpha: ``(S, Kp/g, Np)`` scales (f32, bf16 or f16; multiplied in f32, f16 widened exactly
      from its bits in the kernel).
    beta: ``(|P|, Kp/g, Np)`` or None (symmetric; the beta term is compiled out).
    meta: int32 ``(4,)`` = ``[p, offset(p), precision index, 0]`` (mixed: ``[max(prec), 0, 0, 0]``).
    prec: None, or int32 ``(Mp, 1)`` per-row precisions (selects the ``mixed`` variant).
    precisions: the stored precisions (static); group_size: g in {64, 128, 256}.
    variant: ``"partials"`` or ``"dequant"`` (ignored when ``prec`` is given).
    bm, bn, bk: blocks; bm % 8 == 0, bn % 128 == 0, bk % 256 == 0, bk % g == 0.
    m_real: rows of x before padding (None: unknown). With one real row (decode) the partials
      variant stacks the K block's groups as the rows of one LHS (see ``_kernel``).
  Returns:
    ``(Mp, Np)`` in ``out_dtype``.
  """
  mp, kp = x.shape
  nb, kw, np_ = planes.shape
  g = group_size
  mixed = prec is not None
  variant = fmt.check_kernel_variant(variant, mixed, g)
  if bk % fmt.TILE or bk % g:
    raise ValueError(f"block bk = {bk} must be a multiple of the 256-input tile and of g = {g}")
  if bm % 8 or bn % 128:
    raise ValueError(f"TPU blocks need bm % 8 == 0 and bn % 128 == 0; got bm={bm}, bn={bn}")
  if mp % bm or kp % bk or np_ % bn or kw * 32 != kp:
    raise ValueError(
      f"operands must be padded to blocks: x {x.shape}, planes {planes.shape}, "
      f"blocks (bm, bk, bn) = {(bm, bk, bn)}"
    )
  # float16 vectors do not load on TPU: pass the raw half bits (a free same-width bitcast) and
  # widen them to f32 in the kernel (``f16_bits_to_f32``).
  if alpha.dtype == jnp.float16:
    alpha = jax.lax.bitcast_convert_type(alpha, jnp.uint16)
  if beta is not None and beta.dtype == jnp.float16:
    beta = jax.lax.bitcast_convert_type(beta, jnp.uint16)
  s_rows = alpha.shape[0]
  gpb = bk // g  # groups per K block
  alpha4 = alpha.reshape(s_rows, kp // bk, gpb, np_)
  beta4 = None if beta is None else beta.reshape(beta.shape[0], kp // bk, gpb, np_)
  has_beta = beta is not None
  dot_precision = jax.lax.Precision.HIGHEST if x.dtype == _F32 else None

  grid = (mp // bm, np_ // bn, kp // bk)
  any_spec = pl.BlockSpec(memory_space=pl.ANY)  # in HBM: the kernel DMAs the p active planes
  in_specs = []
  if mixed:
    in_specs.append(pl.BlockSpec((bm, 1), lambda i, j, k, m: (i, 0)))
  in_specs.append(pl.BlockSpec((bm, bk), lambda i, j, k, m: (i, k)))
  in_specs.append(any_spec)
  if mixed:
    in_specs.append(pl.BlockSpec((s_rows, None, gpb, bn), lambda i, j, k, m: (0, k, 0, j)))
    if has_beta:
      in_specs.append(pl.BlockSpec((beta.shape[0], None, gpb, bn), lambda i, j, k, m: (0, k, 0, j)))
  else:
    in_specs.append(any_spec)
    if has_beta:
      in_specs.append(pl.BlockSpec((None, None, gpb, bn), lambda i, j, k, m: (m[2], k, 0, j)))
  out_spec = pl.BlockSpec((bm, bn), lambda i, j, k, m: (i, j))
  scratch = [
    pltpu.VMEM((bm, bn), _F32),
    pltpu.VMEM((2, bk // 32, bn), planes.dtype),
    pltpu.SemaphoreType.DMA((2,)),
  ]
  if not mixed:
    scratch += [pltpu.VMEM((2, gpb, bn), alpha.dtype), pltpu.SemaphoreType.DMA((2,))]
  if variant == "dequant":
    scratch.append(pltpu.VMEM((bk, bn), _F32))

  kernel = functools.partial(
    _kernel,
    variant=variant,
    mixed=mixed,
    has_beta=has_beta,
    g=g,
    bk=bk,
    bn=bn,
    precisions=tuple(precisions),
    dot_precision=dot_precision,
    single_row=(m_real == 1 and variant == "partials" and not mixed),
  )
  operands = ([prec] if mixed else []) + [x, planes, alpha4] + ([beta4] if has_beta else [])
  flops = 2 * mp * kp * np_ * (1 if variant == "dequant" else nb)
  bytes_accessed = (
    x.size * x.dtype.itemsize
    + planes.size * 4
    + alpha.size * alpha.dtype.itemsize
    + (beta.size * beta.dtype.itemsize if has_beta else 0)
    + mp * np_ * jnp.dtype(out_dtype).itemsize
  )
  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((mp, np_), out_dtype),
    grid_spec=pltpu.PrefetchScalarGridSpec(
      num_scalar_prefetch=1,
      grid=grid,
      in_specs=in_specs,
      out_specs=out_spec,
      scratch_shapes=scratch,
    ),
    compiler_params=pltpu.CompilerParams(
      dimension_semantics=("parallel", "parallel", "arbitrary"), vmem_limit_bytes=vmem_limit_bytes
    ),
    cost_estimate=pl.CostEstimate(
      flops=int(flops), transcendentals=0, bytes_accessed=int(bytes_accessed)
    ),
    interpret=interpret,
    name=f"bitplane_matmul_tpu_{'mixed' if mixed else variant}",
  )(meta, *operands)
