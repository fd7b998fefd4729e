"""Tier 2 for the lmKAN spline lookup: cross-lowering on the CPU host.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; github.com/schwallergroup/lmkan).
`jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))` with the Mosaic parameters and `("cuda",)`
with the Triton parameters run the real Pallas front ends, which interpret mode skips: TPU block rules
((8, 128) or full dims), Triton power-of-two and dot-size rules, integer ref indexing (gathers) on TPU,
value slices and scratch on Triton, mismatched `compiler_params`. Every row of `blocks.BLOCK_TABLE` is
lowered forward and backward (the `jax.grad` graph through the custom_vjp: dT and dx kernels) at the
benchmark's 512→512 layer shape with a grid size in the row's bucket, and so is every row of
`blocks.ALTERNATIVE_TABLE` (the TPU lane-gather kernels), plus the opt-in atomic table gradient. Only
the front end runs here: Mosaic layout passes, VMEM capacity and Triton→PTX need the hardware.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental.pallas import tpu as pltpu

from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import ops
from kernels_pallas.spline_lookup.grid import SigmaGrid

TARGET = {"tpu": ("tpu", "tpu_custom_call"), "gpu": ("cuda", "__gpu$xla.gpu.triton")}
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
  text = jax.jit(fwd_bwd).trace(*specs).lower(lowering_platforms=(TARGET[platform][0],)).as_text()
  # forward + dT + dx kernels are all in the graph
  assert text.count(TARGET[platform][1]) >= 3, text.count(TARGET[platform][1])
  return text


ROWS = [
  pytest.param(plat, bucket, cfg, id=f"{plat}-{bucket}")
  for plat, bucket, cfg in blocks.production_configs()
]
# The TPU lane-gather rows (variant="gather"), the alternative to the production TPU rows.
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
  cfg = dataclasses.replace(blocks.table_row("gpu", 26).config, dtable="atomic")
  _lower("gpu", 26, cfg)
