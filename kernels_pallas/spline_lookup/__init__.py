"""lmKAN spline lookup: the 2-D bilinear table lookup of lookup multivariate KANs, with Pallas kernels.

lmKAN (Sergey Pozdnyakov & Philippe Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR
2026, arXiv 2509.07103; reference PyTorch + CUDA code github.com/schwallergroup/lmkan). For x (B, P, 2)
and a table (P, G+1, G+1, Q) on the sigma grid, y (B, Q) = Σ_p f_qp(x[:, p, 0], x[:, p, 1]).

Modules: `grid` (SigmaGrid: Laplace-CDF nodes, cells, local coordinates), `reference` (pure-jnp gather and
dense forms, closed-form `custom_vjp`: the oracle and the XLA path), `kernel_portable` (interpolation-
matrix forward, owner-computes table gradient and input gradient; one body for Mosaic TPU and Triton),
`kernel_mgpu` (the default GPU kernels, Mosaic GPU: forward, owner-computes table gradient and input
gradient by uniform row loads), `kernel_tpu_gather` (TPU lane gathers, an alternative),
`kernel_triton_gather` (G-independent Triton gather forward and input gradient, opt-in atomic table
gradient; explicit only), `blocks` (block-size table) and `ops` (the public, differentiable op). Imports only JAX.
"""

from kernels_pallas.spline_lookup.blocks import BLOCK_TABLE, BlockSizes, plan
from kernels_pallas.spline_lookup.grid import (
  SigmaGrid,
  laplace_cdf,
  laplace_icdf,
  out_of_grid_fraction,
  validate_grid_size,
)
from kernels_pallas.spline_lookup.ops import spline_lookup
from kernels_pallas.spline_lookup.reference import (
  hat_matrix,
  spline_lookup_dense,
  spline_lookup_gather,
  spline_lookup_vjp,
)

__all__ = [
  "BLOCK_TABLE",
  "BlockSizes",
  "SigmaGrid",
  "hat_matrix",
  "laplace_cdf",
  "laplace_icdf",
  "out_of_grid_fraction",
  "plan",
  "spline_lookup",
  "spline_lookup_dense",
  "spline_lookup_gather",
  "spline_lookup_vjp",
  "validate_grid_size",
]
