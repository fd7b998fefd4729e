"""Tier 2 for the lmKAN spline lookup: cross-lowering on the CPU host.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan).
`jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))` with the Mosaic parameters and `("cuda",)`
with the Mosaic GPU kernels (`plgpu.kernel`: the default GPU rows) or the Triton parameters (the
explicit GPU alternative) run the real Pallas front ends, which interpret mode skips: TPU block rules
((8, 128) or full dims), Mosaic GPU's lowering rules (no gathers, layouts of the loads and stores),
Triton power-of-two and dot-size rules, integer ref indexing (gathers) on TPU, value slices and scratch
on Triton, mismatched `compiler_params`. Every row of `blocks.BLOCK_TABLE` is lowered forward and
backward (the `jax.grad` graph through the custom_vjp: dT and dx kernels) at the benchmark's 512→512
layer shape with a grid size in the row's bucket, and so is every row of `blocks.ALTERNATIVE_TABLE`
(the TPU lane-gather and the Triton gather kernels), plus the opt-in atomic table gradient. Only the
front end runs here: Mosaic layout passes, VMEM capacity and PTX compilation are the compile tier's
(test_compile_targets.py: the Mosaic GPU kernels for sm_90a).
"""

import contextlib
import dataclasses
import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import ops
from kernels_pallas.spline_lookup.grid import SigmaGrid

LOWERING_PLATFORM = {"tpu": "tpu", "gpu": "cuda"}
# The kernels' custom call per (platform, variant): Mosaic TPU, Mosaic GPU or Triton.
CUSTOM_CALL = {
  "tpu": "tpu_custom_call",
  "mgpu": "custom_call @mosaic_gpu",
  "triton": "__gpu$xla.gpu.triton",
}
BUCKET_G = {"small": 8, "medium": 14, "large": 26, "huge": 40}
B, P, Q = 4096, 256, 512  # 512 -> 512


@pytest.fixture(scope="module", autouse=True)
def fake_tpu_chip():
  """Some Mosaic lowering paths query the chip ("Unsupported TPU device kind: cpu"); register a v5e
  for the "cpu" kind (private API: tests only, removed afterwards)."""
  from jax._src.pallas.mosaic import tpu_info

  previous = tpu_info.registry.get("cpu")
  tpu_info.registry["cpu"] = lambda: pltpu.get_tpu_info_for_chip(pltpu.ChipVersion.TPU_V5E, 1)
  yield
  if previous is None:
    tpu_info.registry.pop("cpu", None)
  else:
    tpu_info.registry["cpu"] = previous


def _custom_call(platform, G, config):
  if platform == "tpu":
    return CUSTOM_CALL["tpu"]
  variant = (config or blocks.table_row(platform, G).config).variant
  return CUSTOM_CALL["mgpu" if variant == "mgpu" else "triton"]


def _abstract_gpu():
  """Pallas's Triton lowering reads the target GPU from the default device since jax 0.12 ("No
  supported GPU devices found, please specify an abstract GPU device"); on a CPU host an abstract
  H200 stands in. The Mosaic GPU kernels take the target to be Hopper there."""
  dev = jax.sharding.AbstractDevice(device_kind="NVIDIA H200", num_cores=132, platform="gpu")
  return jax.sharding.use_abstract_mesh(
    jax.sharding.AbstractMesh((1,), ("i",), abstract_device=dev)
  )


def _lower(platform, G, config):
  grid = SigmaGrid(G)
  op = functools.partial(
    ops.spline_lookup,
    grid=grid,
    impl="pallas",
    interpret=False,
    platform=platform,
    block_sizes=config,
  )

  def fwd_bwd(x, table):
    y = op(x, table)
    return y, jax.grad(lambda x, t: jnp.sum(jnp.sin(op(x, t))), argnums=(0, 1))(x, table)

  specs = (
    jax.ShapeDtypeStruct((B, P, 2), jnp.float32),
    jax.ShapeDtypeStruct((P, G + 1, G + 1, Q), jnp.float32),
  )
  ctx = _abstract_gpu() if platform == "gpu" else contextlib.nullcontext()
  with ctx:
    traced = jax.jit(fwd_bwd).trace(*specs)
    text = traced.lower(lowering_platforms=(LOWERING_PLATFORM[platform],)).as_text()
  # forward + dT + dx kernels are all in the graph
  call = _custom_call(platform, G, config)
  assert text.count(call) >= 3, (call, text.count(call))
  return text


ROWS = [
  pytest.param(plat, bucket, cfg, id=f"{plat}-{bucket}")
  for plat, bucket, cfg in blocks.production_configs()
]
# The TPU lane-gather rows and the Triton gather rows (variant="gather"): the alternatives to the
# production rows.
ALTERNATIVE_ROWS = [
  pytest.param(plat, bucket, cfg, id=f"{plat}-{bucket}-{cfg.variant}")
  for plat, bucket, cfg in blocks.alternative_configs()
]


@pytest.mark.parametrize("platform,bucket,config", ROWS)
def test_production_config_lowers_forward_and_backward(platform, bucket, config):
  G = BUCKET_G[bucket]
  # The op picks exactly this table row, unclamped, at this shape.
  picked = blocks.plan(platform, G, B, P, Q)
  assert picked.config == config
  _lower(platform, G, None)


@pytest.mark.parametrize("platform,bucket,config", ALTERNATIVE_ROWS)
def test_alternative_config_lowers_forward_and_backward(platform, bucket, config):
  G = BUCKET_G[bucket]
  assert blocks.plan(platform, G, B, P, Q, config).config == config  # unclamped at this shape
  _lower(platform, G, config)


def test_atomic_table_gradient_lowers_for_triton():
  cfg = dataclasses.replace(blocks.table_row("gpu", 26, variant="gather").config, dtable="atomic")
  _lower("gpu", 26, cfg)


def test_gpu_rows_are_mosaic_gpu_and_triton_only_explicit():
  """Every production GPU row is the Mosaic GPU variant; the Triton gather rows are reachable only
  by naming the variant."""
  for G in BUCKET_G.values():
    assert blocks.table_row("gpu", G).config.variant == "mgpu"
    assert blocks.table_row("gpu", G, variant="gather").config.variant == "gather"
    assert blocks.plan("gpu", G, B, P, Q).config.variant == "mgpu"
