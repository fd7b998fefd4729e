"""AnyBCQ: multi-precision binary-coded quantization with shared bit-planes, in JAX.

Implements AnyBCQ (Gunho Park, Jeongin Bae, Beomseok Kwon, Byeongwook Kim, Se Jung Kwon, Dongsoo Lee;
NAVER Cloud; "AnyBCQ", ICLR 2026, arXiv 2510.10467; official PyTorch + CUDA code
github.com/naver-aics/anybcq). One stack of binary planes B_1..B_{p_H} is shared by every precision
p in P = (p_L, ..., p_H), each precision owning its scales alpha^(p) (and offsets beta^(p)):

    W_hat^(p)[n, k] = beta^(p)[n, k // g] + sum_{i <= p} alpha^(p)[n, k // g, i] * B_i[n, k]

Entry point: ``quantize_params(params, bits=(2, 3, 4), group_size=128)`` quantizes every Dense and
Conv kernel of a Flax param tree (Flax's (in, out) layout, any input width) into one multi-precision
``QuantizedParams``; ``dequantize_params(q, p)`` gives the p-bit tree and ``q.apply_dense(path, x, p)``
the packed bit-plane matmul of one layer (module ``tree``).

Modules: ``quantizer`` (greedy + alternating refinement, progressive expansion, baselines),
``calibration`` (block-wise output-MSE scale calibration, closed-form activation-aware refit),
``layer`` (``QuantizedDense`` on the ``kernels_pallas.bitplane_matmul`` format) and ``memory``
(storage accounting, paper Table 1 arithmetic).
"""

from iclr26_jax.anybcq.calibration import (
  BlockCalibration,
  activation_aware_scales,
  block_mse,
  calibrate_block,
  output_error,
  refit_precision,
)
from iclr26_jax.anybcq.layer import QuantizedDense, dense_variables
from iclr26_jax.anybcq.memory import (
  LinearMemory,
  fixed_precision_nbytes,
  linear_nbytes,
  llama31_8b_linear_shapes,
  model_nbytes,
  table1,
)
from iclr26_jax.anybcq.tree import (
  QuantizedParams,
  dequantize_params,
  kernel_paths,
  quantize_kernels,
  quantize_params,
)
from iclr26_jax.anybcq.quantizer import (
  PackedWeight,
  QuantizedWeight,
  QuantizeInfo,
  RTNWeight,
  expand_precision,
  fixed_bcq_quantize,
  greedy_bcq_quantize,
  quantize,
  quantize_with_info,
  rtn_quantize,
)

__all__ = [
  "BlockCalibration",
  "LinearMemory",
  "PackedWeight",
  "QuantizeInfo",
  "QuantizedDense",
  "QuantizedParams",
  "QuantizedWeight",
  "RTNWeight",
  "activation_aware_scales",
  "block_mse",
  "calibrate_block",
  "dense_variables",
  "dequantize_params",
  "expand_precision",
  "fixed_bcq_quantize",
  "fixed_precision_nbytes",
  "greedy_bcq_quantize",
  "kernel_paths",
  "linear_nbytes",
  "llama31_8b_linear_shapes",
  "model_nbytes",
  "output_error",
  "quantize",
  "quantize_kernels",
  "quantize_params",
  "quantize_with_info",
  "refit_precision",
  "rtn_quantize",
  "table1",
]
