"""Block-size table of the lmKAN spline-lookup kernels, per backend and grid size.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference CUDA code github.com/schwallergroup/lmkan). Rows
are keyed by the padded corner count C_pad = next_pow2(max((G+1)², 128)), which fixes the size of the
interpolation matrices: "small" C_pad = 128 (G ≤ 10), "medium" 256 (G ≤ 14), "large" 1024 (G ≤ 30)
and "huge" beyond. None is tuned on hardware yet (run `python -m benchmarks.spline_lookup` on the
device and edit the rows): the GPU rows are sized from the sm_90a compile (registers, shared memory;
see Why), the TPU rows from the VMEM budget below.

| platform | bucket | variant  | fwd (bq, bb, bp) | dT (bq, bb) | dx (bb, bq) | params |
|----------|--------|----------|------------------|-------------|-------------|--------|
| tpu      | small  | portable | 512, 512, 8      | 256, 512    | 512, 512    | 32 MiB VMEM |
| tpu      | medium | portable | 512, 512, 8      | 256, 512    | 512, 512    | 32 MiB VMEM |
| tpu      | large  | portable | 256, 256, 2      | 128, 256    | 256, 256    | 32 MiB VMEM |
| tpu      | huge   | portable | 128, 128, 1      | 128, 128    | 128, 128    | 64 MiB VMEM |
| gpu      | small  | mgpu     | 128, 16, 8       | 128, C 128  | 64, 128     | 1 warpgroup |
| gpu      | medium | mgpu     | 128, 16, 8       | 128, C 128  | 64, 128     | 1 warpgroup |
| gpu      | large  | mgpu     | 128, 16, 8       | 128, C 128  | 64, 128     | 1 warpgroup |
| gpu      | huge   | mgpu     | 128, 16, 8       | 128, C 128  | 64, 128     | 1 warpgroup |

The TPU variant of each row is the one with the smaller per-unit roofline *estimate*
(`benchmarks._roofline.spline_tpu_choice`, tested; see Why); the TPU gather kernels stay
available as `variant="gather"` (`table_row("tpu", G, variant="gather")`, `ALTERNATIVE_TABLE`).
The GPU rows are the Mosaic GPU kernels (`kernel_mgpu.py`; "C 128": dT blocks own 128 corner rows,
`dt_bc`). Pallas's Triton backend is deprecated (jax 0.11) and is never chosen by default: its
gather kernels (`kernel_triton_gather.py`) are the explicit `table_row("gpu", G, variant="gather")`
rows of `ALTERNATIVE_TABLE`, and `BlockSizes("portable", ...)` runs the interpolation-matrix
kernels with Triton parameters.

| platform | bucket | variant  | fwd (bq, bb, bp) | dT (bq, bb) | dx (bb, bq) | params |
|----------|--------|----------|------------------|-------------|-------------|--------|
| tpu      | small  | gather   | 256, 2048, 8     | 256, 512    | 512, 512    | 32 MiB VMEM |
| tpu      | medium | gather   | 256, 2048, 4     | 256, 512    | 512, 256    | 32 MiB VMEM |
| tpu      | large  | gather   | 256, 1024, 2     | 128, 256    | 256, 256    | 32 MiB VMEM |
| tpu      | huge   | gather   | 128, 512, 1      | 128, 128    | 128, 128    | 64 MiB VMEM |
| gpu      | small  | gather   | 64, 64 (bq, bb)  | 64, 32      | 64, 64      | 4 warps, 2 stages (Triton) |
| gpu      | medium | gather   | 64, 64 (bq, bb)  | 64, 32      | 64, 64      | 8 warps, 2 stages (Triton) |
| gpu      | large  | gather   | 64, 64 (bq, bb)  | 16, 16      | 64, 64      | 8 warps, 2 stages (Triton) |
| gpu      | huge   | gather   | 64, 64 (bq, bb)  | 16, 16      | 64, 64      | 8 warps, 2 stages (Triton) |

Why:
* TPU (Mosaic), choice of variant: per-unit roofline *estimates* (TPU v5e, forward, B = 4096,
  512 → 512, i.e. P = 256, Q = 512; `python -m benchmarks.spline_lookup` prints them), not
  measurements:

  | bucket (G)  | matrix form (`portable`)          | lane gathers (`gather`)          |
  |-------------|-----------------------------------|----------------------------------|
  | small (8)   | 2.1 ms (MXU; VALU 0.9, HBM 0.8)   | 16.8 ms (cross-lane; VALU 0.7)   |
  | medium (14) | 4.2 ms (MXU; VALU 1.7, HBM 1.6)   | 33.6 ms (cross-lane)             |
  | large (26)  | 16.7 ms (MXU; HBM 11.6, VALU 7.0) | 134 ms (cross-lane)              |
  | huge (40)   | 44 ms (HBM; MXU 33.5)             | 268 ms (cross-lane)              |

  Rates (`_roofline.UNIT_RATES`): MXU 197 TFLOP/s bf16 and HBM 819 GB/s (vendor figures); VALU
  4 slots × one 8×128 vreg per cycle (assumed); cross-lane ops (`vsetperm` / `vperm` / `vpermres`)
  one every 8 cycles on 2 units, from third-party instruction tables (the pallas-tpu tutorial, the
  scaling book's TPU chapter), at an assumed 1.5 GHz clock. Counts: the gather forward's compiled
  tile loop issues 12 cross-lane and 8 VALU ops per (sample, pair, output) at G = 8 (libtpu's
  final LLO, `tpu_llo --case=spline_fwd_g8`, in the compile tier; the cross-lane ops scaled by the
  number of 128-corner chunks beyond, plus a select per extra chunk); the matrix form does
  3 bf16 MXU passes per f32 dot (2·C_pad·3 FLOPs per (sample, pair, output)) and 40 VALU ops per
  (sample, pair, corner) to build the matrices (the kernel's own cost estimate). The gather form
  does 96× fewer FLOPs at G = 8 but, by this estimate, is 6-8× slower at every bucket (and at
  B = 65536): its lane permutes, not its FLOPs, bound it. The choice rests on the third-party
  cross-lane rate: it flips only if cross-lane ops issue 6-8× faster than that (counting only the
  `vperm` of each gather's three ops, the gather form is still 2-2.7× slower). Only a chip can
  settle it. The table is keyed by G only and chosen at that width: the matrix build's VALU work does
  not grow with Q, so for narrow layers (Q below ~27, e.g. 16 → 16) the gather form's estimate is the
  smaller (at a few µs per call either way).
* TPU (Mosaic), matrix form (`kernel_portable.py`): the forward keeps the output column (Q_pad, bb)
  resident in VMEM (grid (B/bb, P/bp, Q/bq), `kernel_portable._fwd_kernel_resident`) and builds the
  (C_pad, bb) interpolation matrices of a pair block once per (pair block, B-block), into bf16
  head/tail scratch reused by every Q tile; `fwd_bq` is the streamed table tile. When 2·Q_pad·bb·4
  bytes exceed a quarter of the VMEM limit (Q_pad > 2048 at bb = 512 and 32 MiB) it falls back to
  the (Q/bq, B/bb, P/bp) grid, which rebuilds the matrix per Q tile (bitwise equal results). dT is
  the owner-computes kernel (bf16x3 MXU dots; Mosaic has no scatter or atomic add), dx a matmul.
  Lane dims (bq, bb) are multiples of 128; every reduction axis (pairs and Q tiles in the forward,
  batch in dT, outputs in dx) is a trailing "arbitrary" grid axis whose output block is revisited
  consecutively, so VMEM holds one (bp, C_pad, bq) table block, not the layer. Budget:
  double-buffered blocks, the output column, 2·bp·C_pad·bb bf16 scratch (2 MiB at the small and
  large rows) and H temporaries. `bq` 128 fits the v5e MXU; try 256 on v6e.
* TPU (Mosaic), the alternative `variant="gather"` (`kernel_tpu_gather.py`, rows of
  `ALTERNATIVE_TABLE`): forward and dx by lane gathers (the four corners of 128 samples × 8 outputs
  per `tpu.dynamic_gather`, 8 f32 FLOPs per (sample, pair, output) as in the sparse lookup); dT the
  same owner-computes kernel. Forward grid (B/bb, Q/bq, P/bp), pairs last ("arbitrary"): the
  (bq, bb) output block stays in VMEM over the pairs; the table is read B/bb times, hence the wide
  batch block (2048: a 2 MiB output block and a bp·bq·C_pad·4-byte table block of 1-2 MiB, both
  double-buffered, well inside 32 MiB). dx grid (P, B/bb, Q/bq) with the output blocks as the
  reduction.
* GPU (Mosaic GPU, `variant="mgpu"`, the production rows; `kernel_mgpu.py`): one warpgroup per
  block whose 128 threads own output columns, so a corner is one uniform row load. Forward: a block
  is `fwd_bb` = 16 samples × `fwd_bq` = 128 columns, the 16 samples unrolled (64 independent row
  loads per pair in flight per thread), cells and weights of `fwd_bp` = 128 / 16 = 8 pairs staged
  in shared memory at a time; compiled for sm_90a it uses 126 registers and spills nothing (16 ×
  256 used 196, 32 × 128 used 218: fewer blocks per SM). dT: a block owns `dt_bq` = 128 columns ×
  `dt_bc` = 128 corner rows in shared memory (the small bucket's (G+1)² ≤ 121 rows fit one block,
  at most 64 KiB; larger grids split the corner axis, each block walking the batch again and
  skipping the work when its rows lie past (G+1)²). dx: 64 samples × 128-column windows (fixed by
  the kernel). Columns are multiples of 128 (the warpgroup), B is padded to 64 and P to `fwd_bp`.
  G only changes the row offsets and the one-hot node select, so every bucket has the same blocks.
* GPU (Triton, explicit only): powers of two, dot dims ≥ 16. Programs run concurrently, so reduction axes are walked
  in-kernel (the whole pair range in the forward, the whole batch in dT, all outputs in dx) and the
  table entries above are the in-kernel windows. The (C_pad, bb) matrix lives in registers: at C_pad
  = 1024 the dT batch window drops to 16, and at C_pad ≥ 1024 the owned dT tile to (C_pad, 16): with a
  64-wide tile the (C_pad, 64) f32 accumulator spilled 3.9 KB per thread at G = 26 and 14.8 KB at
  G = 40 (sm_90a, ptxas -v), with 16 it spills 192 B and 1.4 KB, at the price of building each
  batch window's interpolation matrix for 4× as many output tiles (not measured on a GPU yet).
  Every GPU row uses the G-independent gather kernels for the forward and dx (4 FLOPs-pairs per
  (sample, pair, output), the sparse form's cost; the interpolation-matrix forward did C_pad/4
  times that and, compiled for sm_90a, spilled 3.7-15 KB at G = 8 while the gather forward spills
  nothing); dT stays owner-computes (deterministic, TF32x3 tensor-core dots) unless
  `dtable="atomic"` is asked for.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from kernels_pallas._backend import round_up

MiB = 1 << 20
PLATFORMS = ("tpu", "gpu")
VARIANTS = ("portable", "gather", "mgpu")
DTABLES = ("owner", "atomic")


@dataclasses.dataclass(frozen=True)
class BlockSizes:
  """Static kernel configuration (hashable: travels through the custom_vjp's nondiff argument).

  Attributes:
    variant: "mgpu" (the Mosaic GPU kernels, `kernel_mgpu.py`: GPU only, the default GPU rows),
      "portable" (interpolation-matrix kernels, TPU and, with Triton parameters, GPU) or "gather"
      (the forward and dx by gathers: Triton pointer gathers on GPU, Mosaic lane gathers on TPU).
      On GPU, "portable" and "gather" are Pallas Triton kernels (deprecated backend): explicit
      choices only.
    dtable: "owner" (owner-computes dT kernel, deterministic) or "atomic" (Triton row-segment atomics;
      gather variant on GPU only).
    fwd_bq, fwd_bb: forward output and batch blocks. fwd_bp: pairs per forward grid step (TPU);
      pairs whose cells are staged at once ("mgpu", set to 128 / fwd_bb by `plan`).
    dt_bq: dT output tile owned by a program; dt_bb: dT batch block (TPU grid block; Triton window;
      unused by "mgpu", which walks the batch in 64-sample chunks). dt_bc: dT corner rows owned by a
      block ("mgpu" only; the corner axis is split into C_pad / dt_bc blocks).
    dx_bb: dx batch block; dx_bq: dx output block (TPU grid block; Triton window; "mgpu" fixes them
      at 64 samples and 128-column windows).
    num_warps, num_stages: Triton parameters. vmem_limit_bytes: Mosaic scoped-VMEM limit.
  """

  variant: str = "portable"
  dtable: str = "owner"
  fwd_bq: int = 128
  fwd_bb: int = 128
  fwd_bp: int = 1
  dt_bq: int = 128
  dt_bb: int = 128
  dx_bb: int = 128
  dx_bq: int = 128
  num_warps: int = 4
  num_stages: int = 2
  vmem_limit_bytes: int | None = None
  dt_bc: int = 128

  def __post_init__(self):
    if self.variant not in VARIANTS:
      raise ValueError(f"variant must be one of {VARIANTS}; got {self.variant!r}")
    if self.dtable not in DTABLES:
      raise ValueError(f"dtable must be one of {DTABLES}; got {self.dtable!r}")
    if self.dtable == "atomic" and self.variant != "gather":
      raise ValueError("dtable='atomic' needs variant='gather' (the Triton gather kernels)")
    for f in ("fwd_bq", "fwd_bb", "fwd_bp", "dt_bq", "dt_bb", "dx_bb", "dx_bq", "dt_bc"):
      v = getattr(self, f)
      if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v & (v - 1):
        raise ValueError(f"block size {f} must be a positive power of two; got {v!r}")


class TableRow(NamedTuple):
  bucket: str
  max_c_pad: int | None  # rows with C_pad up to this use this entry (None: no limit)
  config: BlockSizes


_TPU = dict(variant="portable", vmem_limit_bytes=32 * MiB)
_TPU_GATHER = dict(variant="gather", vmem_limit_bytes=32 * MiB)
_GPU = dict(num_stages=2)
# Mosaic GPU rows (`kernel_mgpu.py`): see the module docstring (Why) for the blocks.
_MGPU = BlockSizes(
  "mgpu", fwd_bq=128, fwd_bb=16, fwd_bp=8, dt_bq=128, dt_bc=128, dx_bb=64, dx_bq=128
)

BLOCK_TABLE: dict[str, tuple[TableRow, ...]] = {
  "tpu": (
    TableRow(
      "small",
      128,
      BlockSizes(
        fwd_bq=512, fwd_bb=512, fwd_bp=8, dt_bq=256, dt_bb=512, dx_bb=512, dx_bq=512, **_TPU
      ),
    ),
    TableRow(
      "medium",
      256,
      BlockSizes(
        fwd_bq=512, fwd_bb=512, fwd_bp=8, dt_bq=256, dt_bb=512, dx_bb=512, dx_bq=512, **_TPU
      ),
    ),
    TableRow(
      "large",
      1024,
      BlockSizes(
        fwd_bq=256, fwd_bb=256, fwd_bp=2, dt_bq=128, dt_bb=256, dx_bb=256, dx_bq=256, **_TPU
      ),
    ),
    TableRow(
      "huge",
      None,
      BlockSizes(
        fwd_bq=128,
        fwd_bb=128,
        fwd_bp=1,
        dt_bq=128,
        dt_bb=128,
        dx_bb=128,
        dx_bq=128,
        variant="portable",
        vmem_limit_bytes=64 * MiB,
      ),
    ),
  ),
  "gpu": (
    TableRow("small", 128, _MGPU),
    TableRow("medium", 256, _MGPU),
    TableRow("large", 1024, _MGPU),
    TableRow("huge", None, _MGPU),
  ),
}

# The rows of the TPU gather kernels, kept as the alternative to the production rows (see the
# module docstring): `table_row("tpu", G, variant="gather")`; and the Triton gather rows, the
# explicit (never default) GPU alternative: `table_row("gpu", G, variant="gather")`.
ALTERNATIVE_TABLE: dict[str, tuple[TableRow, ...]] = {
  "tpu": (
    TableRow(
      "small",
      128,
      BlockSizes(
        fwd_bq=256, fwd_bb=2048, fwd_bp=8, dt_bq=256, dt_bb=512, dx_bb=512, dx_bq=512, **_TPU_GATHER
      ),
    ),
    TableRow(
      "medium",
      256,
      BlockSizes(
        fwd_bq=256, fwd_bb=2048, fwd_bp=4, dt_bq=256, dt_bb=512, dx_bb=512, dx_bq=256, **_TPU_GATHER
      ),
    ),
    TableRow(
      "large",
      1024,
      BlockSizes(
        fwd_bq=256, fwd_bb=1024, fwd_bp=2, dt_bq=128, dt_bb=256, dx_bb=256, dx_bq=256, **_TPU_GATHER
      ),
    ),
    TableRow(
      "huge",
      None,
      BlockSizes(
        fwd_bq=128,
        fwd_bb=512,
        fwd_bp=1,
        dt_bq=128,
        dt_bb=128,
        dx_bb=128,
        dx_bq=128,
        variant="gather",
        vmem_limit_bytes=64 * MiB,
      ),
    ),
  ),
  "gpu": (
    TableRow(
      "small",
      128,
      BlockSizes(
        "gather", fwd_bq=64, fwd_bb=64, dt_bq=64, dt_bb=32, dx_bb=64, dx_bq=64, num_warps=4, **_GPU
      ),
    ),
    TableRow(
      "medium",
      256,
      BlockSizes(
        "gather", fwd_bq=64, fwd_bb=64, dt_bq=64, dt_bb=32, dx_bb=64, dx_bq=64, num_warps=8, **_GPU
      ),
    ),
    TableRow(
      "large",
      1024,
      BlockSizes(
        "gather", fwd_bq=64, fwd_bb=64, dt_bq=16, dt_bb=16, dx_bb=64, dx_bq=64, num_warps=8, **_GPU
      ),
    ),
    TableRow(
      "huge",
      None,
      BlockSizes(
        "gather", fwd_bq=64, fwd_bb=64, dt_bq=16, dt_bb=16, dx_bb=64, dx_bq=64, num_warps=8, **_GPU
      ),
    ),
  ),
}


def next_pow2(v: int) -> int:
  return 1 if v <= 1 else 1 << (v - 1).bit_length()


def corner_pad(G: int) -> int:
  """C_pad: the next power of two ≥ max((G+1)², 128) (TPU sublane/MXU multiple, Triton power of two)."""
  return max(128, next_pow2((G + 1) ** 2))


def node_pad(G: int) -> int:
  """G1_pad: rows of the node and inverse-width columns, a multiple of 8 and a power of two ≥ G+1."""
  return max(8, next_pow2(G + 1))


def table_row(platform: str, G: int, variant: str | None = None) -> TableRow:
  """The table row for grid size G on `platform` ("tpu" or "gpu"): the production row, or with
  `variant` the row of that variant (the production row if it is of that variant, else the row of
  `ALTERNATIVE_TABLE`)."""
  if platform not in BLOCK_TABLE:
    raise ValueError(f"platform must be one of {PLATFORMS}; got {platform!r}")
  c_pad = corner_pad(G)
  for rows in (BLOCK_TABLE[platform], ALTERNATIVE_TABLE.get(platform, ())):
    for row in rows:  # the first row whose C_pad bound holds (the last row has none)
      if row.max_c_pad is None or c_pad <= row.max_c_pad:
        if variant is None or row.config.variant == variant:
          return row
        break
  raise ValueError(f"no {platform} table row of variant {variant!r} for G={G}")


class Plan(NamedTuple):
  """Blocks clamped to one problem and the padded sizes they imply (all static)."""

  config: BlockSizes
  p_pad: int
  b_pad: int
  q_pad: int
  c_pad: int
  g1_pad: int


def plan(platform: str, G: int, b: int, p: int, q: int, base: BlockSizes | None = None) -> Plan:
  """Clamps a table row (or `base`) to a problem of B samples, P pairs and Q outputs.

  Blocks are shrunk (never below the backend minimum: 128 lanes on TPU, 16 on Triton) so that small
  problems are not padded to large blocks, then B and Q are padded to the largest block on their axis
  (all powers of two, so every block divides) and P to the forward pair block on TPU.

  Returns:
    a `Plan`; `config` holds the clamped blocks.
  """
  cfg = base if base is not None else table_row(platform, G).config
  if platform not in PLATFORMS:
    raise ValueError(f"platform must be one of {PLATFORMS}; got {platform!r}")
  if platform == "tpu" and cfg.dtable == "atomic":
    raise ValueError(
      "dtable='atomic' is Triton-only (Mosaic TPU has no atomic adds); use dtable='owner' on TPU"
    )
  if cfg.variant == "mgpu":
    return _plan_mgpu(platform, G, b, p, q, cfg)
  lo = 128 if platform == "tpu" else 16
  cap_b, cap_q = max(lo, next_pow2(b)), max(lo, next_pow2(q))
  clamp = lambda v, cap: max(lo, min(v, cap))
  cfg = dataclasses.replace(
    cfg,
    fwd_bq=clamp(cfg.fwd_bq, cap_q),
    fwd_bb=clamp(cfg.fwd_bb, cap_b),
    dt_bq=clamp(cfg.dt_bq, cap_q),
    dt_bb=clamp(cfg.dt_bb, cap_b),
    dx_bb=clamp(cfg.dx_bb, cap_b),
    dx_bq=clamp(cfg.dx_bq, cap_q),
    fwd_bp=min(cfg.fwd_bp, next_pow2(p)) if platform == "tpu" else cfg.fwd_bp,
  )
  b_pad = round_up(b, max(cfg.fwd_bb, cfg.dt_bb, cfg.dx_bb))
  q_pad = round_up(q, max(cfg.fwd_bq, cfg.dt_bq, cfg.dx_bq))
  p_pad = round_up(p, cfg.fwd_bp) if platform == "tpu" else p
  return Plan(cfg, p_pad, b_pad, q_pad, corner_pad(G), node_pad(G))


MGPU_SAMPLE_CHUNK = 64  # `kernel_mgpu.SAMPLE_CHUNK`: B is padded to a multiple of it
MGPU_THREADS = 128  # one warpgroup: output columns come in multiples of 128


def _plan_mgpu(platform: str, G: int, b: int, p: int, q: int, cfg: BlockSizes) -> Plan:
  """The Mosaic GPU kernels' plan: columns per block 128·k clamped to [128, next_pow2(Q)], samples
  per forward block clamped to ≤ 64, 128 / fwd_bb pairs staged at once (P padded to it), dT corner
  rows ≤ C_pad, B padded to 64 (the dT / dx sample chunk); dx blocks are fixed by the kernel."""
  if platform != "gpu":
    raise ValueError("variant='mgpu' (Mosaic GPU kernels) needs platform='gpu'")
  if cfg.dtable != "owner":
    raise ValueError("variant='mgpu' computes dT owner-computes only (dtable='owner')")
  cap_q = max(MGPU_THREADS, next_pow2(q))
  clamp = lambda v: max(MGPU_THREADS, min(v, cap_q))
  c_pad = corner_pad(G)
  fwd_bb = min(cfg.fwd_bb, MGPU_SAMPLE_CHUNK)
  cfg = dataclasses.replace(
    cfg,
    fwd_bb=fwd_bb,
    fwd_bq=clamp(cfg.fwd_bq),
    dt_bq=clamp(cfg.dt_bq),
    dx_bq=MGPU_THREADS,
    dx_bb=MGPU_SAMPLE_CHUNK,
    fwd_bp=MGPU_THREADS // fwd_bb,
    dt_bc=min(cfg.dt_bc, c_pad),
  )
  b_pad = round_up(b, MGPU_SAMPLE_CHUNK)
  q_pad = round_up(q, max(cfg.fwd_bq, cfg.dt_bq))
  p_pad = round_up(p, cfg.fwd_bp)
  return Plan(cfg, p_pad, b_pad, q_pad, c_pad, node_pad(G))


def production_configs() -> list[tuple[str, str, BlockSizes]]:
  """Every (platform, bucket, config) in the table: what the cross-lowering tests must cover."""
  return [(plat, row.bucket, row.config) for plat, rows in BLOCK_TABLE.items() for row in rows]


def alternative_configs() -> list[tuple[str, str, BlockSizes]]:
  """Every (platform, bucket, config) of `ALTERNATIVE_TABLE` (the TPU gather rows)."""
  return [
    (plat, row.bucket, row.config) for plat, rows in ALTERNATIVE_TABLE.items() for row in rows
  ]
