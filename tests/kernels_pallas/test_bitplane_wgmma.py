"""The Hopper Mosaic GPU wgmma kernel (``kernel_wgmma``): its unpack, its blocks and its dispatch.

The kernel itself is checked against the dense reference in Pallas's Mosaic GPU interpret mode by
``test_bitplane_kernels.py`` (the ``wgmma-*`` cases: every precision, garbage in inactive planes,
mixed precisions, bf16 / f16 / f32 x) and compiled for sm_90a by the compile tier
(``test_compile_targets.py``). Here: the sign-bit unpack on every bit position, the block checks
and clamps, and which GPU kernel the public op picks (Triton only when asked for).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _backend
from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import kernel_wgmma
from kernels_pallas.bitplane_matmul import ops


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_signs_of_bit_is_plus_minus_one_for_every_bit(dtype):
  """bit j of each word -> +1.0 (set) / -1.0 (clear), exactly, for j = 0..31 (both shift
  directions of ``signs_of_bit``)."""
  words = np.random.default_rng(0).integers(0, 2**32, (64, 8), dtype=np.uint32)
  words[0, :] = 0xFFFFFFFF
  words[1, :] = 0
  for j in range(32):
    got = np.asarray(kernel_wgmma.signs_of_bit(jnp.asarray(words), j, dtype), np.float32)
    want = np.where((words >> np.uint32(j)) & 1, 1.0, -1.0)
    np.testing.assert_array_equal(got, want, err_msg=f"bit {j}")


def test_block_checks():
  kernel_wgmma.check_blocks(1, 32, 512, 128, 16, 128)
  for args, msg in (
    ((1, 24, 512, 128, 12, 128), "multiple of 8"),
    ((1, 512, 512, 128, 512, 128), "multiple of 8"),
    ((1, 24, 512, 128, 16, 128), "padded"),
    ((1, 16, 512, 96, 16, 128), "padded"),
    ((2, 16, 512, 128, 16, 128), "1 term"),
    ((1, 16, 512, 128, 16, 32), "group size"),
  ):
    with pytest.raises(ValueError, match=msg):
      kernel_wgmma.check_blocks(*args)


def test_wgmma_config_clamps_rows():
  """bm: a multiple of 8, no larger than the padded M, 128 (64 for f32 x and for per-row
  precisions); split_k <= K tiles."""
  assert blocks.wgmma_config(1, 4096).bm == 8
  assert blocks.wgmma_config(20, 4096).bm == 24
  assert blocks.wgmma_config(4096, 4096).bm == 128
  assert blocks.wgmma_config(4096, 4096, f32_activations=True).bm == 64
  assert blocks.wgmma_config(4096, 4096, mixed=True).bm == 64
  base = blocks.BlockConfig("wgmma", bm=100, bn=32, split_k=64)
  cfg = blocks.wgmma_config(4096, 512, base)
  assert (cfg.variant, cfg.bm, cfg.bn, cfg.split_k) == ("wgmma", 104, 64, 2)
  for row in blocks.WGMMA_TABLE:  # the rows are legal as they stand
    m = row.max_m or 512
    assert blocks.wgmma_config(m, 4096) == dataclasses.replace(row.config, bk=fmt.TILE)


def _layout(m, n=256, k=512):
  x = jnp.zeros((m, k), jnp.bfloat16)
  planes = jnp.zeros((4, k // 32, n), jnp.uint32)
  alpha = jnp.zeros((9, k // 128, n), jnp.float16)
  return x, planes, alpha, fmt.check_operands(x, planes, alpha, None)


def test_gpu_dispatch(monkeypatch):
  """Hopper (9.x) and no GPU (interpret mode, lowering on a CPU host): wgmma beyond the LUT rows;
  LUT up to LUT_MAX_M rows on Hopper and newer; Ampere and Blackwell beyond the LUT rows: no
  default kernel. A Triton variant runs only when the config names it."""
  lut_rows = blocks.LUT_MAX_M
  for cap, m, want in (
    (9.0, 1, "lut"),
    (9.0, lut_rows + 1, "wgmma"),
    (None, 1, "wgmma"),
    (10.0, 1, "lut"),
    (10.0, lut_rows + 1, None),
    (8.0, 1, None),
    (8.0, 512, None),
  ):
    monkeypatch.setattr(_backend, "gpu_capability", lambda cap=cap: cap)
    cfg = ops.gpu_config(m, _layout(m)[3], None, False, jnp.bfloat16)
    assert (cfg and cfg.variant) == want, (cap, m, cfg)
  monkeypatch.setattr(_backend, "gpu_capability", lambda: 8.0)
  assert ops.gpu_config(8, _layout(8)[3], None, True, jnp.float32).variant == "wgmma"  # interpret
  triton = blocks.BlockConfig("partials", bm=16, bn=64)
  assert ops.gpu_config(8, _layout(8)[3], triton, False, jnp.bfloat16) is None  # -> pick_config
  x, planes, alpha, _ = _layout(8)
  with pytest.raises(ValueError, match="Triton"):
    ops.bitplane_matmul(x, planes, alpha, None, 2, impl="pallas", platform="gpu", interpret=False)
  with pytest.raises(ValueError, match="platform='gpu'"):
    wg = blocks.BlockConfig("wgmma", bm=8, bn=64)
    ops.bitplane_matmul(x, planes, alpha, None, 2, impl="pallas", platform="tpu", config=wg)


def test_mixed_batch_with_an_invalid_precision_in_interpret_mode():
  """Per-row precisions through the public op (Mosaic GPU interpret mode): a row whose precision
  is not stored comes out NaN (it does no planes in the kernel), the others equal the reference
  within the f32 bound of test_bitplane_kernels (1e-5 of |x| @ |W|: ±1 partials are exact, the
  three bf16 terms of f32 x sum to x exactly)."""
  from kernels_pallas.bitplane_matmul import reference as ref

  planes, alpha, beta, precs = fmt.random_bitplane_layer(
    7, 256, 64, num_planes=4, precisions=(2, 3, 4), group_size=128
  )
  x = jnp.asarray(np.random.default_rng(8).standard_normal((3, 256)), jnp.float32)
  prec = jnp.asarray([4, 5, 2], jnp.int32)
  kw = dict(impl="pallas", platform="gpu", interpret=True)
  op = lambda p: ops.bitplane_matmul(x, planes, alpha, beta, p, **kw)
  y = jax.jit(op)(prec)  # traced precisions: the invalid row is NaN instead of an error
  assert np.all(np.isnan(np.asarray(y[1]))) and not np.any(np.isnan(np.asarray(y)[[0, 2]]))
  for i in (0, 2):
    p = int(prec[i])
    w = np.asarray(ref.dequantize(planes, alpha, beta, p), np.float64)
    want = np.asarray(x[i], np.float64) @ w
    bound = np.abs(np.asarray(x[i], np.float64)) @ np.abs(w)
    assert np.all(np.abs(np.asarray(y[i], np.float64) - want) <= 1e-5 * bound + 1e-6), i
