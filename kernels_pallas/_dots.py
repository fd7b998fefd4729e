"""Dot algorithms shared by the kernel bodies (TPU Mosaic and Triton), chosen per backend.

Why not ``Precision.HIGHEST`` everywhere: on Hopper, Triton compiles an f32 dot at HIGHEST to
FP32-core FMAs (no mma / wgmma) and spills registers (measured on sm_90a with the triton wheel's
ptxas, benchmarks/_targets.py); on TPU, HIGHEST is six bf16 MXU passes. The choices here:

* ``exact_bits_dot(x, bits)``: x f32 (any values) times a matrix whose entries are exact in bf16
  (the bit-planes' 0/1). x is split into three bf16 terms hi + mid + lo that hold its 24 mantissa
  bits exactly; three bf16 matrix-unit products with f32 accumulation give the f32 product up to
  f32 summation order (bf16 x bf16 products are exact in f32). 3 passes instead of 6 on TPU,
  tensor cores instead of FP32 cores on GPU, no loss of accuracy.
* ``tf32x3_dot(a, b)``: two general f32 operands on GPU: ``DotAlgorithmPreset.TF32_TF32_F32_X3``
  (hi·hi + hi·lo + lo·hi with TF32 heads and tails), relative error per product ~2^-21 instead of
  2^-24. CPU has no TF32 dot, so interpret mode (``emulate=True``) performs the same split with f32
  bit masks and three f32 dots: the interpret tests see the device's rounding.
* ``bf16x3_dot(a, b)``: two general f32 operands on TPU. Mosaic (jax 0.10.2) lowers only
  ``Precision.DEFAULT`` (one bf16 pass) and ``HIGHEST`` (``contract_precision<fp32>``, six bf16 MXU
  passes); ``DotAlgorithmPreset.BF16_BF16_F32_X3`` and ``Precision.HIGH`` raise
  NotImplementedError in its dot lowering. So the 3-pass algorithm is written out: a = a_hi + a_lo
  and b = b_hi + b_lo with bf16 heads and tails, and a_hi·b_hi + a_hi·b_lo + a_lo·b_hi in three
  bf16 MXU products with f32 accumulation (the algorithm of the preset). bf16 x bf16 products are
  exact in f32, so the same code on CPU (interpret mode) has the device's rounding up to f32
  summation order: no separate emulation. Accuracy: the tails hold the next 8 bits, so the dropped
  a_lo·b_lo term and the tails' rounding leave at most ~3·2^-16 ≈ 4.6e-5 of |a|·|b| per product
  (typically ~2^-17, errors of different products partly cancel), vs 2^-24 for f32 and ~2^-21 for
  TF32x3.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

_F32 = jnp.float32
_BF16 = jnp.bfloat16
HIGHEST = jax.lax.Precision.HIGHEST


def _dims(contract):
  return (((contract[0],), (contract[1],)), ((), ()))


def split_bf16(x):
  """f32 x -> (hi, mid, lo) bf16 with hi + mid + lo == x exactly (normal range)."""
  hi = x.astype(_BF16)
  r = x - hi.astype(_F32)
  mid = r.astype(_BF16)
  lo = (r - mid.astype(_F32)).astype(_BF16)
  return hi, mid, lo


def exact_bits_dot(x, bits, contract=(1, 0)):
  """x (f32) · bits (bf16, entries exact in bf16) with f32 accumulation, in 3 bf16 passes."""
  d = lambda u: jax.lax.dot_general(u, bits, _dims(contract), preferred_element_type=_F32)
  hi, mid, lo = split_bf16(x)
  return d(lo) + d(mid) + d(hi)


def split_bf16_2(a):
  """f32 a -> (hi, lo) bf16: hi = bf16(a), lo = bf16(a − hi); |a − hi − lo| ≤ 2^-16·|a|."""
  hi = a.astype(_BF16)
  lo = (a - hi.astype(_F32)).astype(_BF16)
  return hi, lo


def bf16x3_dot(a, b, contract=(1, 0), acc_dtype=_F32):
  """a · b for f32 operands in three bf16 matrix-unit passes (hi·hi + hi·lo + lo·hi, f32 sums).

  Args:
    a, b: rank-2 f32 arrays; contract: (axis of a, axis of b) contracted; acc_dtype: result dtype.
  Returns:
    the dot_general result (no batch dims), small terms summed first.
  """
  dims = _dims(contract)
  a_hi, a_lo = split_bf16_2(a)
  b_hi, b_lo = split_bf16_2(b)
  d = lambda u, v: jax.lax.dot_general(u, v, dims, preferred_element_type=acc_dtype)
  return d(a_lo, b_hi) + d(a_hi, b_lo) + d(a_hi, b_hi)


def round_tf32(a):
  """f32 -> nearest TF32 (10 explicit mantissa bits; ties away from zero, as cvt.rna.tf32.f32)."""
  bits = jax.lax.bitcast_convert_type(a, jnp.uint32)
  bits = (bits + jnp.uint32(0x1000)) & jnp.uint32(0xFFFFE000)
  return jax.lax.bitcast_convert_type(bits, _F32)


def tf32x3_dot(a, b, contract=(1, 0), acc_dtype=_F32, emulate=False):
  """a · b for f32 operands with ``TF32_TF32_F32_X3`` (GPU), or its bit-exact emulation."""
  dims = _dims(contract)
  if not emulate:
    return jax.lax.dot_general(
      a,
      b,
      dims,
      precision=jax.lax.DotAlgorithmPreset.TF32_TF32_F32_X3,
      preferred_element_type=acc_dtype,
    )
  a_hi, b_hi = round_tf32(a), round_tf32(b)
  a_lo, b_lo = round_tf32(a - a_hi), round_tf32(b - b_hi)
  d = lambda u, v: jax.lax.dot_general(
    u, v, dims, precision=HIGHEST, preferred_element_type=acc_dtype
  )
  return d(a_lo, b_hi) + d(a_hi, b_lo) + d(a_hi, b_hi)
