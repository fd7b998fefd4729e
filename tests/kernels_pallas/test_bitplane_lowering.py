"""Tier 2 for the AnyBCQ bit-plane matmul: cross-lowering on the CPU host.

``jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))`` with the Mosaic kernel and
``("cuda",)`` with the Triton kernel run the real Pallas front ends, which interpret mode does not:
TPU block-shape rules ((8, 128) or full dims), Triton power-of-two and dot-size rules, unsupported
primitives (gathers, value slices, scratch or scalar prefetch on Triton) and mismatched
``compiler_params``. Every production row of ``blocks.BLOCK_TABLE`` is lowered forward and backward
(the ``jax.grad`` graph through the custom_vjp), for every kernel group size and the mixed-precision
and symmetric variants, on the paper's shapes. Only the front end runs here: Mosaic layout passes,
VMEM capacity and Triton->PTX compilation need the hardware.
"""

import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas._backend import round_up
from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops

TARGET = {"tpu": ("tpu", "tpu_custom_call"), "gpu": ("cuda", "__gpu$xla.gpu.triton")}
BUCKET_M = {"decode": 1, "small": 64, "prefill": 512}
PRECISIONS = (2, 3, 4)


@pytest.fixture(scope="module", autouse=True)
def fake_tpu_chip():
  """Some Mosaic lowering paths query the chip and fail with "Unsupported TPU device kind: cpu";
  register a v5e for the "cpu" kind (private API: tests only, removed afterwards)."""
  from jax._src.pallas.mosaic import tpu_info

  previous = tpu_info.registry.get("cpu")
  tpu_info.registry["cpu"] = lambda: pltpu.get_tpu_info_for_chip(pltpu.ChipVersion.TPU_V5E, 1)
  yield
  if previous is None:
    tpu_info.registry.pop("cpu", None)
  else:
    tpu_info.registry["cpu"] = previous


def _specs(m, k, n, g, *, mixed=False, beta=True, x_dtype=jnp.bfloat16, s_dtype=jnp.bfloat16):
  sds = jax.ShapeDtypeStruct
  return (
    sds((m, k), x_dtype),
    sds((4, k // 32, n), jnp.uint32),
    sds((sum(PRECISIONS), k // g, n), s_dtype),
    sds((len(PRECISIONS), k // g, n), s_dtype) if beta else None,
    sds((m,) if mixed else (), jnp.int32),
  )


def _lower(platform, specs, *, backward):
  op = functools.partial(ops.bitplane_matmul, impl="pallas", platform=platform)

  def fwd(x, planes, alpha, beta, p):
    return op(x, planes, alpha, beta, p)

  def bwd(x, planes, alpha, beta, p):
    loss = lambda x, a, b: jnp.sum(jnp.sin(op(x, planes, a, b, p).astype(jnp.float32)))
    return jax.grad(loss, argnums=(0, 1, 2))(x, alpha, beta)

  f = bwd if backward else fwd
  lowered = jax.jit(f).trace(*specs).lower(lowering_platforms=(TARGET[platform][0],))
  text = lowered.as_text()
  assert TARGET[platform][1] in text
  return text


ROWS = [
  pytest.param(plat, bucket, cfg, id=f"{plat}-{bucket}")
  for plat, bucket, cfg in blocks.production_configs()
]


@pytest.mark.parametrize("platform,bucket,config", ROWS)
def test_production_config_lowers_forward_and_backward(platform, bucket, config):
  m, k, n = BUCKET_M[bucket], 4096, 4096
  # The op picks exactly this table row, unclamped, at the paper's 4096 x 4096 shape.
  picked = blocks.pick_config(platform, m, k, n, 128, 2)
  assert picked.variant == config.variant and picked.bn == config.bn
  if platform == "tpu":
    assert picked.bk == config.bk and picked.bm == min(config.bm, round_up(m, 16))
  for g in fmt.GROUP_SIZES:
    _lower(platform, _specs(m, k, n, g), backward=False)
  _lower(platform, _specs(m, k, n, 128), backward=True)


@pytest.mark.parametrize("platform", ["tpu", "gpu"])
@pytest.mark.parametrize("bucket", ["decode", "small"])
def test_mixed_precision_lowers_forward_and_backward(platform, bucket):
  m = BUCKET_M[bucket]
  _lower(platform, _specs(m, 4096, 4096, 64, mixed=True), backward=False)
  _lower(platform, _specs(m, 4096, 4096, 128, mixed=True), backward=True)


@pytest.mark.parametrize("platform", ["tpu", "gpu"])
def test_paper_shapes_symmetric_and_dtypes_lower(platform):
  """14336 x 4096 and 4096 x 14336 (K not a power of two), symmetric BCQ, f32 and fp16 inputs
  with fp16 scales (the released checkpoints' dtype)."""
  for m, k, n in ((1, 14336, 4096), (16, 4096, 14336), (256, 14336, 4096)):
    _lower(platform, _specs(m, k, n, 128, beta=False), backward=False)
  x16 = jnp.float16
  _lower(platform, _specs(1, 8192, 8192, 128, x_dtype=jnp.float32, s_dtype=x16), backward=True)
  _lower(platform, _specs(16, 4096, 4096, 256, x_dtype=x16, s_dtype=x16), backward=False)
