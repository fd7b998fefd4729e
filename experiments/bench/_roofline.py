"""Roofline estimates for the kernel benchmarks: bytes and FLOPs per call and the time they imply.

Peak figures (vendor numbers, dense): H200 4.8 TB/s HBM and ~990 TFLOP/s bf16; TPU v5e 819 GB/s HBM
and 197 TFLOP/s bf16. The implied time is max(bytes / bandwidth, FLOPs / peak): a lower bound,
an *estimate*, never a measurement.
"""

from __future__ import annotations

PEAKS = {"H200": (4.8e12, 990e12), "TPU v5e": (819e9, 197e12)}


def implied_seconds(nbytes: float, flops: float, device: str) -> tuple[float, str]:
  """(lower-bound seconds, "memory" or "compute") on ``device`` (a key of ``PEAKS``)."""
  bw, peak = PEAKS[device]
  t_mem, t_flop = nbytes / bw, flops / peak
  return max(t_mem, t_flop), ("memory" if t_mem >= t_flop else "compute")


def line(label: str, nbytes: float, flops: float) -> str:
  """One printable roofline line: bytes, FLOPs and the implied time per device."""
  parts = [f"roofline {label}: {nbytes / 2**20:.2f} MiB, {flops / 1e9:.3f} GFLOP per call"]
  for dev in PEAKS:
    t, bound = implied_seconds(nbytes, flops, dev)
    parts.append(f"{dev} >= {t * 1e6:.1f} us ({bound})")
  return "; ".join(parts)


def bitplane_flops(m: int, k: int, n: int, p: int, variant: str) -> int:
  """Matrix-unit FLOPs of one bit-plane call: the partials variant does one dot per plane
  (2·M·K·N·p), the dequantize variant one dot on the dequantized tile (2·M·K·N)."""
  return 2 * m * k * n * (p if variant == "partials" else 1)


def spline_gather_flops(b: int, pairs: int, q: int) -> int:
  """The sparse form: 4 corners x (multiply + add) per (sample, pair, output)."""
  return 8 * b * pairs * q


def spline_matrix_flops(b: int, pairs: int, q: int, c_pad: int) -> int:
  """The interpolation-matrix form: 2·B·P·C_pad·Q (C_pad/4 times the gather)."""
  return 2 * b * pairs * c_pad * q


def spline_bytes(b: int, pairs: int, q: int, g: int, itemsize: int = 4) -> int:
  """x (B, P, 2), the table (P, (G+1)^2, Q) once, and y (B, Q)."""
  return itemsize * (b * pairs * 2 + pairs * (g + 1) ** 2 * q + b * q)
