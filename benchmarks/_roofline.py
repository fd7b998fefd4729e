"""Roofline estimates for the kernel benchmarks: bytes and FLOPs per call and the time they imply.

Peak figures (vendor numbers, dense): H200 4.8 TB/s HBM and ~990 TFLOP/s bf16; TPU v5e 819 GB/s HBM
and 197 TFLOP/s bf16. Every other unit has its own rate in ``UNIT_RATES`` (GPU: integer, FP32,
shared-memory wavefronts, instruction issue; TPU: VALU, cross-lane, load/store), each with its
source or marked "assumed". The implied time is the largest of bytes / bandwidth, FLOPs / peak and
each unit's counted operations / its rate: a lower bound, an *estimate*, never a measurement.
"""

from __future__ import annotations

PEAKS = {"H200": (4.8e12, 990e12), "TPU v5e": (819e9, 197e12)}

# Vector-unit element-ops per second, for work the matrix unit does not do (bit unpacking).
# H200: 132 SMs x 64 INT32 lanes per clock x 1.98 GHz (Hopper's integer issue rate).
# TPU v5e: an ASSUMPTION, no vendor figure: 4 vector-ALU slots x 1024 lanes (one 8x128 vreg)
# x 1.5 GHz. Treat the vector bound as an order of magnitude.
VECTOR_OPS = {"H200": 132 * 64 * 1.98e9, "TPU v5e": 4 * 1024 * 1.5e9}

# Vector element-ops per (weight, plane) of the bit-plane kernels, per device and variant:
# * TPU v5e, partials (decode and small M): 1.26 VALU ops per weight-plane with bf16 x (1.47 with
#   f32 x), counted in libtpu's final LLO of the plane loop (`python -m benchmarks.tpu_llo
#   --case=decode_bf16`): two weights per 32-bit shift + AND (`format.pair_words`), then the
#   MXU's partial-sum adds, the alpha widening and the per-group epilogue. The former unpack
#   (shift, AND, compare, select, narrowing per weight) counted 7.1 there.
# * TPU v5e, dequant (prefill): 5 (shift, AND, compare, select +-alpha, add), counted in the Mosaic
#   module, not the LLO.
# * H200: the GPU decode kernel's plane loop has 4.85 PTX instructions per (weight, plane) per
#   thread with bf16 x (shift, AND to 0.0 / 2.0, 16-bit narrowing and the shared-memory store of
#   the MMA operand; `_targets.ptx_mma_loop_instructions`); 5 for both GPU variants.
UNPACK_OPS_PER_WEIGHT_PLANE = {
  "H200": {"partials": 5.0, "dequant": 5.0},
  "TPU v5e": {"partials": 1.26, "dequant": 5.0},
}


# Issue rate of each unit, per device: (operations per second, source). "lane-ops" are per
# thread (GPU) or per vector lane (TPU). A unit's time is its counted operations / its rate; the
# estimate is the largest of them, memory and matrix FLOPs included.
_H200_CLK, _H200_SM = 1.98e9, 132  # boost clock, SMs (NVIDIA H200 datasheet)
_V5E_CLK = 1.5e9  # assumed (no vendor figure for the TPU v5e core clock)
UNIT_RATES = {
  "H200": {
    "int": (
      _H200_SM * 64 * _H200_CLK,
      "CUDA C++ Programming Guide, arithmetic-instruction throughput, cc 9.0: 64 32-bit integer "
      "add / shift / logical / PRMT results per clock per SM",
    ),
    "fp32": (
      _H200_SM * 128 * _H200_CLK,
      "same table: 128 FP32 add / multiply / FMA results per clock per SM",
    ),
    "smem_wavefronts": (
      _H200_SM * 1 * _H200_CLK,
      "shared memory: 32 banks x 4 B = one 128-B wavefront per clock per SM (Hopper tuning guide: "
      "128 B/clock/SM shared-memory bandwidth)",
    ),
    "issue": (
      _H200_SM * 4 * 32 * _H200_CLK,
      "4 warp schedulers per SM, one warp instruction (32 threads) per clock each",
    ),
  },
  "TPU v5e": {
    "valu": (4 * 1024 * _V5E_CLK, "assumed: 4 vector-ALU slots x one 8x128 vreg per cycle"),
    "xlane": (
      2 * 1024 / 8 * _V5E_CLK,
      "third-party instruction tables (pallas-tpu tutorial; the scaling book's TPU chapter): "
      "vperm / vrot issue every 8 cycles on 2 cross-lane units; clock assumed",
    ),
    "vld_vst": (2 * 1024 * _V5E_CLK, "assumed: one vector load and one vector store per cycle"),
  },
}


def _unit_times(device: str, vector_ops) -> dict:
  """Seconds per unit; a plain count is counted at the device's integer / VALU rate."""
  if not isinstance(vector_ops, dict):
    vector_ops = {"int" if device == "H200" else "valu": vector_ops}
  rates = UNIT_RATES[device]
  return {u: c / rates[u][0] for u, c in vector_ops.items() if c}


def implied_seconds(
  nbytes: float, flops: float, device: str, vector_ops: float | dict = 0.0
) -> tuple[float, str]:
  """(lower-bound seconds, bound) on ``device`` (a key of ``PEAKS``); bound is "memory",
  "compute" (matrix-unit FLOPs) or the name of the busiest unit of ``UNIT_RATES``.

  ``vector_ops``: one count for every device (at the integer / VALU rate), or a dict keyed by
  device whose values are a count or a ``{unit: operations}`` dict."""
  bw, peak = PEAKS[device]
  if isinstance(vector_ops, dict) and (not vector_ops or set(vector_ops) <= set(PEAKS)):
    vector_ops = vector_ops.get(device, 0.0)
  times = {"memory": nbytes / bw, "compute": flops / peak, **_unit_times(device, vector_ops)}
  bound = max(times, key=times.get)
  return times[bound], bound


def line(
  label: str,
  nbytes: float,
  flops: float,
  vector_ops: float | dict = 0.0,
  devices: tuple = tuple(PEAKS),
) -> str:
  """One printable roofline line: bytes, FLOPs, vector ops and the implied time per device of
  ``devices`` (those the kernel runs on; default every device of ``PEAKS``)."""

  def ops(v, d):
    if isinstance(v, dict):  # {unit: operations}
      return ", ".join(f"{c / 1e6:.0f} M {u}" for u, c in v.items() if c) + f" on {d}"
    return f"{v / 1e6:.0f} M vector ops on {d}"

  if isinstance(vector_ops, dict):
    vec = ", ".join(ops(v, d) for d, v in vector_ops.items() if v and d in devices)
  else:
    vec = f"{vector_ops / 1e6:.0f} M vector ops" if vector_ops else ""
  parts = [
    f"roofline {label}: {nbytes / 2**20:.2f} MiB, {flops / 1e9:.3f} GFLOP"
    + (f", {vec}" if vec else "")
    + " per call"
  ]
  for dev in devices:
    t, bound = implied_seconds(nbytes, flops, dev, vector_ops)
    parts.append(f"{dev} >= {t * 1e6:.1f} us ({bound})")
  return "; ".join(parts)


def bitplane_vector_ops(m: int, k: int, n: int, p: int, variant: str, bm: int) -> dict:
  """Unpack work of one call per device: every (weight, plane) once per M block (every variant
  repeats the unpack for each of its ceil(M / bm) row blocks). ``variant``: "partials" / "dequant"
  (TPU and the Triton GPU kernel) or "wgmma" (the Hopper kernel: H200 only, counted per unit by
  ``bitplane_wgmma_unit_ops``; the LUT kernel has ``bitplane_lut_unit_ops``)."""
  if variant == "wgmma":
    return {"H200": bitplane_wgmma_unit_ops(m, k, n, p, bm)}
  return {
    dev: ops[variant] * k * n * p * (-(-m // bm))
    for dev, ops in UNPACK_OPS_PER_WEIGHT_PLANE.items()
  }


# The Hopper wgmma kernel (kernel_wgmma), SASS of its group loop compiled for sm_90a through the
# public op (K = N = 1024, g = 128, bf16 x, f16 scales; `compile_report`'s Mosaic GPU section, the
# plugin's PTX through the triton wheel's ptxas and cuobjdump). One iteration per (plane, group) and
# thread unpacks the thread's g / 2 = 64 weights of the (64, g) register A operand (shift, AND,
# XOR: one SHF or IMAD.SHL and one LOP3 per weight; one PRMT per two, packing the 16-bit halves),
# issues the wgmma and scales the thread's bm / 2 accumulator elements by the plane's alpha (one
# FFMA each). Measured at bm = 16 / 64 / 128: 204 / 228 / 261 instructions, 159 / 161 / 161 integer
# (LOP3, IMAD, PRMT, SHF, LEA), 8 / 32 / 64 FFMA + 2 HADD2 (the f16 scale widening), 8 HGMMA: so
# per iteration 160 integer, 2 + bm / 2 FP32 and 196 + bm / 2 issued. g = 64 / 256 unpack 2.66 /
# 2.56 integer ops per weight (g = 128: 2.5). Not timed on a GPU.
WGMMA_SASS_LOOP = {"int": 160, "fp32": 2, "issue": 196}  # + bm / 2 FFMA (fp32 and issue)
WGMMA_GROUP_SIZE = 128  # the counts' g: one iteration unpacks 64 x g / 128 threads weights each
WGMMA_BN = 64  # output features per block (wgmma's M)


def bitplane_wgmma_unit_ops(m: int, k: int, n: int, p: int, bm: int) -> dict:
  """H200 unit operations of one wgmma-kernel call (``WGMMA_SASS_LOOP``, g = 128): every block
  (64 features x bm rows; N / 64 x ceil(M / bm) of them, 128 threads each) runs p · K / g group
  iterations, plus one FFMA pass per group for beta (the group sums' wgmma with an all-ones A; its
  other instructions are not counted)."""
  threads = 128 * (n // WGMMA_BN) * (-(-m // bm))
  iters = threads * p * (k // WGMMA_GROUP_SIZE)
  beta_fma = threads * (k // WGMMA_GROUP_SIZE) * bm // 2
  fma = iters * bm // 2 + beta_fma
  return {
    "int": iters * WGMMA_SASS_LOOP["int"],
    "fp32": iters * WGMMA_SASS_LOOP["fp32"] + fma,
    "issue": iters * WGMMA_SASS_LOOP["issue"] + fma,
  }


def bitplane_wgmma_bytes(m: int, k: int, n: int, p: int, g: int, bm: int, split_k: int) -> int:
  """The wgmma kernel's traffic: p planes, f16 alpha and beta rows of the p active planes, bf16 x,
  and its f32 split-K partials ((split_k, M_pad, N), written and read back by the sum)."""
  m_pad = -(-m // bm) * bm
  return p * k * n // 8 + (p + 1) * (k // g) * n * 2 + m * k * 2 + 2 * split_k * m_pad * n * 4


def smem_wavefronts_per_random_load(entries: int = 256, trials: int = 20000) -> float:
  """Mean shared-memory wavefronts of a warp load whose 32 lanes read uniformly random 4-byte
  entries of a table of ``entries`` words (32 banks: a bank with d distinct requested words takes
  d wavefronts; same-word requests broadcast). Computed (fixed seed); 256 entries give ~3.15."""
  import numpy as np

  idx = np.random.default_rng(0).integers(0, entries, size=(trials, 32))
  onehot = np.zeros((trials, entries), bool)
  np.put_along_axis(onehot, idx, True, axis=1)
  per_bank = onehot.reshape(trials, entries // 32, 32).sum(axis=1)
  return float(per_bank.max(axis=1).mean())


# The LUT decode kernel (kernel_mgpu, Hopper), SASS counted in the compiled kernel (sm_90a, M = 1,
# K = N = 4096, g = 128, 4 columns per thread; `benchmarks._targets.lut_facts` and
# cuobjdump): per thread, the plane loop (1024 weight-planes per iteration) and the rest (table
# build, beta, epilogue, once per row), by unit. Loop: 128 PRMT + 128 LEA + 6 other integer, 128
# LDS, 120 FADD + 8 FFMA + 8 HADD2 (f16 scale widening), 10 LDG, 1 BRA = 537. Rest: 405.
LUT_SASS = {
  "loop": {"int": 262, "fp32": 136, "lds": 128, "sts": 0, "issue": 537},
  "rest": {"int": 47, "fp32": 207, "lds": 0, "sts": 64, "issue": 405},
}
LUT_WEIGHTS_PER_ITERATION = 1024


def bitplane_lut_unit_ops(m: int, k: int, n: int, p: int) -> dict:
  """H200 unit operations of one LUT-kernel call: every thread (K·N/1024 of them) runs the loop
  p times and the rest once, per row; shared-memory wavefronts = warp loads x the random-index
  bank-conflict factor + conflict-free warp stores."""
  threads = k * n / LUT_WEIGHTS_PER_ITERATION
  per = {u: LUT_SASS["loop"][u] * p + LUT_SASS["rest"][u] for u in LUT_SASS["loop"]}
  waves = per["lds"] / 32 * smem_wavefronts_per_random_load() + per["sts"] / 32
  return {
    "int": m * threads * per["int"],
    "fp32": m * threads * per["fp32"],
    "smem_wavefronts": m * threads * waves,
    "issue": m * threads * per["issue"],
  }


def bitplane_lut_bytes(m: int, k: int, n: int, p: int, g: int, has_beta: bool = True) -> int:
  """The LUT kernel's traffic: p planes, f16 scales, f32 x, and its f32 split-K partials (one
  (M, N) slice per 256 inputs) written and read back by the sum."""
  scales = p * (k // g) * n * 2 + ((k // g) * n * 2 if has_beta else 0)
  return p * k * n // 8 + scales + m * k * 4 + 2 * (k // 256) * m * n * 4


def gpu_decode_choice(m: int, k: int, n: int, p: int, g: int = 128) -> tuple[str, float, float]:
  """("lut" | "triton", LUT estimate, Triton decode estimate) on H200: the production GPU decode
  kernel for m rows by the roofline (the Triton kernel's block holds 16 rows)."""
  lut, _ = implied_seconds(
    bitplane_lut_bytes(m, k, n, p, g), 0.0, "H200", {"H200": bitplane_lut_unit_ops(m, k, n, p)}
  )
  tri_bytes = p * k * n // 8 + (p + 1) * (k // g) * n * 2 + m * k * 2 + m * n * 2
  tri, _ = implied_seconds(
    tri_bytes,
    bitplane_flops(m, k, n, p, "partials"),
    "H200",
    {"H200": {"int": UNPACK_OPS_PER_WEIGHT_PLANE["H200"]["partials"] * k * n * p}},
  )
  return ("lut" if lut < tri else "triton"), lut, tri


def lut_max_rows(k: int = 4096, n: int = 4096, p: int = 2) -> int:
  """The largest M (<= 16) for which the LUT kernel's estimate beats the Triton decode kernel's."""
  return max((m for m in range(1, 17) if gpu_decode_choice(m, k, n, p)[0] == "lut"), default=0)


def bitplane_flops(m: int, k: int, n: int, p: int, variant: str) -> int:
  """Matrix-unit FLOPs of one bit-plane call: the partials variant does one dot per plane
  (2·M·K·N·p), the dequantize variant one dot on the dequantized tile (2·M·K·N), the wgmma kernel
  one per plane and one more for beta's group sums (2·M·K·N·(p + 1); pass M padded to its row
  block, which the tensor cores compute too)."""
  passes = {"partials": p, "wgmma": p + 1}.get(variant, 1)
  return 2 * m * k * n * passes


def spline_gather_flops(b: int, pairs: int, q: int) -> int:
  """The sparse form: 4 corners x (multiply + add) per (sample, pair, output)."""
  return 8 * b * pairs * q


def spline_matrix_flops(b: int, pairs: int, q: int, c_pad: int, passes: int = 1) -> int:
  """The interpolation-matrix form: 2·B·P·C_pad·Q (C_pad/4 times the gather), times ``passes``
  matrix-unit passes per f32 dot (3 for the TPU kernels' bf16x3 dots: 3·C_pad/4 times the gather's
  FLOPs in bf16 MXU work). Building the matrices once per (pair, B-block) does not change this
  count: the matmul itself is dense over the C_pad corners."""
  return 2 * b * pairs * c_pad * q * passes


# The Mosaic GPU spline forward (`spline_lookup/kernel_mgpu.py`, the production GPU rows), SASS of
# its pair loop compiled for sm_90a through the public op (G = 8, B = 512, P = 8, Q = 512, the
# production blocks: 16 samples x 128 columns per block, one column per thread; `compile_report`'s
# Mosaic GPU section). One iteration (a pair, the block's 16 samples unrolled) is 393
# instructions per thread: 64 LDG (4 corner rows per sample), 64 FFMA (the 8 FLOPs per (sample,
# pair, output) as 4 fused multiply-adds on the CUDA cores, no tensor cores), 20 LDS (cells and
# weights, warp-uniform broadcasts) and 243 integer ops (133 IADD3, 89 IMAD, 20 VIADD, 1 ISETP:
# the row addresses). Per (sample, pair, output) at one column per thread: below. G changes only
# the row offsets, not the loop. Not timed on a GPU.
SPLINE_MGPU_FWD_SASS = {"int": 243 / 16, "fp32": 64 / 16, "ldg": 64 / 16, "lds": 20 / 16}
SPLINE_MGPU_FWD_ISSUE = 393 / 16


def spline_mgpu_forward_unit_ops(b: int, pairs: int, q: int) -> dict:
  """H200 unit operations of the Mosaic GPU spline forward (``SPLINE_MGPU_FWD_SASS``): per (sample,
  pair, output) the loop's integer, FP32 and issued instructions; L1 / shared-memory wavefronts
  of the loads: a warp's corner-row load reads 32 consecutive f32 (one 128-byte wavefront; the L1
  data path is taken to be the shared-memory rate of ``UNIT_RATES``), a weight load is one
  broadcast."""
  elems = b * pairs * q
  loads = SPLINE_MGPU_FWD_SASS["ldg"] + SPLINE_MGPU_FWD_SASS["lds"]
  return {
    "int": SPLINE_MGPU_FWD_SASS["int"] * elems,
    "fp32": SPLINE_MGPU_FWD_SASS["fp32"] * elems,
    "smem_wavefronts": loads * elems / 32,
    "issue": SPLINE_MGPU_FWD_ISSUE * elems,
  }


def spline_bytes(b: int, pairs: int, q: int, g: int, itemsize: int = 4) -> int:
  """x (B, P, 2), the table (P, (G+1)^2, Q) once, and y (B, Q)."""
  return itemsize * (b * pairs * 2 + pairs * (g + 1) ** 2 * q + b * q)


# Vector ops per (8-output x 128-sample vreg, pair) of the TPU lane-gather forward
# (`kernel_tpu_gather`), counted in libtpu's final LLO of the G = 8 kernel (LIBTPU_INIT_ARGS=
# --xla_mosaic_dump_to=DIR, file *post-finalize-llo*): per corner and 128-lane corner chunk one
# lane permute, emitted as vsetperm + vperm + vpermres (3 ops; the vsetperm is not hoisted out of
# the output-tile loop although its index is loop-invariant), one select per extra chunk, then
# 4 vmul + 4 vadd (plus a table load per chunk and the output tile's load and store, not counted).
SPLINE_TPU_PERMUTE_OPS = 3


def spline_tpu_gather_vector_ops(b: int, pairs: int, q: int, c_pad: int) -> int:
  """Vector element-ops of the TPU gather forward: ops per vreg x (B·P·Q / 1024) vregs x 1024."""
  chunks = c_pad // 128
  per_vreg = 4 * SPLINE_TPU_PERMUTE_OPS * chunks + 4 * (chunks - 1) + 8
  return per_vreg * b * pairs * q


def spline_tpu_gather_unit_ops(b: int, pairs: int, q: int, c_pad: int) -> dict:
  """The TPU gather forward's operations by unit: the permute ops (vsetperm + vperm + vpermres,
  all counted on the cross-lane units) and the VALU selects, multiplies and adds."""
  chunks = c_pad // 128
  elems = b * pairs * q
  return {
    "xlane": 4 * SPLINE_TPU_PERMUTE_OPS * chunks * elems,
    "valu": (4 * (chunks - 1) + 8) * elems,
  }


def spline_tpu_gather_bytes(
  b: int, pairs: int, q: int, g: int, c_pad: int, bb: int, itemsize: int = 4
) -> int:
  """The TPU gather forward's traffic: the per-call transpose of the table to corners-last
  (read (P, (G+1)^2, Q), write (P, Q, C_pad)), the kernel's ceil(B / bb) reads of that table,
  x and y."""
  padded = pairs * q * c_pad
  return itemsize * (pairs * (g + 1) ** 2 * q + padded * (1 + -(-b // bb)) + b * pairs * 2 + b * q)


# The TPU matrix-form forward (`kernel_portable._fwd_kernel_resident`) builds each pair's (C_pad, bb)
# bf16 head / tail interpolation matrices once per (pair, B-block): 40 VALU ops per (sample, pair,
# corner), the kernel's own `pl.CostEstimate` figure (iota offset, 4 compares, 4 selects, 3 adds and
# the hi / lo split, with margin). A count from the source, not from the LLO.
SPLINE_TPU_MATRIX_BUILD_OPS = 40


def spline_tpu_matrix_bytes(
  b: int, pairs: int, q: int, g: int, c_pad: int, bb: int, itemsize: int = 4
) -> int:
  """The TPU matrix forward's traffic: the per-call padding of the table to (P, C_pad, Q) (read
  the (G+1)^2 rows, write C_pad), the kernel's ceil(B / bb) reads of it (one per B-block), x and
  y."""
  padded = pairs * c_pad * q
  return itemsize * (pairs * (g + 1) ** 2 * q + padded * (1 + -(-b // bb)) + b * pairs * 2 + b * q)


def spline_tpu_forward_times(
  b: int, pairs: int, q: int, g: int, c_pad: int, portable_bb: int, gather_bb: int
) -> dict:
  """{"portable" | "gather": {unit: seconds}} on TPU v5e, units "memory" (HBM), "compute" (MXU
  FLOPs) and those of ``UNIT_RATES`` ("valu", "xlane"); see ``spline_tpu_forward_estimates``."""
  dev = "TPU v5e"
  bw, peak = PEAKS[dev]
  work = {
    "portable": (
      spline_tpu_matrix_bytes(b, pairs, q, g, c_pad, portable_bb),
      spline_matrix_flops(b, pairs, q, c_pad, passes=3),
      {"valu": SPLINE_TPU_MATRIX_BUILD_OPS * b * pairs * c_pad},
    ),
    "gather": (
      spline_tpu_gather_bytes(b, pairs, q, g, c_pad, gather_bb),
      spline_gather_flops(b, pairs, q),
      spline_tpu_gather_unit_ops(b, pairs, q, c_pad),
    ),
  }
  return {
    v: {"memory": nb / bw, "compute": fl / peak, **_unit_times(dev, ops)}
    for v, (nb, fl, ops) in work.items()
  }


def spline_tpu_forward_estimates(
  b: int, pairs: int, q: int, g: int, c_pad: int, portable_bb: int, gather_bb: int
) -> dict:
  """{"portable": (s, bound), "gather": (s, bound)}: the TPU v5e per-unit estimates of the two
  forward kernels on the same problem, each with its own batch block.

  * portable (interpolation matrices): 3 bf16 MXU passes per f32 dot (``spline_matrix_flops``),
    the matrix build on the VALU, the table read once per B-block;
  * gather (lane gathers): 12 cross-lane ops per (sample, pair, output) and 128-corner chunk at the
    third-party cross-lane rate of ``UNIT_RATES`` (a rate, like the TPU clock, not measured here),
    8 VALU ops plus the chunk selects, the table transposed per call and read once per B-block.

  Estimates, not measurements: the cross-lane rate decides the gather form's figure, and only a chip
  can settle it."""
  times = spline_tpu_forward_times(b, pairs, q, g, c_pad, portable_bb, gather_bb)
  out = {}
  for v, t in times.items():
    bound = max(t, key=t.get)
    out[v] = (t[bound], bound)
  return out


def spline_tpu_choice(
  b: int, pairs: int, q: int, g: int, c_pad: int, portable_bb: int, gather_bb: int
) -> str:
  """The TPU forward variant ("portable" or "gather") with the smaller estimate."""
  est = spline_tpu_forward_estimates(b, pairs, q, g, c_pad, portable_bb, gather_bb)
  return min(est, key=lambda v: est[v][0])
