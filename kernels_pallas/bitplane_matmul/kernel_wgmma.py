"""GPU (Pallas Mosaic GPU, Hopper) general-M kernel for the AnyBCQ bit-plane matmul ``y = x @ W^(p)``.

AnyBCQ (Park et al., ICLR 2026; github.com/naver-aics/anybcq) serves precision p from shared
binary planes and per-(precision, group, plane) scales:

    y[m, n] = sum_G [ beta_G[n] s_{m,G} + sum_{b < p} alpha_{b,G}[n] (x_G · B_b)[m, n] ],
    s_{m,G} = sum_{k in G} x[m, k],   B_b in {-1, +1}.

±1 is exact in bf16 and f16, so every per-plane partial ``x_G · B_b`` is an exact-product tensor-
core matmul with f32 accumulation, and scaling the partials in f32 matches dequantize-then-matmul
(``reference.bitplane_matmul_reference``) to f32 rounding.

**Design (transposed, "swap AB").** The block computes ``y^T`` for BN = 64 output features and BM
activation rows: the unpacked weights are wgmma's A operand, held in registers, and x is its B
operand, in shared memory. Hopper's wgmma has a fixed M of 64 per warpgroup and an N of 8..256 in
steps of 8, so M = 64 features and N = BM rows (decode pads M only to 8, not 64). The reason for the
orientation is the register layout: in the WGMMA layout a thread holds rows ``16 w + l // 4 (+8)``
and columns ``8 c + 2 (l % 4) + {0, 1}`` of a (64, K) A tile, and with the packing of
``format.pack_planes`` (input ``256 t + 8 j + r`` is bit j of word r of tile t) column ``8 j + r``
is bit j of word r. So the thread's A elements for *every* j come from the same four words: the
(64, 8) word tile ``planes[b, 8t:8t+8, cols].T`` in the WGMMA layout, and the (64, g) A tile of a
group is the concatenation over its g/8 bit positions j of ``±1(bit j of words)`` (a register
concatenation: no data movement, no shared-memory round trip for W).

Launch (``plgpu.kernel``, one warpgroup per block): grid ``(Np / 64, Mp / BM, split_k)``; block
``(j, i, s)`` owns features ``64 j ..`` and rows ``BM i ..`` and the K slice of ``split_k`` (f32
partial outputs ``(split_k, Mp, Np)``, summed by the caller: no atomics). Per 256-input pack tile t:

1. TMA (``copy_gmem_to_smem``) the x tile into shared memory as ``(256 / g, n_x · BM, g)`` (one
   slab per group, 128-byte swizzle), the tile's beta row and, in a loop with the **run-time trip
   count p**, the tile's alpha row of each active plane (one barrier per plane). Only the p active
   planes' scales and words are read: inactive planes are never fetched.
2. Plane loop ``b < p`` (run-time trip count): load the (64, 8) word tile from global memory in the
   WGMMA_TRANSPOSED layout (two adjacent features per 8-byte load) and relayout it to WGMMA (one
   shuffle); then a run-time loop over the tile's groups G (unrolled, the compiler overlapped the
   groups' accumulators and spilled): A = concat_j ±1(bit j) in bf16 / f16 (shift, AND, XOR per
   element: the bit moved to the sign position of 1.0), ``acc = A @ x_G^T`` (``plgpu.wgmma``,
   f32, a fresh accumulator), then ``out += acc * alpha[offset(p) + b, G, cols]`` (f32,
   broadcast over the rows of x).
3. ``beta``: the group sums ``s_G`` come from one more wgmma with an all-ones A (every row of the
   accumulator is ``s_G``), then ``out += acc * beta[index(p), G, cols]``.

The output block is stored from registers to ``y[s, rows, cols]`` (f32) through a transposed view
in the WGMMA_TRANSPOSED layout (two adjacent features, 8 bytes, per store; a 16-bit output would
write half 32-byte sectors, which Mosaic GPU's optimized global transfers refuse: "GMEM transfer
does not access a whole number of complete 32 byte sectors"). Scales (f32, bf16 or f16) go through
shared memory because those optimized transfers also refuse 2-byte-per-thread global loads ("GMEM
transfer width (2 bytes/thread) is smaller than 4 bytes").

Variants: ``mixed`` (a per-row precision vector): the trip count is ``max(prec)``; each row's
coefficient is ``sum_q [prec_m = q][b < q] alpha[offset(q) + min(b, q - 1)]``, all stored
precisions' scale rows of the tile fetched at once. f32 activations: the caller splits x into three
bf16 terms (``_dots.split_bf16``, exact: hi + mid + lo = x), stacked as ``n_x = 3`` row blocks of
one B operand (wgmma's N = 3 · BM, so BM <= 64 there: 85 is the limit) and summed in f32 after the
wgmma; the unpack is shared.

Targets: wgmma exists on sm_90a only (Hopper). jax 0.12's Mosaic GPU also targets Ampere (mma.sync,
cp.async) and Blackwell (tcgen05, TMEM), where this kernel does not apply (see ``blocks``).
CPU checks: the kernel runs in Pallas's Mosaic GPU interpret mode (``interpret=True`` uses
``plgpu.InterpretGPUParams``: shared memory, TMA, barriers and wgmma simulated, values in logical
layouts), and the compile tier compiles it for sm_90a without a GPU
(``benchmarks/_targets.mgpu_compile``). Interpret mode refuses dynamically *sliced* loads
from refs, so the wrapper reshapes planes, scales and the output into block-indexed arrays (free
reshapes) and the kernel indexes them with integers only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from kernels_pallas.bitplane_matmul import format as fmt

_F32 = jnp.float32
BN = 64  # output features per block: wgmma's M per warpgroup
MAX_BM = 256  # wgmma's largest N
X_DTYPES = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
# Bit patterns of -1.0 in the 16-bit operand dtypes; XOR with (bit << 15) gives +1.0 for bit 1.
_MINUS_ONE = {jnp.dtype(jnp.bfloat16): 0xBF80, jnp.dtype(jnp.float16): 0xBC00}
SWIZZLE = 128  # bytes: the x tile's shared-memory swizzle (64 16-bit elements per row)


def signs_of_bit(words, j: int, dtype):
  """±1 of bit ``j`` of every uint32 word, in the 16-bit float ``dtype`` (bit 1 -> +1.0).

  The bit is moved to bit 15 (one shift) and isolated (one AND); XOR with the pattern of -1.0
  clears the sign bit exactly when the bit is set. No compare, no select, no int -> float."""
  if j >= 15:
    s = (words >> jnp.uint32(j - 15)) & jnp.uint32(0x8000)
  else:
    s = (words << jnp.uint32(15 - j)) & jnp.uint32(0x8000)
  s = s ^ jnp.uint32(_MINUS_ONE[jnp.dtype(dtype)])
  return lax.bitcast_convert_type(s.astype(jnp.uint16), dtype)


def _kernel(*refs, mixed, has_beta, g, n_x, tiles_per_split, n_tiles, precisions, bm, dtype):
  from jax.experimental import pallas as pl
  from jax.experimental.pallas import mosaic_gpu as plgpu

  it = iter(refs)
  meta_ref = next(it)
  prec_ref = next(it) if mixed else None
  x_ref, planes_ref, alpha_ref = next(it), next(it), next(it)
  beta_ref = next(it) if has_beta else None
  o_ref, x_smem, a_smem = next(it), next(it), next(it)
  b_smem = next(it) if has_beta else None
  bar, a_bar = next(it), next(it)

  jn, im, s = lax.axis_index("n"), lax.axis_index("m"), lax.axis_index("k")
  gpt = fmt.TILE // g  # groups per tile
  wgmma_layout = plgpu.Layout.WGMMA
  per_feature = wgmma_layout.reduce(1)  # (BN,): one value per accumulator row
  per_row = wgmma_layout.reduce(0)  # (BM,): one value per accumulator column (row of x)
  p, off, pidx = meta_ref[0], meta_ref[1], meta_ref[2]
  offsets = fmt.plane_offsets(precisions)
  masks = []
  if mixed:
    # (bm,) int32; bm * 4 bytes can be less than a 128-byte line: the unoptimized transfer.
    prec = plgpu.load(prec_ref.at[im], layout=per_row, optimized=False)
    masks = [(prec == q).astype(_F32) for q in precisions]

  def over_rows(v):  # (BN,) -> (BN, bm)
    return lax.broadcast_in_dim(v, (BN, bm), [0])

  def over_features(v):  # (bm,) -> (BN, bm)
    return lax.broadcast_in_dim(v, (BN, bm), [1])

  def over_groups(body, out):
    """The groups of a tile, one after the other: a run-time loop, so that one group's operand
    and accumulator are live at a time (unrolled, the compiler overlapped the groups' wgmma
    accumulators and spilled registers: 1908 bytes at g = 64 with f32 x)."""
    if gpt == 1:
      return body(jnp.int32(0), out)
    return lax.fori_loop(0, gpt, body, out)

  def scale(ref, r, gl):
    return plgpu.load(ref.at[r, gl], layout=per_feature).astype(_F32)

  def mma(a, gl):
    """``a (BN, g) @ x_G^T (g, bm)`` summed over the n_x terms of x (f32). The terms are stacked
    along wgmma's N (one instruction sequence per A, ``n_x · bm`` columns) and their column blocks
    summed after: a wgmma per term would fence (copy) the register A once per term."""

    def body(acc_ref):
      plgpu.wgmma(acc_ref, a, x_smem.at[gl].T)
      return acc_ref[...]

    acc = pl.run_scoped(body, plgpu.ACC((BN, n_x * bm), _F32))
    part = acc[:, :bm]
    for xi in range(1, n_x):
      part = part + acc[:, xi * bm : (xi + 1) * bm]
    return part

  def tile(t, out):
    groups = pl.ds(t * gpt, gpt)
    for gl in range(gpt):
      for xi in range(n_x):
        src = x_ref.at[xi, pl.ds(im * bm, bm), pl.ds(t * fmt.TILE + gl * g, g)]
        plgpu.copy_gmem_to_smem(src, x_smem.at[gl, pl.ds(xi * bm, bm)], bar)
    if mixed:  # every stored precision's rows: each row picks its own
      plgpu.copy_gmem_to_smem(alpha_ref.at[:, groups, jn], a_smem, bar)
      if has_beta:
        plgpu.copy_gmem_to_smem(beta_ref.at[:, groups, jn], b_smem, bar)
    else:
      if has_beta:
        plgpu.copy_gmem_to_smem(beta_ref.at[pidx, groups, jn], b_smem.at[0], bar)

      @pl.loop(0, p)
      def _(b):  # the active planes' scale rows only
        plgpu.copy_gmem_to_smem(alpha_ref.at[off + b, groups, jn], a_smem.at[b], a_bar.at[b])

    plgpu.barrier_wait(bar)

    def plane(b, out):
      words = plgpu.load(planes_ref.at[b, t, :, jn, :].T, layout=plgpu.Layout.WGMMA_TRANSPOSED)
      words = plgpu.layout_cast(words, wgmma_layout)  # (BN, 8) uint32
      if not mixed:
        plgpu.barrier_wait(a_bar.at[b])

      def group(gl, out):
        # Bits gl·g/8 .. of each word hold the group: one run-time shift, then static ones.
        w = words >> (gl * (g // 8)).astype(jnp.uint32) if gpt > 1 else words
        a = jnp.concatenate([signs_of_bit(w, j, dtype) for j in range(g // 8)], 1)  # (BN, g)
        part = mma(a, gl)  # (BN, bm): x_G · B_b, transposed
        if not mixed:
          coef = over_rows(scale(a_smem, b, gl))
        else:
          coef = None
          for q, o, mask in zip(precisions, offsets, masks):
            a_q = scale(a_smem, o + jnp.minimum(b, q - 1), gl) * (b < q).astype(_F32)
            term = over_rows(a_q) * over_features(mask)
            coef = term if coef is None else coef + term
        return out + part * coef

      return over_groups(group, out)

    out = lax.fori_loop(0, p, plane, out)
    if has_beta:

      def group_sums(gl, out):
        ones = plgpu.layout_cast(jnp.full((BN, g), 1.0, dtype), wgmma_layout)
        sums = mma(ones, gl)  # every row is s_G
        if not mixed:
          coef = over_rows(scale(b_smem, 0, gl))
        else:
          coef = None
          for qi, mask in enumerate(masks):
            term = over_rows(scale(b_smem, qi, gl)) * over_features(mask)
            coef = term if coef is None else coef + term
        return out + sums * coef

      out = over_groups(group_sums, out)
    return out

  t_lo = s * tiles_per_split
  t_hi = jnp.minimum(t_lo + tiles_per_split, n_tiles)
  out = lax.fori_loop(t_lo, t_hi, tile, plgpu.layout_cast(jnp.zeros((BN, bm), _F32), wgmma_layout))
  o_ref.at[s, im, :, jn, :].T[...] = plgpu.layout_cast(out, plgpu.Layout.WGMMA_TRANSPOSED)


def check_blocks(n_x: int, mp: int, kp: int, np_: int, bm: int, g: int) -> None:
  """Raises ValueError unless the padded operands and blocks fit the kernel (see ``bitplane_matmul_wgmma``)."""
  if g not in fmt.GROUP_SIZES:
    raise ValueError(f"group size {g} is not one of {fmt.GROUP_SIZES}")
  if bm % 8 or not 8 <= n_x * bm <= MAX_BM:
    raise ValueError(
      f"bm = {bm} must be a multiple of 8 with {n_x} * bm in [8, {MAX_BM}] (wgmma's N)"
    )
  if mp % bm or np_ % BN or kp % fmt.TILE:
    raise ValueError(
      f"operands must be padded: Mp = {mp} to bm = {bm}, Np = {np_} to {BN}, Kp = {kp} to "
      f"{fmt.TILE}"
    )
  if n_x not in (1, 3):
    raise ValueError(f"x must hold 1 term (bf16 / f16) or 3 (split f32); got {n_x}")


def bitplane_matmul_wgmma(
  x,
  planes,
  alpha,
  beta,
  meta,
  prec=None,
  *,
  precisions,
  group_size,
  bm,
  split_k=1,
  interpret=False,
):
  """Runs the Mosaic GPU wgmma kernel on padded operands (see the module docstring).

  Args:
    x: ``(n_x, Mp, Kp)`` bfloat16 or float16: one term, or the three bf16 terms of f32 x
      (``_dots.split_bf16``, small terms first); ``Mp % bm == 0``, ``Kp % 256 == 0``.
    planes: uint32 ``(NB, Kp/32, Np)``, ``Np % 64 == 0``.
    alpha: ``(S, Kp/g, Np)`` (f32, bf16 or f16); beta ``(|P|, Kp/g, Np)`` or None (compiled out).
    meta: int32 ``(4,)`` = ``[p, offset(p), precision index, 0]`` (mixed: ``[max(prec), 0, 0, 0]``).
    prec: None, or int32 ``(Mp,)`` per-row precisions (0 = no planes, e.g. padding rows).
    precisions: the stored precisions (static); group_size: g in {64, 128, 256}.
    bm: activation rows per block (wgmma's N): a multiple of 8, at most 256.
    split_k: blocks per output tile along K (>= 1; clamped to the number of 256-input tiles).
    interpret: run in Pallas's Mosaic GPU interpret mode (CPU).
  Returns:
    f32 ``(split_k, Mp, Np)``: sum over axis 0 for y.
  """
  from jax.experimental.pallas import mosaic_gpu as plgpu

  n_x, mp, kp = x.shape
  nb, kw, np_ = planes.shape
  g = group_size
  check_blocks(n_x, mp, kp, np_, bm, g)
  if jnp.dtype(x.dtype) not in X_DTYPES or planes.dtype != jnp.uint32 or kw * fmt.BITS != kp:
    raise ValueError(
      f"x must be bf16 / f16 (got {x.dtype}), planes uint32 (NB, Kp/32, Np) (got {planes.dtype} "
      f"{planes.shape} for Kp = {kp})"
    )
  mixed = prec is not None
  has_beta = beta is not None
  n_tiles = kp // fmt.TILE
  split_k = max(1, min(int(split_k), n_tiles))
  tiles_per_split = -(-n_tiles // split_k)
  gpt = fmt.TILE // g
  nblk = np_ // BN
  # Block-indexed views (free reshapes): the kernel indexes them with integers only.
  operands = [meta]
  if mixed:
    operands.append(prec.reshape(mp // bm, bm))
  operands += [
    x,
    planes.reshape(nb, n_tiles, fmt.WORDS_PER_TILE, nblk, BN),
    alpha.reshape(alpha.shape[0], alpha.shape[1], nblk, BN),
  ]
  if has_beta:
    operands.append(beta.reshape(beta.shape[0], beta.shape[1], nblk, BN))
  a_rows = alpha.shape[0] if mixed else nb
  b_rows = beta.shape[0] if (mixed and has_beta) else 1
  elems = SWIZZLE // jnp.dtype(x.dtype).itemsize
  x_transforms = (plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(SWIZZLE))
  scratch = [
    plgpu.SMEM((gpt, n_x * bm, g), x.dtype, transforms=x_transforms),
    plgpu.SMEM((a_rows, gpt, BN), alpha.dtype),
  ]
  if has_beta:
    scratch.append(plgpu.SMEM((b_rows, gpt, BN), beta.dtype))
  copies = gpt * n_x + int(has_beta) + int(mixed)  # TMA copies on the per-tile barrier
  scratch += [plgpu.Barrier(num_arrivals=copies), plgpu.Barrier(num_arrivals=1, num_barriers=nb)]
  kernel = functools.partial(
    _kernel,
    mixed=mixed,
    has_beta=has_beta,
    g=g,
    n_x=n_x,
    tiles_per_split=tiles_per_split,
    n_tiles=n_tiles,
    precisions=tuple(precisions),
    bm=bm,
    dtype=jnp.dtype(x.dtype),
  )
  call = plgpu.kernel(
    kernel,
    out_type=jax.ShapeDtypeStruct((split_k, mp // bm, bm, nblk, BN), _F32),
    grid=(nblk, mp // bm, split_k),
    grid_names=("n", "m", "k"),
    scratch_types=scratch,
    kernel_name=f"bitplane_matmul_wgmma_{'mixed' if mixed else 'partials'}",
    interpret=plgpu.InterpretGPUParams() if interpret else False,
  )
  return call(*operands).reshape(split_k, mp, np_)
