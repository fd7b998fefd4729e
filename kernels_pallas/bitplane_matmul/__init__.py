"""AnyBCQ bit-plane matmul: ``y = x @ W^(p)`` with shared binary planes and per-precision scales.

AnyBCQ (Gunho Park, Jeongin Bae, Beomseok Kwon, Byeongwook Kim, Se Jung Kwon, Dongsoo Lee;
NAVER Cloud; ICLR 2026, arXiv 2510.10467; official PyTorch/CUDA code
github.com/naver-aics/anybcq) stores planes
B_0..B_{NB-1} in {-1, +1}^{K x N} once and scales per (precision, group, plane):

    W^(p)[k, n] = beta^(p)[k // g, n] + sum_{b < p} alpha^(p)_b[k // g, n] * B_b[k, n]

Modules: ``format`` (packing, layout, checkpoint converters), ``reference`` (pure-jnp oracle and
XLA path), ``kernel_tpu`` (Mosaic TPU), ``kernel_wgmma`` (Mosaic GPU, Hopper: the default GPU
kernel), ``kernel_mgpu`` (Mosaic GPU lookup-table GEMV for a few rows), ``kernel_gpu`` (Triton:
deprecated, explicit only), ``blocks`` (block-size tables) and ``ops`` (the public,
differentiable op). Imports only JAX.
"""

from kernels_pallas.bitplane_matmul.blocks import BLOCK_TABLE, BlockConfig, pick_config
from kernels_pallas.bitplane_matmul.format import (
  from_reference_layout,
  pack_planes,
  plane_offsets,
  planes_from_reference,
  planes_to_reference,
  random_bitplane_layer,
  scales_from_reference,
  scales_to_reference,
  to_reference_layout,
  unpack_planes,
)
from kernels_pallas.bitplane_matmul.ops import bitplane_matmul
from kernels_pallas.bitplane_matmul.reference import (
  bitplane_matmul_partials,
  bitplane_matmul_reference,
  dequantize,
)

__all__ = [
  "BLOCK_TABLE",
  "BlockConfig",
  "pick_config",
  "bitplane_matmul",
  "bitplane_matmul_partials",
  "bitplane_matmul_reference",
  "dequantize",
  "from_reference_layout",
  "pack_planes",
  "plane_offsets",
  "planes_from_reference",
  "planes_to_reference",
  "random_bitplane_layer",
  "scales_from_reference",
  "scales_to_reference",
  "to_reference_layout",
  "unpack_planes",
]
