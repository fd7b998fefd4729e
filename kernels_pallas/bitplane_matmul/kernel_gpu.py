"""GPU (Pallas Triton) kernels for the AnyBCQ bit-plane matmul ``y = x @ W^(p)``: the explicit,
deprecated choice.

AnyBCQ (Park et al., ICLR 2026; github.com/naver-aics/anybcq). The official CUDA kernel is a
batch-1 LUT-GEMM-style GEMV with fp16 table lookups; this kernel unpacks bit-planes with shifts
and masks and uses tensor-core dots, for any M. It is lowered through Triton:
``compiler_params=pltriton.CompilerParams(...)``. Pallas's Triton backend is deprecated (jax 0.11:
"migrate to the Mosaic GPU backend"), so this kernel runs only when asked for, with
``config=BlockConfig("partials" | "dequant", ...)`` (``blocks.BLOCK_TABLE["gpu"]``), while the
installed jax still ships the backend; the default GPU kernels are Mosaic GPU ones
(``kernel_wgmma`` on Hopper, ``kernel_mgpu`` for a few rows; see ``ops``). Since jax 0.12 its
lowering reads the target GPU from the default device: lowering it on a CPU host needs an abstract
GPU device (``jax.sharding.use_abstract_mesh`` with an ``AbstractDevice``).

Grid ``(Mp/BM, Np/BN, split_k)``; no scalar prefetch and no scratch on Triton, so the int32
metadata vector ``[p, offset(p), precision index, 0]`` is an ordinary ``(4,)`` input read in the
kernel, and accumulators live in ``fori_loop`` carries. Refs keep full extents (K need not be a
power of two); only the windows loaded with ``pl.ds`` are powers of two.

* Outer ``fori_loop`` over this program's 256-input pack tiles (``split_k`` programs split the
  tiles; their f32 partial outputs ``(split_k, Mp, Np)`` are summed by the caller, so no atomics).
* ``partials`` (small M): per tile, load the x group slices ``(BM, g)`` and row sums ``s_G``; an
  inner ``fori_loop(0, p)`` with a **run-time trip count** loads ``planes[b, 8t:8t+8, :]``,
  unpacks each group to 0.0 / 2.0 by a shift and an AND (``_bits_times_two``: 0x4000 is 2.0 in
  bf16 and f16), ``u2 = dot(x_G, 2 bits)`` with f32 accumulation and
  ``acc += (u2 - s_G) * alpha_{b,G}``; then ``acc += s_G * beta_G``. Compiled for sm_90a (decode
  row, BN = 64, 4 warps) the plane loop has 4.85 PTX instructions per (weight, plane) per thread
  with bf16/f16 x and 6.1 with f32 x, against 7.8 / 9.0 for the former 0/1 compare-and-select
  (setp + selp per weight); about one of them is the shared-memory store that stages the MMA
  operand (``benchmarks/_targets.ptx_mma_loop_instructions``). f32 x with BM > 16 keeps
  the 0/1 compare-and-select (the shift form spilled 24 B there).
* ``dequant`` (large M): the inner plane loop builds the ``(256, BN)`` tile
  ``W = beta + sum_b alpha_b * (2 bits_b - 1)`` (scale rows broadcast over their group by a
  reshape) and one ``dot(x tile, W)`` per tile follows.
* ``mixed``: ``partials`` with a per-row precision vector ``prec (Mp, 1)``; the trip count is
  ``max(prec)`` and each row's coefficient is selected per stored precision, sharing ``t``.

Triton needs power-of-two windows and dot dims >= 16: BM >= 16 (decode pads M), BN >= 16, g >= 64.
f32 activations: the partials dots split x into 3 bf16 terms against the exact 0/1 bits
(``_dots.exact_bits_dot``: f32-exact, tensor cores), the dequantize dot uses TF32x3
(``_dots.tf32x3_dot``, ~2^-21 relative per product); bf16/fp16 use the tensor cores natively.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from kernels_pallas import _dots
from kernels_pallas.bitplane_matmul import format as fmt

_F32 = jnp.float32


def _dot(a, b, precision):
  return jax.lax.dot_general(
    a, b, (((1,), (0,)), ((), ())), precision=precision, preferred_element_type=_F32
  )


def _is_pow2(v: int) -> bool:
  return v > 0 and v & (v - 1) == 0


def _bits_times_two(words, j0, nbits, dtype):
  """2·bit (0.0 or 2.0) of a group, ``(8 nbits, bn)`` in a 16-bit float ``dtype``, by a shift and
  an AND per weight: the bit is moved to bit 14, and 0x4000 is 2.0 in both bfloat16 and float16.
  No compare, no select and no int -> float conversion (a 0/1 compare-and-select compiled to
  setp + selp per weight, measured in the sm_90a PTX); the factor 2 is the 2·u of
  ``(2 u − s)·alpha``, exact."""
  bits = fmt.unpack_words(words, j0, nbits) << jnp.uint32(14)
  return jax.lax.bitcast_convert_type(bits.astype(jnp.uint16), dtype)


def _kernel(*refs, variant, mixed, has_beta, g, n_tiles, tiles_per_split, precisions, emulate):
  it = iter(refs)
  meta_ref = next(it)
  prec_ref = next(it) if mixed else None
  x_ref, planes_ref, alpha_ref = next(it), next(it), next(it)
  beta_ref = next(it) if has_beta else None
  o_ref = next(it)

  bm, bn = x_ref.shape[0], planes_ref.shape[2]
  xdtype = x_ref.dtype
  p, off, pidx = meta_ref[0], meta_ref[1], meta_ref[2]
  gpt = fmt.TILE // g  # groups per tile
  offsets = fmt.plane_offsets(precisions)
  prec = prec_ref[...] if mixed else None  # (bm, 1) int32

  kk = pl.program_id(2)
  t_lo = kk * tiles_per_split
  t_hi = jnp.minimum(t_lo + tiles_per_split, n_tiles)

  def alpha_coef(b, gidx):
    if not mixed:
      return alpha_ref[off + b, pl.ds(gidx, 1), :].astype(_F32)  # (1, bn)
    c = None
    for q, o in zip(precisions, offsets):
      a = alpha_ref[o + jnp.minimum(b, q - 1), pl.ds(gidx, 1), :].astype(_F32)
      term = jnp.where((prec == q) & (b < q), a, 0.0)  # (bm, bn)
      c = term if c is None else c + term
    return c

  def beta_coef(gidx):
    if not mixed:
      return beta_ref[pidx, pl.ds(gidx, 1), :].astype(_F32)
    c = None
    for qi, q in enumerate(precisions):
      term = jnp.where(prec == q, beta_ref[qi, pl.ds(gidx, 1), :].astype(_F32), 0.0)
      c = term if c is None else c + term
    return c

  def tile_partials(t, acc):
    k0 = t * fmt.TILE
    xs = [x_ref[:, pl.ds(k0 + gi * g, g)] for gi in range(gpt)]  # (bm, g) each
    ss = [jnp.sum(xg.astype(_F32), axis=1, keepdims=True) for xg in xs]  # (bm, 1) each

    def plane(b, acc):
      words = planes_ref[b, pl.ds(t * fmt.WORDS_PER_TILE, fmt.WORDS_PER_TILE), :]  # (8, bn)
      for gi in range(gpt):
        bdt = jnp.bfloat16 if xdtype == _F32 else xdtype
        if xdtype == _F32 and bm > 16:
          # f32 x at bm = 32 (3 dots per plane, the "small"/"prefill" f32 rows): the shift-to-2.0
          # form spilled 24 B on sm_90a (also with a select of 2.0); the former 0/1 select and
          # 2·u do not spill, so this case keeps them.
          bits = fmt.unpack_words(words, gi * g // 8, g // 8)
          two_b = jnp.where(bits != 0, jnp.ones((), bdt), jnp.zeros((), bdt))
        else:
          two_b = _bits_times_two(words, gi * g // 8, g // 8, bdt)  # (g, bn) 0/2, exact
        u2 = (
          _dots.exact_bits_dot(xs[gi], two_b) if xdtype == _F32 else _dot(xs[gi], two_b, None)
        )  # 2·(x_G · bits)
        if xdtype == _F32 and bm > 16:
          u2 = 2.0 * u2
        acc = acc + (u2 - ss[gi]) * alpha_coef(b, t * gpt + gi)
      return acc

    acc = jax.lax.fori_loop(0, p, plane, acc)
    if has_beta:
      for gi in range(gpt):
        acc = acc + ss[gi] * beta_coef(t * gpt + gi)
    return acc

  def tile_dequant(t, acc):
    k0 = t * fmt.TILE

    def per_input(rows):  # (gpt, bn) per-group rows -> (256, bn) per input
      return jnp.broadcast_to(rows[:, None, :], (gpt, g, bn)).reshape(fmt.TILE, bn)

    if has_beta:
      w0 = per_input(beta_ref[pidx, pl.ds(t * gpt, gpt), :].astype(_F32))
    else:
      w0 = jnp.zeros((fmt.TILE, bn), _F32)

    def plane(b, w):
      words = planes_ref[b, pl.ds(t * fmt.WORDS_PER_TILE, fmt.WORDS_PER_TILE), :]
      bits = fmt.unpack_words(words, 0, fmt.BITS)  # (256, bn) 0/1
      a = per_input(alpha_ref[off + b, pl.ds(t * gpt, gpt), :].astype(_F32))
      return w + jnp.where(bits != 0, a, -a)  # select, no convert

    w = jax.lax.fori_loop(0, p, plane, w0)
    xt = x_ref[:, pl.ds(k0, fmt.TILE)]
    if xdtype == _F32:  # TF32x3 on tensor cores (emulated bit-exactly in interpret mode)
      return acc + _dots.tf32x3_dot(xt, w, emulate=emulate)
    return acc + _dot(xt, w.astype(xdtype), None)

  body = tile_dequant if variant == "dequant" else tile_partials
  acc = jax.lax.fori_loop(t_lo, t_hi, body, jnp.zeros((bm, bn), _F32))
  o_ref[...] = acc.astype(o_ref.dtype)


def bitplane_matmul_gpu(
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
  split_k=1,
  num_warps=4,
  num_stages=2,
  out_dtype,
  interpret=False,
):
  """Runs the Triton kernel on padded operands.

  Args:
    x: ``(Mp, Kp)`` activations (f32, bf16 or fp16), ``Mp % bm == 0``, ``Kp % 256 == 0``.
    planes: uint32 ``(NB, Kp/32, Np)``, ``Np % bn == 0``.
    alpha: ``(S, Kp/g, Np)``; beta ``(|P|, Kp/g, Np)`` or None (beta term compiled out).
    meta: int32 ``(4,)`` = ``[p, offset(p), precision index, 0]`` (mixed: ``[max(prec), 0, 0, 0]``).
    prec: None, or int32 ``(Mp, 1)`` per-row precisions (selects the ``mixed`` variant).
    variant: ``"partials"`` or ``"dequant"``; bm, bn: powers of two >= 16.
    split_k: programs per output tile along K; > 1 returns f32 ``(split_k, Mp, Np)`` partial sums.
  Returns:
    ``(Mp, Np)`` in ``out_dtype``, or f32 ``(split_k, Mp, Np)`` when ``split_k > 1``.
  """
  mp, kp = x.shape
  nb, kw, np_ = planes.shape
  g = group_size
  mixed = prec is not None
  variant = fmt.check_kernel_variant(variant, mixed, g)
  if fmt.TILE % g:  # the K loop walks 256-input tiles: a tile must hold whole groups
    raise ValueError(f"the 256-input K tile must be a multiple of g = {g}")
  if not (_is_pow2(bm) and _is_pow2(bn)) or bm < 16 or bn < 16:
    raise ValueError(f"Triton blocks must be powers of two >= 16; got bm={bm}, bn={bn}")
  if mp % bm or np_ % bn or kp % fmt.TILE or kw * 32 != kp:
    raise ValueError(
      f"operands must be padded to blocks: x {x.shape}, planes {planes.shape}, "
      f"blocks (bm, bn) = {(bm, bn)}"
    )
  n_tiles = kp // fmt.TILE
  split_k = max(1, min(int(split_k), n_tiles))
  tiles_per_split = -(-n_tiles // split_k)
  has_beta = beta is not None
  s_rows, groups = alpha.shape[0], alpha.shape[1]

  grid = (mp // bm, np_ // bn, split_k)
  in_specs = [pl.BlockSpec((4,), lambda i, j, kk: (0,))]
  if mixed:
    in_specs.append(pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)))
  in_specs += [
    pl.BlockSpec((bm, kp), lambda i, j, kk: (i, 0)),
    pl.BlockSpec((nb, kw, bn), lambda i, j, kk: (0, 0, j)),
    pl.BlockSpec((s_rows, groups, bn), lambda i, j, kk: (0, 0, j)),
  ]
  if has_beta:
    in_specs.append(pl.BlockSpec((beta.shape[0], groups, bn), lambda i, j, kk: (0, 0, j)))
  if split_k > 1:
    out_shape = jax.ShapeDtypeStruct((split_k, mp, np_), _F32)
    out_spec = pl.BlockSpec((None, bm, bn), lambda i, j, kk: (kk, i, j))
  else:
    out_shape = jax.ShapeDtypeStruct((mp, np_), out_dtype)
    out_spec = pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))

  kernel = functools.partial(
    _kernel,
    variant=variant,
    mixed=mixed,
    has_beta=has_beta,
    g=g,
    n_tiles=n_tiles,
    tiles_per_split=tiles_per_split,
    precisions=tuple(precisions),
    emulate=bool(interpret),
  )
  operands = [meta] + ([prec] if mixed else []) + [x, planes, alpha] + ([beta] if has_beta else [])
  flops = 2 * mp * kp * np_ * (1 if variant == "dequant" else nb)
  bytes_accessed = (
    x.size * x.dtype.itemsize
    + planes.size * 4
    + alpha.size * alpha.dtype.itemsize
    + (beta.size * beta.dtype.itemsize if has_beta else 0)
    + out_shape.size * jnp.dtype(out_shape.dtype).itemsize
  )
  return pl.pallas_call(
    kernel,
    out_shape=out_shape,
    grid=grid,
    in_specs=in_specs,
    out_specs=out_spec,
    compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
    cost_estimate=pl.CostEstimate(
      flops=int(flops), transcendentals=0, bytes_accessed=int(bytes_accessed)
    ),
    interpret=interpret,
    name=f"bitplane_matmul_gpu_{'mixed' if mixed else variant}",
  )(*operands)
