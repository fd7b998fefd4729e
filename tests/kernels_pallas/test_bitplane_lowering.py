"""Tier 2 for the AnyBCQ bit-plane matmul: cross-lowering on the CPU host.

``jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))`` with the Mosaic TPU kernel and
``("cuda",)`` with the GPU kernels run the real Pallas front ends, which interpret mode does not:
TPU block-shape rules ((8, 128) or full dims), Mosaic GPU layout inference, register <-> memory
transfer plans and wgmma operand rules, Triton power-of-two and dot-size rules, unsupported
primitives and mismatched ``compiler_params``. Every production row is lowered forward and
backward (the ``jax.grad`` graph through the custom_vjp): the TPU rows and the Hopper wgmma rows
(``blocks.WGMMA_TABLE``, the default GPU kernel: on a CPU host the op takes the target to be
Hopper) for every kernel group size, the mixed-precision and symmetric variants and the paper's
shapes; the explicit Triton rows (``BLOCK_TABLE["gpu"]``, chosen by their config) once per row.
Only the front end runs here: Mosaic layout passes, VMEM capacity and PTX compilation are the
compile tier's (test_compile_targets.py).
"""

import contextlib
import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas._backend import round_up
from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops

LOWERING_PLATFORM = {"tpu": "tpu", "gpu": "cuda"}
CUSTOM_CALL = {"tpu": "tpu_custom_call", "wgmma": "mosaic_gpu", "triton": "__gpu$xla.gpu.triton"}
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


@contextlib.contextmanager
def _abstract_hopper():
  """Pallas's Triton lowering reads the target GPU from the default device (jax >= 0.12: "No
  supported GPU devices found, please specify an abstract GPU device"); on a CPU host an abstract
  mesh names an H100 instead."""
  dev = jax.sharding.AbstractDevice(device_kind="NVIDIA H100", num_cores=132, platform="gpu")
  with jax.sharding.use_abstract_mesh(jax.sharding.AbstractMesh((1,), ("i",), abstract_device=dev)):
    yield


def _lower(platform, specs, *, backward, config=None):
  """Lowers the op (default dispatch, or ``config``) and checks the kernel's custom call."""
  op = functools.partial(ops.bitplane_matmul, impl="pallas", platform=platform, config=config)

  def fwd(x, planes, alpha, beta, p):
    return op(x, planes, alpha, beta, p)

  def bwd(x, planes, alpha, beta, p):
    loss = lambda x, a, b: jnp.sum(jnp.sin(op(x, planes, a, b, p).astype(jnp.float32)))
    return jax.grad(loss, argnums=(0, 1, 2))(x, alpha, beta)

  f = bwd if backward else fwd
  lowered = jax.jit(f).trace(*specs).lower(lowering_platforms=(LOWERING_PLATFORM[platform],))
  text = lowered.as_text()
  kernel = "tpu" if platform == "tpu" else ("wgmma" if config is None else "triton")
  assert CUSTOM_CALL[kernel] in text
  return text


ROWS = [
  pytest.param(plat, bucket, cfg, id=f"{plat}-{bucket}")
  for plat, bucket, cfg in blocks.production_configs()
  if plat == "tpu"
] + [
  pytest.param(plat, bucket, cfg, id=f"{plat}-wgmma-{bucket}")
  for plat, bucket, cfg in blocks.mosaic_gpu_configs()
]
# The wgmma rows at their largest M (the LUT kernel takes decode at M <= LUT_MAX_M on Hopper; on a
# CPU host there is no LUT, but the row is lowered where it is the kernel that runs).
WGMMA_M = {"decode": 16, "small": 64, "prefill": 512}


@pytest.mark.parametrize("platform,bucket,config", ROWS)
def test_production_config_lowers_forward_and_backward(platform, bucket, config):
  k, n = 4096, 4096
  # The op picks exactly this table row, unclamped, at the paper's 4096 x 4096 shape.
  if platform == "tpu":
    m = BUCKET_M[bucket]
    picked = blocks.pick_config(platform, m, k, n, 128, 2)
    assert picked.variant == config.variant and picked.bn == config.bn
    assert picked.bk == config.bk and picked.bm == min(config.bm, round_up(m, 16))
  else:
    m = WGMMA_M[bucket]
    picked = blocks.wgmma_config(m, k)
    assert (picked.variant, picked.bm, picked.split_k) == ("wgmma", config.bm, config.split_k)
  for g in fmt.GROUP_SIZES:
    _lower(platform, _specs(m, k, n, g), backward=False)
  _lower(platform, _specs(m, k, n, 128), backward=True)


@pytest.mark.parametrize(
  "bucket,config",
  [pytest.param(b, c, id=b) for plat, b, c in blocks.production_configs() if plat == "gpu"],
)
def test_explicit_triton_rows_lower(bucket, config):
  """The Triton rows (deprecated backend, run only when a config names them): forward, single and
  mixed precision."""
  m = BUCKET_M[bucket]
  assert blocks.pick_config("gpu", m, 4096, 4096, 128, 2).variant == config.variant
  with _abstract_hopper():
    _lower("gpu", _specs(m, 4096, 4096, 128), backward=False, config=config)
    _lower("gpu", _specs(m, 4096, 4096, 64, mixed=True), backward=False, config=config)


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
