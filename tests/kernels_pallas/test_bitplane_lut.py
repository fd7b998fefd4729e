"""The Mosaic GPU lookup-table decode kernel (``kernel_mgpu``) on a CPU host.

``plgpu.inline_mgpu`` has no discharge rule, so the kernel cannot run in interpret mode. Its CPU
oracle is ``kernel_mgpu.emulate``: the kernel's table layout, byte extraction, per-group sums and
split-K partials in NumPy float32, checked here against the dense reference (dequantize, then
matmul: ``reference.bitplane_matmul_reference``) on shapes no kernel setting was tuned to: K not a
power of two, N not a multiple of 512, odd M, every group size, with and without beta, mixed
per-row precisions including an invalid one, 1/2/4 columns per thread and 1 or 2 tiles per K
slice. The glue in ``ops`` (f32 widening, per-row metadata, group sums, split-K sum, dispatch) runs
with the kernel replaced by the emulation. The compile tier compiles the kernel itself for sm_90a
(tests/kernels_pallas/test_compile_targets.py).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import kernel_mgpu
from kernels_pallas.bitplane_matmul import ops
from kernels_pallas.bitplane_matmul import reference as ref

PRECISIONS = (2, 3, 4)
REL = 1e-6

# (M, K, N, g, beta, cols per thread, tiles per K slice, scale dtype)
CASES = {
  "m3_k768_n384_g64_beta_cpt1": (3, 768, 384, 64, True, 1, 1, jnp.float16),
  "m1_k1280_n256_g256_sym_cpt2": (1, 1280, 256, 256, False, 2, 1, jnp.bfloat16),
  "m2_k1536_n512_g128_beta_cpt4_tiles2": (2, 1536, 512, 128, True, 4, 2, jnp.float32),
}


def _layer(m, k, n, g, beta, s_dtype, seed=0):
  planes, alpha, b, precs = fmt.random_bitplane_layer(
    seed, k, n, num_planes=4, precisions=PRECISIONS, group_size=g, asymmetric=beta, dtype=s_dtype
  )
  x = jnp.asarray(np.random.default_rng(seed + 1).standard_normal((m, k)), jnp.float32)
  return x, planes, alpha, b


def _meta(prec_rows):
  offsets = fmt.plane_offsets(PRECISIONS)
  rows = []
  for p in prec_rows:
    if p in PRECISIONS:
      i = PRECISIONS.index(p)
      rows.append([p, offsets[i], i, 0])
    else:
      rows.append([0, 0, 0, 0])
  return np.asarray(rows, np.int32)


def _dense(x, planes, alpha, beta, prec_rows):
  """The dense reference: W^(p) dequantized by reference.dequantize (f32), then x @ W in float64
  (so the reference's own matmul rounding does not enter the comparison)."""
  x64 = np.asarray(x, np.float64)
  out = np.zeros((x64.shape[0], planes.shape[2]))
  for i, p in enumerate(prec_rows):
    w = np.asarray(ref.dequantize(planes, alpha, beta, int(p)), np.float64)
    out[i] = x64[i] @ w[: x64.shape[1]]
  return out


@pytest.mark.parametrize("case", list(CASES))
def test_emulated_lut_kernel_equals_dense_reference(case):
  m, k, n, g, has_beta, cpt, tiles, s_dtype = CASES[case]
  x, planes, alpha, beta = _layer(m, k, n, g, has_beta, s_dtype)
  prec_rows = [PRECISIONS[i % 3] for i in range(m)]  # rows mix precisions
  xsum = np.asarray(x).reshape(m, k // g, g).sum(-1)
  parts = kernel_mgpu.emulate(
    x, planes, alpha, beta, _meta(prec_rows), xsum, group_size=g, cols_per_thread=cpt, tiles=tiles
  )
  assert parts.shape == (k // (256 * tiles), m, n)
  y = parts.sum(0)
  err = np.max(np.abs(y - _dense(x, planes, alpha, beta, prec_rows))) / np.max(np.abs(y))
  assert err <= REL, err


def test_emulated_invalid_row_does_no_lookups():
  """p_m = 0 (invalid or padding row): no plane term; with beta only the offset term is left."""
  m, k, n, g = 2, 512, 128, 128
  x, planes, alpha, beta = _layer(m, k, n, g, True, jnp.float32, seed=3)
  xsum = np.asarray(x).reshape(m, k // g, g).sum(-1)
  y = kernel_mgpu.emulate(
    x, planes, alpha, beta, _meta([2, 7]), xsum, group_size=g, cols_per_thread=1
  ).sum(0)
  offset_only = np.einsum("g,gn->n", xsum[1], np.asarray(beta[0], np.float32))
  np.testing.assert_allclose(y[1], offset_only, rtol=1e-5, atol=1e-5)


def test_chunk_layout_matches_the_packing():
  """Byte q of word r of a pack tile holds inputs 64 q + 8 i + r (format.pack_planes' bit order)."""
  k = 256
  signs = np.zeros((1, k, 1), np.int32)
  for q in range(4):
    for r in range(8):
      for i, inp in enumerate(kernel_mgpu.chunk_inputs(q, r)):
        signs[:] = 0
        signs[0, inp, 0] = 1
        w = int(np.asarray(fmt.pack_planes(jnp.asarray(signs)))[0, r, 0])
        assert w == 1 << (8 * q + i), (q, r, i)


@pytest.mark.parametrize("mixed", [False, True])
def test_op_glue_with_emulated_kernel_matches_reference(monkeypatch, mixed):
  """``ops``' LUT path (f32 widening, metadata, group sums, split-K sum, slicing) with the kernel
  replaced by the emulation through a host callback; the custom VJP stays the reference's."""

  def fake_kernel(xf, planes, alpha, beta, meta, xsum, *, group_size, cols_per_thread, tiles):
    split = xf.shape[1] // (256 * tiles)
    shape = jax.ShapeDtypeStruct((split, xf.shape[0], planes.shape[2]), jnp.float32)
    emu = functools.partial(
      kernel_mgpu.emulate, group_size=group_size, cols_per_thread=cols_per_thread, tiles=tiles
    )
    if beta is None:
      return jax.pure_callback(lambda *a: emu(a[0], a[1], a[2], None, *a[3:]), shape,
                               xf, planes, alpha, meta, xsum)  # fmt: skip
    return jax.pure_callback(emu, shape, xf, planes, alpha, beta, meta, xsum)

  monkeypatch.setattr(kernel_mgpu, "bitplane_matmul_lut", fake_kernel)
  m, k, n, g = 3, 768, 384, 64
  x, planes, alpha, beta = _layer(m, k, n, g, True, jnp.float16, seed=5)
  x = x.astype(jnp.bfloat16)
  prec = jnp.asarray([4, 2, 5], jnp.int32) if mixed else jnp.int32(3)
  lut = blocks.BlockConfig("lut", bm=1, bn=128, bk=256)
  lay = fmt.check_operands(x, planes, alpha, beta)
  st = ops._Static(lay, "gpu", blocks.lut_config(n, lay.k_pad, lut), mixed, False, "float32")
  y = ops._forward(st, x, planes, alpha, beta, prec)
  y = ref.nan_invalid(y, prec, PRECISIONS)
  y_ref = jax.jit(  # traced precisions: the invalid row comes out NaN instead of raising
    lambda p: ref.bitplane_matmul_reference(x, planes, alpha, beta, p, out_dtype=jnp.float32)
  )(prec)
  np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
  ok = ~np.isnan(np.asarray(y_ref))
  err = np.max(np.abs(np.asarray(y - y_ref)[ok])) / np.max(np.abs(np.asarray(y_ref)[ok]))
  assert err <= REL, err


def test_lut_dispatch_rules():
  """Hopper+ (cc >= 9.0), at most LUT_MAX_M rows and N % 128 == 0 pick the LUT row; Ampere, more
  rows or an odd N keep the Triton kernel; on a CPU host with no GPU device there is no LUT."""
  assert blocks.lut_eligible(1, 4096, 9.0) and blocks.lut_eligible(blocks.LUT_MAX_M, 4096, 10.0)
  assert not blocks.lut_eligible(1, 4096, 8.0)
  assert not blocks.lut_eligible(blocks.LUT_MAX_M + 1, 4096, 9.0)
  assert not blocks.lut_eligible(1, 4000, 9.0)
  assert not blocks.lut_eligible(1, 4096, None)
  cfg = blocks.lut_config(4096, 4096)
  assert (cfg.variant, cfg.bn, cfg.bk, cfg.split_k) == ("lut", 512, 256, 16)
  assert blocks.lut_config(384, 14336).bn == 128 and blocks.lut_config(384, 14336).split_k == 56
  if jax.default_backend() == "cpu":
    from kernels_pallas import _backend

    assert _backend.gpu_capability() is None


def test_lut_config_refuses_interpret_mode():
  x, planes, alpha, beta = _layer(1, 256, 128, 128, True, jnp.float32)
  lut = blocks.BlockConfig("lut", bm=1, bn=128, bk=256)
  with pytest.raises(ValueError, match="interpret"):
    ops.bitplane_matmul(
      x, planes, alpha, beta, 2, impl="pallas", platform="gpu", interpret=True, config=lut
    )


def test_lut_row_limit_is_the_roofline_crossover():
  """blocks.LUT_MAX_M is where the H200 estimates of the LUT and Triton decode kernels cross."""
  from benchmarks import _roofline

  assert blocks.LUT_MAX_M == _roofline.lut_max_rows()
  choice, lut, triton = _roofline.gpu_decode_choice(1, 4096, 4096, 2)
  dense, _ = _roofline.implied_seconds(4096 * 4096 * 2 + 4096 * 4, 2 * 4096 * 4096, "H200")
  assert choice == "lut" and lut < dense < triton
