"""Block-size table for the AnyBCQ bit-plane matmul kernels (one small table per backend).

Starting points, reasoned below; none is
tuned on hardware yet (run ``python -m benchmarks.bitplane_matmul`` on the device and edit
the rows). Rows are keyed by
a shape bucket on M (the number of activation rows); ``pick_config`` clamps a row to the problem
(small M, N and K that the blocks must divide) so every call gets legal blocks.

Why these numbers:

* TPU (Mosaic): blocks' last two dims must be multiples of (8, 128) (16 rows for 16-bit x);
  bk a multiple of the 256-input pack tile (so bk/32 is a multiple of 8). Per-step overhead is
  ~0.35 us, so the GEMV row uses large K and N blocks; prefill dequantizes a (bk, bn) tile in VMEM
  and does one MXU matmul per (k, plane sweep). The unpack is repeated per M block, so prefill
  uses bm = 512 (one dequantization per tile for M <= 512). Budget: scratch ~ bm*bn*4 (+ bk*bn*4 for dequant).
* GPU, Hopper and newer (compute capability >= 9.0, Mosaic GPU): up to ``LUT_MAX_M`` rows the
  lookup-table GEMV (``kernel_mgpu``, variant ``"lut"``): one warpgroup per block, BN = 128 ·
  columns per thread (``bn``), ``bk`` = the K slice of one block (256: its 32 chunk tables fill
  32 KiB of shared memory), split-K = K / bk. Its work grows with M (one table and one lookup
  pass per row) while a tensor-core kernel's does not up to its row block; ``LUT_MAX_M`` is where
  the roofline estimate (``benchmarks/_roofline.py``, counted PTX per weight-plane at the
  integer-issue rate) of the LUT kernel and of the Triton kernel's 16-row decode block cross (the
  estimate predates the wgmma kernel, whose unpack has not been counted). It needs N % 128 == 0
  (no plane copies).
* GPU, Hopper (compute capability 9.x), every other call: the Mosaic GPU wgmma kernel
  (``kernel_wgmma``, variant ``"wgmma"``, ``WGMMA_TABLE``): blocks of BN = 64 output features
  (wgmma's M) by ``bm`` activation rows (wgmma's N, a multiple of 8: a few rows pad to 8, not to
  64). ``bm`` is capped at 128 (the (64, bm) f32 output and partial accumulators take bm / 2
  registers per thread each; bm = 128 compiled to 174 / 188 / 226 registers at g = 64 / 128 /
  256, no spills, on sm_90a) and at 64 for f32 activations (three bf16 terms stacked along
  wgmma's N: 3 · bm <= 256) and for per-row precisions (their coefficients spilled 92 bytes at
  bm = 128, g = 128).
  ``split_k`` splits K so that a 4096-wide layer (64 feature blocks) fills the 132 SMs when M is
  small.
* GPU (Triton, ``BLOCK_TABLE["gpu"]``): Pallas's Triton backend is deprecated (jax 0.11); these
  rows run only when a Triton variant is asked for explicitly (``config=BlockConfig("partials" |
  "dequant", ...)``) while the installed jax still ships it. Power-of-two blocks, dot dims >= 16
  (decode pads M to 16). Decode splits K over ``split_k`` programs (f32 partial outputs summed by
  XLA: no atomics) so a 4096-wide GEMV still fills the SMs; from 17 rows on, the dequantize
  variant does one dot per 256-input tile instead of p per-plane dots.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from kernels_pallas._backend import round_up
from kernels_pallas.bitplane_matmul import format as fmt

MiB = 1 << 20


@dataclasses.dataclass(frozen=True)
class BlockConfig:
  """Static kernel configuration (hashable; travels through the custom_vjp's nondiff args).

  Attributes:
    variant: TPU and Triton: ``"partials"`` (per-plane partial products, small M) or
      ``"dequant"`` (W tile dequantized on chip, one matmul; large M); mixed-precision calls
      always use partials. Mosaic GPU: ``"wgmma"`` (Hopper, any M; per-plane partials) or
      ``"lut"`` (the lookup-table GEMV, Hopper and newer, few rows).
    bm, bn: M and N blocks (wgmma: bn = 64 features per block, bm activation rows). bk: TPU K
      block (multiple of 256 and of g), the LUT kernel's K slice; the other GPU kernels walk
      256-input tiles and ignore it.
    split_k: GPU only; programs per output tile along K (f32 partial outputs, summed outside).
    num_warps, num_stages: Triton parameters.
    vmem_limit_bytes: TPU scoped-VMEM limit passed to Mosaic.
  """

  variant: str
  bm: int
  bn: int
  bk: int = 0
  split_k: int = 1
  num_warps: int = 4
  num_stages: int = 2
  vmem_limit_bytes: int | None = None


class TableRow(NamedTuple):
  bucket: str
  max_m: int | None  # rows up to this M use this entry (None: no limit)
  config: BlockConfig


BLOCK_TABLE: dict[str, tuple[TableRow, ...]] = {
  "tpu": (
    TableRow(
      "decode", 16, BlockConfig("partials", bm=16, bn=1024, bk=1024, vmem_limit_bytes=32 * MiB)
    ),
    TableRow(
      "small", 64, BlockConfig("partials", bm=64, bn=512, bk=512, vmem_limit_bytes=32 * MiB)
    ),
    TableRow(
      "prefill", None, BlockConfig("dequant", bm=512, bn=256, bk=512, vmem_limit_bytes=32 * MiB)
    ),
  ),
  # Triton: the explicit (deprecated) choice, see the module docstring.
  "gpu": (
    TableRow(
      "decode", 16, BlockConfig("partials", bm=16, bn=64, split_k=4, num_warps=4, num_stages=2)
    ),
    TableRow(
      "small", 64, BlockConfig("dequant", bm=64, bn=64, split_k=2, num_warps=4, num_stages=2)
    ),
    TableRow("prefill", None, BlockConfig("dequant", bm=64, bn=128, num_warps=8, num_stages=2)),
  ),
}


# Hopper+ (sm_90 and newer): the Mosaic GPU lookup-table GEMV for up to LUT_MAX_M rows, where its
# roofline estimate beats the Triton decode kernel's at 4096 x 4096, p = 2 (H200, counted SASS
# per unit; `benchmarks._roofline.lut_max_rows`, asserted equal in the tests): the LUT
# kernel is shared-memory bound at ~1.7 us per row (random byte lookups, ~3.15 wavefronts per
# warp load), the Triton kernel's 16-row block ~10 us (4.85 PTX per weight-plane).
LUT_MAX_M = 5
LUT_ROW = TableRow("lut", LUT_MAX_M, BlockConfig("lut", bm=1, bn=512, bk=fmt.TILE))
LUT_MIN_CAPABILITY = 9.0


# Hopper (compute capability 9.x): the Mosaic GPU wgmma kernel, the default GPU kernel beyond the
# LUT rows. Starting points, not tuned on hardware (rows keyed by M like the tables above).
WGMMA_TABLE: tuple[TableRow, ...] = (
  TableRow("decode", 16, BlockConfig("wgmma", bm=16, bn=64, split_k=4)),
  TableRow("small", 64, BlockConfig("wgmma", bm=64, bn=64, split_k=2)),
  TableRow("prefill", None, BlockConfig("wgmma", bm=128, bn=64)),
)
WGMMA_CAPABILITIES = (9.0, 10.0)  # [lo, hi): wgmma is sm_90a only (Blackwell has tcgen05)
WGMMA_BN = 64
WGMMA_MAX_BM = 128
WGMMA_MAX_BM_SMALL = 64


def wgmma_capable(capability: float | None) -> bool:
  """Whether the wgmma kernel is the default for a GPU of this compute capability: Hopper (9.x),
  or None (no GPU attached: interpret mode, or lowering for CUDA on a CPU host, whose target is
  taken to be Hopper)."""
  lo, hi = WGMMA_CAPABILITIES
  return capability is None or lo <= capability < hi


def wgmma_row(m: int) -> TableRow:
  """The ``WGMMA_TABLE`` row for ``m`` activation rows."""
  return next(row for row in WGMMA_TABLE if row.max_m is None or m <= row.max_m)


def wgmma_config(
  m: int,
  k_pad: int,
  base: BlockConfig | None = None,
  *,
  f32_activations: bool = False,
  mixed: bool = False,
) -> BlockConfig:
  """The wgmma row for ``m`` (or ``base``) clamped to a problem: bm a multiple of 8, at most the
  padded M and ``WGMMA_MAX_BM`` (``WGMMA_MAX_BM_SMALL`` for f32 x, which is three bf16 terms
  along wgmma's N, and for per-row precisions, whose per-row coefficients take registers); bn =
  64; split_k at most the number of 256-input tiles."""
  cfg = base if base is not None else wgmma_row(m).config
  cap = WGMMA_MAX_BM_SMALL if (f32_activations or mixed) else WGMMA_MAX_BM
  bm = min(round_up(max(cfg.bm, 8), 8), round_up(m, 8), cap)
  split_k = max(1, min(cfg.split_k, k_pad // fmt.TILE))
  return dataclasses.replace(cfg, variant="wgmma", bm=bm, bn=WGMMA_BN, bk=fmt.TILE, split_k=split_k)


def lut_eligible(m: int, n: int, capability: float | None) -> bool:
  """Whether the LUT kernel serves this call: a Hopper+ GPU, at most LUT_MAX_M rows, N % 128 == 0."""
  return (
    capability is not None and capability >= LUT_MIN_CAPABILITY and m <= LUT_MAX_M and n % 128 == 0
  )


def lut_config(n: int, k_pad: int, base: BlockConfig | None = None) -> BlockConfig:
  """The LUT row (or ``base``) clamped to a problem: bn = 128 · (4, 2 or 1) dividing N, bk = the
  largest multiple of 256 up to the row's that divides K_pad; split_k = K_pad / bk."""
  cfg = base if base is not None else LUT_ROW.config
  bn = next(128 * c for c in (4, 2, 1) if 128 * c <= max(cfg.bn, 128) and n % (128 * c) == 0)
  bk = _largest_divisor(k_pad, max(cfg.bk, fmt.TILE), fmt.TILE)
  return dataclasses.replace(cfg, variant="lut", bm=1, bn=bn, bk=bk, split_k=k_pad // bk)


def table_row(platform: str, m: int) -> TableRow:
  """The table row for ``m`` activation rows on ``platform`` (``"tpu"`` or ``"gpu"``)."""
  if platform not in BLOCK_TABLE:
    raise ValueError(f"platform must be one of {tuple(BLOCK_TABLE)}; got {platform!r}")
  for row in BLOCK_TABLE[platform]:
    if row.max_m is None or m <= row.max_m:
      return row
  raise AssertionError("the last table row must have max_m=None")


def _largest_divisor(n: int, cap: int, step: int, pow2: bool = False) -> int:
  """Largest d <= cap with d % step == 0 and n % d == 0 (d a power of two if pow2)."""
  best = step
  d = step
  while d <= cap:
    if n % d == 0 and (not pow2 or d & (d - 1) == 0):
      best = d
    d = d * 2 if pow2 else d + step
  return best


def next_pow2(v: int) -> int:
  return 1 if v <= 1 else 1 << (v - 1).bit_length()


def sublanes(itemsize: int) -> int:
  """TPU row multiple for an activation dtype (8 for 32-bit, 16 for 16-bit)."""
  return 8 if itemsize >= 4 else 16


def padded_n(platform: str, n: int) -> int:
  return round_up(n, 128 if platform == "tpu" else 16)


def pick_config(
  platform: str,
  m: int,
  k_pad: int,
  n: int,
  group_size: int,
  x_itemsize: int,
  *,
  mixed: bool = False,
  base: BlockConfig | None = None,
  f32_activations: bool = False,
) -> BlockConfig:
  """Clamps a table row (or ``base``) to a problem so that the blocks are legal and divide it.

  Args:
    platform: ``"tpu"`` or ``"gpu"``.
    m: activation rows; k_pad: stored K (multiple of 256); n: output features.
    group_size: g; x_itemsize: bytes per activation element (as the kernel will see it).
    mixed: per-row precisions (forces the partials variant).
    f32_activations: x is float32 (GPU: forces the partials variant, see below).
    base: a config to clamp instead of the table row (benchmarks and tests).
  Returns:
    a ``BlockConfig`` whose bm divides the padded M, bn the padded N, bk the stored K.
  """
  cfg = base if base is not None else table_row(platform, m).config
  if mixed and cfg.variant != "partials":
    cfg = dataclasses.replace(cfg, variant="partials")
  n_pad = padded_n(platform, n)
  if platform == "tpu":
    sub = sublanes(x_itemsize)
    bm = min(round_up(cfg.bm, sub), round_up(m, sub))
    bn = _largest_divisor(n_pad, max(cfg.bn, 128), 128)
    bk = _largest_divisor(k_pad, max(cfg.bk, fmt.TILE), fmt.TILE)
    if bk % group_size:
      raise ValueError(f"block bk = {bk} is not a multiple of the group size {group_size}")
    limit = cfg.vmem_limit_bytes or 16 * MiB
    while bn > 128 and vmem_bytes(cfg.variant, bm, bn, bk, group_size, x_itemsize) > limit:
      bn = _largest_divisor(n_pad, bn // 2, 128)
    return dataclasses.replace(cfg, bm=bm, bn=bn, bk=bk, split_k=1)
  if f32_activations and base is None:
    # f32 activations: the partials dots are f32-exact on tensor cores (x split into 3 bf16 terms
    # against exact 0/1 bits); the dequantize variant's f32 W tile with TF32x3 splits spilled
    # ~15.7 KB at BN = 128 on sm_90a, and the partials variant itself spills above 32 x 32
    # blocks (104 B at 64 x 64, 384 B at 64 x 128; 0 at 32 x 32 and 16 x 64). bf16/fp16
    # activations keep the table's row.
    cfg = dataclasses.replace(
      cfg, variant="partials", bm=min(cfg.bm, 32), bn=min(cfg.bn, 32 if m > 16 else 64)
    )
  bm = min(next_pow2(max(cfg.bm, 16)), max(16, next_pow2(m)))
  bn = _largest_divisor(n_pad, max(next_pow2(cfg.bn), 16), 16, pow2=True)
  split_k = max(1, min(cfg.split_k, k_pad // fmt.TILE))
  return dataclasses.replace(cfg, bm=bm, bn=bn, bk=fmt.TILE, split_k=split_k)


def vmem_bytes(
  variant: str,
  bm: int,
  bn: int,
  bk: int,
  g: int,
  x_itemsize: int,
  scale_rows: int = 16,
  scale_itemsize: int = 4,
) -> int:
  """Rough TPU VMEM budget of one kernel instance: double-buffered blocks, scratch and the
  largest unpack temporaries (scale_rows covers the all-precision blocks of the mixed variant)."""
  blocks = 2 * (
    bm * bk * x_itemsize
    + (bk // 32) * bn * 4
    + 2 * scale_rows * (bk // g) * bn * scale_itemsize
    + bm * bn * 4
  )
  scratch = bm * bn * 4 + (bk * bn * 4 if variant == "dequant" else 0)
  temps = 3 * max(g, 128) * bn * 4
  return blocks + scratch + temps


def production_configs() -> list[tuple[str, str, BlockConfig]]:
  """Every (platform, bucket, config) in ``BLOCK_TABLE`` (TPU rows and the explicit Triton GPU
  rows): what cross-lowering tests must cover. The Mosaic GPU rows are in ``mosaic_gpu_configs``;
  the LUT row (``LUT_ROW``) needs the CUDA plugin to lower."""
  return [(plat, row.bucket, row.config) for plat, rows in BLOCK_TABLE.items() for row in rows]


def mosaic_gpu_configs() -> list[tuple[str, str, BlockConfig]]:
  """The default Hopper rows (``WGMMA_TABLE``) as ``("gpu", bucket, config)``."""
  return [("gpu", row.bucket, row.config) for row in WGMMA_TABLE]
