"""Compile tier: every production block row of both kernels compiled for real TPU targets.

Cross-lowering (test_*_lowering.py) stops before the backend compilers; here libtpu (the
``[compile]`` extra) compiles the kernels ahead of time for TPU v5e and v6e from
``jax.experimental.topologies`` devices, on the CPU host: Mosaic's layout passes, VMEM allocation and
code generation run, which is where e.g. float16 scale loads failed ("Invalid vector type for
load"). Skipped, with the reason, when libtpu is not installed.

Cost is compile time, so shapes are the smallest that keep each table row unclamped
(``blocks.pick_config`` / ``blocks.plan`` return the row itself, asserted below):
* bit-plane: M = 1 / 64 / 256 (decode / small / prefill rows), K = N = 1024, g = 128, 4 planes,
  precisions (2, 3, 4); forward with f32, bf16 and f16 scales (f16 is the released checkpoints'
  dtype), plus the mixed-precision variant. The backward is the pure-jnp ``custom_vjp`` rule (no
  kernel, independent of the block row) and is compiled once per target at K = N = 256;
* spline: B = 512, Q = 512 and P = 8 (2 for the rows whose pair block is smaller), one function
  holding the forward and the VJP (forward, dT and dx kernels) per row and grid size bucket.
"""

import functools

import jax
import jax.numpy as jnp
import pytest

from experiments.bench import _targets
from kernels_pallas.bitplane_matmul import blocks as bblocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops as bops
from kernels_pallas.bitplane_matmul import reference as bref
from kernels_pallas.spline_lookup import blocks as sblocks
from kernels_pallas.spline_lookup import ops as sops
from kernels_pallas.spline_lookup.grid import SigmaGrid

_OK, _WHY = _targets.libtpu_available()
pytestmark = pytest.mark.skipif(not _OK, reason=_WHY)

TARGETS = ("v5e", "v6e")
SDS = jax.ShapeDtypeStruct
PRECISIONS = (2, 3, 4)
K = N = 1024
G_BITS = 128
BUCKET_M = {"decode": 1, "small": 64, "prefill": 256}
BUCKET_G = {"small": 8, "medium": 14, "large": 26, "huge": 40}
SCALE_DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}


def _bitplane_specs(m, k, n, s_dtype, *, mixed=False, x_dtype=jnp.bfloat16):
  return (SDS((m, k), x_dtype), SDS((4, k // 32, n), jnp.uint32),
          SDS((sum(PRECISIONS), k // G_BITS, n), s_dtype),
          SDS((len(PRECISIONS), k // G_BITS, n), s_dtype), SDS((m,) if mixed else (), jnp.int32))


BITPLANE_ROWS = [pytest.param(bucket, cfg, sname, id=f"{bucket}-scales_{sname}")
                 for plat, bucket, cfg in bblocks.production_configs() if plat == "tpu"
                 for sname in SCALE_DTYPES]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bucket,config,scales", BITPLANE_ROWS)
def test_bitplane_forward_compiles(target, bucket, config, scales):
  m = BUCKET_M[bucket]
  picked = bblocks.pick_config("tpu", m, K, N, G_BITS, 2)
  assert (picked.variant, picked.bn, picked.bk) == (config.variant, config.bn, config.bk)
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
  compiled = _targets.compile_for_tpu(op, _bitplane_specs(m, K, N, SCALE_DTYPES[scales]), target)
  assert "tpu_custom_call" in compiled.as_text()


@pytest.mark.parametrize("target", TARGETS)
def test_bitplane_mixed_precision_and_backward_compile(target):
  """The mixed-precision variant (decode row, f16 scales) and the custom_vjp backward."""
  op = functools.partial(bops.bitplane_matmul, impl="pallas", platform="tpu")
  _targets.compile_for_tpu(op, _bitplane_specs(1, K, N, jnp.float16, mixed=True), target)

  def bwd(x, planes, alpha, beta, p, dy):
    layout = fmt.check_operands(x, planes, alpha, beta)
    return bref.bitplane_matmul_backward(x, planes, alpha, beta, p, dy, layout=layout)

  specs = _bitplane_specs(16, 256, 256, jnp.float16) + (SDS((16, 256), jnp.bfloat16),)
  _targets.compile_for_tpu(bwd, specs, target)


SPLINE_ROWS = [pytest.param(bucket, cfg, id=bucket)
               for plat, bucket, cfg in sblocks.production_configs() if plat == "tpu"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bucket,config", SPLINE_ROWS)
def test_spline_forward_and_backward_compile(target, bucket, config):
  G = BUCKET_G[bucket]
  b, p, q = 512, max(config.fwd_bp, 2), 512
  assert sblocks.plan("tpu", G, b, p, q).config == config
  op = functools.partial(sops.spline_lookup, grid=SigmaGrid(G), impl="pallas", interpret=False,
                         platform="tpu")

  def fwd_and_vjp(x, table, g):
    y, vjp = jax.vjp(op, x, table)
    return y, vjp(g)

  specs = (SDS((b, p, 2), jnp.float32), SDS((p, G + 1, G + 1, q), jnp.float32),
           SDS((b, q), jnp.float32))
  text = _targets.compile_for_tpu(fwd_and_vjp, specs, target).as_text()
  assert text.count("tpu_custom_call") >= 3  # forward, dT and dx kernels
