"""Roofline estimates for the kernel benchmarks: bytes and FLOPs per call and the time they imply.

Peak figures (vendor numbers, dense): H200 4.8 TB/s HBM and ~990 TFLOP/s bf16; TPU v5e 819 GB/s HBM
and 197 TFLOP/s bf16. The implied time is max(bytes / bandwidth, FLOPs / peak): a lower bound,
an *estimate*, never a measurement.
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
#   f32 x), counted in libtpu's final LLO of the plane loop (`python -m experiments.bench.tpu_llo
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


def implied_seconds(
  nbytes: float, flops: float, device: str, vector_ops: float | dict = 0.0
) -> tuple[float, str]:
  """(lower-bound seconds, "memory" | "compute" | "vector") on ``device`` (a key of ``PEAKS``).

  ``vector_ops``: one count for every device, or a dict keyed by device."""
  bw, peak = PEAKS[device]
  if isinstance(vector_ops, dict):
    vector_ops = vector_ops.get(device, 0.0)
  times = {
    "memory": nbytes / bw,
    "compute": flops / peak,
    "vector": vector_ops / VECTOR_OPS[device],
  }
  bound = max(times, key=times.get)
  return times[bound], bound


def line(label: str, nbytes: float, flops: float, vector_ops: float | dict = 0.0) -> str:
  """One printable roofline line: bytes, FLOPs, vector ops and the implied time per device."""
  if isinstance(vector_ops, dict):
    vec = ", ".join(f"{v / 1e6:.0f} M vector ops on {d}" for d, v in vector_ops.items() if v)
  else:
    vec = f"{vector_ops / 1e6:.0f} M vector ops" if vector_ops else ""
  parts = [
    f"roofline {label}: {nbytes / 2**20:.2f} MiB, {flops / 1e9:.3f} GFLOP"
    + (f", {vec}" if vec else "")
    + " per call"
  ]
  for dev in PEAKS:
    t, bound = implied_seconds(nbytes, flops, dev, vector_ops)
    parts.append(f"{dev} >= {t * 1e6:.1f} us ({bound})")
  return "; ".join(parts)


def bitplane_vector_ops(m: int, k: int, n: int, p: int, variant: str, bm: int) -> dict:
  """Unpack work of one call per device: every (weight, plane) once per M block (both variants
  repeat the unpack for each of their ceil(M / bm) row blocks)."""
  return {
    dev: ops[variant] * k * n * p * (-(-m // bm))
    for dev, ops in UNPACK_OPS_PER_WEIGHT_PLANE.items()
  }


def bitplane_flops(m: int, k: int, n: int, p: int, variant: str) -> int:
  """Matrix-unit FLOPs of one bit-plane call: the partials variant does one dot per plane
  (2·M·K·N·p), the dequantize variant one dot on the dequantized tile (2·M·K·N)."""
  return 2 * m * k * n * (p if variant == "partials" else 1)


def spline_gather_flops(b: int, pairs: int, q: int) -> int:
  """The sparse form: 4 corners x (multiply + add) per (sample, pair, output)."""
  return 8 * b * pairs * q


def spline_matrix_flops(b: int, pairs: int, q: int, c_pad: int, passes: int = 1) -> int:
  """The interpolation-matrix form: 2·B·P·C_pad·Q (C_pad/4 times the gather), times ``passes``
  matrix-unit passes per f32 dot (3 for the TPU kernels' bf16x3 dots: 3·C_pad/4 times the gather's
  FLOPs in bf16 MXU work). Building the matrices once per (pair, B-block) does not change this
  count: the matmul itself is dense over the C_pad corners."""
  return 2 * b * pairs * c_pad * q * passes


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


def spline_tpu_gather_bytes(
  b: int, pairs: int, q: int, g: int, c_pad: int, bb: int, itemsize: int = 4
) -> int:
  """The TPU gather forward's traffic: the per-call transpose of the table to corners-last
  (read (P, (G+1)^2, Q), write (P, Q, C_pad)), the kernel's ceil(B / bb) reads of that table,
  x and y."""
  padded = pairs * q * c_pad
  return itemsize * (pairs * (g + 1) ** 2 * q + padded * (1 + -(-b // bb)) + b * pairs * 2 + b * q)
