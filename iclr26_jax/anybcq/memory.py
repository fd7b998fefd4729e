"""Exact storage accounting for AnyBCQ layers (the arithmetic of the paper's Table 1).

Park et al., "AnyBCQ", ICLR 2026, arXiv 2510.10467; code github.com/naver-aics/anybcq. With 16-bit
scales, a linear (N outputs, K inputs, group size g) stores

    bytes = p_H * K * N / 8  +  sum_{p in P} p * (K/g) * N * 2  +  [asymmetric] |P| * (K/g) * N * 2

``linear_nbytes`` / ``fixed_precision_nbytes`` / ``model_nbytes`` count it (``padded=True``: K
rounded up to the 256-input pack tile); ``experiments/anybcq_table1.py`` applies them to the
paper's Table 1 (Llama-3.1-8B).
The algorithm, with its equations and reference hyperparameters: docs/methods/anybcq.md
("The algorithm").
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import numpy as np

from iclr26_jax.core import validate

__all__ = [
  "LinearMemory",
  "linear_nbytes",
  "fixed_precision_nbytes",
  "model_nbytes",
  "PACK_TILE",
]

PACK_TILE = 256  # inputs per pack tile of the kernel layout (K_pad = round_up(K, 256))


class LinearMemory(NamedTuple):
  """Bytes of one quantized linear (or a sum of them)."""

  planes_bytes: int  # p_H * K * N / 8
  alpha_bytes: int  # sum_p p * (K/g) * N * scale_bytes
  beta_bytes: int  # |P| * (K/g) * N * scale_bytes (0 when symmetric)
  total_bytes: int  # stored bytes (planes + alpha + beta)
  per_precision: dict  # {p: bytes a precision-p matmul reads}


def _check_bits(bits) -> tuple[int, ...]:
  if isinstance(bits, (int, np.integer)) and not isinstance(bits, bool):
    bits = (bits,)
  out = tuple(validate.positive_int(b, "bits entry") for b in bits)
  if not out or any(a >= b for a, b in zip(out, out[1:])):
    raise ValueError(f"bits must be strictly increasing positive ints; got {bits!r}")
  return out


def linear_nbytes(
  out_features: int,
  in_features: int,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  *,
  asymmetric: bool = True,
  scale_bytes: int = 2,
  padded: bool = False,
) -> LinearMemory:
  """Storage of one AnyBCQ linear W (N, K) = (out_features, in_features).

  Args:
    out_features: N; in_features: K (K % g == 0).
    bits: stored precisions P (ascending); p_H = max(bits) planes are stored.
    group_size: g.
    asymmetric: count one beta per (precision, row, group) (default True, as the quantizer's;
      the paper's Table 1 headline sizes are alpha-only: False).
    scale_bytes: bytes per scale (2 for fp16/bf16 checkpoints).
    padded: use K_pad = round_up(K, 256) (the packed layout) instead of K.
  Returns:
    ``LinearMemory`` (all ints, bytes).
  """
  n = validate.positive_int(out_features, "out_features")
  k = validate.positive_int(in_features, "in_features")
  g = validate.positive_int(group_size, "group_size")
  sb = validate.positive_int(scale_bytes, "scale_bytes")
  bits = _check_bits(bits)
  if k % g:
    raise ValueError(f"in_features K = {k} is not a multiple of group_size g = {g}")
  if padded:
    k = -(-k // PACK_TILE) * PACK_TILE
    if k % g:
      raise ValueError(f"group_size g = {g} does not divide the padded K = {k}")
  groups = k // g
  if (bits[-1] * k * n) % 8:
    raise ValueError(f"p_H * K * N = {bits[-1] * k * n} bits is not a whole number of bytes")
  planes = bits[-1] * k * n // 8
  alpha = sum(bits) * groups * n * sb
  beta = len(bits) * groups * n * sb if asymmetric else 0
  per = {
    p: p * k * n // 8 + p * groups * n * sb + (groups * n * sb if asymmetric else 0) for p in bits
  }
  return LinearMemory(planes, alpha, beta, planes + alpha + beta, per)


def _add(a: LinearMemory, b: LinearMemory) -> LinearMemory:
  per = {
    p: a.per_precision.get(p, 0) + b.per_precision.get(p, 0)
    for p in sorted(set(a.per_precision) | set(b.per_precision))
  }
  return LinearMemory(
    a.planes_bytes + b.planes_bytes,
    a.alpha_bytes + b.alpha_bytes,
    a.beta_bytes + b.beta_bytes,
    a.total_bytes + b.total_bytes,
    per,
  )


def fixed_precision_nbytes(
  out_features: int,
  in_features: int,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  *,
  asymmetric: bool = True,
  scale_bytes: int = 2,
  padded: bool = False,
) -> LinearMemory:
  """Storage of separate fixed-precision BCQ models, one per width in ``bits``, for one linear.

  Returns the sum over widths (planes = sum(bits) * K * N / 8); ``per_precision[p]`` is model p alone.
  """
  kw = dict(asymmetric=asymmetric, scale_bytes=scale_bytes, padded=padded)
  ones = [
    linear_nbytes(out_features, in_features, (b,), group_size, **kw) for b in _check_bits(bits)
  ]
  return functools.reduce(_add, ones)


def model_nbytes(
  shapes: Sequence[tuple[int, int]],
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  *,
  fixed: bool = False,
  **kw,
) -> LinearMemory:
  """Sum of ``linear_nbytes`` (or ``fixed_precision_nbytes`` when ``fixed``) over ``(N, K)`` shapes."""
  shapes = list(shapes)
  if not shapes:
    raise ValueError("model_nbytes: shapes must be a non-empty list of (N, K)")
  fn = fixed_precision_nbytes if fixed else linear_nbytes
  total = None
  for shape in shapes:
    if len(shape) != 2:
      raise ValueError(f"model_nbytes: every shape must be (N, K); got {shape!r}")
    one = fn(shape[0], shape[1], bits, group_size, **kw)
    total = one if total is None else _add(total, one)
  return total
