"""AnyBCQ: multi-precision binary-coded quantization with shared bit-planes, in JAX.

Gunho Park, Jeongin Bae, Beomseok Kwon, Byeongwook Kim, Se Jung Kwon, Dongsoo Lee (NAVER Cloud),
"AnyBCQ", ICLR 2026, arXiv 2510.10467; official PyTorch + CUDA code github.com/naver-aics/anybcq.

Entry point: ``quantize_params(params, bits=(2, 3, 4), group_size=128)`` quantizes every Dense and
Conv kernel of a Flax param tree into one multi-precision ``QuantizedParams``;
``dequantize_params(q, p)`` gives the p-bit tree (module ``tree``). Modules: ``quantizer`` (the
weight-space algorithm and its baselines), ``calibration`` (block-wise scale calibration, the
closed-form refit), ``layer`` (``QuantizedDense``) and ``memory`` (storage, paper Table 1).
The algorithm, with its equations and reference hyperparameters: docs/methods/anybcq.md
("The algorithm").
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
  model_nbytes,
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
  "model_nbytes",
  "output_error",
  "quantize",
  "quantize_kernels",
  "quantize_params",
  "quantize_with_info",
  "refit_precision",
  "rtn_quantize",
]
