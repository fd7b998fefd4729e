"""Storage format of AnyBCQ bit-planes and scales: packing, unpacking and checkpoint converters.

AnyBCQ (Park, Bae, Kwon, Kim, Kwon, Lee; "AnyBCQ", ICLR 2026; reference code
github.com/naver-aics/anybcq) stores one stack of binary planes B_0..B_{NB-1} in {-1, +1}^{K x N},
shared by every precision, and per-precision scales. Precision p reads planes 0..p-1:

    W^(p)[k, n] = beta^(p)[k // g, n] + sum_{b < p} alpha^(p)_b[k // g, n] * B_b[k, n]

Layout used by every path in this package (the AnyBCQ paper's shared bit-planes, packed as below):

* ``planes``: uint32 ``(NB, K_pad / 32, N)``, plane-major, ``K_pad`` = K rounded up to a multiple
  of the 256-input pack tile. Bit value 1 means +1 and 0 means -1.
* Bit order: inside pack tile ``t`` (inputs ``256 t .. 256 t + 255``, words ``8 t .. 8 t + 7``),
  bit ``j`` of word ``r`` holds input ``k = 256 t + 8 j + r``. Broadcasting a tile's 8 words to
  ``(32, 8, n)``, shifting by an iota along the new axis, masking with 1 and merging the two
  leading axes gives the 256 inputs in natural ``k`` order (``unpack_words``). A g-input group at
  offset ``o`` in the tile is exactly bit positions ``[o/8, o/8 + g/8)``, so a group unpacks
  without slicing the word block.
* ``alpha``: ``(S, K_pad / g, N)``, S = sum of the stored precisions; row ``offset(p) + b`` holds
  alpha^(p)_b with ``offset(p) = sum_{q in P, q < p} q`` (``plane_offsets``). Padded groups are 0.
* ``beta``: ``(|P|, K_pad / g, N)`` (row i for precision ``P[i]``), or None for symmetric BCQ.

The official AnyBCQ checkpoints use ``qweight`` int32 ``[K / 32, NB, N]`` with bit ``j`` of word
``w`` at input ``k = 32 w + j``, ``alpha_{p}`` ``[K / g, p, N]`` and ``beta_{p}`` ``[K / g, N]``;
``from_reference_layout`` / ``to_reference_layout`` convert both ways.
"""

from __future__ import annotations

import functools
from typing import Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from kernels_pallas._backend import round_up

TILE = 256  # inputs per pack tile
WORDS_PER_TILE = 8  # uint32 words per tile and output column
BITS = 32  # bits per word
GROUP_SIZES = (64, 128, 256)  # group sizes the Pallas kernels support (the reference takes any)


# ---------------------------------------------------------------------------------------------
# Precision bookkeeping.


def plane_offsets(precisions: Sequence[int]) -> tuple[int, ...]:
  """Row offset of each precision's scales in the compact ``alpha``: ``(0, p0, p0 + p1, ...)``."""
  out, acc = [], 0
  for p in precisions:
    out.append(acc)
    acc += p
  return tuple(out)


def check_precisions(precisions: Sequence[int], num_planes: int | None = None) -> tuple[int, ...]:
  """Validates a set of stored precisions (strictly increasing positive ints, <= NB)."""
  try:
    ps = tuple(int(p) for p in precisions)
  except TypeError as e:
    raise ValueError(f"precisions must be a sequence of ints; got {precisions!r}") from e
  if not ps or any(p < 1 for p in ps) or any(a >= b for a, b in zip(ps, ps[1:])):
    raise ValueError(f"precisions must be strictly increasing positive ints; got {ps}")
  if num_planes is not None and ps[-1] > num_planes:
    raise ValueError(f"precisions {ps} need {ps[-1]} planes but planes holds only {num_planes}")
  return ps


def infer_precisions(num_planes: int, num_alpha_rows: int) -> tuple[int, ...]:
  """The contiguous precision range ``(p_L, ..., NB)`` whose scales fill ``num_alpha_rows`` rows.

  AnyBCQ checkpoints store a contiguous range ending at the plane count (2..4 in the paper); any
  other set must be passed explicitly as ``precisions=``.
  """
  total = 0
  for p_lo in range(num_planes, 0, -1):
    total += p_lo
    if total == num_alpha_rows:
      return tuple(range(p_lo, num_planes + 1))
    if total > num_alpha_rows:
      break
  raise ValueError(
    f"cannot infer the stored precisions: alpha has {num_alpha_rows} rows, which is not "
    f"p_L + ... + {num_planes} for any p_L (planes has NB = {num_planes}); pass precisions="
  )


# ---------------------------------------------------------------------------------------------
# Packing.


def unpack_words(words: jax.Array, j0: int, nbits: int) -> jax.Array:
  """Unpacks bit positions ``[j0, j0 + nbits)`` of pack-tile words into natural input order.

  Shared by ``unpack_planes`` and the kernel bodies (TPU and Triton): a broadcast, a shift by an
  iota, a mask and a merge of leading axes; no lane shuffles and no integer indexing.

  Args:
    words: uint32 ``(..., 8, n)``, the 8 words of one pack tile (per output column).
    j0: first bit position (static); the group starts at input ``8 * j0`` of the tile.
    nbits: number of bit positions (static); the group has ``8 * nbits`` inputs.
  Returns:
    uint32 ``(..., 8 * nbits, n)`` of 0/1, row ``i`` holding tile input ``8 * j0 + i``.
  """
  if words.shape[-2] != WORDS_PER_TILE:
    raise ValueError(f"unpack_words: words must be (..., 8, n); got {words.shape}")
  lead = words.shape[:-2]
  n = words.shape[-1]
  shifts = jax.lax.broadcasted_iota(jnp.uint32, (nbits, 1, 1), 0) + jnp.uint32(j0)
  bits = (words[..., None, :, :] >> shifts) & jnp.uint32(1)
  return bits.reshape(*lead, nbits * WORDS_PER_TILE, n)


PAIR_MASK = 0x40004000  # bit 14 of each 16-bit half: the bf16 / float16 pattern of 2.0


def pair_order(x: jax.Array) -> jax.Array:
  """Permutes the last axis of x (a multiple of 256) into the pack tiles' *pair order*.

  Within each 256-input tile, position ``16 j + 2 r + h`` takes input ``128 h + 8 j + r``
  (j < 16, r < 8, h < 2): the order in which ``pair_words`` unpacks a tile. A g-input group of the
  tile (g = 64, 128, 256) is the set of positions with ``h`` and, for g = 64, ``j // 8`` fixed:
  ``pair_group(position, g)``.
  """
  *lead, k = x.shape
  if k % TILE:
    raise ValueError(f"pair_order: the last axis must be a multiple of {TILE}; got {k}")
  y = x.reshape(*lead, k // TILE, 2, 16, WORDS_PER_TILE)  # (..., t, h, j, r)
  return jnp.moveaxis(y, -3, -1).reshape(*lead, k)  # (..., t, j, r, h)


def pair_group(position, g: int):
  """The group (0 .. 256/g − 1) of a pair-order position within its tile (array or int)."""
  h, jj = position & 1, position >> 7
  return {256: h * 0, 128: h, 64: 2 * h + jj}[g]


def pair_words(words: jax.Array, bitcast) -> jax.Array:
  """Unpacks the 8 words of a pack tile into 2.0 / 0.0 in a 16-bit float, two weights per 32-bit op.

  ``(w << (14 − j)) & 0x40004000`` (``w >> 1`` for j = 15) moves bit j to bit 14 of the low half
  and bit j + 16 to bit 14 of the high half: each 32-bit lane then holds two 16-bit floats, 2.0 for
  a set bit and 0.0 otherwise (exact in bf16 and float16). ``bitcast`` reinterprets the (8, n)
  uint32 result as (16, n) 16-bit floats, row 2 r from the low half and 2 r + 1 from the high half
  (``pltpu.bitcast``'s order), so piece j holds inputs ``8 j + r`` and ``128 + 8 j + r``; the 16
  pieces stacked give the tile in ``pair_order``. Two vector ops per 32-bit lane, i.e. one per
  weight, and no int -> float conversion.

  Args:
    words: uint32 ``(8, n)``.
    bitcast: ``(uint32 (8, n)) -> 16-bit float (16, n)``.
  Returns:
    ``(256, n)`` 16-bit floats in pair order.
  """
  if words.shape[-2] != WORDS_PER_TILE:
    raise ValueError(f"pair_words: words must be (8, n); got {words.shape}")
  mask = jnp.uint32(PAIR_MASK)
  pieces = []
  for j in range(16):
    moved = words << jnp.uint32(14 - j) if j <= 14 else words >> jnp.uint32(j - 14)
    pieces.append(bitcast(moved & mask))
  return jnp.concatenate(pieces, axis=-2)


def _as_bits(signs: jax.Array) -> jax.Array:
  """±1 or {0, 1} (or bool) -> uint32 0/1 with bit 1 meaning +1."""
  if signs.dtype == jnp.bool_:
    return signs.astype(jnp.uint32)
  return (signs > 0).astype(jnp.uint32)


def pack_planes(signs: jax.Array) -> jax.Array:
  """Packs binary planes into the kernel layout.

  Args:
    signs: ``(NB, K, N)`` of ±1 or {0, 1} (any real or bool dtype; positive means +1). K must be a
      multiple of 32. When K is not a multiple of the 256-input tile, K is padded with bit 0
      (inputs that carry zero activations and zero scales).
  Returns:
    uint32 ``(NB, K_pad / 32, N)`` with ``K_pad = round_up(K, 256)``; for K % 256 == 0 that is
    ``(NB, K / 32, N)``. ``unpack_planes(pack_planes(s), k=K)`` gives ``s`` back as ±1.
  """
  signs = jnp.asarray(signs)
  if signs.ndim != 3:
    raise ValueError(f"pack_planes: signs must be (NB, K, N); got shape {signs.shape}")
  nb, k, n = signs.shape
  if k % BITS:
    raise ValueError(f"pack_planes: K = {k} must be a multiple of 32 (K % 32 = {k % BITS})")
  return _pack(signs)


@jax.jit
def _pack(signs):
  nb, k, n = signs.shape
  bits = _as_bits(signs)
  k_pad = round_up(k, TILE)
  if k_pad != k:
    bits = jnp.pad(bits, ((0, 0), (0, k_pad - k), (0, 0)))
  t = k_pad // TILE
  bits = bits.reshape(nb, t, BITS, WORDS_PER_TILE, n)  # [t, j, r] <- k = 256 t + 8 j + r
  shifts = jnp.arange(BITS, dtype=jnp.uint32)[:, None, None]
  words = jnp.sum(bits << shifts, axis=2, dtype=jnp.uint32)  # distinct bits: sum == or
  return words.reshape(nb, t * WORDS_PER_TILE, n)


def unpack_planes(
  packed: jax.Array, k: int | None = None, *, signs: bool = True, dtype=jnp.int8
) -> jax.Array:
  """Exact inverse of ``pack_planes``.

  Args:
    packed: uint32 ``(NB, K_pad / 32, N)`` with ``K_pad % 256 == 0``.
    k: logical K to slice back to (default ``K_pad``).
    signs: return ±1 (default) or the raw {0, 1} bits.
    dtype: output dtype.
  Returns:
    ``(NB, k, N)`` planes in natural input order.
  """
  packed = check_planes(packed, "packed")
  k_pad = packed.shape[1] * BITS
  if k is not None and not 0 < k <= k_pad:
    raise ValueError(f"unpack_planes: k = {k} must be in (0, {k_pad}]")
  return _unpack(packed, k_pad if k is None else int(k), bool(signs), jnp.dtype(dtype))


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _unpack(packed, k, signs, dtype):
  nb, w, n = packed.shape
  t = w // WORDS_PER_TILE
  bits = unpack_words(packed.reshape(nb, t, WORDS_PER_TILE, n), 0, BITS)  # (nb, t, 256, n)
  bits = bits.reshape(nb, t * TILE, n)[:, :k]
  if signs:
    return (2 * bits.astype(jnp.int32) - 1).astype(dtype)
  return bits.astype(dtype)


def check_planes(planes, name: str = "planes") -> jax.Array:
  """Checks dtype uint32, rank 3 and whole pack tiles; returns ``planes`` as an array."""
  dtype = getattr(planes, "dtype", None)
  if dtype != jnp.uint32:
    raise ValueError(
      f"{name} must be uint32 (NB, K_pad/32, N) packed planes; got dtype {dtype}. Pack ±1 planes "
      "with pack_planes, or convert a reference-layout qweight with from_reference_layout"
    )
  if planes.ndim != 3:
    raise ValueError(f"{name} must be (NB, K_pad/32, N); got shape {planes.shape}")
  if planes.shape[1] % WORDS_PER_TILE:
    raise ValueError(
      f"{name}: the word axis ({planes.shape[1]}) must be a multiple of 8 (whole 256-input "
      "pack tiles)"
    )
  return planes


class Layout(NamedTuple):
  """Static description of one bit-plane matmul problem (all Python ints)."""

  k: int  # logical K (x.shape[-1])
  k_pad: int  # stored K (32 * planes.shape[1]), a multiple of 256
  n: int  # output features
  num_planes: int  # NB
  group_size: int  # g
  precisions: tuple[int, ...]  # stored precisions P
  offsets: tuple[int, ...]  # alpha row offset of each precision
  has_beta: bool


def check_operands(x, planes, alpha, beta, *, precisions=None, group_size=None) -> Layout:
  """Validates shapes and dtypes of a bit-plane matmul call; errors name the argument.

  Args:
    x: ``(..., K)`` float activations; K % 32 == 0, K % g == 0, round_up(K, 256) == K_pad.
    planes: uint32 ``(NB, K_pad/32, N)``.
    alpha: ``(S, K_pad/g, N)`` float, S = sum(precisions).
    beta: None or ``(|P|, K_pad/g, N)`` float.
    precisions: stored precisions; None infers the contiguous range ``(p_L, ..., NB)``.
    group_size: g; None infers ``K_pad / alpha.shape[1]``.
  """
  planes = check_planes(planes)
  nb, words, n = planes.shape
  k_pad = words * BITS
  if getattr(x, "ndim", 0) < 1 or not jnp.issubdtype(x.dtype, jnp.floating):
    raise ValueError(
      f"x must be a float array (..., K); got {getattr(x, 'dtype', type(x))} "
      f"{getattr(x, 'shape', '')}"
    )
  k = x.shape[-1]
  if k % BITS:
    raise ValueError(f"x: K = {k} must be a multiple of 32 (K % 32 = {k % BITS})")
  if round_up(k, TILE) != k_pad:
    raise ValueError(
      f"x: K = {k} does not match planes {planes.shape}, which store "
      f"K_pad = {k_pad} = round_up(K, 256) inputs"
    )
  if getattr(alpha, "ndim", 0) != 3 or not jnp.issubdtype(alpha.dtype, jnp.floating):
    raise ValueError(
      f"alpha must be a float (S, K_pad/g, N) array; got "
      f"{getattr(alpha, 'dtype', type(alpha))} {getattr(alpha, 'shape', '')}"
    )
  if alpha.shape[2] != n:
    raise ValueError(f"alpha {alpha.shape}: last axis must be N = {n} (planes {planes.shape})")
  groups = alpha.shape[1]
  if groups == 0 or k_pad % groups:
    raise ValueError(f"alpha {alpha.shape}: {groups} groups do not divide K_pad = {k_pad}")
  g = k_pad // groups
  if group_size is not None and int(group_size) != g:
    raise ValueError(
      f"group_size = {group_size} but alpha {alpha.shape} has K_pad/g = {groups} "
      f"groups, i.e. g = {g}"
    )
  if k % g:
    raise ValueError(f"x: K = {k} must be a multiple of the group size g = {g} (K % g = {k % g})")
  if precisions is None:
    precisions = infer_precisions(nb, alpha.shape[0])
  precisions = check_precisions(precisions, nb)
  if alpha.shape[0] != sum(precisions):
    raise ValueError(
      f"alpha {alpha.shape}: precisions {precisions} need S = {sum(precisions)} rows"
    )
  if beta is not None:
    if getattr(beta, "ndim", 0) != 3 or not jnp.issubdtype(beta.dtype, jnp.floating):
      raise ValueError(
        f"beta must be None or a float (|P|, K_pad/g, N) array; got "
        f"{getattr(beta, 'dtype', type(beta))} {getattr(beta, 'shape', '')}"
      )
    if beta.shape != (len(precisions), groups, n):
      raise ValueError(
        f"beta must be (|P|, K_pad/g, N) = {(len(precisions), groups, n)}; got {beta.shape}"
      )
  return Layout(k, k_pad, n, nb, g, precisions, plane_offsets(precisions), beta is not None)


def check_precision(precision, precisions: Sequence[int], batch_shape: tuple[int, ...]):
  """Validates ``precision`` (int scalar, or one int per row of x); returns an int32 array.

  Concrete values outside ``precisions`` raise; traced values cannot be checked here, and the
  public op returns NaN rows for them instead.
  """
  arr = jnp.asarray(precision)
  if not jnp.issubdtype(arr.dtype, jnp.integer):
    raise ValueError(
      f"precision must be an integer scalar or a per-row int vector; got dtype {arr.dtype}"
    )
  if arr.ndim and arr.shape != tuple(batch_shape):
    raise ValueError(
      f"precision: a per-row vector must have shape x.shape[:-1] = "
      f"{tuple(batch_shape)}; got {arr.shape}"
    )
  if not isinstance(arr, jax.core.Tracer):
    values = set(int(v) for v in jax.device_get(arr).reshape(-1))
    bad = sorted(values - set(precisions))
    if bad:
      raise ValueError(
        f"precision {bad if arr.ndim else bad[0]} is out of range: the stored "
        f"precisions are {tuple(precisions)}"
      )
  return arr.astype(jnp.int32)


# ---------------------------------------------------------------------------------------------
# Converters to and from the official AnyBCQ checkpoint layout.


def planes_from_reference(qweight: jax.Array) -> jax.Array:
  """Reference ``qweight`` ``[K/32, NB, N]`` (int32 or uint32; bit j of word w = input 32 w + j)
  -> kernel planes uint32 ``(NB, K_pad/32, N)``."""
  qweight = jnp.asarray(qweight)
  if qweight.ndim != 3 or qweight.dtype not in (jnp.int32, jnp.uint32):
    raise ValueError(
      f"qweight must be int32/uint32 [K/32, NB, N]; got {qweight.dtype} {qweight.shape}"
    )
  return _planes_from_reference(qweight)


@jax.jit
def _planes_from_reference(qweight):
  if qweight.dtype == jnp.int32:
    qweight = jax.lax.bitcast_convert_type(qweight, jnp.uint32)
  w, nb, n = qweight.shape
  shifts = jnp.arange(BITS, dtype=jnp.uint32)[None, :, None, None]
  bits = (qweight[:, None] >> shifts) & jnp.uint32(1)  # (w, 32, nb, n), k = 32 w + j
  bits = jnp.transpose(bits, (2, 0, 1, 3)).reshape(nb, w * BITS, n)
  return _pack(bits.astype(jnp.uint8))


def planes_to_reference(planes: jax.Array, k: int | None = None) -> jax.Array:
  """Kernel planes ``(NB, K_pad/32, N)`` -> reference ``qweight`` int32 ``[K/32, NB, N]``.

  ``k`` (a multiple of 32) is the logical K; the default keeps ``K_pad``.
  """
  planes = check_planes(planes)
  k = planes.shape[1] * BITS if k is None else int(k)
  if k % BITS or not 0 < k <= planes.shape[1] * BITS:
    raise ValueError(f"planes_to_reference: k = {k} must be a multiple of 32 in (0, K_pad]")
  return _planes_to_reference(planes, k)


@functools.partial(jax.jit, static_argnums=(1,))
def _planes_to_reference(planes, k):
  bits = _unpack(planes, k, False, jnp.dtype(jnp.uint32))  # (nb, k, n)
  nb, kk, n = bits.shape
  bits = bits.reshape(nb, kk // BITS, BITS, n)
  shifts = jnp.arange(BITS, dtype=jnp.uint32)[None, None, :, None]
  words = jnp.sum(bits << shifts, axis=2, dtype=jnp.uint32)  # (nb, k/32, n)
  return jax.lax.bitcast_convert_type(jnp.transpose(words, (1, 0, 2)), jnp.int32)


def scales_from_reference(
  alphas: Mapping[int, jax.Array],
  betas: Mapping[int, jax.Array] | None = None,
  *,
  num_groups: int | None = None,
):
  """Per-precision reference scales -> compact kernel scales.

  Args:
    alphas: ``{p: alpha_p}`` with ``alpha_p`` ``[K/g, p, N]``.
    betas: ``{p: beta_p}`` with ``beta_p`` ``[K/g, N]`` for the same precisions, or None.
    num_groups: pad the group axis with zeros up to this many groups (``K_pad / g``).
  Returns:
    ``(alpha (S, K_pad/g, N), beta (|P|, K_pad/g, N) or None, precisions)``.
  """
  precisions = check_precisions(sorted(alphas))
  rows = []
  for p in precisions:
    a = jnp.asarray(alphas[p])
    if a.ndim != 3 or a.shape[1] != p:
      raise ValueError(f"alpha_{p} must be [K/g, {p}, N]; got shape {a.shape}")
    rows.append(jnp.transpose(a, (1, 0, 2)))
  alpha = jnp.concatenate(rows, axis=0)
  beta = None
  if betas is not None:
    if sorted(betas) != list(precisions):
      raise ValueError(f"betas has precisions {sorted(betas)}; alphas has {list(precisions)}")
    beta = jnp.stack([jnp.asarray(betas[p]) for p in precisions], axis=0)
    if beta.shape[1:] != alpha.shape[1:]:
      raise ValueError(f"beta_p must be [K/g, N] = {alpha.shape[1:]}; got {beta.shape[1:]}")
  if num_groups is not None and num_groups != alpha.shape[1]:
    if num_groups < alpha.shape[1]:
      raise ValueError(f"num_groups = {num_groups} < the {alpha.shape[1]} groups in alpha")
    pad = ((0, 0), (0, num_groups - alpha.shape[1]), (0, 0))
    alpha = jnp.pad(alpha, pad)
    beta = None if beta is None else jnp.pad(beta, pad)
  return alpha, beta, precisions


def scales_to_reference(
  alpha: jax.Array,
  beta: jax.Array | None,
  precisions: Sequence[int],
  *,
  num_groups: int | None = None,
):
  """Compact kernel scales -> ``({p: alpha_p [K/g, p, N]}, {p: beta_p [K/g, N]} or None)``.

  ``num_groups`` slices the group axis back to the logical ``K / g`` (default: keep all).
  """
  precisions = check_precisions(precisions)
  offsets = plane_offsets(precisions)
  if alpha.shape[0] != sum(precisions):
    raise ValueError(
      f"alpha has {alpha.shape[0]} rows; precisions {precisions} need {sum(precisions)}"
    )
  sl = slice(None) if num_groups is None else slice(0, num_groups)
  alphas = {p: jnp.transpose(alpha[o : o + p, sl], (1, 0, 2)) for p, o in zip(precisions, offsets)}
  betas = None if beta is None else {p: beta[i, sl] for i, p in enumerate(precisions)}
  return alphas, betas


def from_reference_layout(
  qweight, alphas: Mapping[int, jax.Array], betas: Mapping[int, jax.Array] | None = None
):
  """Loads one layer of an official AnyBCQ checkpoint (arrays already read from a local file).

  Args:
    qweight: int32 ``[K/32, NB, N]``.
    alphas: ``{p: [K/g, p, N]}``; betas: ``{p: [K/g, N]}`` or None (symmetric).
  Returns:
    ``(planes uint32 (NB, K_pad/32, N), alpha (S, K_pad/g, N), beta (|P|, K_pad/g, N) | None,
    precisions)``; scales keep their dtype (fp16 in the released checkpoints).
  """
  planes = planes_from_reference(qweight)
  k = qweight.shape[0] * BITS
  some = jnp.asarray(next(iter(alphas.values())))
  groups = some.shape[0]
  if k % groups:
    raise ValueError(f"K = {k} is not a multiple of the {groups} groups in alpha")
  g = k // groups
  k_pad = planes.shape[1] * BITS
  if k_pad % g:
    raise ValueError(f"group size {g} does not divide the padded K = {k_pad}")
  alpha, beta, precisions = scales_from_reference(alphas, betas, num_groups=k_pad // g)
  check_precisions(precisions, planes.shape[0])
  return planes, alpha, beta, precisions


def to_reference_layout(planes, alpha, beta, precisions, k: int | None = None):
  """Inverse of ``from_reference_layout``: returns ``(qweight, alphas, betas)``.

  ``k`` is the logical K (default ``K_pad``); it must be a multiple of 32 and of the group size.
  """
  k_pad = planes.shape[1] * BITS
  k = k_pad if k is None else k
  g = k_pad // alpha.shape[1]
  if k % g:
    raise ValueError(f"k = {k} is not a multiple of the group size {g}")
  alphas, betas = scales_to_reference(alpha, beta, precisions, num_groups=k // g)
  return planes_to_reference(planes, k), alphas, betas


def random_bitplane_layer(
  seed: int,
  k: int,
  n: int,
  *,
  num_planes: int = 4,
  precisions: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  asymmetric: bool = True,
  dtype=jnp.float32,
):
  """A random packed layer for tests and benchmarks: ``(planes, alpha, beta, precisions)``.

  Generated with NumPy from an integer seed (no JAX compilation). Scales are positive and halve
  with the plane index, as trained AnyBCQ scales roughly do; ``beta`` is None when ``asymmetric``
  is False. Shapes follow the module docstring (K is padded to 256 with zero scales).
  """
  precisions = check_precisions(precisions, num_planes)
  k_pad = round_up(k, TILE)
  if k % group_size or k_pad % group_size:
    raise ValueError(f"K = {k} (padded {k_pad}) must be a multiple of group_size = {group_size}")
  rng = np.random.default_rng(seed)
  planes = pack_planes(rng.integers(0, 2, (num_planes, k, n), dtype=np.uint8))
  groups, groups_pad = k // group_size, k_pad // group_size
  decay = np.concatenate([0.5 ** np.arange(p) for p in precisions])
  alpha = 0.05 * rng.uniform(0.5, 1.5, (sum(precisions), groups, n)) * decay[:, None, None]
  pad = ((0, 0), (0, groups_pad - groups), (0, 0))
  alpha = jnp.asarray(np.pad(alpha, pad), dtype)
  beta = None
  if asymmetric:
    beta = 0.01 * rng.standard_normal((len(precisions), groups, n))
    beta = jnp.asarray(np.pad(beta, pad), dtype)
  return planes, alpha, beta, precisions


__all__ = [
  "TILE",
  "WORDS_PER_TILE",
  "BITS",
  "GROUP_SIZES",
  "plane_offsets",
  "check_precisions",
  "infer_precisions",
  "Layout",
  "check_operands",
  "check_precision",
  "unpack_words",
  "pack_planes",
  "unpack_planes",
  "check_planes",
  "planes_from_reference",
  "planes_to_reference",
  "scales_from_reference",
  "scales_to_reference",
  "from_reference_layout",
  "to_reference_layout",
  "random_bitplane_layer",
]


def check_kernel_variant(variant: str, mixed: bool, group_size: int) -> str:
  """The variant a kernel runs ("partials" whenever rows mix precisions), after checking it and
  the group size (one of ``GROUP_SIZES``); shared by the TPU and GPU kernels."""
  if mixed:
    variant = "partials"
  if variant not in ("partials", "dequant"):
    raise ValueError(f"variant must be 'partials' or 'dequant'; got {variant!r}")
  if group_size not in GROUP_SIZES:
    raise ValueError(f"group_size must be one of {GROUP_SIZES} for the kernel; got {group_size}")
  return variant
