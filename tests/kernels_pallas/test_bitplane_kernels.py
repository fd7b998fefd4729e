"""Tier 1 for the AnyBCQ bit-plane matmul: every Pallas kernel variant in interpret mode.

Variants: TPU (Mosaic) partials / dequant / mixed, the Hopper Mosaic GPU wgmma kernel (the default
general-M GPU kernel; single and mixed precision, bf16 / f16 / f32 x) and the explicit Triton GPU
kernel partials / dequant / mixed, run through the public op with ``impl="pallas",
interpret=True``. The wgmma kernel runs in Pallas's Mosaic GPU interpret mode (shared memory, TMA
copies, barriers and wgmma simulated on the CPU); the Triton kernel in the generic interpreter.
Axes (M in {1, 8, 64}, g in {64, 128, 256}, beta or not, f32, bf16 or f16 activations, K with
and without padding to the 256 tile, N with and without padding) are combined across a few cases
instead of a full product: each new shape costs seconds of compile time on a small CPU host.
Precision is data, so p = 1..NB share one compiled function per case (checked through the jit
cache size).

Oracle: ``reference.bitplane_matmul_reference`` (dequantize in f32, matmul at HIGHEST) on the
same (bf16-rounded) inputs. Tolerances are element-wise, relative to ``|x| @ |W|``, the scale of
the rounding error of any summation order:
* f32: 1e-5 (f32 unit roundoff is 6e-8; sums of <= 512 terms stay well below 1e-5);
* bf16 activations with a bf16 output: 2^-7 = two bf16 unit roundoffs (2^-8 each) — one for the
  dequantize variant's bf16 W tile, one for rounding the output to bf16. The partials variants
  (the wgmma kernel is one: ±1 times bf16 x is exact, partials scaled in f32) are exact up to f32
  summation and the output rounding, so they pass the same bound with margin to spare; so do f16
  activations with an f16 output (unit roundoff 2^-11). f32 activations in the wgmma kernel are
  three exact bf16 terms (hi + mid + lo = x) against exact ±1: f32 summation only, the 1e-5
  bound.
A wrong bit position, plane, scale row or group index gives errors of order |y| itself.

The same cases rerun compiled (``mode="hardware"``) when the default backend is a TPU, a CUDA GPU
with compute capability >= 8.0 (Triton cases) or a Hopper GPU (wgmma cases); f32 activations use
exact-split or HIGHEST-precision dots there too, so the tolerances hold.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas import _backend

from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops
from kernels_pallas.bitplane_matmul import reference as ref
from kernels_pallas.bitplane_matmul.blocks import BlockConfig

NB = 4
PRECISIONS = (1, 2, 3, 4)  # every p in 1..NB
BF16 = jnp.bfloat16
F32 = jnp.float32

# Small test blocks (production blocks are covered by the cross-lowering tests): bk = 256 < K_pad
# and bn < N exercise the K and N grid axes and the accumulators; split_k = 2 the GPU K split.
TPU_PARTIALS = BlockConfig("partials", bm=8, bn=128, bk=256)
TPU_DEQUANT = BlockConfig("dequant", bm=32, bn=128, bk=256)
GPU_PARTIALS = BlockConfig("partials", bm=16, bn=64, split_k=2)
GPU_DEQUANT = BlockConfig("dequant", bm=32, bn=64, split_k=2)
# wgmma: bm = 8 / 16 rows per block (wgmma's N), 64 features per block; split_k = 2 splits K.
WGMMA_SPLIT = BlockConfig("wgmma", bm=8, bn=64, split_k=2)
WGMMA_16 = BlockConfig("wgmma", bm=16, bn=64)
F16 = jnp.float16

# (platform, config, M, K, N, g, beta, dtype)
CASES = {
  "tpu-partials-m8-g256-beta-f32": ("tpu", TPU_PARTIALS, 8, 512, 200, 256, True, F32),
  "tpu-partials-m64-g64-bf16": ("tpu", TPU_PARTIALS, 64, 384, 128, 64, False, BF16),
  "tpu-dequant-m1-g128-beta-f32": ("tpu", TPU_DEQUANT, 1, 384, 256, 128, True, F32),
  # M = 1 partials: the K block's groups stacked as LHS rows (kernel_tpu single_row path).
  "tpu-partials-m1-g128-beta-bf16": (
    "tpu",
    BlockConfig("partials", bm=16, bn=128, bk=512),
    1,
    1024,
    200,
    128,
    True,
    BF16,
  ),
  "tpu-partials-m1-g64-f32": ("tpu", TPU_PARTIALS, 1, 512, 128, 64, False, F32),
  "tpu-dequant-m64-g64-bf16": ("tpu", TPU_DEQUANT, 64, 512, 128, 64, False, BF16),
  "gpu-partials-m8-g128-beta-f32": ("gpu", GPU_PARTIALS, 8, 384, 200, 128, True, F32),
  "gpu-partials-m1-g256-bf16": ("gpu", GPU_PARTIALS, 1, 512, 128, 256, False, BF16),
  "gpu-dequant-m64-g64-beta-f32": ("gpu", GPU_DEQUANT, 64, 384, 128, 64, True, F32),
  "gpu-dequant-m8-g128-bf16": ("gpu", GPU_DEQUANT, 8, 512, 256, 128, False, BF16),
  # The wgmma kernel: f32 x (three bf16 terms) with K and N padding and split-K; two row blocks
  # (M = 20 over bm = 16) with g = 64; f16 x and output with g = 256 (one group per tile).
  "wgmma-m8-g128-beta-f32": ("gpu", WGMMA_SPLIT, 8, 384, 200, 128, True, F32),
  "wgmma-m20-g64-bf16": ("gpu", WGMMA_16, 20, 512, 128, 64, False, BF16),
  "wgmma-m3-g256-beta-f16": ("gpu", WGMMA_16, 3, 256, 128, 256, True, F16),
  # f32 x with bm > 16: the partials body keeps the 0/1 select there (kernel_gpu.py).
  "gpu-partials-m20-g128-beta-f32": (
    "gpu",
    BlockConfig("partials", bm=32, bn=32),
    20,
    256,
    64,
    128,
    True,
    F32,
  ),
}


@functools.lru_cache(maxsize=None)
def _kernel_fn(platform, config, interpret=True):
  """One jitted op per (platform, config), shared by every test (jit caches per shape)."""
  return jax.jit(
    functools.partial(
      ops.bitplane_matmul, impl="pallas", interpret=interpret, platform=platform, config=config
    )
  )


def _on_hardware(platform, config) -> bool:
  """The default backend can run this kernel compiled (tier 3, skipped on CPU)."""
  backend = jax.default_backend()
  if platform == "tpu":
    return backend == "tpu"
  if config.variant == "wgmma":
    return backend == "gpu" and blocks.wgmma_capable(_backend.gpu_capability())
  return backend == "gpu" and _backend.triton_capable()


@jax.jit
def _oracle(x, planes, alpha, beta, p):
  """(reference y in f32, |x| @ |W|) on f32 copies of the inputs; p may be a per-row vector."""
  y = ref.bitplane_matmul_reference(x, planes, alpha, beta, p)
  k = x.shape[-1]
  if jnp.ndim(p) == 0:
    w = jnp.abs(ref.dequantize(planes, alpha, beta, p))[:k]
    bound = jnp.abs(x) @ w
  else:
    ws = [jnp.abs(ref.dequantize(planes, alpha, beta, q))[:k] for q in PRECISIONS]
    bound = sum(jnp.where((p == q)[:, None], jnp.abs(x) @ w, 0.0) for q, w in zip(PRECISIONS, ws))
  return y, bound


@functools.lru_cache(maxsize=None)
def _problem(m, k, n, g, beta, dtype, seed=0):
  planes, alpha, b, _ = fmt.random_bitplane_layer(
    seed, k, n, num_planes=NB, precisions=PRECISIONS, group_size=g, asymmetric=beta
  )
  rng = np.random.default_rng(seed + 1)
  x = jnp.asarray(rng.standard_normal((m, k)), dtype)
  garbage = jnp.asarray(rng.integers(0, 2**32, planes.shape, dtype=np.uint32))
  return x, planes, alpha, b, garbage


def _with_garbage(planes, garbage, p):
  """Planes >= p replaced by random words."""
  idx = jnp.arange(planes.shape[0])[:, None, None]
  return jnp.where(idx >= p, garbage, planes)


def _check(y, x, planes, alpha, beta, p, dtype):
  y_ref, bound = _oracle(x.astype(F32), planes, alpha, beta, p)
  rel = 1e-5 if dtype == F32 else 2.0**-7
  err = np.abs(np.asarray(y, np.float64) - np.asarray(y_ref, np.float64))
  tol = rel * np.asarray(bound, np.float64) + 1e-6
  assert y.dtype == dtype and y.shape == y_ref.shape
  assert np.all(err <= tol), f"max err {err.max():.3g}, max excess {(err - tol).max():.3g}"


@pytest.mark.parametrize("mode", ["interpret", "hardware"])
@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_reference_for_every_precision(case, mode):
  platform, config, m, k, n, g, has_beta, dtype = CASES[case]
  if mode == "hardware" and not _on_hardware(platform, config):
    pytest.skip(f"needs a {platform.upper()} backend for the compiled {platform} kernel")
  x, planes, alpha, beta, garbage = _problem(m, k, n, g, has_beta, dtype)
  f = _kernel_fn(platform, config, mode == "interpret")
  outputs, cache_sizes = [], []
  for p in PRECISIONS:
    y = f(x, planes, alpha, beta, p)
    cache_sizes.append(f._cache_size())  # precision is data: no recompilation across p
    _check(y, x, planes, alpha, beta, p, dtype)
    outputs.append(np.asarray(y, np.float32))
    if p < NB:  # precision isolation: garbage in planes >= p changes nothing, bitwise
      y_garbage = f(x, _with_garbage(planes, garbage, p), alpha, beta, p)
      np.testing.assert_array_equal(np.asarray(y_garbage), np.asarray(y))
  assert len(set(cache_sizes)) == 1
  # Precisions really differ (so the per-p comparison above is not vacuous).
  assert all(np.max(np.abs(a - b)) > 1e-3 for a, b in zip(outputs, outputs[1:]))


@pytest.mark.parametrize(
  "single_case",
  ["tpu-partials-m8-g256-beta-f32", "gpu-partials-m8-g128-beta-f32", "wgmma-m8-g128-beta-f32"],
)
def test_mixed_precision_batch_equals_per_row_single_precision_calls(single_case):
  platform, config, m, k, n, g, has_beta, dtype = CASES[single_case]
  x, planes, alpha, beta, garbage = _problem(m, k, n, g, has_beta, dtype)
  f = _kernel_fn(platform, config)
  prec = jnp.array([3, 1, 2, 3, 1, 2, 1, 3][:m], jnp.int32)  # max 3 < NB: plane 3 is garbage
  y_mixed = f(x, _with_garbage(planes, garbage, 3), alpha, beta, prec)
  _check(y_mixed, x, planes, alpha, beta, prec, dtype)
  singles = {q: np.asarray(f(x, planes, alpha, beta, q)) for q in (1, 2, 3)}
  for i, q in enumerate(np.asarray(prec)):
    # Same partial products and the same f32 accumulation order; only zero terms differ.
    np.testing.assert_allclose(np.asarray(y_mixed)[i], singles[int(q)][i], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
  "platform,config,mixed", [("tpu", TPU_PARTIALS, False), ("gpu", GPU_PARTIALS, True)]
)
def test_gradients_match_autodiff_of_reference(platform, config, mixed):
  """jax.grad through the custom_vjp (dx, dalpha, dbeta) vs jax.grad of the reference."""
  m, k, n, g = 8, 384, 128, 64 if mixed else 128
  x, planes, alpha, beta, _ = _problem(m, k, n, g, True, F32, seed=3)
  cot = jnp.asarray(np.random.default_rng(4).standard_normal((m, n)), F32)

  def loss(fn, x, alpha, beta, p):
    return jnp.sum(jnp.sin(fn(x, planes, alpha, beta, p)) * cot)

  kern = functools.partial(
    ops.bitplane_matmul, impl="pallas", interpret=True, platform=platform, config=config
  )
  grads = jax.jit(jax.grad(functools.partial(loss, kern), argnums=(0, 1, 2)))
  grads_ref = jax.jit(
    jax.grad(functools.partial(loss, ref.bitplane_matmul_reference), argnums=(0, 1, 2))
  )
  ps = [jnp.array([4, 2, 1, 3, 2, 4, 1, 3], jnp.int32)] if mixed else [1, 3]
  for p in ps:
    for got, want, name in zip(
      grads(x, alpha, beta, p), grads_ref(x, alpha, beta, p), ("dx", "dalpha", "dbeta")
    ):
      scale = float(jnp.max(jnp.abs(want)))
      assert scale > 0, name
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=name)
  if not mixed:
    # dalpha is zero outside precision 3's rows, dbeta outside its row, and both are zero on the
    # groups that only pad K = 384 up to 512.
    _, dalpha, dbeta = map(np.asarray, grads(x, alpha, beta, 3))
    offsets = fmt.plane_offsets(PRECISIONS)
    rows = np.zeros(alpha.shape[0], bool)
    rows[offsets[2] : offsets[2] + 3] = True
    logical = k // g
    assert np.all(dalpha[~rows] == 0) and np.all(dalpha[:, logical:] == 0)
    assert np.all(dalpha[rows, :logical] != 0)
    assert np.all(dbeta[[0, 1, 3]] == 0) and np.all(dbeta[:, logical:] == 0)
    assert np.all(dbeta[2, :logical] != 0)


def test_tpu_kernels_under_tpu_interpreter_find_no_races():
  """The TPU interpreter simulates VMEM/SMEM, DMAs and semaphores; with uninitialised memory set to
  NaN an accumulator that is read before it is zeroed would poison the output. The dequantize
  variant is the one with two scratch buffers (the W tile and the accumulator); g = 64 gives the
  most groups per block."""
  from jax._src.pallas.mosaic.interpret import interpret_pallas_call as mosaic_interpret
  from jax.experimental.pallas import tpu as pltpu

  m, k, n = 8, 512, 128
  try:
    for config, g in ((TPU_DEQUANT, 64),):
      x, planes, alpha, beta, _ = _problem(m, k, n, g, True, F32)
      params = pltpu.InterpretParams(detect_races=True, uninitialized_memory="nan")
      with pltpu.force_tpu_interpret_mode(params):
        y = jax.jit(
          functools.partial(ops.bitplane_matmul, impl="pallas", platform="tpu", config=config)
        )(x, planes, alpha, beta, 2)
        y = jax.block_until_ready(y)
      assert mosaic_interpret.races is not None and not mosaic_interpret.races.races_found
      _check(y, x, planes, alpha, beta, 2, F32)
  finally:
    pltpu.reset_tpu_interpret_mode_state()


def test_f16_bits_to_f32_is_exact_for_every_half():
  """The TPU kernel widens float16 scales from their bits (Mosaic cannot load f16 vectors): every
  one of the 65536 half patterns (zeros, subnormals, normals, inf, NaN) must equal XLA's
  f16 -> f32 conversion, bit for bit (NaN: any NaN)."""
  from kernels_pallas.bitplane_matmul.kernel_tpu import f16_bits_to_f32

  bits = np.arange(1 << 16, dtype=np.uint16)
  want = bits.view(np.float16).astype(np.float32)
  got = np.asarray(jax.jit(f16_bits_to_f32)(jnp.asarray(bits)))
  nan = np.isnan(want)
  assert np.array_equal(np.isnan(got), nan)
  np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("config", [TPU_PARTIALS, TPU_DEQUANT], ids=["partials", "dequant"])
def test_tpu_kernel_with_float16_scales_matches_reference(config):
  """float16 scales (the released AnyBCQ checkpoints' dtype) go through the TPU kernel as raw
  bits: the output must match the same kernel on the f32-converted scales (equal scale values;
  only XLA's fusion of the two programs may differ, by f32 rounding) and the reference within
  the f32 bound. Some scales are made subnormal in f16 (below 2^-14)."""
  m, k, n, g = 8, 512, 128, 128
  x, planes, alpha, beta, _ = _problem(m, k, n, g, True, F32, seed=5)
  tiny = jnp.asarray(np.random.default_rng(6).random(alpha.shape) < 0.1)
  alpha16 = jnp.where(tiny, alpha * 2.0**-20, alpha).astype(jnp.float16)
  beta16 = beta.astype(jnp.float16)
  assert np.any((np.abs(np.asarray(alpha16, np.float32)) < 2.0**-14) & (alpha16 != 0))
  f = _kernel_fn("tpu", config)
  for p in (2, 4):
    y16 = f(x, planes, alpha16, beta16, p)
    y32 = f(x, planes, alpha16.astype(F32), beta16.astype(F32), p)
    np.testing.assert_allclose(np.asarray(y16), np.asarray(y32), rtol=1e-6, atol=1e-6)
    _check(y16, x, planes, alpha16.astype(F32), beta16.astype(F32), p, F32)
